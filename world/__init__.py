"""AURATown's pure, deterministic domain: the town definition, state, rules, memory and minds.

Nothing here does I/O, starts a thread, reads a clock or touches global random state: time is a
tick number and randomness comes from the town's seed.
"""

from world.clock import MINUTES_PER_TICK, TICKS_PER_DAY, SimTime, sim_time
from world.definition import (
    Activity,
    AgentProfile,
    Location,
    ScheduleEntry,
    TownDefinition,
    TownDefinitionError,
    parse_town,
    slugify,
)
from world.generator import generate_town
from world.memory import MemoryItem, MemoryStream
from world.minds import AgentMindState, Mind, MindFactory, ScheduleMind, agent_turn, schedule_mind
from world.rules import DEFAULT_RULES, RULE_ORDER, PrivateStateRules, RuleInput, RuleOutcome, evolve
from world.simulation import (
    InvalidEventError,
    TickReport,
    advance,
    digest,
    initial_state,
    inject,
    perceptions,
    record_exchange,
    scheduled_decision,
    view,
)
from world.state import AgentState, Belief, PrivateState, WorldState
from world.town import Town, TownSnapshot

__all__ = [
    "DEFAULT_RULES",
    "MINUTES_PER_TICK",
    "RULE_ORDER",
    "TICKS_PER_DAY",
    "Activity",
    "AgentMindState",
    "AgentProfile",
    "AgentState",
    "Belief",
    "InvalidEventError",
    "Location",
    "MemoryItem",
    "MemoryStream",
    "Mind",
    "MindFactory",
    "PrivateState",
    "PrivateStateRules",
    "RuleInput",
    "RuleOutcome",
    "ScheduleEntry",
    "ScheduleMind",
    "SimTime",
    "TickReport",
    "Town",
    "TownDefinition",
    "TownDefinitionError",
    "TownSnapshot",
    "WorldState",
    "advance",
    "agent_turn",
    "digest",
    "evolve",
    "generate_town",
    "initial_state",
    "inject",
    "parse_town",
    "perceptions",
    "record_exchange",
    "schedule_mind",
    "scheduled_decision",
    "sim_time",
    "slugify",
    "view",
]
