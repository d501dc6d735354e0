"""Run directories, one way for every benchmark: a manifest, records appended as JSON Lines, resume.

``records`` types every record (versioned pydantic models: manifests, the suite's cells, the
episodes' unit lines); ``config`` the configurations in manifests and their comparison by content;
``jsonl`` reads and appends the files (a bad line named by file and line, a line torn by a kill
cut before the next append); ``directory`` holds a run's manifest and refuses to resume a run
asked for differently, naming each field that differs.
"""

from bench.rundir.config import DataRef, EpisodeConfig, RunConfig, SuiteConfig, config_differences
from bench.rundir.directory import MANIFEST, RecordFile, RunDir, RunDirError, git_commit
from bench.rundir.jsonl import RecordError, append_lines, read_lines
from bench.rundir.records import (
    RECORD_VERSION,
    CellResult,
    EpisodeManifest,
    Manifest,
    Record,
    ReflectionMissing,
    ReflectionRecorded,
    SessionFinishedLine,
    SessionStartedLine,
    SuiteManifest,
    UnitInfo,
    UnitLine,
    UnitResetLine,
    read_unit_line,
)

__all__ = [
    "MANIFEST",
    "RECORD_VERSION",
    "CellResult",
    "DataRef",
    "EpisodeConfig",
    "EpisodeManifest",
    "Manifest",
    "Record",
    "RecordError",
    "RecordFile",
    "ReflectionMissing",
    "ReflectionRecorded",
    "RunConfig",
    "RunDir",
    "RunDirError",
    "SessionFinishedLine",
    "SessionStartedLine",
    "SuiteConfig",
    "SuiteManifest",
    "UnitInfo",
    "UnitLine",
    "UnitResetLine",
    "append_lines",
    "config_differences",
    "git_commit",
    "read_lines",
    "read_unit_line",
]
