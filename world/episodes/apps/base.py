"""What every episode tool is made of: an argument model, a run function over a private copy of
the state, and the ways a run refuses, shaped after AppWorld's apps.

A run function may change ``ctx.state`` freely: the registry hands it a deep copy and keeps the
copy only when the run returns normally (status ``ok``).

AppWorld's conventions, which the app modules follow (its API docs are the reference; our code is
our own):

- a tool is ``<app>__<api>``, published as ``mcp_appworld_<app>__<api>`` (the name an MCP client
  of AppWorld's server gives it); its response is the API's JSON (an object or a list), handed
  back as ``{"response": <json>}``, and a refusal is ``{"response": {"message": ...}}``;
- ``<app>__login(username, password)`` gives an ``access_token`` that every private API of that app
  takes as an argument; a token works only in its own app, and until ``<app>__logout``;
- refusals: a missing or foreign token is 401 (status ``unauthorized``), a record id that does not
  exist 409 (``not_found``, "The product with id 9 does not exist."), a broken rule 422
  (``failed``), arguments the API cannot use 422 (``invalid_args``);
- unknown arguments are ignored, as AppWorld's server ignores them;
- ``search_*`` APIs rank, they do not filter: records matching the query come first, the others
  fill the page (``ranked``); pages are ``page_index`` (from 0) and ``page_limit`` (1..20,
  default 5); ``sort_by`` is ``+field`` or ``-field``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from messages.probes import JsonObject, ProbeScene, ProbeStatus
from world.episodes.apps.state import EnvState, allocate_id, record_key
from world.probes.registry import ProbeContext, ToolSpec

A = TypeVar("A", bound=BaseModel)

APP_PREFIX = "mcp_appworld_"
MAX_ID = 2**53
"""Ids beyond this are refused: they would not survive a JSON reader that uses doubles."""
TOKENS = "_tokens"
"""Bookkeeping key of an app's data: access token -> user id (left out of diffs)."""
USERS = "users"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"


class AppError(Exception):
    """A refusal of an API: its message (AppWorld's text; a list where AppWorld gives one), the
    HTTP status AppWorld would answer, and the registry status it maps to."""

    status: ClassVar[ProbeStatus] = "failed"
    code: ClassVar[int] = 422

    def __init__(self, message: str | list[str]) -> None:
        self.message = message
        super().__init__(message if isinstance(message, str) else " ".join(message))


class ToolNotFound(AppError):
    """A record, file or directory the call names does not exist (409, status ``not_found``)."""

    status = "not_found"
    code = 409


class ToolFailed(AppError):
    """The API ran and refused the request, e.g. an empty cart (422, status ``failed``)."""


class ToolInvalid(AppError):
    """The arguments are well-formed but unusable, found only at run time (``invalid_args``)."""

    status = "invalid_args"


class Unauthorized(AppError):
    """No valid access token of this app (401, status ``unauthorized``)."""

    status = "unauthorized"
    code = 401


def not_found(what: str, record_id: Any) -> ToolNotFound:
    """AppWorld's message for a missing record: ``The product with id 9 does not exist.``"""
    return ToolNotFound(f"The {what} with id {record_id} does not exist.")


class Args(BaseModel):
    """Arguments of a workspace or assistant tool. Unknown arguments are refused, so a typo is
    reported rather than silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


class NoArgs(Args):
    """A tool without arguments."""


class AppArgs(BaseModel):
    """Arguments of an app API. Unknown arguments are ignored, as AppWorld's server does."""

    model_config = ConfigDict(extra="ignore", frozen=True, validate_default=True)


class NoAppArgs(AppArgs):
    """A public API without arguments."""


class AuthArgs(AppArgs):
    """Arguments of a private API: the access token of the app's login comes first."""

    access_token: str = Field(description="Access token obtained from the app's login API.")


class PageArgs(AppArgs):
    page_index: int = Field(default=0, ge=0, description="The index of the page to return.")
    page_limit: int = Field(default=5, ge=1, le=20, description="The maximum number of results to return.")


class AuthPageArgs(AuthArgs):
    page_index: int = Field(default=0, ge=0, description="The index of the page to return.")
    page_limit: int = Field(default=5, ge=1, le=20, description="The maximum number of results to return.")


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

    def find(self, app: str, collection: str, record_id: Any, what: str) -> dict[str, Any]:
        """The record of ``collection`` whose key is ``record_id``; AppWorld's 409 otherwise."""
        rows = self.rows(app, collection)
        key = record_key(collection, rows)
        if key is not None:
            for row in rows:
                if row[key] == record_id:
                    return row
        raise not_found(what, record_id)

    def find_by(self, app: str, collection: str, field_name: str, value: Any, what: str) -> dict[str, Any]:
        """The first record whose ``field_name`` equals ``value``; AppWorld's 409 (a list message)."""
        for row in self.rows(app, collection):
            if row.get(field_name) == value:
                return row
        raise ToolNotFound([f"The {what} with {field_name} {value} does not exist."])

    def new_id(self, app: str, collection: str, start: int = 1) -> int:
        self.rows(app, collection)
        return allocate_id(self.app(app), collection, start)

    @property
    def now(self) -> float:
        """Virtual minutes since the episode began."""
        return self.state.clock

    def timestamp(self, minutes_ahead: float = 0.0) -> str:
        """The virtual time as AppWorld writes it (``2025-05-05T09:30:00``)."""
        start = datetime.strptime(self.state.start_time, TIME_FORMAT)
        return (start + timedelta(minutes=self.state.clock + minutes_ahead)).strftime(TIME_FORMAT)

    # ------------------------------------------------------------ accounts

    def user(self, app: str, access_token: str) -> dict[str, Any]:
        """The user an access token of ``app`` belongs to; AppWorld's 401 otherwise."""
        tokens: dict[str, int] = self.app(app).get(TOKENS, {})
        user_id = tokens.get(access_token)
        if user_id is not None:
            for row in self.rows(app, USERS):
                if row.get("user_id") == user_id:
                    return row
        raise Unauthorized(
            f"You are either not authorized to access this {app} API endpoint or your access token is"
            " missing, invalid or expired."
        )

    def account(self, app: str, email: str) -> dict[str, Any] | None:
        """The user of ``app`` with this email (case-insensitive), or None."""
        wanted = email.strip().lower()
        for row in self.rows(app, USERS):
            if str(row.get("email", "")).lower() == wanted:
                return row
        return None

    def account_or_fail(self, app: str, email: str) -> dict[str, Any]:
        row = self.account(app, email)
        if row is None:
            raise ToolFailed(f"No user found with email {email}.")
        return row


RunFn = Callable[[ToolContext, A], Any]


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
    def api(self) -> str:
        """AppWorld's ``<app>__<api>`` name of an app tool; the name itself for other tools."""
        return self.name.removeprefix(APP_PREFIX) if self.app is not None else self.name

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


# ---------------------------------------------------------------- accounts


class LoginArgs(AppArgs):
    username: str = Field(description="Your account's username (email; phone number for the phone app).")
    password: str = Field(description="Your account's password.")


def issue_token(app_data: dict[str, Any], app: str, user_id: int) -> str:
    """A new access token for ``user_id``: deterministic (the app, the user and how many tokens
    the app issued before), so a replayed episode gives the same tokens."""
    tokens: dict[str, int] = app_data.setdefault(TOKENS, {})
    issued = int(app_data.get("_tokens_issued", 0)) + 1
    app_data["_tokens_issued"] = issued
    token = hashlib.sha256(f"{app}:{user_id}:{issued}".encode()).hexdigest()[:40]
    tokens[token] = user_id
    return token


def login_tool(app: str, *, login_by: str = "email") -> EpisodeTool[LoginArgs]:
    """``<app>__login``: the username is the user's email (``login_by``: phone_number for phone)."""

    def login(ctx: ToolContext, args: LoginArgs) -> JsonObject:
        wanted = args.username.strip().lower()
        for row in ctx.rows(app, USERS):
            if str(row.get(login_by, "")).lower() == wanted and row.get("password") == args.password:
                token = issue_token(ctx.app(app), app, int(row["user_id"]))
                return {"access_token": token, "token_type": "Bearer"}
        raise Unauthorized("Invalid credentials")

    return app_tool(app, "login", f"Login to your {app} account.", LoginArgs, login)


def logout_tool(app: str) -> EpisodeTool[AuthArgs]:
    def logout(ctx: ToolContext, args: AuthArgs) -> JsonObject:
        ctx.user(app, args.access_token)
        ctx.app(app)[TOKENS].pop(args.access_token, None)
        return {"message": "Successfully logged out."}

    return app_tool(app, "logout", f"Logout from your {app} account.", AuthArgs, logout)


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
    """Records matching at least one query word, best first, then by id (a filter)."""
    scored = [(match_score(query, *(r.get(f, "") for f in fields)), r) for r in rows]
    return [r for s, r in sorted(scored, key=lambda sr: (-sr[0], sr[1][key])) if s > 0]


def ranked(rows: Iterable[dict[str, Any]], query: str, *fields: str) -> list[dict[str, Any]]:
    """AppWorld's search order: records matching the query first (more query words first), then
    every other record in its given order. A query ranks; it never filters."""
    rows = list(rows)
    if not _WORD.findall(query.lower()):
        return rows
    scored = [(match_score(query, *(r.get(f, "") for f in fields)), i, r) for i, r in enumerate(rows)]
    return [r for _, _, r in sorted(scored, key=lambda t: (-t[0], t[1]))]


def sort_rows(rows: Sequence[dict[str, Any]], sort_by: str | None) -> list[dict[str, Any]]:
    """``sort_by`` = ``+field`` or ``-field`` (AppWorld's form); None keeps the order."""
    if sort_by is None or not sort_by.strip():
        return list(rows)
    sort_by = sort_by.strip()
    if sort_by[0] not in "+-":
        raise ToolFailed("The sort_by parameter must start with + or -.")
    name, reverse = sort_by[1:], sort_by[0] == "-"
    present = [r for r in rows if r.get(name) is not None]
    absent = [r for r in rows if r.get(name) is None]
    return sorted(present, key=lambda r: r[name], reverse=reverse) + absent


def page(rows: Sequence[Any], page_index: int, page_limit: int) -> list[Any]:
    start = page_index * page_limit
    return list(rows[start : start + page_limit])


def rows_of(fields: tuple[str, ...], *values: tuple[Any, ...]) -> list[dict[str, Any]]:
    """Records from a field list and one tuple of values per record (compact seed tables)."""
    return [dict(zip(fields, row, strict=True)) for row in values]


def pick(record: dict[str, Any], *fields: str) -> JsonObject:
    return {f: record.get(f) for f in fields}


def person(user: dict[str, Any]) -> JsonObject:
    """AppWorld's short form of a user: ``{name, email}``."""
    name = f"{user.get('first_name', '')} {user.get('last_name', '')}".strip()
    return {"name": name, "email": user.get("email")}
