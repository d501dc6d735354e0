"""A town's fixed facts: the grid, named locations, agent profiles and their daily schedules.

``parse_town`` reads the project's town format and, unchanged, the AURA release's map format
(``{"width", "height", "locations"}`` without agents: the agents then come from another
definition). Parsing takes already-decoded data; reading files is the caller's job.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from world.clock import DAY_END_MINUTE, DAY_START_MINUTE, parse_minute

TOWN_FORMAT = "auratown.town/1"

# Hours a place of each type is open, when a map gives none (the AURA map has no hours).
# ``None``: always open (homes, parks, squares).
DEFAULT_OPENING_HOURS: dict[str, tuple[str, str] | None] = {
    "cafe": ("07:00", "21:00"),
    "bakery": ("06:00", "19:00"),
    "teahouse": ("08:00", "22:00"),
    "shop": ("08:00", "20:00"),
    "pharmacy": ("08:00", "20:00"),
    "gallery": ("10:00", "18:00"),
    "library": ("09:00", "21:00"),
    "school": ("08:00", "18:00"),
    "townhall": ("09:00", "17:00"),
    "temple": ("06:00", "20:00"),
}


class TownDefinitionError(ValueError):
    """A town definition that cannot be used, with a one-line reason."""


def slugify(name: str) -> str:
    """'Lin Wei' -> 'lin-wei': the agent's bus address is ``agent.<slug>``."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if not slug:
        raise TownDefinitionError(f"cannot derive an address from the name {name!r}")
    return slug


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class Location(_Frozen):
    name: str = Field(min_length=1)
    type: str = Field(min_length=1)
    x: int = Field(ge=0)
    y: int = Field(ge=0)
    width: int = Field(ge=1)
    height: int = Field(ge=1)
    capacity: int = Field(ge=1)
    owner: str | None = None
    description: str = ""
    opening_hours: tuple[str, str] | None = None

    @model_validator(mode="before")
    @classmethod
    def _default_hours(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "opening_hours" not in data:
            data = dict(data)
            data["opening_hours"] = DEFAULT_OPENING_HOURS.get(str(data.get("type", "")))
        return data

    @field_validator("opening_hours")
    @classmethod
    def _check_hours(cls, v: tuple[str, str] | None) -> tuple[str, str] | None:
        if v is not None and parse_minute(v[0]) >= parse_minute(v[1]):
            raise ValueError(f"opening hours {v[0]}-{v[1]} close before they open")
        return v

    def contains(self, x: int, y: int) -> bool:
        return self.x <= x < self.x + self.width and self.y <= y < self.y + self.height

    def is_open(self, minute: int) -> bool:
        if self.opening_hours is None:
            return True
        return parse_minute(self.opening_hours[0]) <= minute < parse_minute(self.opening_hours[1])

    @property
    def center(self) -> tuple[int, int]:
        return self.x + self.width // 2, self.y + self.height // 2


class Activity(_Frozen):
    location: str = Field(min_length=1)
    action: str = Field(min_length=1)


class ScheduleEntry(_Frozen):
    """From ``start`` on, the agent does ``action`` at ``location`` (or, per day, one of the
    ``alternatives``, drawn from the town's seeded RNG)."""

    start: str
    location: str = Field(min_length=1)
    action: str = Field(min_length=1)
    alternatives: tuple[Activity, ...] = ()

    @field_validator("start")
    @classmethod
    def _check_start(cls, v: str) -> str:
        minute = parse_minute(v)
        if not DAY_START_MINUTE <= minute <= DAY_END_MINUTE:
            raise ValueError(f"schedule time {v} is outside the 06:00-23:00 day")
        return v

    @property
    def minute(self) -> int:
        return parse_minute(self.start)

    @property
    def activities(self) -> tuple[Activity, ...]:
        return (Activity(location=self.location, action=self.action), *self.alternatives)


class Gathering(_Frozen):
    """What an agent hopes to bring others to (its unspoken goal made concrete). Raised in a
    conversation, the other may accept: its plan for that day then takes it there."""

    topic: str = Field(min_length=1)
    """How it comes up in conversation: "the poetry reading at the cafe"."""
    activity: str = Field(min_length=1)
    """What a guest does there: "attending the poetry reading"."""
    location: str = Field(min_length=1)
    start: str
    end: str

    @model_validator(mode="after")
    def _check_span(self) -> Gathering:
        start, end = parse_minute(self.start), parse_minute(self.end)
        if not DAY_START_MINUTE <= start < end <= DAY_END_MINUTE:
            raise ValueError(
                f"a gathering runs within 06:00-23:00 and ends after it starts: {self.start}-{self.end}"
            )
        return self

    @property
    def start_minute(self) -> int:
        return parse_minute(self.start)

    @property
    def end_minute(self) -> int:
        return parse_minute(self.end)


class AgentProfile(_Frozen):
    name: str = Field(min_length=1)
    age: int = Field(ge=0)
    occupation: str = ""
    personality: str = ""
    home: str
    workplaces: tuple[str, ...] = ()
    unspoken_goal: str = ""
    """The standing goal the private-state rules fall back to."""
    interests: tuple[str, ...] = ()
    """Conversation topics this agent brings up."""
    gathering: Gathering | None = None
    schedule: tuple[ScheduleEntry, ...] = Field(min_length=1)

    @field_validator("schedule")
    @classmethod
    def _sorted(cls, v: tuple[ScheduleEntry, ...]) -> tuple[ScheduleEntry, ...]:
        minutes = [e.minute for e in v]
        if minutes != sorted(minutes) or len(set(minutes)) != len(minutes):
            raise ValueError("schedule entries must have strictly increasing start times")
        return v

    @cached_property
    def slug(self) -> str:
        return slugify(self.name)


class TownDefinition(_Frozen):
    format: str = TOWN_FORMAT
    name: str = "AURATown"
    width: int = Field(ge=1)
    height: int = Field(ge=1)
    locations: tuple[Location, ...] = Field(min_length=1)
    agents: tuple[AgentProfile, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> TownDefinition:
        names = [loc.name for loc in self.locations]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate location names: {sorted({n for n in names if names.count(n) > 1})}")
        for loc in self.locations:
            if loc.x + loc.width > self.width or loc.y + loc.height > self.height:
                raise ValueError(f"location {loc.name!r} lies outside the {self.width}x{self.height} grid")
        known = set(names)
        slugs: set[str] = set()
        for agent in self.agents:
            if agent.slug in slugs:
                raise ValueError(f"two agents share the address agent.{agent.slug}")
            slugs.add(agent.slug)
            places = [agent.home, *agent.workplaces]
            if agent.gathering is not None:
                places.append(agent.gathering.location)
            for e in agent.schedule:
                places.extend(a.location for a in e.activities)
            for place in places:
                if place not in known:
                    raise ValueError(f"agent {agent.name!r} refers to unknown location {place!r}")
        return self

    @cached_property
    def _locations_by_name(self) -> dict[str, Location]:
        return {loc.name: loc for loc in self.locations}

    @cached_property
    def _agents_by_slug(self) -> dict[str, AgentProfile]:
        return {a.slug: a for a in self.agents}

    @cached_property
    def _slug_by_name(self) -> dict[str, str]:
        names = {a.name.casefold(): a.slug for a in self.agents}
        names.update({a.slug: a.slug for a in self.agents})
        return names

    @cached_property
    def _cell_index(self) -> dict[tuple[int, int], str]:
        index: dict[tuple[int, int], str] = {}
        for loc in self.locations:  # where rectangles overlap, the earlier location wins
            for x in range(loc.x, loc.x + loc.width):
                for y in range(loc.y, loc.y + loc.height):
                    index.setdefault((x, y), loc.name)
        return index

    def location_at(self, x: int, y: int) -> str | None:
        """The named location covering cell (x, y), or None for the streets between."""
        return self._cell_index.get((x, y))

    def location(self, name: str) -> Location:
        try:
            return self._locations_by_name[name]
        except KeyError:
            raise KeyError(f"no location named {name!r}") from None

    def has_location(self, name: str) -> bool:
        return name in self._locations_by_name

    def agent(self, slug: str) -> AgentProfile:
        try:
            return self._agents_by_slug[slug]
        except KeyError:
            raise KeyError(f"no agent agent.{slug}") from None

    def find_agent(self, name_or_slug: str) -> AgentProfile | None:
        """An agent by its name (any case) or its slug."""
        slug = self._slug_by_name.get(name_or_slug.casefold()) or self._slug_by_name.get(name_or_slug)
        return None if slug is None else self._agents_by_slug[slug]

    @property
    def slugs(self) -> list[str]:
        return [a.slug for a in self.agents]


def parse_town(data: Mapping[str, Any], *, agents: Iterable[AgentProfile] | None = None) -> TownDefinition:
    """A town from decoded JSON: the project's format, or the AURA map format plus ``agents``."""
    if not isinstance(data, Mapping):
        raise TownDefinitionError(f"a town definition is a JSON object, not {type(data).__name__}")
    fmt = data.get("format")
    if fmt is not None and fmt != TOWN_FORMAT:
        raise TownDefinitionError(f"unknown town format {fmt!r} (this version reads {TOWN_FORMAT!r})")
    fields = dict(data)
    fields["format"] = TOWN_FORMAT
    if "agents" not in fields:
        if agents is None:
            raise TownDefinitionError("this map has no agents: give the agents from another town definition")
        fields["agents"] = [a.model_dump() for a in agents]
    try:
        return TownDefinition.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise TownDefinitionError(
            f"invalid town definition at {where or 'top level'}: {first['msg']}"
        ) from None


def town_to_data(town: TownDefinition) -> dict[str, Any]:
    return town.model_dump(mode="json")
