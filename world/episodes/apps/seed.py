"""Seeds of an episode's app world: the people, their accounts, and the apps' records.

A persona's ``seed.yaml`` (beside its ``episode.yaml``) is written in this format (a task adds
records with ``metadata.app_state``, the ``apps`` part of it; people belong to the persona)::

    start_time: "2025-05-05T09:00:00"     # optional: when the virtual clock starts
    people:
      - first_name: Laura
        last_name: Mccoy
        email: la-mcco@gmail.com
        phone_number: "2873148336"
        accounts: {splitwise: "T8H2[32", phone: "AEQ@e[a", gmail: null}
    apps:
      amazon:
        products: [{product_id: 1578, name: ..., price: 18.75, ...}]

``accounts`` names the apps where the person has an account, with its password (null: an account
whose password nobody was told; a list of app names means the same for each). Each person is one
user id in every app (``user_id``, else the position in ``people`` from 1), so records of any app
refer to their owners by ``user_id``. ``apps`` holds records in each app module's collections
(the modules' docstrings list them), merged by ``state.merge_app_state``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from messages.probes import plain_json

TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
REGISTERED_AT = "2023-01-01T09:00:00"


class Person(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    first_name: str = Field(min_length=1)
    last_name: str = ""
    email: str = Field(min_length=3, pattern=r"^[^@\s]+@[^@\s]+$")
    phone_number: str | None = None
    user_id: int | None = Field(default=None, ge=1, le=2**53)
    accounts: dict[str, str | None] = {}
    """App -> password (None: an account whose password nobody was told)."""

    @field_validator("accounts", mode="before")
    @classmethod
    def _list_form(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return dict.fromkeys(value)
        if isinstance(value, dict):
            # YAML reads a password of digits as a number; a password is text.
            return {
                k: str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v
                for k, v in value.items()
            }
        return value

    @field_validator("phone_number", mode="before")
    @classmethod
    def _digits(cls, value: Any) -> Any:
        # YAML reads 2873148336 as an int; a phone number is text.
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class WorldSeed(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    start_time: str | None = None
    people: tuple[Person, ...] = ()
    apps: dict[str, dict[str, Any]] = {}

    @field_validator("start_time", mode="before")
    @classmethod
    def _unquoted(cls, value: Any) -> Any:
        # YAML reads an unquoted 2025-05-05T09:00:00 as a datetime.
        return value.strftime(TIME_FORMAT) if isinstance(value, datetime) else value

    @field_validator("start_time")
    @classmethod
    def _time(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                datetime.strptime(value, TIME_FORMAT)
            except ValueError:
                raise ValueError(f"write the time as YYYY-MM-DDTHH:MM:SS, not {value!r}") from None
        return value

    @field_validator("apps")
    @classmethod
    def _json(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for app, data in value.items():
            if not isinstance(data, Mapping):
                raise ValueError(f"apps.{app} must map collections to records")
            try:
                plain_json(dict(data))
            except ValueError as exc:
                raise ValueError(f"apps.{app} is not JSON data: {exc}") from None
        return value


def unknown_password(app: str, email: str) -> str:
    """The password of an account nobody was told (derived, so a seed is deterministic)."""
    return hashlib.sha256(f"{app}:{email}".encode()).hexdigest()[:16]


def user_ids(people: Sequence[Person], start: int = 1) -> dict[str, int]:
    """Email (lower case) -> user id: a person's own ``user_id`` or its position from ``start``."""
    out: dict[str, int] = {}
    taken = {p.user_id for p in people if p.user_id is not None}
    next_id = start
    for p in people:
        if p.user_id is not None:
            out[p.email.lower()] = p.user_id
            continue
        while next_id in taken:
            next_id += 1
        out[p.email.lower()] = next_id
        taken.add(next_id)
        next_id += 1
    return out


def user_record(person: Person, user_id: int, app: str) -> dict[str, Any]:
    password = person.accounts.get(app)
    return {
        "user_id": user_id,
        "first_name": person.first_name,
        "last_name": person.last_name,
        "email": person.email,
        "phone_number": person.phone_number,
        "password": password if password is not None else unknown_password(app, person.email),
        "verified": True,
        "registered_at": REGISTERED_AT,
    }


def seed_apps(seed: WorldSeed, *, start_id: int = 1) -> dict[str, dict[str, Any]]:
    """The app data ``seed`` describes: each app's ``users`` from the people with an account
    there, merged with the seed's own records of that app (which win on the same user id)."""
    ids = user_ids(seed.people, start_id)
    apps: dict[str, dict[str, Any]] = {}
    for person in seed.people:
        for app in person.accounts:
            record = user_record(person, ids[person.email.lower()], app)
            apps.setdefault(app, {}).setdefault("users", []).append(record)
    for app, data in seed.apps.items():
        target = apps.setdefault(app, {})
        for collection, records in data.items():
            if collection == "users" and isinstance(records, list):
                target.setdefault("users", []).extend(records)
            else:
                target[collection] = plain_json(records)
    return apps


__all__ = ["Person", "WorldSeed", "seed_apps", "unknown_password", "user_ids", "user_record"]
