"""A run directory: its manifest, the check that a resume is the same run, and its record files."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from bench.rundir.config import config_differences
from bench.rundir.jsonl import RecordError, append_lines, read_lines, validation_summary
from bench.rundir.records import Manifest, Record

MANIFEST = "manifest.json"

M = TypeVar("M", bound=Manifest[Any])
R = TypeVar("R", bound=Record)


class RunDirError(ValueError):
    """A run directory that cannot be used as asked, explained in one line."""


class RunDir:
    """The directory of one run and its ``manifest.json``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.manifest_path = path / MANIFEST

    def create(self, manifest: Manifest[Any]) -> None:
        """Start a run, or continue the one there: resuming a run with another configuration would
        mix two experiments, so it is refused with every field that differs."""
        self.path.mkdir(parents=True, exist_ok=True)
        if self.manifest_path.exists():
            stored = self.manifest(type(manifest))
            differences = config_differences(stored.config, manifest.config)
            if differences:
                raise RunDirError(
                    f"{self.path} holds a run with another configuration ({'; '.join(differences)}); "
                    "use another directory"
                )
            return
        self.write_manifest(manifest)

    def manifest(self, kind: type[M]) -> M:
        if not self.manifest_path.exists():
            raise RunDirError(f"{self.path} is not a run directory (no {MANIFEST})")
        try:
            data = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise RecordError(self.manifest_path, exc.lineno, f"not JSON ({exc.msg})") from None
        if not isinstance(data, dict):
            raise RecordError(self.manifest_path, 1, f"a JSON {type(data).__name__}, not an object")
        try:
            return kind.read(data)
        except ValidationError as exc:
            raise RecordError(self.manifest_path, 1, validation_summary(exc)) from None

    def write_manifest(self, manifest: Manifest[Any]) -> None:
        """Replace the manifest in one step (a reader never sees half of it)."""
        data = manifest.model_dump(mode="json")
        type(manifest).model_validate(data)  # model_copy(update=...) does not validate: check here
        tmp = self.manifest_path.with_suffix(".tmp")
        text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)
        tmp.write_text(text + "\n", encoding="utf-8")
        os.replace(tmp, self.manifest_path)


class RecordFile(Generic[R]):
    """A JSON Lines file of one kind of record; appends from several threads are serialised."""

    def __init__(self, path: Path, parse: Callable[[dict[str, Any]], R]) -> None:
        self.path = path
        self.parse = parse
        self._lock = threading.Lock()

    def __iter__(self) -> Iterator[R]:
        return read_lines(self.path, self.parse)

    def append(self, records: Iterable[Record]) -> None:
        lines = [r.line() for r in records]
        with self._lock:
            append_lines(self.path, lines)


def git_commit(root: Path) -> str | None:
    """The commit the code of a run was at, for its manifest (None outside a git checkout)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10, check=False
        )
    except OSError:
        return None
    return out.stdout.strip() or None
