"""What a run was asked for, and whether a resume asks for the same: configurations compared by
content (a data file or directory by its sha256, else by its resolved place), each difference
named as ``field: stored -> given``."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator


def fingerprint(path: Path) -> str | None:
    """sha256 of a file, or of a directory's files (their relative paths and contents; caches and
    hidden files left out); None when ``path`` does not exist."""
    if path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    if not path.is_dir():
        return None
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        rel = file.relative_to(path)
        if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
            continue
        digest.update(rel.as_posix().encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()


class DataRef(BaseModel):
    """A data file or directory a run reads: where it is (resolved) and what it holds (sha256)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    sha256: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_plain_path(cls, data: Any) -> Any:
        return {"path": data} if isinstance(data, str) else data  # a version-1 config

    @classmethod
    def of(cls, path: Path) -> DataRef:
        resolved = path.expanduser().resolve()
        return cls(path=str(resolved), sha256=fingerprint(resolved))

    def same_as(self, other: DataRef) -> bool:
        """The same data: the same content when both were fingerprinted, else the same place (a
        relative version-1 path is taken from the current directory)."""
        if self.sha256 is not None and other.sha256 is not None:
            return self.sha256 == other.sha256
        return Path(self.path).expanduser().resolve() == Path(other.path).expanduser().resolve()

    def __str__(self) -> str:
        return self.path if self.sha256 is None else f"{self.path} (sha256 {self.sha256[:12]})"


class RunConfig(BaseModel):
    """What a run computes; resuming a run needs the same (``config_differences``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class SuiteConfig(RunConfig):
    """``auratown bench aura``."""

    intent_reader: str
    suite: str
    data: DataRef
    bundled: bool
    conditions: tuple[str, ...]
    seeds: tuple[int, ...]
    model: str | None
    judge_model: str | None
    explore_max_steps: int


class EpisodeConfig(RunConfig):
    """``auratown bench episodes``."""

    tasks: tuple[DataRef, ...]
    episodes: tuple[str, ...]
    assistants: str
    runs: int
    ablation: bool
    model: str | None
    judge_model: str | None
    max_turns: int | None
    max_tokens: int | None
    apps: str = "builtin"
    shared_world: bool = False


def _same(stored: Any, given: Any) -> bool:
    if isinstance(stored, DataRef) and isinstance(given, DataRef):
        return stored.same_as(given)
    if isinstance(stored, tuple) and isinstance(given, tuple):
        return len(stored) == len(given) and all(_same(a, b) for a, b in zip(stored, given, strict=True))
    return bool(stored == given)


def _shown(value: Any) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return str(value) if isinstance(value, DataRef) else repr(value)


def config_differences(stored: RunConfig, given: RunConfig) -> list[str]:
    """Each field that differs, as ``field: stored -> given`` (data compared by what it is)."""
    if type(stored) is not type(given):
        return [f"kind: {type(stored).__name__} -> {type(given).__name__}"]
    out = []
    for name in type(given).model_fields:
        old, new = getattr(stored, name), getattr(given, name)
        if not _same(old, new):
            out.append(f"{name}: {_shown(old)} -> {_shown(new)}")
    return out
