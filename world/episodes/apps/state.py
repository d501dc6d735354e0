"""The state of one episode's simulated environment, its merge rule, its diff and path lookup.

``EnvState`` is plain JSON data treated as a value: a tool call returns a new state and never
changes the one it was given.

App data convention: ``apps[<app>]`` is ``{<collection>: [records], ...}``. A record is a JSON
object with an int primary key named ``<entity>_id`` (see ``RECORD_KEYS``; a collection not listed
there is keyed by its singular name + ``_id`` when every record has that field, e.g. ``reviews`` ->
``review_id``). Keys of an app's data that start with ``_`` are bookkeeping: ``_next_ids`` holds
the per-collection id counters. They are left out of diffs.

Merge rule (``merge_app_state``, also how ``new_state`` lays seed data over the defaults), per app:
a keyed collection is extended: a record whose key already exists replaces that record in place,
the others are appended in order; ``_next_ids`` counters are updated key by key; any other value
(an unkeyed list, an object, a scalar) replaces the old one. An app not yet present is added.

Diff and lookup paths (dotted): ``files.<path>`` (the rest of the path is the file's path, dots
included), ``binaries.<path>`` (a binary file's digest), ``apps.<app>.<collection>.<id>`` for a
keyed record (``apps.<app>.<key>`` for any other value), ``outbox.<n>``, ``questions.<n>``
(list positions), ``scheduled.<id>``. ``state_value`` walks further into a record:
``apps.amazon.orders.901.order_items.0.product_id``.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from messages.episodes import StateChange
from messages.probes import plain_json

RECORD_KEYS: dict[str, str] = {
    "products": "product_id",
    "cart": "product_id",
    "orders": "order_id",
    "payment_cards": "payment_card_id",
    "addresses": "address_id",
    "contacts": "contact_id",
    "text_messages": "text_message_id",
    "emails": "email_id",
    "notes": "note_id",
    "songs": "song_id",
    "playlists": "playlist_id",
    "groups": "group_id",
    "expenses": "expense_id",
    "tasks": "task_id",
    "projects": "project_id",
    "scheduled": "id",
}
"""The primary key of each known collection (``cart`` items are keyed by their product;
``scheduled`` is the state's own list of scheduled items)."""

COUNTERS = "_next_ids"


class EnvState(BaseModel):
    """Workspace files, app data and the assistant's outgoing records of one episode."""

    model_config = ConfigDict(extra="forbid")

    files: dict[str, str] = {}
    """Workspace: relative posix path -> text."""
    binaries: dict[str, str] = {}
    """Workspace: relative posix path -> base64 of a binary file (an asset copied byte for byte;
    a path is in ``files`` or here, never both)."""
    apps: dict[str, dict[str, Any]] = {}
    """App name -> that app's JSON data (``{collection: [records]}``)."""
    outbox: list[dict[str, Any]] = []
    """``send_message`` records: ``{to, text, sender, task_id, at}``."""
    scheduled: list[dict[str, Any]] = []
    """``schedule_task`` records: ``{id, at, text, status, task_id, created_at}`` (``at`` in
    virtual minutes; ``status`` "pending" until the registry actor marks it ``done``)."""
    questions: list[dict[str, Any]] = []
    """``ask_user`` records: ``{question, task_id, at, asker}``."""
    clock: float = 0.0
    """Virtual minutes since the episode began (set by the registry actor)."""
    start_time: str = "2025-05-05T09:00:00"
    """The wall time the virtual clock starts at (apps write times as AppWorld does)."""
    task_id: str = ""
    """The session the calls belong to."""


# ---------------------------------------------------------------- keys and ids


def singular(collection: str) -> str:
    """The English singular of a collection's name, as AppWorld's table names need it
    (``cart_entries`` -> ``cart_entry``, ``addresses`` -> ``address``, ``notes`` -> ``note``)."""
    if collection.endswith("ies"):
        return f"{collection[:-3]}y"
    if collection.endswith(("sses", "xes", "ches", "shes")):
        return collection[:-2]
    return collection[:-1] if collection.endswith("s") else collection


def record_key(collection: str, records: Iterable[Any]) -> str | None:
    """The primary key field of ``collection``, or None when its records are not keyed records."""
    rows = list(records)
    key = RECORD_KEYS.get(collection) or f"{singular(collection)}_id"
    if all(isinstance(r, dict) and key in r for r in rows):
        return key
    return None


def allocate_id(app_data: dict[str, Any], collection: str, start: int = 1) -> int:
    """The next id of ``collection``: the counter, bumped past any id already present (merged
    task data may bring records with higher ids). Updates the counter in ``app_data``."""
    key = record_key(collection, app_data.get(collection, [])) or RECORD_KEYS.get(collection, "")
    present = [r.get(key) for r in app_data.get(collection, []) if isinstance(r, dict)]
    highest = max((i for i in present if isinstance(i, int) and not isinstance(i, bool)), default=0)
    counters = app_data.setdefault(COUNTERS, {})
    new_id = max(int(counters.get(collection, start)), highest + 1)
    counters[collection] = new_id + 1
    return new_id


# ---------------------------------------------------------------- merging


def _json_copy(value: Any, where: str) -> Any:
    try:
        return plain_json(copy.deepcopy(value))
    except ValueError as exc:
        raise ValueError(f"app data at {where} is not plain JSON: {exc}") from exc


def merge_app_data(current: Mapping[str, Any], incoming: Mapping[str, Any], *, app: str) -> dict[str, Any]:
    """One app's data with ``incoming`` merged over ``current`` (the module's merge rule)."""
    merged: dict[str, Any] = copy.deepcopy(dict(current))
    for name, raw in incoming.items():
        value = _json_copy(raw, f"{app}.{name}")
        old = merged.get(name)
        if name == COUNTERS and isinstance(old, dict) and isinstance(value, dict):
            old.update(value)
            continue
        if isinstance(old, list) and isinstance(value, list):
            key = record_key(name, [*old, *value])
            if key is not None:
                position = {repr(r[key]): i for i, r in enumerate(old)}
                for record in value:
                    at = position.get(repr(record[key]))
                    if at is None:
                        position[repr(record[key])] = len(old)
                        old.append(record)
                    else:
                        old[at] = record
                continue
        merged[name] = value
    return merged


def merge_app_state(state: EnvState, data: Mapping[str, Any]) -> EnvState:
    """``state`` with per-app ``data`` (``{"amazon": {"products": [...]}}``) merged in; the
    input is not changed. ValueError when the data is not ``{app: {key: JSON}}``."""
    apps = copy.deepcopy(state.apps)
    for app, app_data in data.items():
        if not isinstance(app, str) or not isinstance(app_data, Mapping):
            raise ValueError(f"app data of {app!r} must be an object of collections")
        apps[app] = merge_app_data(apps.get(app, {}), app_data, app=app)
    return state.model_copy(update={"apps": apps}, deep=True)


# ---------------------------------------------------------------- diff


def _change(path: str, before: Any, after: Any, *, missing_before: bool, missing_after: bool) -> StateChange:
    if missing_before:
        return StateChange(path=path, kind="added", after={"value": after})
    if missing_after:
        return StateChange(path=path, kind="removed", before={"value": before})
    return StateChange(path=path, kind="changed", before={"value": before}, after={"value": after})


_MISSING = object()


def _diff_maps(prefix: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> list[StateChange]:
    out = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key, _MISSING), after.get(key, _MISSING)
        if old != new:
            out.append(
                _change(
                    f"{prefix}{key}", old, new, missing_before=old is _MISSING, missing_after=new is _MISSING
                )
            )
    return out


def _keyed(records: list[Any], key: str) -> dict[str, Any]:
    return {str(r[key]): r for r in records}


def _positional(records: list[Any]) -> dict[str, Any]:
    return {str(i): r for i, r in enumerate(records)}


def _diff_app(app: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> list[StateChange]:
    out = []
    for name in sorted(set(before) | set(after)):
        if name.startswith("_"):
            continue
        old, new = before.get(name, _MISSING), after.get(name, _MISSING)
        if old == new:
            continue
        old_rows = [] if old is _MISSING else old
        new_rows = [] if new is _MISSING else new
        if isinstance(old_rows, list) and isinstance(new_rows, list):
            key = record_key(name, [*old_rows, *new_rows])
            if key is not None:
                out += _diff_maps(f"apps.{app}.{name}.", _keyed(old_rows, key), _keyed(new_rows, key))
                continue
        out.append(
            _change(
                f"apps.{app}.{name}", old, new, missing_before=old is _MISSING, missing_after=new is _MISSING
            )
        )
    return out


def _digests(binaries: Mapping[str, str]) -> dict[str, str]:
    # A binary file changes as a whole: its digest stands for it in a diff.
    return {p: hashlib.sha256(data.encode()).hexdigest()[:16] for p, data in binaries.items()}


def state_diff(before: EnvState, after: EnvState) -> list[StateChange]:
    """What changed from ``before`` to ``after``, one change per file, record, message and
    scheduled item, sorted by path. ``clock`` and ``task_id`` are not state changes."""
    changes = _diff_maps("files.", before.files, after.files)
    changes += _diff_maps("binaries.", _digests(before.binaries), _digests(after.binaries))
    for app in sorted(set(before.apps) | set(after.apps)):
        changes += _diff_app(app, before.apps.get(app, {}), after.apps.get(app, {}))
    changes += _diff_maps("outbox.", _positional(before.outbox), _positional(after.outbox))
    changes += _diff_maps("questions.", _positional(before.questions), _positional(after.questions))
    key = record_key("scheduled", [*before.scheduled, *after.scheduled])
    index = _positional if key is None else lambda rows: _keyed(rows, key)
    changes += _diff_maps("scheduled.", index(before.scheduled), index(after.scheduled))
    return sorted(changes, key=lambda c: c.path)


# ---------------------------------------------------------------- lookup


def _step(value: Any, segment: str, collection: str | None, path: str) -> Any:
    if isinstance(value, dict):
        if segment in value:
            return value[segment]
        raise KeyError(path)
    if isinstance(value, list):
        key = record_key(collection, value) if collection is not None else None
        if key is not None:
            # A keyed collection is addressed by record id only, never by position.
            for record in value:
                if str(record[key]) == segment:
                    return record
            raise KeyError(path)
        if segment.isdigit() and int(segment) < len(value):
            return value[int(segment)]
    raise KeyError(path)


def lookup_path(data: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted ``path`` in a state dumped as JSON (``EnvState.model_dump()``, or the
    app state without files): records of a keyed collection and scheduled items by id, other list
    items by position. KeyError when nothing is there."""
    head, _, rest = path.partition(".")
    if head == "files":
        files = data.get("files")
        if not isinstance(files, Mapping) or rest not in files:
            raise KeyError(path)
        return files[rest]
    if head not in data:
        raise KeyError(path)
    value: Any = data[head]
    segments = rest.split(".") if rest else []
    collection: str | None = None
    if head == "scheduled" and segments:
        value = _step(value, segments.pop(0), "scheduled", path)
    elif head == "apps" and segments:
        value = _step(value, segments.pop(0), None, path)
        collection = segments[0] if segments else None
    for segment in segments:
        value = _step(value, segment, collection, path)
        # Only the list right under an app is a keyed collection; deeper lists go by position.
        collection = None if collection is None or not isinstance(value, list) else collection
    return value


def state_value(state: EnvState, path: str) -> Any:
    """The value at a dotted ``path`` of ``state`` (the diff's path scheme); KeyError if absent."""
    return lookup_path(state.model_dump(mode="json"), path)
