"""What every episode tool is made of: an argument model, a run function over a private copy of
the state, and the three ways a run refuses (not found, failed, invalid arguments).

A run function may change ``ctx.state`` freely: the registry hands it a deep copy and keeps the
copy only when the run returns normally (status ``ok``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from messages.probes import JsonObject, ProbeScene
from world.episodes.apps.state import EnvState, allocate_id, record_key
from world.probes.registry import ProbeContext, ToolSpec

A = TypeVar("A", bound=BaseModel)

APP_PREFIX = "mcp_appworld_"
MAX_ID = 2**53
"""Ids beyond this are refused: they would not survive a JSON reader that uses doubles."""


class ToolNotFound(Exception):
    """A record, file or directory the call names does not exist (status ``not_found``)."""


class ToolFailed(Exception):
    """The tool ran and refused the request, e.g. an empty cart (status ``failed``)."""


class ToolInvalid(Exception):
    """The arguments are well-formed but unusable, found only at run time (``invalid_args``)."""


class Args(BaseModel):
    """Arguments of a tool. Unknown arguments are refused, so a typo is reported rather than
    silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


class NoArgs(Args):
    """A tool without arguments."""


def id_field(description: str) -> int:
    result: int = Field(ge=0, le=MAX_ID, description=description)
    return result


def optional_id_field(description: str) -> int | None:
    result: int | None = Field(default=None, ge=0, le=MAX_ID, description=description)
    return result


@dataclass
class ToolContext:
    state: EnvState
    """A private copy of the state: the run may change it."""
    caller: str

    def app(self, name: str) -> dict[str, Any]:
        """The data of app ``name`` (created empty when absent), to read or change in place."""
        return self.state.apps.setdefault(name, {})

    def rows(self, app: str, collection: str) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self.app(app).setdefault(collection, [])
        return rows

    def find(self, app: str, collection: str, record_id: int, what: str) -> dict[str, Any]:
        """The record of ``collection`` whose key is ``record_id``; ToolNotFound otherwise."""
        rows = self.rows(app, collection)
        key = record_key(collection, rows)
        if key is not None:
            for row in rows:
                if row[key] == record_id:
                    return row
        raise ToolNotFound(f"no {what} with id {record_id} in {app}")

    def new_id(self, app: str, collection: str, start: int = 1) -> int:
        self.rows(app, collection)
        return allocate_id(self.app(app), collection, start)

    @property
    def now(self) -> float:
        return self.state.clock


RunFn = Callable[[ToolContext, A], JsonObject]


def _scene_free(scene: ProbeScene, ctx: ProbeContext, args: Any) -> JsonObject:
    raise TypeError("an episode tool runs on an EnvState, not on a probe scene")


@dataclass(frozen=True)
class EpisodeTool(Generic[A]):
    name: str
    """The published name: ``mcp_appworld_<app>__<api>`` for an app tool, else the bare name."""
    description: str
    args_model: type[A]
    run: RunFn[A] = field(repr=False)
    app: str | None = None
    """The app an app tool belongs to; None for the workspace and assistant tools."""

    @property
    def spec(self) -> ToolSpec[A]:
        """The probe registry's description of the tool (its policy check and ``ToolSpecData``)."""
        return ToolSpec(
            name=self.name,
            aliases=(),
            description=self.description,
            args_model=self.args_model,
            run=_scene_free,
            disclosure=0,
            private=False,
            registry="episode",
        )


def app_tool(app: str, api: str, description: str, args_model: type[A], run: RunFn[A]) -> EpisodeTool[A]:
    return EpisodeTool(f"{APP_PREFIX}{app}__{api}", description, args_model, run, app)


# ---------------------------------------------------------------- shared helpers

_WORD = re.compile(r"[a-z0-9]+")


def money(value: float) -> float:
    return round(float(value) + 0.0, 2)


def match_score(query: str, *fields: Any) -> int:
    """How many distinct words of ``query`` begin a word of ``fields`` (case-insensitive, so
    "filter" finds "Filters" but "low" does not find "Slow"); an empty query matches everything
    with score 1."""
    words = set(_WORD.findall(query.lower()))
    if not words:
        return 1
    text = " ".join(" ".join(map(str, f)) if isinstance(f, list | tuple) else str(f) for f in fields)
    tokens = set(_WORD.findall(text.lower()))
    return sum(1 for w in words if any(t.startswith(w) for t in tokens))


def search(rows: Iterable[dict[str, Any]], query: str, key: str, *fields: str) -> list[dict[str, Any]]:
    """Records matching at least one query word, best first, then by id."""
    scored = [(match_score(query, *(r.get(f, "") for f in fields)), r) for r in rows]
    return [r for s, r in sorted(scored, key=lambda sr: (-sr[0], sr[1][key])) if s > 0]


def rows_of(fields: tuple[str, ...], *values: tuple[Any, ...]) -> list[dict[str, Any]]:
    """Records from a field list and one tuple of values per record (compact seed tables)."""
    return [dict(zip(fields, row, strict=True)) for row in values]


def pick(record: dict[str, Any], *fields: str) -> JsonObject:
    return {f: record.get(f) for f in fields}
