"""AppWorld's own apps served as JSON: a program run by AppWorld's python, never imported by ours.

    <appworld venv>/bin/python actors/appworld/service.py [--host 127.0.0.1 --port 0 | --uds PATH]
        --ready-file F [--data DIR] [--random-seed 100]

It imports only the standard library, ``appworld`` and what AppWorld's venv carries (fastapi,
uvicorn, httpx, sqlmodel, pydantic 1, freezegun). The world lives in in-memory SQLite databases
made by AppWorld's own ``set_local_dbs`` (one per app); with ``--data DIR`` (AppWorld's downloaded
data: ``DIR/data/base_dbs``, ``DIR/base_dbs`` or the base_dbs directory itself) they start as
copies of its base databases, otherwise empty. Once the apps are imported, the databases made and
the socket listening, the ready file is written atomically: ``{"url": "http://127.0.0.1:PORT" |
"unix:PATH", "pid", "appworld_version", "apps"}``. SIGTERM or SIGINT ends it cleanly.

Endpoints (JSON; every error is ``{"message": ...}`` with a 4xx/5xx status):

- ``GET /health`` -> ``{"ok": true, "appworld_version", "apps", "pid"}``.
- ``GET /apis`` -> ``{"apis": [...]}``: ``prepare_api_docs(app, format="standard")`` of every app
  but ``admin`` (AppWorld's bank, not the assistant's), unchanged.
- ``POST /call`` ``{"app", "api", "args"}`` -> ``{"status_code", "response", "changed"[, "state"]}``:
  the request goes through AppWorld's own main app (``build_main_app``) in this process, built the
  way AppWorld's ``Requester`` builds it (path parameters into the path, ``access_token`` into the
  Authorization header, login as a form, query parameters for GET and DELETE, a JSON body
  otherwise; a null query parameter is left out, as an HTTP client does), so status and answer are
  its HTTP API's: its 422 validation messages, 401 for a bad token, 404, 409. ``changed`` compares
  the apps' SQLite ``total_changes`` before and after (a read-only call pays for no dump);
  ``state`` (the ``/state`` dump) comes only when the call changed something. An unknown app or API
  answers ``status_code`` 404 with AppWorld's own message. An exception inside AppWorld answers
  HTTP 500 ``{"message": <one line>, "changed"[, "state"]}`` and the service keeps serving.
- ``GET /state`` -> ``{"apps": {app: {table: [records]}}}`` (below).
- ``PUT /state`` ``{"apps": ...}`` -> ``{"ok": true, "records": N}``: the whole world replaced by
  exactly those records (an app or table left out is emptied). A malformed record answers 422 with
  a one-line reason naming app, table and record id, and the previous world stays as it was.
- ``POST /seed`` ``{"seed": <WorldSeed JSON>[, "merge": true]}`` -> the ``/state`` dump: the world
  back to what the service started with (empty, or AppWorld's base data with ``--data``) and the
  seed's records laid over it (``merge``: laid over the current world instead, the way
  ``state.merge_app_state`` lays a task's ``app_state`` over a seed: a record with the id of one
  there replaces it). Records go in through AppWorld's models, so their validation applies; a
  refused seed (422, one line) leaves the world as it was.
- ``POST /clock`` ``{"now": "YYYY-MM-DDTHH:MM:SS"}``: AppWorld's frozen date-time (freezegun, as
  AppWorld's ``set_local_date_and_time``; the previous freezer is stopped), so ``created_at`` and the
  "current date" APIs follow the episode's virtual clock.

Access tokens are deterministic: ``set_local_random_seed(--random-seed)`` at start, as AppWorld's
environment does.

The world-state format (``/state``, ``PUT /state``) is AppWorld's tables: every table of every app
(``admin``, AppWorld's bank holding the payment cards' balances, included; ``api_docs``, AppWorld's
documentation and no state, left out) that has rows, named by the model's ``table_name``
(``tasks``, ``cart_entries``, ``order_items``, ``user_email_threads``), records ordered by id, the
primary key ``id`` renamed ``<singular>_id`` (``inflection.singularize(table) + "_id"``: tasks ->
task_id, cart_entries -> cart_entry_id), AppWorld's bookkeeping ``record_hash`` left out, values
plain JSON (date-times ``YYYY-MM-DDTHH:MM:SS``, JSON columns as lists and objects, booleans).

Seed translation (our format: world/episodes/apps/seed.py and the built-in app modules' docstrings)
to AppWorld's tables, ids kept as named:

- People: a person with an account in app X is X's user (id: ``user_id``, else the position from 1
  skipping ids taken; password: the account's, else ``sha256(f"{app}:{email}")[:16]``). AppWorld
  needs what our format may lack; deterministic defaults fill it: an empty ``last_name`` becomes
  the email's local part title-cased (``notifications@amazon.com`` -> "Notifications", as
  AppWorld's own notifier accounts are named), or the domain's first label when the local part is
  the first name (``bo@acme.com`` -> "Acme"); a contact without an email gets the email of the
  person with its phone number; a missing phone number is "1" + 9 digits of the
  email's sha256 (a notifier address gets AppWorld's own notifier number); a birthday is
  1990-01-01; times a user was registered and last logged in are 2023-01-01T09:00:00. A password
  shorter than AppWorld's 5 characters is refused, never changed. A gmail account of one of
  AppWorld's notifier addresses (``notifications@<company>.com``) also gets the file_system account
  AppWorld's notifier writes its attachments with (amazon's order receipt).
- The first person is AppWorld's supervisor (the person the assistant works for): profile and the
  passwords of their accounts whose password the seed gives.
- Payment cards (amazon, spotify, venmo) keep their ``balance`` where AppWorld keeps it: in
  ``admin`` (its bank: ``main_users`` for the card owners, ``payment_cards`` with the balance; the
  bank's ``card_name`` is the card network read from the number, or named in the card's name).
- Per app, our collections become AppWorld's tables: amazon ``reviews`` -> ``product_reviews``,
  ``questions`` -> ``product_questions``, ``question_answers`` -> ``product_question_answers``,
  ``cart_items`` -> ``cart_entries``, ``wish_list_items`` -> ``wish_list_entries``, ``orders`` with
  nested ``order_items`` -> ``orders`` + ``order_items`` (an item without
  ``expected_delivery_at``: the order's time plus the product's delivery days, at 18:00; an order
  without ``address_text`` or ``payment_card_digits``: from its address and card); products
  lacking weight or size get 1 kg and 10 x 10 x 10 in; gmail ``emails`` (addresses -> user ids,
  attachments -> ``attachments``),
  ``email_threads`` -> ``user_email_threads`` (+ one ``global_email_threads`` row per conversation:
  threads sharing an email; incoming, outgoing, senders and recipients computed as AppWorld does),
  ``drafts``; phone ``contacts``, ``text_messages`` (each user's copy -> ``user_text_messages``,
  the copies of one text -> one ``global_text_messages`` row; phone numbers -> user ids),
  ``alarms``; todoist ``projects`` (collaborators, favourite and archived ->
  ``project_collaborator_links``), ``sections``, ``tasks`` (``label_ids`` -> ``task_label_links``),
  ``sub_tasks``, ``labels``, ``task_comments`` (file names -> ``attachments``), ``notifications``;
  splitwise ``groups`` (members -> ``group_members``), ``expenses`` (``shares`` ->
  ``expense_shares``), ``payments``; spotify ``songs``, ``albums``, ``artists``, ``playlists``
  (``song_ids`` -> ``playlist_songs``), ``song_reviews``, the likes, ``library_songs`` ->
  ``user_library_songs``, ``library_albums`` -> ``user_library_albums``, ``downloaded_songs`` ->
  ``user_downloaded_songs``, ``artist_follows`` -> ``user_artist_followings``, ``music_players``;
  simple_note ``notes``. Any other collection named as an AppWorld table of that app is taken in
  the ``/state`` format. Counts AppWorld derives rather than stores (an artist's
  ``follower_count``) and our derived fields (a thread's ``subject``, ``participants``,
  ``draft_ids``; an order's ``name`` and ``paid_amount``) are not kept, nor the order of a
  playlist's songs (AppWorld lists them in its own order). Times a record lacks are the
  seed's ``start_time`` (else 2025-05-05T09:00:00, our episodes' default start). A record that
  cannot be represented is refused with a one-line reason (app, collection, id, field).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import re
import socket
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

# AppWorld's venv: FastAPI reads the endpoints' annotations from this module's globals.
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
DB_HOME = ":memory:auratown"
"""The in-memory databases' home (AppWorld names them ``<home>/<app>.db``)."""
DEFAULT_START = "2025-05-05T09:00:00"
REGISTERED_AT = "2023-01-01T09:00:00"
DEFAULT_BIRTHDAY = "1990-01-01"
PRODUCT_DEFAULTS = {"weight": 1.0, "length": 10.0, "width": 10.0, "height": 10.0}
OUR_USER_FIELDS = frozenset({"email", "phone_number", "verified"})
"""Fields of our format's users (seed.user_record) kept only in apps whose users have them."""
NOTIFIER_ADDRESS = re.compile(r"^notifications@([a-z0-9]+)\.com$")
MAX_REASON = 400


class ServiceError(Exception):
    """A request the service refuses: ``status`` and a one-line ``message``."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.message = one_line(message)
        self.status = status


def one_line(text: object) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= MAX_REASON else line[: MAX_REASON - 3] + "..."


def exception_reason(exc: BaseException) -> str:
    # anyio may wrap what the app raised in an exception group: name the first real one.
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return one_line(f"{type(exc).__name__}: {exc}")


def validation_reason(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        with contextlib.suppress(Exception):
            parts = [
                f"{'.'.join(str(x) for x in e.get('loc', ()) if x != '__root__') or 'record'}: {e.get('msg')}"
                for e in errors()
            ]
            if parts:
                return "; ".join(parts)
    return str(exc)


# ---------------------------------------------------------------- AppWorld, imported once


def import_appworld() -> None:
    """Import AppWorld and its apps (slow: a couple of seconds) into this module's globals."""
    global AW_VERSION, ALL_APPS, SERVED_APPS, STATE_APPS
    import appworld
    from appworld.apps import get_all_apps

    AW_VERSION = str(appworld.__version__)
    ALL_APPS = tuple(get_all_apps())
    SERVED_APPS = tuple(get_all_apps(skip_admin=True))
    STATE_APPS = tuple(a for a in ALL_APPS if a != "api_docs")


AW_VERSION = ""
ALL_APPS: tuple[str, ...] = ()
SERVED_APPS: tuple[str, ...] = ()
"""The apps whose APIs are served (all but ``admin``)."""
STATE_APPS: tuple[str, ...] = ()
"""The apps whose tables are the world's state (all but ``api_docs``)."""


def models_of(app: str) -> Any:
    from appworld.common.utils import import_models_module

    return import_models_module(app)


# ---------------------------------------------------------------- tables and their columns


@dataclass(frozen=True)
class Column:
    name: str
    """AppWorld's column."""
    key: str
    """The name in the state format (``id`` -> ``<singular>_id``)."""
    kind: str
    """datetime | json | bool | int | float | text"""


@dataclass(frozen=True)
class Table:
    app: str
    name: str
    model: Any
    key: str
    columns: tuple[Column, ...]
    unique_by: tuple[tuple[str, ...], ...]
    foreign_keys: tuple[tuple[str, str], ...]
    """(column, referenced table) of each ``*_id`` column."""
    id_lists: tuple[tuple[str, str], ...]
    """(JSON column of ids, referenced table) where AppWorld's naming says which table."""
    now_defaults: tuple[str, ...]
    """Date-time columns AppWorld fills with the current time when not given."""
    searchable: bool

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def where(self, record_id: object) -> str:
        return f"{self.app}.{self.name} {record_id}"


def _kind(column: Any) -> str:
    import sqlalchemy as sa

    kind = column.type
    impl = getattr(kind, "impl", None)
    if isinstance(kind, sa.JSON):
        return "json"
    if isinstance(kind, sa.Boolean):
        return "bool"
    if isinstance(kind, sa.Float):
        return "float"
    if isinstance(kind, sa.Integer):
        return "int"
    if isinstance(kind, sa.DateTime) or isinstance(impl, sa.DateTime):
        return "datetime"
    return "text"


def _describe(app: str, model: Any) -> Table:
    from appworld.common.utils import cached_singularize, modelize

    table_name = str(model.table_name)
    key = cached_singularize(table_name) + "_id"
    columns = tuple(
        Column(c.name, key if c.name == "id" else c.name, _kind(c))
        for c in model.__table__.columns
        if c.name != "record_hash"
    )
    names = {c.name for c in columns}
    if key in names:
        raise RuntimeError(f"{app}.{table_name} has a column named {key}, its key in the state format")
    foreign = tuple(
        (c.name, next(iter(c.foreign_keys)).column.table.name)
        for c in model.__table__.columns
        if c.foreign_keys
    )
    module = models_of(app)
    properties = model.schema()["properties"]
    id_lists = []
    for c in columns:
        if c.kind == "json" and c.name.endswith("_ids"):
            reference = properties.get(c.name, {}).get("reference_name", c.name)
            target = getattr(module, modelize(reference.removesuffix("_ids")), None)
            if target is not None and getattr(target, "table_name", None):
                id_lists.append((c.name, str(target.table_name)))
    now_defaults = tuple(
        name
        for name, field in model.__fields__.items()
        if name in names
        and field.default_factory is not None
        and _kind(model.__table__.c[name]) == "datetime"
    )
    return Table(
        app=app,
        name=table_name,
        model=model,
        key=key,
        columns=columns,
        unique_by=tuple(tuple(u) for u in model.unique_by),
        foreign_keys=foreign,
        id_lists=tuple(id_lists),
        now_defaults=now_defaults,
        searchable=bool(model.searchable()),
    )


TABLES: dict[str, dict[str, Table]] = {}
"""App -> table name -> Table, for every app (``api_docs`` included), in AppWorld's order."""


def describe_tables() -> None:
    for app in ALL_APPS:
        module = models_of(app)
        TABLES[app] = {}
        for _name, model in module.SQLModel.names_and_models():
            if model.is_table_model():
                table = _describe(app, model)
                TABLES[app][table.name] = table


def connection(app: str) -> sqlite3.Connection:
    conn: sqlite3.Connection = models_of(app).SQLModel.db.connection
    return conn


def engine(app: str) -> Any:
    return models_of(app).SQLModel.db.engine


def total_changes() -> int:
    """Rows written through the apps' connections since they opened (SQLite's own counter)."""
    return sum(connection(app).total_changes for app in ALL_APPS)


# ---------------------------------------------------------------- the state dump


def _plain(kind: str, value: Any) -> Any:
    if value is None:
        return None
    if kind == "datetime":
        text = str(value)
        return f"{text[:10]}T{text[11:19]}" if len(text) >= 19 else text
    if kind == "json":
        return json.loads(value) if isinstance(value, str | bytes) else value
    if kind == "bool":
        return bool(value)
    if kind == "float":
        return float(value)
    if kind == "int":
        return int(value)
    return value


def dump_table(table: Table) -> list[dict[str, Any]]:
    names = ", ".join(f'"{c.name}"' for c in table.columns)
    rows = connection(table.app).execute(f'SELECT {names} FROM "{table.name}" ORDER BY id').fetchall()
    columns = table.columns
    return [{c.key: _plain(c.kind, v) for c, v in zip(columns, row, strict=True)} for row in rows]


def dump_world() -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Every table that has rows, of every app that is state, in the state format."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for app in STATE_APPS:
        for table in TABLES[app].values():
            records = dump_table(table)
            if records:
                out.setdefault(app, {})[table.name] = records
    return out


# ---------------------------------------------------------------- loading a world


class LoadError(ServiceError):
    """A record AppWorld's models refuse (422)."""


@dataclass
class Prepared:
    table: Table
    values: list[dict[str, Any]]
    """Column values as AppWorld's model made them (validated, defaults filled, hashed)."""


Origins = Mapping[tuple[str, str, int], str]
"""(app, table, id) -> the seed record a row was made from, to name it in a refusal."""


def _where(table: Table, record_id: Any, origins: Origins) -> str:
    where = table.where(record_id)
    origin = origins.get((table.app, table.name, record_id)) if isinstance(record_id, int) else None
    return f"{where} (seed {origin})" if origin and origin != where else where


def _validated(table: Table, record: Any, index: int, origins: Origins) -> dict[str, Any]:
    if not isinstance(record, Mapping):
        raise LoadError(f"{table.app}.{table.name} record #{index}: a record is an object, not {record!r}")
    record_id = record.get(table.key)
    where = _where(table, record_id, origins)
    if type(record_id) is not int or record_id < 1:
        raise LoadError(f"{where}: {table.key} must be a positive integer, not {record_id!r}")
    names = set(table.column_names)
    kwargs: dict[str, Any] = {"id": record_id}
    for field, value in record.items():
        if field in (table.key, "record_hash"):
            continue
        if field == "id" or field not in names:
            raise LoadError(f"{where}: {field} is not a field of AppWorld's {table.app}.{table.name}")
        kwargs[field] = value
    try:
        obj = table.model.create(**kwargs)
        obj.set_record_hash()
    except (ValueError, TypeError, AttributeError) as exc:
        raise LoadError(f"{where}: {validation_reason(exc)}") from None
    values = {name: getattr(obj, name) for name in table.column_names}
    values["record_hash"] = obj.record_hash
    return values


def _json_key(value: Any) -> Any:
    return json.dumps(value, sort_keys=True, default=str) if isinstance(value, list | dict) else value


def _check_unique(prepared: Prepared, origins: Origins) -> None:
    table = prepared.table
    seen_ids: set[int] = set()
    seen: dict[tuple[str, ...], dict[tuple[Any, ...], int]] = {u: {} for u in table.unique_by}
    for values in prepared.values:
        record_id = values["id"]
        where = _where(table, record_id, origins)
        if record_id in seen_ids:
            raise LoadError(f"{where}: two records have {table.key} {record_id}")
        seen_ids.add(record_id)
        for fields, taken in seen.items():
            combo = tuple(_json_key(values.get(f)) for f in fields)
            if any(v is None for v in combo):
                continue  # SQLite lets NULLs repeat in a unique constraint
            if combo in taken:
                shown = ", ".join(f"{f}={values.get(f)!r}" for f in fields)
                raise LoadError(
                    f"{where}: {shown} is taken by {table.key} {taken[combo]}; AppWorld keeps it unique"
                )
            taken[combo] = record_id


def prepare_world(apps: Any, origins: Origins | None = None) -> list[Prepared]:
    """The records of a state-format world, each validated by its AppWorld model."""
    origins = origins or {}
    if not isinstance(apps, Mapping):
        raise LoadError("apps must map app names to their tables")
    out: list[Prepared] = []
    for app, tables in apps.items():
        if app not in STATE_APPS:
            known = ", ".join(STATE_APPS)
            raise LoadError(f"{app}: not an app whose tables are world state (one of {known})")
        if not isinstance(tables, Mapping):
            raise LoadError(f"{app}: must map table names to lists of records")
        for name, records in tables.items():
            table = TABLES[app].get(name)
            if table is None:
                raise LoadError(f"{app}.{name}: AppWorld's {app} app has no table {name}")
            if not isinstance(records, list):
                raise LoadError(f"{app}.{name}: must be a list of records")
            values = [_validated(table, r, i, origins) for i, r in enumerate(records)]
            prepared = Prepared(table, values)
            _check_unique(prepared, origins)
            out.append(prepared)
    return out


def snapshot() -> dict[str, sqlite3.Connection]:
    """A copy of every app's database (SQLite's backup, in memory)."""
    copies: dict[str, sqlite3.Connection] = {}
    for app in ALL_APPS:
        copy = sqlite3.connect(":memory:", check_same_thread=False)
        connection(app).backup(copy)
        copies[app] = copy
    return copies


def restore(copies: Mapping[str, sqlite3.Connection]) -> None:
    for app, copy in copies.items():
        live = connection(app)
        with contextlib.suppress(sqlite3.Error):
            live.rollback()
        copy.backup(live)


@contextlib.contextmanager
def restorable() -> Iterator[None]:
    """The apps' databases put back as they were when the block raises."""
    copies = snapshot()
    try:
        yield
    except BaseException:
        restore(copies)
        raise
    finally:
        for copy in copies.values():
            copy.close()


def clear_tables(apps: Iterable[str]) -> None:
    for app in apps:
        conn = connection(app)
        for table in TABLES[app].values():
            if table.searchable:
                conn.execute(f'DELETE FROM "{table.name}_fts"')
            conn.execute(f'DELETE FROM "{table.name}"')
        with contextlib.suppress(sqlite3.OperationalError):  # no AUTOINCREMENT table yet
            conn.execute("DELETE FROM sqlite_sequence")
        conn.commit()


def insert(prepared: list[Prepared]) -> None:
    by_app: dict[str, list[Prepared]] = {}
    for p in prepared:
        if p.values:
            by_app.setdefault(p.table.app, []).append(p)
    for app, items in by_app.items():
        with engine(app).begin() as conn:
            for p in items:
                conn.execute(p.table.model.__table__.insert(), p.values)


def check_references(prepared: list[Prepared], origins: Origins) -> None:
    """Every id a record names exists (AppWorld's models check this on each save)."""
    for p in prepared:
        table = p.table
        if not p.values:
            continue
        conn = connection(table.app)
        ids_of: dict[str, set[int]] = {}

        def ids(
            target: str, conn: sqlite3.Connection = conn, ids_of: dict[str, set[int]] = ids_of
        ) -> set[int]:
            if target not in ids_of:
                ids_of[target] = {r[0] for r in conn.execute(f'SELECT id FROM "{target}"')}
            return ids_of[target]

        for values in p.values:
            for column, target in table.foreign_keys:
                value = values.get(column)
                if value is not None and value not in ids(target):
                    raise LoadError(
                        f"{_where(table, values['id'], origins)}: {column} {value} names no record of "
                        f"{table.app}.{target}"
                    )
            for column, target in table.id_lists:
                for value in values.get(column) or []:
                    if value not in ids(target):
                        raise LoadError(
                            f"{_where(table, values['id'], origins)}: {column} names {value}, no record "
                            f"of {table.app}.{target}"
                        )


def rebuild_search_text(apps: Iterable[str]) -> None:
    """AppWorld's full-text index (``<table>_fts``) of every searchable table, as its saves write it.

    Every table's text is read through AppWorld's models before anything is written: a read
    through the models rolls back what this connection has not committed yet."""
    for app in apps:
        texts: dict[str, list[tuple[int, str]]] = {}
        for table in TABLES[app].values():
            if not table.searchable:
                continue
            rows = []
            for record in table.model.all():
                try:
                    text = " ".join(record.computed_search_text.strip().lower().split())
                except Exception as exc:  # noqa: BLE001 - any failure names the record
                    raise LoadError(f"{table.where(record.id)}: {exception_reason(exc)}") from None
                rows.append((record.id, text))
            texts[table.name] = rows
        conn = connection(app)
        for name, rows in texts.items():
            conn.execute(f'DELETE FROM "{name}_fts"')
            conn.executemany(f'INSERT INTO "{name}_fts" (id, saved_search_text) VALUES (?, ?)', rows)
        conn.commit()


def load_world(apps: Any, origins: Origins | None = None) -> int:
    """Replace the world (every state app) with ``apps``; the number of records. A refusal leaves
    the previous world as it was."""
    origins = origins or {}
    prepared = prepare_world(apps, origins)
    with restorable():
        clear_tables(STATE_APPS)
        try:
            insert(prepared)
        except Exception as exc:  # noqa: BLE001 - a constraint SQLite enforces, said in one line
            raise LoadError(f"the records could not be stored: {exception_reason(exc)}") from None
        check_references(prepared, origins)
        rebuild_search_text(STATE_APPS)
    return sum(len(p.values) for p in prepared)


def fill_api_docs(docs: list[dict[str, Any]]) -> None:
    """AppWorld's api_docs app reads its ``api_docs`` table: fill it from the docs when empty
    (AppWorld's base data has it filled)."""
    table = TABLES["api_docs"]["api_docs"]
    if connection("api_docs").execute('SELECT COUNT(*) FROM "api_docs"').fetchone()[0]:
        return
    records = [
        {
            table.key: i,
            "app_name_": d["app_name"],
            "api_name": d["api_name"],
            "path": d["path"],
            "method": d["method"],
            "description": d["description"],
            "parameters": d["parameters"],
            "response_schemas": d["response_schemas"],
        }
        for i, d in enumerate(docs, start=1)
    ]
    values = [_validated(table, r, i, {}) for i, r in enumerate(records)]
    insert([Prepared(table, values)])
    rebuild_search_text(["api_docs"])


# ---------------------------------------------------------------- the seed format, translated


class SeedError(ServiceError):
    """A seed record AppWorld cannot represent (422)."""


Row = dict[str, Any]


class World:
    """AppWorld's records of a world being built: app -> table -> id -> row (AppWorld's column
    names, ``id`` included), with where each row came from in the seed."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[str, dict[int, Row]]] = {}
        self.origins: dict[tuple[str, str, int], str] = {}
        self._next: dict[tuple[str, str], int] = {}

    @classmethod
    def from_state(cls, apps: Mapping[str, Mapping[str, list[Mapping[str, Any]]]]) -> World:
        world = cls()
        for app, tables in apps.items():
            for name, records in tables.items():
                table = TABLES[app][name]
                for record in records:
                    row = {("id" if k == table.key else k): v for k, v in record.items()}
                    world.rows(app, name)[int(row["id"])] = row
        return world

    def rows(self, app: str, table: str) -> dict[int, Row]:
        if table not in TABLES.get(app, {}):
            raise RuntimeError(f"no AppWorld table {app}.{table}")
        return self.tables.setdefault(app, {}).setdefault(table, {})

    def put(self, app: str, table: str, row: Row, origin: str | None = None) -> None:
        self.rows(app, table)[int(row["id"])] = row
        if origin:
            self.origins[(app, table, int(row["id"]))] = origin

    def new_id(self, app: str, table: str) -> int:
        rows = self.rows(app, table)
        start = max(self._next.get((app, table), 1), max(rows, default=0) + 1)
        self._next[(app, table)] = start + 1
        return start

    def add(self, app: str, table: str, row: Row, origin: str | None = None) -> int:
        row = {"id": self.new_id(app, table), **row}
        self.put(app, table, row, origin)
        return int(row["id"])

    def drop(self, app: str, table: str, field: str, values: Iterable[Any]) -> None:
        """Remove the rows whose ``field`` is one of ``values``: the children (links, items,
        shares) of records a seed replaces, which the seed's records bring anew."""
        wanted = set(values)
        rows = self.rows(app, table)
        for row_id in [i for i, r in rows.items() if r.get(field) in wanted]:
            del rows[row_id]

    def state(self) -> dict[str, dict[str, list[dict[str, Any]]]]:
        out: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for app, tables in self.tables.items():
            for name, rows in tables.items():
                if not rows:
                    continue
                key = TABLES[app][name].key
                out.setdefault(app, {})[name] = [
                    {(key if k == "id" else k): v for k, v in rows[i].items()} for i in sorted(rows)
                ]
        return out


@dataclass(frozen=True)
class Person:
    user_id: int
    first_name: str
    last_name: str
    email: str
    phone_number: str | None
    accounts: dict[str, str | None]


def unknown_password(app: str, email: str) -> str:
    """As world/episodes/apps/seed.py: the password of an account nobody was told."""
    return hashlib.sha256(f"{app}:{email}".encode()).hexdigest()[:16]


def default_last_name(email: str, first_name: str = "") -> str:
    """A last name for one AppWorld needs and the seed lacks: the email's local part, title-cased
    (notifications@amazon.com -> Notifications, as AppWorld names its notifier accounts), or the
    domain's first label when the local part is the first name (bo@acme.com -> Acme)."""
    local, _, domain = email.partition("@")
    for part in (local, domain):
        word = next((w for w in re.split(r"[^A-Za-z0-9]+", part) if w), "")
        if word and word.lower() != first_name.strip().lower():
            return word[:1].upper() + word[1:].lower()
    return "Person"


def notifier_company(email: str) -> str | None:
    """The company an AppWorld notifier address sends for (notifications@amazon.com -> Amazon)."""
    match = NOTIFIER_ADDRESS.match(email.lower())
    return match.group(1).capitalize() if match else None


def default_phone(email: str) -> str:
    company = notifier_company(email)
    if company is not None:
        from appworld.apps.api_lib import CompanyNotifier

        return str(CompanyNotifier(company).phone_number)
    digits = int(hashlib.sha256(email.lower().encode()).hexdigest(), 16) % 10**9
    return f"1{digits:09d}"


def file_content(name: str) -> str:
    """A file our format names but does not hold: AppWorld's binary placeholder, deterministic."""
    return f"binary:{hashlib.sha256(name.encode()).hexdigest()[:10]}..."


def _text(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise SeedError(f"{where}: expected text, not {value!r}")


def parse_people(raw: Any) -> list[Person]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise SeedError("seed.people must be a list")
    taken = {p.get("user_id") for p in raw if isinstance(p, Mapping) and p.get("user_id") is not None}
    people: list[Person] = []
    next_id = 1
    for i, p in enumerate(raw):
        where = f"seed.people #{i + 1}"
        if not isinstance(p, Mapping):
            raise SeedError(f"{where}: a person is an object")
        email = p.get("email")
        first = p.get("first_name")
        if not isinstance(email, str) or "@" not in email or not isinstance(first, str) or not first:
            raise SeedError(f"{where}: a person needs first_name and email")
        where = f"seed.people {email}"
        user_id = p.get("user_id")
        if user_id is None:
            while next_id in taken:
                next_id += 1
            user_id = next_id
            taken.add(user_id)
            next_id += 1
        if type(user_id) is not int or user_id < 1:
            raise SeedError(f"{where}: user_id must be a positive integer")
        accounts_raw = p.get("accounts") or {}
        if isinstance(accounts_raw, list | tuple):
            accounts_raw = dict.fromkeys(accounts_raw)
        if not isinstance(accounts_raw, Mapping):
            raise SeedError(f"{where}: accounts must name apps (with passwords)")
        accounts = {
            str(app): (None if pw is None else _text(pw, f"{where} accounts.{app}"))
            for app, pw in accounts_raw.items()
        }
        phone = p.get("phone_number")
        people.append(
            Person(
                user_id=user_id,
                first_name=first,
                last_name=str(p.get("last_name") or ""),
                email=email,
                phone_number=None if phone is None else _text(phone, f"{where} phone_number"),
                accounts=accounts,
            )
        )
    return people


class Translator:
    """Our seed format laid onto a World of AppWorld's tables."""

    def __init__(self, world: World, start_time: str, people: list[Person]) -> None:
        self.world = world
        self.start_time = start_time
        self.people_list = people
        self.cards: list[tuple[str, Row, Any, str]] = []
        """(app, card row, balance, where) of each payment card the seed names, for the bank."""

    # ------------------------------------------------------------ helpers

    def table(self, app: str, name: str) -> Table:
        return TABLES[app][name]

    def fill_times(self, app: str, name: str, row: Row) -> Row:
        """Date-times AppWorld would set to 'now' are the seed's time, so a seed is deterministic."""
        for column in self.table(app, name).now_defaults:
            if row.get(column) is None:
                row[column] = self.start_time
        return row

    def put(self, app: str, name: str, row: Row, origin: str) -> None:
        self.world.put(app, name, self.fill_times(app, name, row), origin)

    def add(self, app: str, name: str, row: Row, origin: str) -> int:
        return self.world.add(app, name, self.fill_times(app, name, row), origin)

    def user_by(self, app: str, field: str, value: str, where: str) -> int:
        wanted = value.lower() if field == "email" else value
        for row_id, row in self.world.rows(app, "users").items():
            have = row.get(field)
            if isinstance(have, str) and (have.lower() if field == "email" else have) == wanted:
                return row_id
        raise SeedError(f"{where}: no {app} user has {field} {value}")

    def name_of(self, app: str, user_id: int) -> tuple[str, str]:
        row = self.world.rows(app, "users").get(user_id)
        if row is None:
            raise SeedError(f"{app}: no user {user_id}")
        return str(row.get("email", "")), f"{row.get('first_name', '')} {row.get('last_name', '')}"

    @staticmethod
    def record_id(record: Mapping[str, Any], key: str, where: str) -> int:
        value = record.get(key)
        if type(value) is not int or value < 1:
            raise SeedError(f"{where}: {key} must be a positive integer, not {value!r}")
        return value

    @staticmethod
    def take(
        record: Mapping[str, Any],
        key: str,
        where: str,
        *,
        rename: Mapping[str, str] | None = None,
        drop: Iterable[str] = (),
        columns: Iterable[str],
    ) -> Row:
        """``record`` as AppWorld's row: ``key`` -> id, renamed fields, the rest must be columns."""
        rename = rename or {}
        allowed = set(columns)
        skipped = set(drop)
        row: Row = {"id": record[key]}
        for field, value in record.items():
            if field == key or field in skipped:
                continue
            target = rename.get(field, field)
            if target not in allowed or target == "id":
                raise SeedError(f"{where}: AppWorld has no field for {field}")
            row[target] = value
        return row

    def records(self, app: str, collection: str, data: Any) -> list[Mapping[str, Any]]:
        if not isinstance(data, list) or not all(isinstance(r, Mapping) for r in data):
            raise SeedError(f"{app}.{collection}: must be a list of records")
        return data

    # ------------------------------------------------------------ people

    def user_row(self, app: str, person: Person) -> Row:
        columns = set(self.table(app, "users").column_names)
        password = person.accounts.get(app)
        password = password if password is not None else unknown_password(app, person.email)
        row: Row = {
            "id": person.user_id,
            "first_name": person.first_name,
            "last_name": person.last_name or default_last_name(person.email, person.first_name),
            "password": password,
        }
        if "email" in columns:
            row["email"] = person.email
        if "phone_number" in columns:
            row["phone_number"] = person.phone_number or default_phone(person.email)
        if "verified" in columns:
            row["verified"] = True
        for column in ("created_at", "last_logged_in"):
            if column in columns:
                row[column] = REGISTERED_AT
        return row

    def check_password(self, app: str, row: Row, where: str) -> None:
        password = row.get("password")
        if not isinstance(password, str) or len(password) < 5:
            raise SeedError(f"{where}: password: AppWorld needs at least 5 characters, not {password!r}")

    def people(self, people: list[Person]) -> None:
        for person in people:
            for app in person.accounts:
                if app not in STATE_APPS or "users" not in TABLES[app]:
                    raise SeedError(f"seed.people {person.email}: accounts.{app}: AppWorld has no app {app}")
                row = self.user_row(app, person)
                where = f"{app}.users {person.user_id} ({person.email})"
                self.check_password(app, row, where)
                self.put(app, "users", row, where)
            if (
                "gmail" in person.accounts
                and notifier_company(person.email)
                and ("file_system" not in person.accounts)
            ):
                # AppWorld's notifier writes a mail's attachments (amazon's receipt) as this user.
                row = self.user_row("file_system", person)
                self.put("file_system", "users", row, f"file_system.users {person.user_id} ({person.email})")

    def explicit_users(self, app: str, data: Any) -> None:
        columns = self.table(app, "users").column_names
        for record in self.records(app, "users", data):
            where = f"{app}.users {record.get('user_id')}"
            record_id = self.record_id(record, "user_id", where)
            row = self.take(
                {k: v for k, v in record.items() if k not in OUR_USER_FIELDS or k in columns},
                "user_id",
                where,
                rename={"registered_at": "created_at"},
                columns=columns,
            )
            if not row.get("last_name"):
                row["last_name"] = default_last_name(
                    str(row.get("email") or ""), str(row.get("first_name") or "")
                )
            if "phone_number" in columns and not row.get("phone_number"):
                row["phone_number"] = default_phone(str(record.get("email") or record_id))
            row.setdefault("created_at", REGISTERED_AT)
            if "last_logged_in" in columns:
                row.setdefault("last_logged_in", row["created_at"])
            if "verified" in columns:
                row.setdefault("verified", True)  # as our format's users are (seed.user_record)
            self.check_password(app, row, where)
            self.put(app, "users", row, where)

    def supervisor(self, person: Person) -> None:
        row = {
            "id": person.user_id,
            "first_name": person.first_name,
            "last_name": person.last_name or default_last_name(person.email, person.first_name),
            "email": person.email,
            "phone_number": person.phone_number or default_phone(person.email),
            "birthday": DEFAULT_BIRTHDAY,
        }
        self.put("supervisor", "supervisors", row, f"seed.people {person.email}")
        for app, password in person.accounts.items():
            if password is not None and len(password) >= 5:
                self.add(
                    "supervisor",
                    "account_passwords",
                    {"supervisor_id": person.user_id, "account_name": app, "password": password},
                    f"seed.people {person.email} accounts.{app}",
                )

    # ------------------------------------------------------------ generic

    def generic(self, app: str, name: str, data: Any) -> None:
        """A collection named as an AppWorld table, in the state format."""
        table = self.table(app, name)
        for record in self.records(app, name, data):
            where = f"{app}.{name} {record.get(table.key)}"
            self.record_id(record, table.key, where)
            row = self.take(record, table.key, where, columns=table.column_names)
            self.put(app, name, row, where)

    def direct(
        self,
        app: str,
        collection: str,
        data: Any,
        *,
        table: str | None = None,
        rename: Mapping[str, str] | None = None,
        drop: Iterable[str] = (),
        key: str | None = None,
    ) -> list[tuple[Mapping[str, Any], Row]]:
        """Records that are rows of one table but for their key (and a few renamed fields)."""
        name = table or collection
        key = key or (collection[:-1] if collection.endswith("s") else collection) + "_id"
        out = []
        for record in self.records(app, collection, data):
            where = f"{app}.{collection} {record.get(key)}"
            self.record_id(record, key, where)
            row = self.take(
                record, key, where, rename=rename, drop=drop, columns=self.table(app, name).column_names
            )
            self.put(app, name, row, where)
            out.append((record, row))
        return out

    # ------------------------------------------------------------ amazon

    def amazon(self, collection: str, data: Any) -> bool:
        app = "amazon"
        if collection == "sellers":
            self.direct(app, collection, data)
        elif collection == "products":
            for _record, row in self.direct(app, collection, data):
                for field, value in PRODUCT_DEFAULTS.items():
                    if row.get(field) is None:
                        row[field] = value
                if row.get("inventory_quantity") is None:
                    row["inventory_quantity"] = 0
        elif collection == "reviews":
            self.direct(app, collection, data, table="product_reviews")
        elif collection == "questions":
            self.direct(app, collection, data, table="product_questions")
        elif collection == "question_answers":
            self.direct(
                app,
                collection,
                data,
                table="product_question_answers",
                rename={"question_id": "product_question_id"},
            )
        elif collection == "cart_items":
            self.direct(app, collection, data, table="cart_entries")
        elif collection == "wish_list_items":
            self.direct(app, collection, data, table="wish_list_entries")
        elif collection == "payment_cards":
            self.payment_cards(app, data)
        elif collection == "addresses":
            self.direct(app, collection, data, key="address_id")
        elif collection == "orders":
            self.orders(data)
        elif collection == "prime_subscriptions":
            self.direct(app, collection, data)
        else:
            return False
        return True

    def amazon_products_derived(self) -> None:
        """has_variations (products sharing a name) and seller_rating, as AppWorld keeps them."""
        products = self.world.rows("amazon", "products")
        sellers = self.world.rows("amazon", "sellers")
        names: dict[str, int] = {}
        for row in products.values():
            names[str(row.get("name"))] = names.get(str(row.get("name")), 0) + 1
        for row in products.values():
            row["has_variations"] = names[str(row.get("name"))] > 1
            seller = sellers.get(row.get("seller_id"))
            if seller is not None and row.get("seller_rating") is None:
                row["seller_rating"] = seller.get("rating") or 0

    def orders(self, data: Any) -> None:
        app = "amazon"
        new = self.direct(app, "orders", data, drop=("order_items", "name", "paid_amount"))
        self.world.drop(app, "order_items", "order_id", [row["id"] for _, row in new])
        for record, row in new:
            where = f"amazon.orders {row['id']}"
            if not row.get("address_text") and row.get("address_id") is not None:
                address = self.world.rows(app, "addresses").get(row["address_id"])
                if address is not None:
                    from appworld.common.utils import address_to_text

                    row["address_text"] = address_to_text(
                        street_address=address.get("street_address"),
                        city=address.get("city"),
                        state=address.get("state"),
                        country=address.get("country"),
                        zip_code=address.get("zip_code"),
                    )
            if not row.get("payment_card_digits") and row.get("payment_card_id") is not None:
                card = self.world.rows(app, "payment_cards").get(row["payment_card_id"])
                if card is not None:
                    row["payment_card_digits"] = str(card.get("card_number"))[-4:]
            items = record.get("order_items") or []
            if not isinstance(items, list):
                raise SeedError(f"{where}: order_items must be a list")
            created = str(row.get("created_at") or self.start_time)
            columns = self.table(app, "order_items").column_names
            for i, item in enumerate(items):
                item_where = f"{where} order_items.{i}"
                if not isinstance(item, Mapping):
                    raise SeedError(f"{item_where}: an order item is an object")
                item_row = self.take({"_": 0, **item}, "_", item_where, columns=columns)
                del item_row["id"]
                item_row["order_id"] = row["id"]
                item_row.setdefault("returned_quantity", 0)
                item_row.setdefault("gift_wrap_quantity", 0)
                if item_row.get("expected_delivery_at") is None:
                    product = self.world.rows(app, "products").get(item_row.get("product_id"))
                    days = int(product.get("delivery_days") or 0) if product else 0
                    at = datetime.strptime(created[:19], TIME_FORMAT) + timedelta(days=days)
                    item_row["expected_delivery_at"] = at.replace(hour=18, minute=0, second=0).strftime(
                        TIME_FORMAT
                    )
                self.add(app, "order_items", item_row, item_where)

    # ------------------------------------------------------------ payment cards and the bank

    def payment_cards(self, app: str, data: Any) -> None:
        for record in self.records(app, "payment_cards", data):
            where = f"{app}.payment_cards {record.get('payment_card_id')}"
            self.record_id(record, "payment_card_id", where)
            row = self.take(
                record, "payment_card_id", where, drop=("balance",),
                columns=self.table(app, "payment_cards").column_names,
            )  # fmt: skip
            self.put(app, "payment_cards", row, where)
            self.cards.append((app, row, record.get("balance"), where))

    def bank(self, people: Mapping[int, Person]) -> None:
        """Each payment card in AppWorld's bank (the admin app), with its balance and owner."""
        from appworld.apps.admin.constants import CARD_NAME_LITERAL

        networks: tuple[str, ...] = tuple(CARD_NAME_LITERAL.__args__)
        bank = self.world.rows("admin", "payment_cards")
        by_number = {str(r.get("card_number")): r for r in bank.values()}
        balances: dict[str, float] = {}
        """Card number -> the balance this seed gives it (one card may be in several apps)."""
        for app, row, given, where in self.cards:
            number = str(row.get("card_number"))
            balance = 0.0 if given is None else given
            if not isinstance(balance, int | float) or isinstance(balance, bool):
                raise SeedError(f"{where}: balance must be a number, not {balance!r}")
            if number in balances and abs(balances[number] - float(balance)) > 1e-9:
                raise SeedError(
                    f"{where}: card {number} has balance {balances[number]} elsewhere in the seed"
                )
            balances[number] = float(balance)
            owner = self.main_user(app, row.get("user_id"), people, where)
            owner_name = row.get("owner_name")
            known = by_number.get(number)
            used = {
                r.get("card_name")
                for r in bank.values()
                if r.get("owner_name") == owner_name and r is not known
            }
            wanted = card_network(number, str(row.get("card_name") or ""))
            choices = [n for n in (wanted, *networks) if n is not None and n not in used]
            if not choices:
                raise SeedError(f"{where}: AppWorld's bank keeps one card per network per owner")
            if known is not None:
                bank_id = known["id"]
            elif row["id"] not in bank:
                bank_id = row["id"]
            else:
                bank_id = self.world.new_id("admin", "payment_cards")
            bank_row: Row = {
                "id": bank_id,
                "main_user_id": owner,
                "owner_name": owner_name,
                "card_name": choices[0],
                "card_number": row.get("card_number"),
                "expiry_year": row.get("expiry_year"),
                "expiry_month": row.get("expiry_month"),
                "cvv_number": row.get("cvv_number"),
                "balance": float(balance),
            }
            self.world.put("admin", "payment_cards", bank_row, f"{where} (its bank card)")
            by_number[number] = bank_row

    def main_user(self, app: str, user_id: Any, people: Mapping[int, Person], where: str) -> int:
        main_users = self.world.rows("admin", "main_users")
        if user_id in main_users:
            return int(user_id)
        person = people.get(user_id) if isinstance(user_id, int) else None
        if person is not None:
            first, last, email, phone = (
                person.first_name, person.last_name, person.email, person.phone_number
            )  # fmt: skip
        else:
            user = self.world.rows(app, "users").get(user_id) if isinstance(user_id, int) else None
            if user is None:
                raise SeedError(f"{where}: user_id {user_id!r} is no {app} user")
            first, last = str(user.get("first_name")), str(user.get("last_name") or "")
            email, phone = str(user.get("email") or f"user{user_id}@{app}.example"), None
        for other in main_users.values():
            if other.get("first_name") == first:
                raise SeedError(
                    f"{where}: AppWorld's bank keeps one card owner per first name; {first} is "
                    f"user {other['id']} there already"
                )
        self.world.put(
            "admin",
            "main_users",
            {
                "id": user_id,
                "first_name": first,
                "last_name": last or default_last_name(email, first),
                "email": email,
                "phone_number": phone or default_phone(email),
                "birthday": DEFAULT_BIRTHDAY,
            },
            f"{where} (its owner in AppWorld's bank)",
        )
        return int(user_id)

    # ------------------------------------------------------------ gmail

    def gmail(self, collection: str, data: Any) -> bool:
        if collection == "emails":
            self.emails(data)
        elif collection == "email_threads":
            self.email_threads(data)
        elif collection == "drafts":
            self.drafts(data)
        else:
            return False
        return True

    def attachments(self, where: str, owner: str, owner_id: int, items: Any, created_at: Any) -> None:
        if not items:
            return
        if not isinstance(items, list):
            raise SeedError(f"{where}: attachments must be a list")
        for i, given in enumerate(items):
            item = {"file_name": given} if isinstance(given, str) else given
            if not isinstance(item, Mapping) or not item.get("file_name"):
                raise SeedError(f"{where}: attachments.{i} needs a file_name")
            name = str(item["file_name"])
            row: Row = {
                owner: owner_id,
                "file_name": name,
                "file_content": str(item.get("file_content") or file_content(name)),
                "created_at": created_at,
            }
            if item.get("id") is not None:
                self.put("gmail", "attachments", {"id": item["id"], **row}, f"{where} attachments.{i}")
            else:
                self.add("gmail", "attachments", row, f"{where} attachments.{i}")

    def emails(self, data: Any) -> None:
        app = "gmail"
        records = self.records(app, "emails", data)
        ids = [self.record_id(r, "email_id", f"gmail.emails {r.get('email_id')}") for r in records]
        self.world.drop(app, "attachments", "email_id", ids)
        for record in records:
            where = f"gmail.emails {record['email_id']}"
            sender = record.get("sender")
            recipients = record.get("recipients") or []
            if not isinstance(sender, str):
                raise SeedError(f"{where}: sender must be an email address")
            if not isinstance(recipients, list) or not all(isinstance(x, str) for x in recipients):
                raise SeedError(f"{where}: recipients must be a list of email addresses")
            row = self.take(
                record,
                "email_id",
                where,
                drop=("sender", "recipients", "attachments"),
                columns=self.table(app, "emails").column_names,
            )
            row["sender_id"] = self.user_by(app, "email", sender, f"{where} sender")
            row["recipient_ids"] = [self.user_by(app, "email", x, f"{where} recipients") for x in recipients]
            self.put(app, "emails", row, where)
            self.attachments(where, "email_id", row["id"], record.get("attachments"), row.get("created_at"))

    def email_threads(self, data: Any) -> None:
        """Each user's thread, and one AppWorld global thread per conversation (the user threads
        that share an email: every participant has their own thread)."""
        app = "gmail"
        threads = self.world.rows(app, "user_email_threads")
        globals_ = self.world.rows(app, "global_email_threads")
        emails = self.world.rows(app, "emails")
        before = {i: r.get("global_email_thread_id") for i, r in threads.items()}
        derived = ("draft_ids", "subject", "participants", "incoming", "outgoing")
        rows = [
            row
            for _, row in self.direct(app, "email_threads", data, table="user_email_threads", drop=derived)
        ]
        freed = {before[r["id"]] for r in rows if before.get(r["id"]) is not None}
        parent = {i: i for i in threads}

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        first_with: dict[int, int] = {}
        for thread_id in sorted(threads):
            for email_id in threads[thread_id].get("email_ids") or []:
                if email_id not in emails:
                    raise SeedError(f"gmail.email_threads {thread_id}: email_ids names {email_id}, no email")
                if email_id in first_with:
                    parent[find(thread_id)] = find(first_with[email_id])
                else:
                    first_with[email_id] = thread_id
        conversations: dict[int, list[Row]] = {}
        for thread_id in sorted(threads):
            conversations.setdefault(find(thread_id), []).append(threads[thread_id])
        new_ids = {row["id"] for row in rows}
        for members in conversations.values():
            if not new_ids & {m["id"] for m in members}:
                continue
            email_ids = list(dict.fromkeys(e for m in members for e in m.get("email_ids") or []))
            email_ids.sort(key=lambda e: (str(emails[e].get("created_at") or ""), e))
            times = [str(m[t]) for m in members for t in ("created_at", "updated_at") if m.get(t)]
            row = {
                "email_ids": email_ids,
                "created_at": min(times, default=None),
                "updated_at": max(times, default=None),
            }
            kept = sorted({m["global_email_thread_id"] for m in members if m.get("global_email_thread_id")})
            origin = f"gmail.email_threads {members[0]['id']} (its conversation)"
            if kept:
                global_id = kept[0]
                freed.update(kept[1:])
            else:
                global_id = self.world.new_id(app, "global_email_threads")
            self.put(app, "global_email_threads", {"id": global_id, **row}, origin)
            for m in members:
                m["global_email_thread_id"] = global_id
        still = {r.get("global_email_thread_id") for r in threads.values()}
        for global_id in freed - still:
            globals_.pop(global_id, None)
        for row in rows:
            self.thread_derived(row)

    def thread_derived(self, row: Row) -> None:
        """What UserEmailThread._pre_change computes from the thread's emails."""
        app = "gmail"
        emails = self.world.rows(app, "emails")
        mine = [emails[e] for e in row.get("email_ids") or [] if e in emails]
        row["incoming"] = any(row.get("user_id") in (e.get("recipient_ids") or []) for e in mine)
        row["outgoing"] = any(row.get("user_id") == e.get("sender_id") for e in mine)
        senders: list[str] = []
        sender_names: list[str] = []
        recipients: list[str] = []
        recipient_names: list[str] = []
        for email in mine:
            address, name = self.name_of(app, int(email["sender_id"]))
            if address not in senders:
                senders.append(address)
                sender_names.append(name)
            for recipient in email.get("recipient_ids") or []:
                address, name = self.name_of(app, int(recipient))
                if address not in recipients:
                    recipients.append(address)
                    recipient_names.append(name)
        row.update(
            sender_email_addresses=senders,
            sender_names=sender_names,
            recipient_email_addresses=recipients,
            recipient_names=recipient_names,
        )
        attachments = self.world.rows(app, "attachments").values()
        row["has_attachments"] = any(a.get("email_id") in (row.get("email_ids") or []) for a in attachments)

    def drafts(self, data: Any) -> None:
        app = "gmail"
        records = self.records(app, "drafts", data)
        ids = [self.record_id(r, "draft_id", f"gmail.drafts {r.get('draft_id')}") for r in records]
        self.world.drop(app, "attachments", "draft_id", ids)
        for record in records:
            where = f"gmail.drafts {record['draft_id']}"
            recipients = record.get("recipients") or []
            if not isinstance(recipients, list) or not all(isinstance(x, str) for x in recipients):
                raise SeedError(f"{where}: recipients must be a list of email addresses")
            row = self.take(
                record, "draft_id", where, drop=("recipients", "attachments"),
                columns=self.table(app, "drafts").column_names,
            )  # fmt: skip
            row["recipient_ids"] = [self.user_by(app, "email", x, f"{where} recipients") for x in recipients]
            named = [self.name_of(app, i) for i in row["recipient_ids"]]
            row["recipient_email_addresses"] = [a for a, _ in named]
            row["recipient_names"] = [n for _, n in named]
            self.put(app, "drafts", row, where)
            self.attachments(where, "draft_id", row["id"], record.get("attachments"), row.get("created_at"))

    # ------------------------------------------------------------ phone

    def phone(self, collection: str, data: Any) -> bool:
        if collection == "contacts":
            for _record, row in self.direct("phone", collection, data):
                if not row.get("email"):
                    row["email"] = self.email_of_phone(row.get("phone_number"), f"phone.contacts {row['id']}")
                if not row.get("last_name"):
                    row["last_name"] = default_last_name(str(row["email"]), str(row.get("first_name") or ""))
        elif collection == "text_messages":
            self.text_messages(data)
        elif collection == "alarms":
            self.direct("phone", collection, data)
        else:
            return False
        return True

    def email_of_phone(self, phone: Any, where: str) -> str:
        """A contact's missing email: the person's with that phone number."""
        for person in self.people_list:
            if phone and person.phone_number == phone:
                return person.email
        raise SeedError(f"{where}: email: AppWorld's contacts need an email address")

    def text_messages(self, data: Any) -> None:
        """Each user's copy of a text, and one AppWorld global message per text (the copies with
        the same sender, receiver, message and time)."""
        app = "phone"
        records = self.records(app, "text_messages", data)
        copies = self.world.rows(app, "user_text_messages")
        globals_ = self.world.rows(app, "global_text_messages")
        texts: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
        for record in records:
            where = f"phone.text_messages {record.get('text_message_id')}"
            self.record_id(record, "text_message_id", where)
            for field in ("sender", "receiver", "message", "user_id"):
                if record.get(field) in (None, ""):
                    raise SeedError(f"{where}: {field} is missing")
            unknown = set(record) - {"text_message_id", "user_id", "sender", "receiver", "message", "sent_at"}
            if unknown:
                raise SeedError(f"{where}: AppWorld has no field for {sorted(unknown)[0]}")
            sender = self.user_by(app, "phone_number", _text(record["sender"], where), f"{where} sender")
            receiver = self.user_by(
                app, "phone_number", _text(record["receiver"], where), f"{where} receiver"
            )
            if record["user_id"] not in (sender, receiver):
                raise SeedError(f"{where}: user_id {record['user_id']} neither sent nor received it")
            sent_at = record.get("sent_at") or self.start_time
            texts.setdefault((sender, receiver, record["message"], sent_at), []).append(record)
        replaced = {r["text_message_id"] for r in records}
        freed = {c["global_text_message_id"] for i, c in copies.items() if i in replaced}
        freed -= {c["global_text_message_id"] for i, c in copies.items() if i not in replaced}
        for global_id in freed:
            globals_.pop(global_id, None)
        existing = {
            (g.get("sender_id"), g.get("receiver_id"), g.get("message"), g.get("created_at")): i
            for i, g in globals_.items()
        }
        for key, members in sorted(texts.items(), key=lambda kv: min(r["text_message_id"] for r in kv[1])):
            sender, receiver, message, sent_at = key
            global_id = existing.get(key)
            if global_id is None:
                row = {
                    "sender_id": sender,
                    "receiver_id": receiver,
                    "message": message,
                    "created_at": sent_at,
                }
                origin = f"phone.text_messages {min(r['text_message_id'] for r in members)}"
                global_id = self.add(app, "global_text_messages", row, origin)
            for record in members:
                copy = {
                    "id": record["text_message_id"],
                    "global_text_message_id": global_id,
                    "user_id": record["user_id"],
                    "created_at": sent_at,
                }
                self.put(app, "user_text_messages", copy, f"phone.text_messages {record['text_message_id']}")

    # ------------------------------------------------------------ todoist

    def todoist(self, collection: str, data: Any) -> bool:
        app = "todoist"
        if collection == "projects":
            done = self.direct(app, collection, data, drop=("is_favorite", "is_archived", "collaborator_ids"))
            self.world.drop(app, "project_collaborator_links", "project_id", [row["id"] for _, row in done])
            for record, row in done:
                where = f"todoist.projects {row['id']}"
                collaborators = record.get("collaborator_ids") or []
                if not isinstance(collaborators, list):
                    raise SeedError(f"{where}: collaborator_ids must be a list of user ids")
                for user_id in dict.fromkeys([row.get("user_id"), *collaborators]):
                    self.add(
                        app,
                        "project_collaborator_links",
                        {
                            "project_id": row["id"],
                            "user_id": user_id,
                            "is_favorite": bool(record.get("is_favorite", False)),
                            "is_archived": bool(record.get("is_archived", False)),
                            "created_at": row.get("created_at"),
                        },
                        f"{where} collaborator {user_id}",
                    )
        elif collection == "tasks":
            done = self.direct(app, collection, data, drop=("label_ids",))
            self.world.drop(app, "task_label_links", "task_id", [row["id"] for _, row in done])
            for record, row in done:
                labels = record.get("label_ids") or []
                if not isinstance(labels, list):
                    raise SeedError(f"todoist.tasks {row['id']}: label_ids must be a list of label ids")
                for label_id in dict.fromkeys(labels):
                    self.add(
                        app,
                        "task_label_links",
                        {"task_id": row["id"], "label_id": label_id},
                        f"todoist.tasks {row['id']} label {label_id}",
                    )
        elif collection == "task_comments":
            done = self.direct(app, collection, data, drop=("attachment_file_names",))
            self.world.drop(app, "attachments", "task_comment_id", [row["id"] for _, row in done])
            for record, row in done:
                for name in record.get("attachment_file_names") or []:
                    self.add(
                        app,
                        "attachments",
                        {
                            "task_comment_id": row["id"],
                            "file_name": str(name),
                            "file_content": file_content(str(name)),
                            "created_at": row.get("created_at"),
                        },
                        f"todoist.task_comments {row['id']} attachment {name}",
                    )
        elif collection in ("sections", "sub_tasks", "labels", "notifications"):
            self.direct(app, collection, data)
        else:
            return False
        return True

    # ------------------------------------------------------------ splitwise

    def splitwise(self, collection: str, data: Any) -> bool:
        app = "splitwise"
        if collection == "groups":
            done = self.direct(app, collection, data, drop=("member_ids",))
            self.world.drop(app, "group_members", "group_id", [row["id"] for _, row in done])
            for record, row in done:
                where = f"splitwise.groups {row['id']}"
                if row.get("invitation_code") is None:
                    row["invitation_code"] = hashlib.sha256(
                        f"splitwise:group:{row['id']}".encode()
                    ).hexdigest()[:5]
                members = record.get("member_ids") or []
                if not isinstance(members, list):
                    raise SeedError(f"{where}: member_ids must be a list of user ids")
                for user_id in dict.fromkeys([row.get("user_id"), *members]):
                    self.add(
                        app,
                        "group_members",
                        {"group_id": row["id"], "user_id": user_id, "joined_at": row.get("created_at")},
                        f"{where} member {user_id}",
                    )
        elif collection == "expenses":
            done = self.direct(app, collection, data, drop=("shares",))
            self.world.drop(app, "expense_shares", "expense_id", [row["id"] for _, row in done])
            for record, row in done:
                where = f"splitwise.expenses {row['id']}"
                shares = record.get("shares") or []
                if not isinstance(shares, list):
                    raise SeedError(f"{where}: shares must be a list of {{debtor_id, debt_amount}}")
                debtors: list[Any] = []
                for i, share in enumerate(shares):
                    if not isinstance(share, Mapping) or "debtor_id" not in share:
                        raise SeedError(f"{where}: shares.{i} needs debtor_id and debt_amount")
                    amount = share.get("debt_amount", share.get("share_amount"))
                    self.add(
                        app,
                        "expense_shares",
                        {
                            "expense_id": row["id"],
                            "debtor_id": share["debtor_id"],
                            "share_amount": amount,
                            "created_at": row.get("created_at"),
                        },
                        f"{where} shares.{i}",
                    )
                    if share["debtor_id"] not in debtors:
                        debtors.append(share["debtor_id"])
                row["debtor_ids"] = debtors
                row["participant_ids"] = [row.get("payer_id"), *debtors]
                if row.get("receipt_file_name") and not row.get("receipt_file_content"):
                    name = str(row["receipt_file_name"])
                    row["receipt_file_content"] = file_content(name)
        elif collection == "payments":
            for _record, row in self.direct(app, collection, data):
                where = f"splitwise.payments {row['id']}"
                payer = self.world.rows(app, "users").get(row.get("payer_id"))
                receiver = self.world.rows(app, "users").get(row.get("receiver_id"))
                if payer is None or receiver is None:
                    raise SeedError(f"{where}: payer_id and receiver_id must be splitwise users")
                row.update(
                    payer_email=payer.get("email"),
                    payer_name=f"{payer.get('first_name')} {payer.get('last_name')}",
                    receiver_email=receiver.get("email"),
                    receiver_name=f"{receiver.get('first_name')} {receiver.get('last_name')}",
                    participant_ids=[row.get("payer_id"), row.get("receiver_id")],
                )
                if row.get("receipt_file_name") and not row.get("receipt_file_content"):
                    name = str(row["receipt_file_name"])
                    row["receipt_file_content"] = file_content(name)
        else:
            return False
        return True

    # ------------------------------------------------------------ spotify

    SPOTIFY_TABLES = {
        "library_songs": ("user_library_songs", {"added_at": "created_at"}),
        "library_albums": ("user_library_albums", {"added_at": "created_at"}),
        "downloaded_songs": ("user_downloaded_songs", {}),
        "artist_follows": ("user_artist_followings", {"followed_at": "created_at"}),
    }

    def spotify(self, collection: str, data: Any) -> bool:
        app = "spotify"
        if collection == "artists":
            self.direct(app, collection, data, drop=("follower_count",))
        elif collection == "playlists":
            done = self.direct(app, collection, data, drop=("song_ids",))
            self.world.drop(app, "playlist_songs", "playlist_id", [row["id"] for _, row in done])
            for record, row in done:
                songs = record.get("song_ids") or []
                if not isinstance(songs, list):
                    raise SeedError(f"spotify.playlists {row['id']}: song_ids must be a list of song ids")
                for song_id in songs:
                    self.add(
                        app,
                        "playlist_songs",
                        {"playlist_id": row["id"], "song_id": song_id, "added_at": row.get("created_at")},
                        f"spotify.playlists {row['id']} song {song_id}",
                    )
        elif collection in self.SPOTIFY_TABLES:
            table, rename = self.SPOTIFY_TABLES[collection]
            self.direct(app, collection, data, table=table, rename=rename)
        elif collection == "payment_cards":
            self.payment_cards(app, data)
        elif collection in (
            "songs", "albums", "song_reviews", "album_reviews", "playlist_reviews", "song_likes",
            "album_likes", "playlist_likes", "music_players",
        ):  # fmt: skip
            self.direct(app, collection, data)
        else:
            return False
        return True

    # ------------------------------------------------------------ the rest

    def simple_note(self, collection: str, data: Any) -> bool:
        if collection == "notes":
            self.direct("simple_note", collection, data)
            return True
        return False

    def venmo(self, collection: str, data: Any) -> bool:
        if collection == "payment_cards":
            self.payment_cards("venmo", data)
            return True
        return False

    ORDER = ("amazon", "gmail", "phone", "todoist", "splitwise", "spotify", "simple_note")
    """Apps whose collections refer to others' records are translated after them."""

    def apps(self, apps: Any) -> None:
        if not isinstance(apps, Mapping):
            raise SeedError("seed.apps must map app names to collections")
        handlers: dict[str, Callable[[str, Any], bool]] = {
            "amazon": self.amazon,
            "gmail": self.gmail,
            "phone": self.phone,
            "todoist": self.todoist,
            "splitwise": self.splitwise,
            "spotify": self.spotify,
            "simple_note": self.simple_note,
            "venmo": self.venmo,
        }
        for app, collections in apps.items():
            if app not in STATE_APPS:
                raise SeedError(f"seed.apps.{app}: AppWorld has no app {app}")
            if not isinstance(collections, Mapping):
                raise SeedError(f"seed.apps.{app}: must map collections to records")
            if "users" in collections:
                self.explicit_users(app, collections["users"])
        ordered = sorted(apps, key=lambda a: self.ORDER.index(a) if a in self.ORDER else len(self.ORDER))
        for app in ordered:
            # The catalogue before what refers to it (products before orders, emails before threads).
            for collection, data in sorted(apps[app].items(), key=lambda kv: _collection_rank(app, kv[0])):
                if collection == "users" or collection.startswith("_"):
                    continue
                handler = handlers.get(app)
                if handler is not None and handler(collection, data):
                    continue
                if collection in TABLES[app]:
                    self.generic(app, collection, data)
                    continue
                raise SeedError(f"seed.apps.{app}.{collection}: AppWorld's {app} app has no such collection")


_RANK = {
    "amazon": ("sellers", "products", "addresses", "payment_cards", "orders"),
    "gmail": ("emails", "email_threads", "drafts"),
    "todoist": ("projects", "sections", "labels", "tasks", "sub_tasks", "task_comments"),
    "splitwise": ("groups", "expenses", "payments"),
    "spotify": ("artists", "albums", "songs", "playlists"),
}


def _collection_rank(app: str, collection: str) -> tuple[int, str]:
    order = _RANK.get(app, ())
    return (order.index(collection) if collection in order else len(order), collection)


def card_network(number: str, name: str) -> str | None:
    """The bank's card name: the network the number belongs to, else one named in the card's name."""
    from appworld.apps.admin.constants import CARD_NAME_LITERAL

    if number.startswith("4"):
        return "Visa"
    if number[:2] in ("34", "37"):
        return "American Express"
    if number[:2] in ("51", "52", "53", "54", "55") or 2221 <= int(number[:4] or 0) <= 2720:
        return "MasterCard"
    if number.startswith(("6011", "65")) or 644 <= int(number[:3] or 0) <= 649:
        return "Discover"
    for network in CARD_NAME_LITERAL.__args__:
        if network.lower() in name.lower():
            return str(network)
    return None


def translate_seed(seed: Any, base: World | None = None) -> World:
    """Our seed (``WorldSeed`` JSON) as AppWorld's tables, laid over ``base`` (None: an empty world)."""
    if not isinstance(seed, Mapping):
        raise SeedError("seed must be an object (WorldSeed JSON)")
    unknown = set(seed) - {"start_time", "people", "apps"}
    if unknown:
        raise SeedError(f"seed: unknown field {sorted(unknown)[0]}")
    start = seed.get("start_time") or DEFAULT_START
    try:
        datetime.strptime(str(start), TIME_FORMAT)
    except ValueError:
        raise SeedError(f"seed.start_time: write YYYY-MM-DDTHH:MM:SS, not {start!r}") from None
    world = base or World()
    people = parse_people(seed.get("people"))
    translator = Translator(world, str(start), people)
    translator.people(people)
    translator.apps(seed.get("apps") or {})
    if people and not world.rows("supervisor", "supervisors"):
        translator.supervisor(people[0])
    if world.tables.get("amazon", {}).get("products"):
        translator.amazon_products_derived()
    translator.bank({p.user_id: p for p in people})
    return world


# ---------------------------------------------------------------- calls through AppWorld's main app


class AppWorldCalls:
    """AppWorld's API, reached through its own FastAPI main app in this process."""

    def __init__(self, docs: dict[str, list[dict[str, Any]]]) -> None:
        import httpx
        from appworld.apps import build_main_app

        self.docs = {app: {d["api_name"]: d for d in app_docs} for app, app_docs in docs.items()}
        self.main_app = build_main_app()
        # raise_app_exceptions: an exception inside AppWorld reaches us (answered 500, one line).
        transport = httpx.ASGITransport(app=self.main_app, raise_app_exceptions=True)
        self.client = httpx.AsyncClient(transport=transport, base_url="http://appworld")

    async def call(self, app: str, api: str, args: Mapping[str, Any]) -> tuple[int, Any]:
        if app not in self.docs:
            return 404, {"message": f"No app named '{app}' found."}
        doc = self.docs[app].get(api)
        if doc is None:
            return 404, {"message": f"No API named '{api}' found in the {app} app."}
        method = str(doc["method"]).upper()
        path = str(doc["path"])
        data = dict(args)
        for name in list(data):
            token = "{" + name + "}"
            if token in path:
                path = path.replace(token, quote(str(data.pop(name)), safe=""))
        headers = {}
        if "access_token" in data:
            headers["Authorization"] = f"Bearer {data.pop('access_token')}"
        if path.endswith("/auth/token"):
            form = {k: "" if v is None else str(v) for k, v in data.items()}
            reply = await self.client.request(method, path, data=form, headers=headers)
        elif method in ("GET", "DELETE"):
            reply = await self.client.request(method, path, params=query_params(data), headers=headers)
        else:
            reply = await self.client.request(method, path, json=data, headers=headers)
        try:
            body = reply.json()
        except ValueError:
            body = {"message": reply.text}
        return reply.status_code, body

    async def close(self) -> None:
        await self.client.aclose()


def query_params(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """As an HTTP client sends them: a list repeats its key, a null is left out."""
    out: list[tuple[str, str]] = []
    for key, value in data.items():
        for item in value if isinstance(value, list | tuple) else [value]:
            if item is None:
                continue
            if isinstance(item, bool):
                out.append((key, "true" if item else "false"))
            elif isinstance(item, dict):
                out.append((key, json.dumps(item)))
            else:
                out.append((key, str(item)))
    return out


# ---------------------------------------------------------------- the clock


class Clock:
    """AppWorld's frozen date-time (freezegun, as AppWorld's set_local_date_and_time)."""

    def __init__(self) -> None:
        self.freezer: Any = None
        self.now: str | None = None

    def set(self, now: str) -> None:
        import freezegun

        try:
            when = datetime.strptime(now, TIME_FORMAT)
        except (TypeError, ValueError):
            raise ServiceError(f"now: write YYYY-MM-DDTHH:MM:SS, not {now!r}") from None
        self.stop()
        # real_asyncio: the service's event loop keeps real time while AppWorld's clock is frozen.
        self.freezer = freezegun.freeze_time(when, real_asyncio=True)
        self.freezer.start()
        self.now = now

    def stop(self) -> None:
        if self.freezer is not None:
            self.freezer.stop()
            self.freezer = None


# ---------------------------------------------------------------- the service


class Service:
    def __init__(self, data: str | None, random_seed: int) -> None:
        from appworld.api_docs import prepare_api_docs
        from appworld.apps.api_lib import (
            set_local_dbs,
            set_local_random_seed,
            set_local_show_api_response_schemas,
        )

        import_appworld()
        for app in ALL_APPS:
            # An app AppWorld's data lacks starts empty (AppWorld would create an empty file there).
            base = data if data is not None and os.path.exists(os.path.join(data, f"{app}.db")) else None
            set_local_dbs(to_db_home_path=DB_HOME, from_db_home_path=base, app_names=[app], create=True)
        for app in ALL_APPS:
            # AppWorld's change log of every statement (for its "changes" saves) would only grow.
            models_of(app).SQLModel.db.tracker.stop()
        describe_tables()
        set_local_random_seed(random_seed)
        # As AppWorld's environment does by default (its api_docs app reads this setting).
        set_local_show_api_response_schemas(True)
        self.docs = {app: list(prepare_api_docs(app, format="standard")) for app in SERVED_APPS}
        self.api_list = [d for app in SERVED_APPS for d in self.docs[app]]
        fill_api_docs(self.api_list)
        self.pristine = snapshot()
        """The world the service started with (empty, or AppWorld's data): what a seed starts from."""
        self.calls = AppWorldCalls(self.docs)
        self.clock = Clock()
        self.lock = asyncio.Lock()

    def health(self) -> dict[str, Any]:
        return {"ok": True, "appworld_version": AW_VERSION, "apps": list(SERVED_APPS), "pid": os.getpid()}

    async def call(self, body: Any) -> tuple[int, dict[str, Any]]:
        if not isinstance(body, Mapping):
            raise ServiceError("the body is {app, api, args}")
        app, api, args = body.get("app"), body.get("api"), body.get("args", {})
        if not isinstance(app, str) or not isinstance(api, str):
            raise ServiceError("app and api must be names")
        if args is None:
            args = {}
        if not isinstance(args, Mapping):
            raise ServiceError("args must be an object of the API's parameters")
        async with self.lock:
            before = total_changes()
            try:
                status, response = await self.calls.call(app, api, args)
            except Exception as exc:  # noqa: BLE001 - AppWorld's failure, answered and survived
                changed = total_changes() != before
                out: dict[str, Any] = {"message": exception_reason(exc), "changed": changed}
                if changed:
                    out["state"] = dump_world()
                return 500, out
            changed = total_changes() != before
            result: dict[str, Any] = {"status_code": status, "response": response, "changed": changed}
            if changed:
                result["state"] = dump_world()
            return 200, result

    async def state(self) -> dict[str, Any]:
        async with self.lock:
            return {"apps": dump_world()}

    async def put_state(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, Mapping) or "apps" not in body:
            raise ServiceError("the body is {apps: {app: {table: [records]}}}")
        async with self.lock:
            return {"ok": True, "records": load_world(body["apps"])}

    async def seed(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, Mapping) or not isinstance(body.get("seed"), Mapping):
            raise ServiceError("the body is {seed: <WorldSeed JSON>, merge: false}")
        async with self.lock:
            with restorable():
                return self._seed(body)

    def _seed(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """A refused seed leaves the world as it was (the caller's ``restorable``)."""
        if not body.get("merge"):
            restore(self.pristine)
        if body["seed"].get("people") or body["seed"].get("apps"):
            world = translate_seed(body["seed"], World.from_state(dump_world()))
            load_world(world.state(), world.origins)
        return {"apps": dump_world()}

    async def set_clock(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, Mapping):
            raise ServiceError('the body is {"now": "YYYY-MM-DDTHH:MM:SS"}')
        async with self.lock:
            self.clock.set(body.get("now"))
            return {"ok": True, "now": self.clock.now}


def build_app(service: Service) -> FastAPI:
    api = FastAPI(title="AppWorld service (auratown)", docs_url=None, redoc_url=None, openapi_url=None)

    def answer(status: int, content: Any) -> JSONResponse:
        return JSONResponse(status_code=status, content=content)

    @api.exception_handler(ServiceError)
    async def refused(request: Request, exc: ServiceError) -> JSONResponse:
        return answer(exc.status, {"message": exc.message})

    @api.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return answer(exc.status_code, {"message": one_line(exc.detail)})

    @api.exception_handler(Exception)
    async def failed(request: Request, exc: Exception) -> JSONResponse:
        return answer(500, {"message": exception_reason(exc)})

    async def body_of(request: Request) -> Any:
        try:
            return await request.json()
        except ValueError:
            raise ServiceError("the body must be JSON") from None

    @api.get("/health")
    async def health() -> JSONResponse:
        return answer(200, service.health())

    @api.get("/apis")
    async def apis() -> JSONResponse:
        return answer(200, {"apis": service.api_list})

    @api.post("/call")
    async def call(request: Request) -> JSONResponse:
        status, content = await service.call(await body_of(request))
        return answer(status, content)

    @api.get("/state")
    async def state() -> JSONResponse:
        return answer(200, await service.state())

    @api.put("/state")
    async def put_state(request: Request) -> JSONResponse:
        return answer(200, await service.put_state(await body_of(request)))

    @api.post("/seed")
    async def seed(request: Request) -> JSONResponse:
        return answer(200, await service.seed(await body_of(request)))

    @api.post("/clock")
    async def clock(request: Request) -> JSONResponse:
        return answer(200, await service.set_clock(await body_of(request)))

    return api


# ---------------------------------------------------------------- the program


def data_home(path: str) -> str:
    """AppWorld's base databases in ``path`` (its data root, its ``data`` directory, or themselves)."""
    for candidate in (os.path.join(path, "data", "base_dbs"), os.path.join(path, "base_dbs"), path):
        if os.path.isdir(candidate) and any(n.endswith(".db") for n in os.listdir(candidate)):
            return os.path.abspath(candidate)
    raise SystemExit(f"--data {path}: no AppWorld base databases there (data/base_dbs/<app>.db)")


def write_ready(path: str, info: Mapping[str, Any]) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".ready-", dir=directory)
    with os.fdopen(fd, "w") as sink:
        json.dump(info, sink)
    os.replace(tmp, path)


def listening_socket(host: str, port: int, uds: str | None) -> tuple[socket.socket, str]:
    if uds:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(uds)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(uds)
        url = f"unix:{uds}"
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit it: no 40 ms Nagle/delayed-ACK stall on a kept-alive connection.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        url = f"http://{host}:{sock.getsockname()[1]}"
    sock.listen(128)
    sock.setblocking(False)
    return sock, url


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="AppWorld's apps as a JSON service (in AppWorld's venv)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    parser.add_argument("--uds", default=None, help="listen on this unix socket instead")
    parser.add_argument("--ready-file", required=True)
    parser.add_argument("--data", default=None, help="AppWorld's downloaded data (its base databases)")
    parser.add_argument("--random-seed", type=int, default=100)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    import uvicorn

    args = parse_args(argv)
    data = data_home(args.data) if args.data else None
    service = Service(data, args.random_seed)
    sock, url = listening_socket(args.host, args.port, args.uds)
    info = {"url": url, "pid": os.getpid(), "appworld_version": AW_VERSION, "apps": list(SERVED_APPS)}

    class ReadyServer(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if not self.should_exit:
                write_ready(args.ready_file, info)

    # One worker, one event loop (plain asyncio: the clock's freezer leaves its time real), and
    # one AppWorld call at a time (Service.lock): AppWorld is not thread-safe.
    config = uvicorn.Config(
        build_app(service), loop="asyncio", lifespan="off", log_level="warning", workers=1
    )
    server = ReadyServer(config)
    try:
        server.run(sockets=[sock])
    finally:
        service.clock.stop()
        sock.close()
        if args.uds:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(args.uds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
