"""The records of a run directory, typed and versioned (as inspect_ai types its logs).

Each record is a frozen pydantic model with a ``version``; a line or manifest written before
records carried one reads as version 1 (the same fields). ``Record.read`` validates what a file
holds; ``Record.line`` is what is written: the fields the writer set (so a line keeps the shape it
always had, a key absent rather than null), its version and its kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Generic, Literal, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from bench.rundir.config import EpisodeConfig, RunConfig, SuiteConfig
from messages.aura import ProbeStep, UsageSummary
from messages.episodes import SessionEnded, SessionGrade

RECORD_VERSION = 2
"""Version 2 added the ``version`` field and data references (path and sha256) in configurations."""
UNVERSIONED = 1
"""What a record without a ``version`` is."""


class Record(BaseModel):
    """A record of a run directory: frozen, unknown fields refused, versioned."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = RECORD_VERSION
    written_always: ClassVar[frozenset[str]] = frozenset({"version"})
    """Fields a line carries even when the writer left them at their default."""

    @field_validator("version")
    @classmethod
    def _known(cls, version: int) -> int:
        if not UNVERSIONED <= version <= RECORD_VERSION:
            raise ValueError(
                f"record version {version}; this release reads versions {UNVERSIONED} to {RECORD_VERSION}"
            )
        return version

    @classmethod
    def read(cls, data: Mapping[str, Any]) -> Self:
        return cls.model_validate({"version": UNVERSIONED, **data})

    def line(self) -> dict[str, Any]:
        dumped = self.model_dump(mode="json")
        return {k: v for k, v in dumped.items() if k in self.model_fields_set or k in self.written_always}


# ---------------------------------------------------------------- manifests


ConfigT = TypeVar("ConfigT", bound=RunConfig)


class Manifest(Record, Generic[ConfigT]):
    """``manifest.json``: what was asked for and by which code."""

    config: ConfigT
    git_commit: str | None = None
    python: str = ""
    started: str = ""


class SuiteManifest(Manifest[SuiteConfig]):
    note: str = ""
    totals: dict[str, int | float] | None = None
    """Written by the report: cells, failures, cache hits, fallbacks."""


class UnitInfo(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    episode: str
    assistant: str
    run: int
    only: str | None = None


class EpisodeManifest(Manifest[EpisodeConfig]):
    benchmark: str = "pi-bench episodes"
    namespace: str
    units: tuple[str, ...] = ()
    unit_sessions: dict[str, int] = {}
    unit_info: dict[str, UnitInfo] = {}
    seconds_last_invocation: float | None = None


# ---------------------------------------------------------------- the suite's cells


class CellResult(Record):
    """A line of ``cells.jsonl``: one (suite, condition, seed, query) answered, judged and timed,
    or failed with its error. The answer's fields are absent from a failed cell."""

    cell: str
    suite: str
    condition: str
    seed: int
    query_id: str
    ok: bool
    error: str | None = None
    # what the condition did
    query: str | None = None
    answer: str | None = None
    alerts: tuple[str, ...] = ()
    gap: float | None = None
    budget: int | None = None
    probes: int | None = None
    tools_called: tuple[str, ...] = ()
    forbidden_violations: tuple[str, ...] = ()
    gold_tools_hit: tuple[str, ...] = ()
    disclosure: float | None = None
    latency: float | None = None
    backend: str | None = None
    usage: UsageSummary | None = None
    fallbacks: tuple[str, ...] = ()
    diagnostics: tuple[str, ...] = ()
    trace: tuple[ProbeStep, ...] = ()
    # how it was judged
    scores: dict[str, float | None] = {}
    judge_failure: str | None = None
    judge_rationale: str | None = None
    correct: int | None = None
    contradicted: int | None = None
    unverifiable: int | None = None
    claims: tuple[dict[str, str], ...] = ()
    # the implicit suites' scene
    scene: str | None = None
    subcategory: str | None = None
    # the factual suites' scene
    category: str | None = None
    asker: str | None = None
    tick: int | None = None
    scene_time: str | None = None
    snapshot: str | None = None
    gold: dict[str, str] = {}


# ---------------------------------------------------------------- the episodes' units


class _UnitLineBase(Record):
    written_always: ClassVar[frozenset[str]] = frozenset({"version", "event"})
    """A line says what it is: readers tell the lines apart by ``event``."""


class SessionStartedLine(_UnitLineBase):
    """A session of the unit began (a resume restores it from its snapshot)."""

    event: Literal["started"] = "started"
    task_id: str


class UnitResetLine(_UnitLineBase):
    """The unit starts over: every line before this one no longer counts."""

    event: Literal["reset"] = "reset"


class ReflectionRecorded(BaseModel):
    """The built-in assistant's end-of-session reflection: its usage and fallbacks (already
    counted in the session's ``assistant_usage``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    usage: UsageSummary


class ReflectionMissing(BaseModel):
    """Why the reflection is not in the record (it had not come when the session was recorded)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    missing: str


class SessionFinishedLine(_UnitLineBase):
    """A session ended and was graded."""

    event: Literal["finished"] = "finished"
    task_id: str
    depends_on: tuple[str, ...] = ()
    task_type: str
    clock: float
    session: SessionEnded
    grade: SessionGrade
    reflection: ReflectionRecorded | ReflectionMissing | None = None
    """The built-in assistant's reflection, or why it is missing (None: an assistant of another
    kind)."""
    backend_reruns: int = 0
    """Times the app backend (AppWorld's process) died during the session."""


UnitLine = Annotated[SessionStartedLine | UnitResetLine | SessionFinishedLine, Field(discriminator="event")]
"""A line of ``units/KEY.jsonl``."""

_UNIT_LINE: TypeAdapter[UnitLine] = TypeAdapter(UnitLine)


def read_unit_line(data: Mapping[str, Any]) -> UnitLine:
    return _UNIT_LINE.validate_python({"version": UNVERSIONED, **data})
