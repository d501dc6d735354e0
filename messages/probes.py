"""Messages of the probe registry: the scene a probe reads, tool descriptions, outcomes, audits.

The scene models are plain data so that ``messages`` stays the lowest layer; ``world.probes``
builds scenes (from a live town or an AURA v2 snapshot) and holds the tools that read them.

A ``ProbeScene`` carries private facts (availability, emotional state, unspoken goal) and
beliefs: it is the registry's input, never something a public tool hands out. ``public()``
strips them, for a reader that must only see what anyone in the town could observe.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema

from messages._base import Message
from messages._registry import message

RegistryName = Literal["environment", "agent_state", "episode"]
"""``episode``: the workspace and app tools of one pi-Bench episode, served by ``registry.<episode>``."""
REGISTRY_NAMES: tuple[RegistryName, ...] = ("environment", "agent_state")
"""The town's registries, served by the stateless ``registry`` actor."""

ProbeStatus = Literal[
    "ok", "denied", "unknown_tool", "invalid_args", "not_found", "unavailable", "failed", "unauthorized"
]
"""``unauthorized``: an app API called without a valid access token of that app (AppWorld's 401).
``unavailable``: the registry actor could not read the live town (the world did not answer).
``failed``: an app tool ran and refused the request (an empty cart, an unknown order id)."""

_INT64 = 2**63


def plain_json(value: object) -> object:
    """``value`` as plain JSON data (tuples become lists), or ValueError: a payload must survive
    msgpack unchanged, so no NaN, no integer beyond 64 bits, no text that is not UTF-8."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not -_INT64 <= value < _INT64:
            raise ValueError("integers on the wire are 64-bit")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("JSON has no NaN or infinity")
        return value
    if isinstance(value, str):
        value.encode("utf-8")  # raises UnicodeEncodeError (a ValueError) for lone surrogates
        return value
    if isinstance(value, list | tuple):
        return [plain_json(v) for v in value]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError(f"JSON object keys are text, not {type(k).__name__}")
            out[k] = plain_json(v)
        return out
    raise ValueError(f"{type(value).__name__} is not JSON data")


def _plain_json_object(value: dict[str, object]) -> dict[str, object]:
    return plain_json(value)  # type: ignore[return-value]


class _FreeJson:
    """Pydantic schema of a free-form JSON object: any object whose values pass ``plain_json``."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_after_validator_function(
            _plain_json_object,
            core_schema.dict_schema(
                keys_schema=core_schema.str_schema(), values_schema=core_schema.any_schema()
            ),
        )


# Free-form JSON objects (tool arguments, results, schemas). Type checkers see ``dict[str, Any]``
# so readers index results without casts. At run time pydantic validates any JSON object
# (``_FreeJson``); the annotated type underneath is only a non-recursive sample of JSON for tools
# that generate values from annotations (the round-trip property test), since neither ``Any``
# nor pydantic's recursive ``JsonValue`` can be generated.
if TYPE_CHECKING:
    JsonObject = dict[str, Any]
else:
    JsonObject = Annotated[dict[str, str | int | bool | list[str] | dict[str, str] | None], _FreeJson]


# ---------------------------------------------------------------- the scene


class PlanItem(Message):
    """One step of an agent's plan: public (anyone may learn someone's schedule)."""

    time: str | None = None
    """'HH:MM' the step starts; None for a plan given as bare text."""
    location: str | None = None
    action: str


class PrivateFacts(Message):
    """What only the agent knows about itself: read through ``agent.private_state`` alone."""

    availability: str
    emotional_state: str
    unspoken_goal: str | None = None
    rule: str | None = None
    """The town's private-state rule that produced these facts (None for a scripted scene)."""


class BeliefFacts(Message):
    """What a believer last took to be true of a target: read through ``agent.belief_about``
    alone. It may be stale or wrong; that is the point of a second-order question."""

    availability: str = "unknown"
    emotional_state: str = "unknown"
    location: str | None = None
    action: str | None = None
    observed_day: int | None = None
    observed_time: str | None = None


class MemoryFacts(Message):
    kind: str
    text: str
    day: int | None = None
    time: str | None = None
    importance: int | None = None


class EventFacts(Message):
    id: int | None = None
    day: int | None = None
    time: str | None = None
    kind: str
    description: str
    location: str | None = None
    """None: a town-wide event."""
    participants: list[str] = []
    """Names of the agents involved."""


class LocationFacts(Message):
    name: str
    type: str = "place"
    description: str = ""
    owner: str | None = None
    capacity: int | None = None
    opening_hours: tuple[str, str] | None = None
    open_now: bool | None = None
    """None: unknown (a scripted scene without a map)."""


class SceneAgent(Message):
    name: str
    slug: str | None = None
    """The town agent's address suffix (``agent.<slug>``) in a live town; None in a scripted scene."""
    location: str | None = None
    """None: between two places."""
    action: str = "unknown"
    occupation: str = ""
    plan: list[PlanItem] = []
    private: PrivateFacts | None = None
    beliefs: dict[str, BeliefFacts] = {}
    """Beliefs about other agents, by the other agent's name."""


class ProbeScene(Message):
    """One moment of a town as the probe tools read it."""

    time: str
    """'HH:MM' of the moment."""
    day: int = 0
    summary: str = ""
    asker: str | None = None
    """Whose point of view the self-referential tools take (own location, plan, memories)."""
    agents: dict[str, SceneAgent] = {}
    locations: dict[str, LocationFacts] = {}
    events: list[EventFacts] = []
    """Oldest first."""
    memories: dict[str, list[MemoryFacts]] = {}
    """Memories by agent name, oldest first; only the agents whose memories were read."""
    source: str = ""
    """Where the scene came from: ``town:<name>@<tick>``, ``aura_v2:<scene id>``, ..."""

    def public(self) -> ProbeScene:
        """The scene without private facts and beliefs: what every observer may see."""
        agents = {
            name: a.model_copy(update={"private": None, "beliefs": {}}) for name, a in self.agents.items()
        }
        return self.model_copy(update={"agents": agents})

    @property
    def has_private(self) -> bool:
        return any(a.private is not None or a.beliefs for a in self.agents.values())


# ---------------------------------------------------------------- tools, policy, outcomes


class ToolSpecData(Message):
    """The JSON-able description of one tool (``world.probes.ToolSpec`` without the code)."""

    name: str
    """The paper's name, e.g. ``world.time`` or ``agent.private_state``."""
    aliases: list[str] = []
    """The AURA release's names, e.g. ``get_time``."""
    description: str
    parameters: JsonObject
    """JSON Schema of the arguments."""
    disclosure: int
    private: bool
    registry: RegistryName


class ProbePolicy(Message):
    """Glob patterns (fnmatch, case-insensitive) over a tool's canonical name and its aliases.

    A call is allowed when some ``allow`` pattern matches one of the tool's names and no ``deny``
    pattern matches any of them: deny wins.
    """

    allow: tuple[str, ...] = ("*",)
    deny: tuple[str, ...] = ()


class IdentityPolicy(Message):
    """What one attached identity may call through its ``registry:IDENT`` address.

    ``allow``/``deny`` are ``ProbePolicy`` globs over tool names, applied to every registry.
    Private tools (``agent.private_state``, ``agent.belief_about``) stay refused unless
    ``private`` is true: privacy is granted explicitly, never by a broad ``allow``. ``act_as``
    globs (case-insensitive) name the town agents whose point of view (``asker``: own location,
    plan, memories) the identity may take; by default none.
    """

    allow: tuple[str, ...] = ("*",)
    deny: tuple[str, ...] = ()
    private: bool = False
    act_as: tuple[str, ...] = ()


PUBLIC_ONLY = IdentityPolicy()
"""The policy of an identity without one of its own: every public tool, no point of view."""


class PolicyTable(Message):
    """Identity -> policy, as ``auratown daemon --policy-file`` reads it (JSON). An identity
    listed with ``null`` is served under ``default``."""

    default: IdentityPolicy = PUBLIC_ONLY
    identities: dict[str, IdentityPolicy | None] = {}

    def policy_for(self, identity: str) -> IdentityPolicy:
        return self.identities.get(identity) or self.default


@message("probe.audit", 1)
class AuditRecord(Message):
    """One probe call, whatever became of it; published on the ``registry.audit`` topic."""

    caller: str
    registry: RegistryName
    tool: str
    """The canonical name (the requested name when no tool has it)."""
    requested: str
    """The name the caller used (a paper name or a release alias)."""
    args: JsonObject = {}
    status: ProbeStatus
    result_chars: int = 0
    """Size of the JSON result handed back (0 when nothing was)."""
    disclosure: int = 0
    """The tool's disclosure cost when it ran; 0 when it was never executed."""
    asker: str | None = None
    """Whose point of view the call took."""
    error: str | None = None
    identity: str | None = None
    """The authenticated identity the call came through (``registry:IDENT``, whose inbox only
    that identity's Redis ACL user may write to); None for the town's own ``registry``, whose
    callers (env, town agents) are trusted to name themselves in ``caller``."""


class ProbeOutcome(Message):
    tool: str
    requested: str = ""
    args: JsonObject = {}
    status: ProbeStatus
    result: JsonObject | None = None
    error: str | None = None
    disclosure: int = 0
    audit: AuditRecord

    @property
    def ok(self) -> bool:
        return self.status == "ok"


# ---------------------------------------------------------------- the registry actor's messages


@message("probe.call", 1)
class ProbeCall(Message):
    """Caller -> ``registry``: run one tool. Without ``scene``, the registry reads the live town
    (it asks ``world`` for the scene). ``policy`` narrows the registry's own policy for this call
    (it can forbid more, never allow more)."""

    tool: str = Field(min_length=1)
    args: JsonObject = {}
    caller: str = ""
    registry: RegistryName = "environment"
    scene: ProbeScene | None = None
    asker: str | None = None
    """Whose point of view; default: the scene's asker, else the caller when it names an agent."""
    policy: ProbePolicy | None = None


@message("probe.result", 1)
class ProbeResult(ProbeOutcome):
    """``registry`` -> caller: the outcome of a ``ProbeCall``."""

    @classmethod
    def of(cls, outcome: ProbeOutcome) -> ProbeResult:
        return cls.model_validate(outcome.model_dump())


@message("probe.list_tools", 1)
class ListTools(Message):
    registry: RegistryName = "environment"
    policy: ProbePolicy | None = None
    """Narrows the registry's policy when reporting which tools are allowed."""


@message("probe.tool_list", 1)
class ToolList(Message):
    registry: RegistryName
    specs: list[ToolSpecData]
    """Every tool of the registry, allowed or not."""
    allowed: list[str]
    """Canonical names of the tools the policy allows."""
    functions: list[JsonObject]
    """OpenAI function-calling ``tools`` entries for the allowed tools (named by release alias)."""


@message("probe.get_scene", 1)
class GetProbeScene(Message):
    """Ask ``world`` for the live town as a ``ProbeScene``."""

    asker: str | None = None
    """An agent's name or slug; the scene's point of view."""
    include_private: bool = False
    """Private facts and beliefs are left out unless asked for (the probe registry asks)."""


@message("probe.scene", 1)
class ProbeSceneData(Message):
    scene: ProbeScene
