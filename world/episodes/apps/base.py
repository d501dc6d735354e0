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
  exist 409 (``not_found``, "The product with id 9 does not exist."), a record that would repeat a
  unique one 409 (``Conflict``, status ``failed``: "Playlist with this title and user_id already
  exists."), a broken rule 422 (``failed``), arguments the API cannot use 422 (``invalid_args``);
- unknown arguments are ignored, as AppWorld's server ignores them;
- ``search_*`` APIs rank, they do not filter: records matching the query come first, the others
  fill the page (``rank``); pages are ``page_index`` (from 0) and ``page_limit`` (1..20,
  default 5); ``sort_by`` is ``+field`` or ``-field``, checked against the API's fields
  (``check_sort``). ``retrieve`` is AppWorld's listing order: with a query, rank, take the page,
  then sort the page; without one, sort (by ``sort_by``, else the API's default), then page.
"""

from __future__ import annotations

import hashlib
import inspect
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Annotated, Any, ClassVar, Generic, Protocol, TypeVar, get_type_hints

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from messages.probes import JsonObject, ProbeScene, ProbeStatus
from world.episodes.apps.state import EnvState, allocate_id, record_key
from world.probes.registry import ProbeContext, ToolSpec

A = TypeVar("A", bound=BaseModel)
T = TypeVar("T")
Row = dict[str, Any]

APP_PREFIX = "mcp_appworld_"
MAX_ID = 2**53
"""Ids beyond this are refused: they would not survive a JSON reader that uses doubles."""
TOKENS = "_tokens"
"""Bookkeeping key of an app's data: access token -> user id (left out of diffs)."""
USERS = "users"
LAST_LOGIN = "_last_logged_in"
"""Bookkeeping key of an app's data: user id (as text) -> the time of the last login."""
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
DATE_FORMAT = "%Y-%m-%d"
SEND_TIME_FORMAT = "%Y-%m-%d|%H:%M:%S"
MIN_DATE = "1500-01-01"
MAX_DATE = "3000-01-01"
"""AppWorld's defaults of date filters: no bound."""
MAX_INT = sys.maxsize
"""AppWorld's "no upper bound" default of number filters and of some page limits."""


class AppError(Exception):
    """A refusal of an API: its message (AppWorld's text; a list where AppWorld gives one), the
    HTTP status AppWorld would answer, and the registry status it maps to."""

    status: ClassVar[ProbeStatus] = "failed"
    code: ClassVar[int] = 422

    def __init__(self, message: str | list[str]) -> None:
        self.message = message
        self.state: EnvState | None = None
        """The state the refused call left, when it changed it anyway (another program's app
        that wrote before it failed); None: the call changed nothing."""
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


class Conflict(AppError):
    """A record that would repeat a unique one: AppWorld's database answers 409 (status
    ``failed``)."""

    code = 409


def not_found(what: str, record_id: Any) -> ToolNotFound:
    """AppWorld's message for a missing record: ``The product with id 9 does not exist.``"""
    return ToolNotFound(f"The {what} with id {record_id} does not exist.")


def natural_join(words: Iterable[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    listed = list(words)
    return listed[0] if len(listed) == 1 else f"{', '.join(listed[:-1])} and {listed[-1]}"


def check_unique(
    rows: Iterable[Row],
    model: str,
    fields: Mapping[str, Any],
    *,
    but: Row | None = None,
    error: type[AppError] = Conflict,
) -> None:
    """AppWorld's unique constraint: no record of ``rows`` (but ``but``) has all of ``fields``'
    values, else ``error`` with its message, "Playlist with this title and user_id already exists."
    (the field names in the order given)."""
    for row in rows:
        if row is not but and all(row.get(k) == v for k, v in fields.items()):
            raise error(f"{model} with this {natural_join(fields)} already exists.")


def check_owner(user: Row, record: Row, what: str) -> None:
    """AppWorld's 422 for a record of another user."""
    if record.get("user_id") != user.get("user_id"):
        raise ToolFailed(f"The given {what} does not belong to you, so you cannot access it.")


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


def page_index_field() -> int:
    result: int = Field(default=0, ge=0, description="The index of the page to return.")
    return result


def page_limit_field(maximum: int = 20, description: str = "The maximum number of results to return.") -> int:
    """``page_limit`` (default 5); a few AppWorld APIs allow up to ``MAX_INT`` to list everything."""
    result: int = Field(default=5, ge=1, le=maximum, description=description)
    return result


class PageArgs(AppArgs):
    page_index: int = page_index_field()
    page_limit: int = page_limit_field()


class AuthPageArgs(AuthArgs):
    page_index: int = page_index_field()
    page_limit: int = page_limit_field()


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def _email_address(value: str) -> str:
    value = value.strip()
    if not _EMAIL.match(value):
        raise ValueError("value is not a valid email address")
    return value


EmailAddress = Annotated[str, AfterValidator(_email_address)]
"""An email address argument (AppWorld's ``EmailStr``: a dotted domain), surrounding blanks dropped."""


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

    def get(self, app: str, collection: str, record_id: Any) -> Row | None:
        """The record of ``collection`` whose key is ``record_id``, or None."""
        rows = self.rows(app, collection)
        key = record_key(collection, rows)
        return None if key is None else next((row for row in rows if row[key] == record_id), None)

    def find(self, app: str, collection: str, record_id: Any, what: str) -> dict[str, Any]:
        """The record of ``collection`` whose key is ``record_id``; AppWorld's 409 otherwise."""
        row = self.get(app, collection, record_id)
        if row is None:
            raise not_found(what, record_id)
        return row

    def linked(self, app: str, collection: str, record_id: Any, model: str, field_name: str) -> Row:
        """The record a new ``model`` record refers to by ``field_name``; AppWorld's 422 for a
        reference to nothing ("The SongReview object is linked to a non-existent object via
        song_id=9.")."""
        row = self.get(app, collection, record_id)
        if row is None:
            raise ToolFailed(
                f"The {model} object is linked to a non-existent object via {field_name}={record_id}."
            )
        return row

    def find_by(self, app: str, collection: str, field_name: str, value: Any, what: str) -> dict[str, Any]:
        """The first record whose ``field_name`` equals ``value``; AppWorld's 409 (a list message)."""
        for row in self.rows(app, collection):
            if row.get(field_name) == value:
                return row
        raise ToolNotFound([f"The {what} with {field_name} {value} does not exist."])

    def owned(self, app: str, collection: str, record_id: Any, what: str, user: Row) -> Row:
        """A record of ``user``'s: AppWorld's 409 when it does not exist, 422 when someone else's."""
        record = self.find(app, collection, record_id, what)
        check_owner(user, record, what)
        return record

    def mine(self, app: str, collection: str, user: Row, **match: Any) -> list[Row]:
        """The records of ``collection`` that belong to ``user`` (their ``user_id``) and have the
        values of ``match``."""
        return [
            r
            for r in self.rows(app, collection)
            if r.get("user_id") == user["user_id"] and all(r.get(k) == v for k, v in match.items())
        ]

    def my(self, app: str, collection: str, user: Row, **match: Any) -> Row | None:
        """The first of ``mine``, or None."""
        return next(iter(self.mine(app, collection, user, **match)), None)

    def new_id(self, app: str, collection: str, start: int = 1) -> int:
        self.rows(app, collection)
        return allocate_id(self.app(app), collection, start)

    def insert(
        self,
        app: str,
        collection: str,
        record: Row,
        *,
        unique: tuple[str, tuple[str, ...]] | None = None,
        error: type[AppError] = Conflict,
    ) -> Row:
        """``record`` under a new id (the collection's key, first), appended to ``collection``.
        ``unique``: (the record type's name, fields) of AppWorld's unique constraint, refused as
        ``check_unique`` does."""
        if unique is not None:
            model, fields = unique
            check_unique(self.rows(app, collection), model, {f: record[f] for f in fields}, error=error)
        key = record_key(collection, ()) or f"{collection}_id"
        row = {key: self.new_id(app, collection), **record}
        self.rows(app, collection).append(row)
        return row

    def remove(self, app: str, collection: str, record: Row) -> None:
        """Take ``record`` itself out of ``collection``."""
        rows = self.rows(app, collection)
        rows[:] = [r for r in rows if r is not record]

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
        """The user with this email; AppWorld's 422 of APIs that send to people otherwise."""
        row = self.account(app, email)
        if row is None:
            raise ToolFailed(f"No user found with email {email}.")
        return row

    def user_by_email(self, app: str, email: str) -> Row:
        """The user with this email (case-insensitive); AppWorld's 409 (a list message) otherwise."""
        row = self.account(app, email)
        if row is None:
            raise ToolNotFound([f"The user with email {email} does not exist."])
        return row

    def user_by_id(self, app: str, user_id: Any) -> Row | None:
        return next((u for u in self.rows(app, USERS) if u.get("user_id") == user_id), None)

    def person_of(self, app: str, user_id: Any) -> JsonObject:
        """``{name, email}`` of a user of ``app`` (both None when there is no such user)."""
        user = self.user_by_id(app, user_id)
        return person(user) if user is not None else {"name": None, "email": None}


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
    schema: JsonObject | None = field(default=None, repr=False)
    """The arguments' JSON Schema when another program owns them and checks them (AppWorld's own
    apps): the registry then passes the arguments as they came, as a dict, and lists this schema."""

    @property
    def validates(self) -> bool:
        """Whether the registry checks the arguments against ``args_model`` before the run."""
        return self.schema is None

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
            schema=self.schema,
        )


def app_tool(app: str, api: str, description: str, args_model: type[A], run: RunFn[A]) -> EpisodeTool[A]:
    return EpisodeTool(f"{APP_PREFIX}{app}__{api}", description, args_model, run, app)


class AppApis:
    """One app's tools in the order they are published: ``@apis.api(description)`` over a run
    function publishes it as ``<app>__<function name>``, with the argument model its second
    parameter is annotated with (what a tool table said three times: name, model, function);
    ``add`` puts in the tools the app shares with others (login, logout, flag setters)."""

    def __init__(self, app: str) -> None:
        self.app = app
        self._tools: list[EpisodeTool[Any]] = []

    def api(self, description: str) -> Callable[[RunFn[A]], RunFn[A]]:
        def publish(run: RunFn[A]) -> RunFn[A]:
            second = list(inspect.signature(run).parameters)[1]
            args_model: type[A] = get_type_hints(run)[second]
            self._tools.append(app_tool(self.app, run.__name__, description, args_model, run))  # type: ignore[attr-defined]
            return run

        return publish

    def add(self, *tools: EpisodeTool[Any]) -> None:
        self._tools.extend(tools)

    @property
    def tools(self) -> tuple[EpisodeTool[Any], ...]:
        return tuple(self._tools)


# ---------------------------------------------------------------- accounts


class LoginArgs(AppArgs):
    # A phone number written as a number is still the username AppWorld's form receives as text.
    model_config = ConfigDict(extra="ignore", frozen=True, coerce_numbers_to_str=True)

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


def login_tool(
    app: str, *, login_by: str = "email", description: str | None = None
) -> EpisodeTool[LoginArgs]:
    """``<app>__login``: the username is the user's email (``login_by``: phone_number for phone).
    The time of the login is kept (``LAST_LOGIN``) for ``show_account``."""

    def login(ctx: ToolContext, args: LoginArgs) -> JsonObject:
        wanted = args.username.strip().lower()
        for row in ctx.rows(app, USERS):
            if str(row.get(login_by, "")).lower() == wanted and row.get("password") == args.password:
                token = issue_token(ctx.app(app), app, int(row["user_id"]))
                ctx.app(app).setdefault(LAST_LOGIN, {})[str(row["user_id"])] = ctx.timestamp()
                return {"access_token": token, "token_type": "Bearer"}
        raise Unauthorized("Invalid credentials")

    return app_tool(app, "login", description or f"Login to your {app} account.", LoginArgs, login)


def logout_tool(app: str) -> EpisodeTool[AuthArgs]:
    def logout(ctx: ToolContext, args: AuthArgs) -> JsonObject:
        ctx.user(app, args.access_token)
        ctx.app(app)[TOKENS].pop(args.access_token, None)
        return {"message": "Successfully logged out."}

    return app_tool(app, "logout", f"Logout from your {app} account.", AuthArgs, logout)


def profile(user: Row) -> JsonObject:
    """AppWorld's public profile of a user (``show_profile``, ``search_users``)."""
    return pick(user, "first_name", "last_name", "email", "registered_at")


def show_account_tool(
    app: str, description: str, extra: Callable[[ToolContext, Row], JsonObject] | None = None
) -> EpisodeTool[AuthArgs]:
    """``<app>__show_account``: the caller's profile, last login and verification (and what
    ``extra`` adds, e.g. amazon's ``is_prime``)."""

    def show_account(ctx: ToolContext, args: AuthArgs) -> JsonObject:
        user = ctx.user(app, args.access_token)
        registered = user.get("registered_at")
        last = (
            ctx.app(app).get(LAST_LOGIN, {}).get(str(user["user_id"]), user.get("last_logged_in", registered))
        )
        account: JsonObject = profile(user)
        account |= {"last_logged_in": last, "verified": bool(user.get("verified", True))}
        return account | extra(ctx, user) if extra is not None else account

    return app_tool(app, "show_account", description, AuthArgs, show_account)


class ProfileArgs(AppArgs):
    email: EmailAddress | None = Field(
        default=None, description="Email of the user whose public profile to show."
    )


def show_profile_tool(app: str, description: str) -> EpisodeTool[ProfileArgs]:
    """``<app>__show_profile``: a user's public profile, by email."""

    def show_profile(ctx: ToolContext, args: ProfileArgs) -> JsonObject:
        if args.email is None:
            raise ToolFailed("Either email or phone_number must be provided.")
        user = ctx.account(app, args.email)
        if user is None:
            raise ToolFailed("Account for this email does not exist.")
        return profile(user)

    return app_tool(app, "show_profile", description, ProfileArgs, show_profile)


class SearchUsersArgs(PageArgs):
    query: str = Field(default="", description="Words to look for in names and emails.")


def search_users_tool(app: str, description: str) -> EpisodeTool[SearchUsersArgs]:
    """``<app>__search_users`` without a token: public profiles, ranked by name and email."""

    def search_users(ctx: ToolContext, args: SearchUsersArgs) -> list[JsonObject]:
        found = ranked(ctx.rows(app, USERS), args.query, "first_name", "last_name", "email")
        return [profile(u) for u in page(found, args.page_index, args.page_limit)]

    return app_tool(app, "search_users", description, SearchUsersArgs, search_users)


# ---------------------------------------------------------------- search, sort, pages

_WORD = re.compile(r"[a-z0-9]+")


def search_text(*fields: Any) -> str:
    """The words of ``fields`` as one text (a list field gives each of its items)."""
    return " ".join(" ".join(map(str, f)) if isinstance(f, list | tuple) else str(f) for f in fields)


def match_score(query: str, *fields: Any) -> int:
    """How many distinct words of ``query`` begin a word of ``fields`` (case-insensitive, so
    "filter" finds "Filters" but "low" does not find "Slow"); an empty query matches everything
    with score 1."""
    words = set(_WORD.findall(query.lower()))
    if not words:
        return 1
    tokens = set(_WORD.findall(search_text(*fields).lower()))
    return sum(1 for w in words if any(t.startswith(w) for t in tokens))


def rank(items: Sequence[T], query: str, text: Callable[[T], str]) -> list[T]:
    """AppWorld's search order: items whose ``text`` matches the query first (more query words
    first), then every other item in its given order. A query ranks; it never filters."""
    if not _WORD.findall(query.lower()):
        return list(items)
    scores = [match_score(query, text(item)) for item in items]
    return [items[i] for i in sorted(range(len(items)), key=lambda i: (-scores[i], i))]


def ranked(rows: Sequence[Row], query: str, *fields: str) -> list[Row]:
    """``rank`` over the text of some fields of each record."""
    return rank(rows, query, lambda r: search_text(*(r.get(f, "") for f in fields)))


def check_sort(sort_by: str | None, fields: Sequence[str] | None = None) -> None:
    """AppWorld's refusals of a ``sort_by`` ("" and None: no sort): it must be ``+field`` or
    ``-field``, the field one of ``fields`` (any when None)."""
    if not sort_by:
        return
    if not sort_by.startswith(("+", "-")):
        raise ToolFailed("The sort_by parameter must start with + or -.")
    if fields is not None and sort_by.lstrip("+").lstrip("-") not in fields:
        raise ToolFailed(
            f"If sort_by is passed, it must be one of {', '.join(fields)} and must be prefixed with + or -."
        )


SortKey = Callable[[Row, str], Any]
"""The value a record sorts by for a field name (default: the record's field)."""


def _field(row: Row, name: str) -> Any:
    return row.get(name)


def sort_rows(
    rows: Iterable[Row], sort_by: str | None, *, key: SortKey | None = None, then_by: str | None = None
) -> list[Row]:
    """``rows`` by ``sort_by`` (``+field`` or ``-field``; None keeps the order), records without
    a value last either way, equal values in their given order, or by ``then_by`` (an id field)
    in the same direction."""
    rows = list(rows)
    if not sort_by:
        return rows
    check_sort(sort_by)
    name, reverse = sort_by.lstrip("+").lstrip("-"), sort_by.startswith("-")
    value: SortKey = key or _field
    if then_by is not None:
        rows = sorted(rows, key=lambda r: r[then_by], reverse=reverse)
    present = [r for r in rows if value(r, name) is not None]
    absent = [r for r in rows if value(r, name) is None]
    return sorted(present, key=lambda r: value(r, name), reverse=reverse) + absent


def page(rows: Sequence[T], page_index: int, page_limit: int) -> list[T]:
    start = page_index * page_limit
    return list(rows[start : start + page_limit])


class Searched(Protocol):
    """The arguments of a listing API: a query and a page (and most have a ``sort_by``)."""

    @property
    def query(self) -> str: ...
    @property
    def page_index(self) -> int: ...
    @property
    def page_limit(self) -> int: ...


def retrieve(
    items: Iterable[tuple[str, Row]],
    args: Searched,
    sorts: Sequence[str] = (),
    *,
    default_sort: str | None = None,
    key: SortKey | None = None,
    then_by: str | None = None,
) -> list[Row]:
    """AppWorld's listing of ``(search text, record)`` items by ``args``: with a query, the
    ranked page (matches first) sorted by ``sort_by``; without one, everything sorted (by
    ``sort_by``, else ``default_sort``) and then paged. ``sorts``: the fields ``args.sort_by``
    (when the API has one) may name; ``key`` and ``then_by`` as in ``sort_rows``."""
    sort_by: str | None = getattr(args, "sort_by", None)
    check_sort(sort_by, sorts)
    listed = list(items)
    if args.query.strip():
        found = [
            row for _, row in page(rank(listed, args.query, lambda i: i[0]), args.page_index, args.page_limit)
        ]
        return sort_rows(found, sort_by, key=key, then_by=then_by)
    rows = sort_rows((row for _, row in listed), sort_by or default_sort, key=key, then_by=then_by)
    return page(rows, args.page_index, args.page_limit)


# ---------------------------------------------------------------- dates


def parse_date(value: str, name: str) -> datetime:
    """A date argument, ``YYYY-MM-DD`` (or ``YYYY-MM-DDTHH:MM:SS``); AppWorld's 422 otherwise."""
    for form in (DATE_FORMAT, TIME_FORMAT):
        try:
            return datetime.strptime(value, form)
        except ValueError:
            continue
    raise ToolInvalid(f"Invalid {name} format. Use YYYY-MM-DD.")


def parse_send_time(value: str, name: str) -> str:
    """A date-time argument written ``YYYY-MM-DD|HH:MM:SS``, as a timestamp; AppWorld's 422 otherwise."""
    try:
        return datetime.strptime(value, SEND_TIME_FORMAT).strftime(TIME_FORMAT)
    except ValueError:
        raise ToolInvalid(f"Invalid {name} format. Use YYYY-MM-DD|HH:MM:SS.") from None


def stored_time(value: Any) -> datetime | None:
    """A stored time as seeds may write it (``YYYY-MM-DDTHH:MM:SS``, a bare date, or
    ``YYYY-MM-DD HH:MM``), or None."""
    if not isinstance(value, str):
        return None
    for form in (TIME_FORMAT, DATE_FORMAT, "%Y-%m-%d %H:%M"):
        try:
            return datetime.strptime(value[:19], form)
        except ValueError:
            continue
    return None


DateBounds = tuple[datetime | None, datetime | None]


def date_bounds(low: str, high: str, low_name: str, high_name: str) -> DateBounds:
    """AppWorld's date range filter: from the start of day ``low`` to the end of day ``high``;
    a bound at its default (``MIN_DATE``, ``MAX_DATE``) is no bound (None)."""
    start = parse_date(low, low_name).replace(hour=0, minute=0, second=0)
    stop = parse_date(high, high_name).replace(hour=23, minute=59, second=59)
    return (None if low == MIN_DATE else start, None if high == MAX_DATE else stop)


def in_dates(value: Any, bounds: DateBounds) -> bool:
    """Whether a stored time is within ``bounds`` (without bounds, anything is)."""
    low, high = bounds
    if low is None and high is None:
        return True
    when = stored_time(value)
    return when is not None and (low is None or when >= low) and (high is None or when <= high)


# ---------------------------------------------------------------- records


def in_range(value: Any, low: float, high: float, ignore_low: float, ignore_high: float) -> bool:
    """AppWorld's number range filter (a missing value counts as 0); a bound equal to its
    "ignore" default is no bound."""
    number = float(value or 0.0)
    if low != ignore_low and number < low:
        return False
    return not (high != ignore_high and number > high)


def singular(word: str) -> str:
    """A noun (or the last word of a phrase) in the singular, so that filters match "laptops" and
    "laptop" alike, as AppWorld's singularized filters do (a rough rule, not a dictionary)."""
    word = word.strip()
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def money(value: float) -> float:
    return round(float(value) + 0.0, 2)


def update_fields(record: Row, args: BaseModel, *fields: str) -> None:
    """Set each of ``fields`` that ``args`` gives (not None) on ``record``."""
    for name in fields:
        value = getattr(args, name)
        if value is not None:
            record[name] = value


def pick(record: Row, *fields: str) -> JsonObject:
    return {f: record.get(f) for f in fields}


def full_name(user: Row) -> str:
    return f"{user.get('first_name') or ''} {user.get('last_name') or ''}".strip()


def person(user: Row) -> JsonObject:
    """AppWorld's short form of a user: ``{name, email}``."""
    return {"name": full_name(user), "email": user.get("email")}
