"""JSON Lines files of a run: read with a bad line named by file and line, appended whole.

A process killed mid-append leaves a last line without its newline: readers ignore it (its step
runs again) and the next append cuts it first, so every line of the file stays whole JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, TypeVar

from pydantic import ValidationError

R = TypeVar("R")


class RecordError(ValueError):
    """A line of a run's file is not the record it should be."""

    def __init__(self, path: Path, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.path = path
        self.line = line


def validation_summary(exc: ValidationError) -> str:
    """Pydantic's errors in one line: ``field.path: message; ...``."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'record'}: {err['msg']}" for err in exc.errors()
    )


def read_lines(path: Path, parse: Callable[[dict[str, Any]], R]) -> Iterator[R]:
    """Every whole line of ``path`` as ``parse`` makes it (nothing when there is no file yet)."""
    if not path.exists():
        return
    with path.open(encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            if not text.endswith("\n"):
                return  # cut short by a kill: that step runs again
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise RecordError(path, number, f"not JSON ({exc.msg})") from None
            if not isinstance(data, dict):
                raise RecordError(path, number, f"a JSON {type(data).__name__}, not an object")
            try:
                yield parse(data)
            except ValidationError as exc:
                raise RecordError(path, number, validation_summary(exc)) from None


def append_lines(path: Path, lines: Iterable[Mapping[str, Any]]) -> None:
    """Append ``lines`` in one write, after cutting a line a kill left unfinished."""
    text = "".join(json.dumps(line, sort_keys=True, ensure_ascii=False) + "\n" for line in lines)
    with path.open("a+b") as f:
        _cut_torn_tail(f)
        f.write(text.encode("utf-8"))
        f.flush()


def _cut_torn_tail(f: IO[bytes]) -> None:
    """Truncate a last line that has no newline; only its last byte is read when there is none."""
    size = f.seek(0, 2)
    if size == 0:
        return
    f.seek(size - 1)
    if f.read(1) == b"\n":
        return
    f.seek(0)
    data = f.read()
    f.truncate(data.rfind(b"\n") + 1)
