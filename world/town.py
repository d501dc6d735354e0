"""A whole town in one process: the world state plus every agent's mind, stepped tick by tick.

This is the same protocol the actors run over the bus (perceive, decide, advance), without the
bus; the in-process benchmark, the tests and ``auratown run --in-process`` use it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from messages.town import Decision, EventAccepted, InjectEvent, TownStateView
from world.conversation import DialogueWriter
from world.definition import TownDefinition
from world.minds import AgentMindState, Mind, MindFactory, agent_turn, schedule_mind
from world.rules import DEFAULT_RULES, PrivateStateRules
from world.simulation import TickReport, advance, digest, initial_state, inject, perceptions, view
from world.state import WorldState

SNAPSHOT_FORMAT = "auratown.snapshot/1"


class TownSnapshot(BaseModel):
    """Everything a town is: its definition, the world state and each agent's mind state."""

    model_config = ConfigDict(extra="forbid")

    format: str = SNAPSHOT_FORMAT
    definition: TownDefinition
    world: WorldState
    minds: dict[str, AgentMindState]

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()

    @classmethod
    def from_bytes(cls, data: bytes | str) -> TownSnapshot:
        snap = cls.model_validate_json(data)
        if snap.format != SNAPSHOT_FORMAT:
            raise ValueError(f"unknown snapshot format {snap.format!r}")
        return snap


class Town:
    def __init__(
        self,
        definition: TownDefinition,
        seed: int = 0,
        *,
        mind_factory: MindFactory = schedule_mind,
        rules: PrivateStateRules = DEFAULT_RULES,
        state: WorldState | None = None,
        minds: dict[str, AgentMindState] | None = None,
        dialogue: DialogueWriter | None = None,
    ) -> None:
        self.definition = definition
        self.rules = rules
        self.dialogue = dialogue
        self.state = state if state is not None else initial_state(definition, seed)
        self.seed = self.state.seed
        self.minds: dict[str, Mind] = {
            p.slug: mind_factory(definition, p, self.seed) for p in definition.agents
        }
        self.mind_states = (
            minds if minds is not None else {s: AgentMindState(slug=s) for s in definition.slugs}
        )

    @property
    def tick(self) -> int:
        return self.state.tick

    def step(self, ticks: int = 1) -> list[TickReport]:
        reports = []
        for _ in range(ticks):
            decisions: dict[str, Decision] = {}
            for slug, perception in perceptions(self.definition, self.state).items():
                decisions[slug] = agent_turn(self.mind_states[slug], self.minds[slug], perception)
            reports.append(advance(self.definition, self.state, decisions, self.rules, self.dialogue))
        return reports

    def inject(self, event: InjectEvent) -> EventAccepted:
        return inject(self.definition, self.state, event, self.rules)

    def view(
        self, agent: str | None = None, *, include_private: bool = False, events: int = 10
    ) -> TownStateView:
        return view(self.definition, self.state, agent=agent, include_private=include_private, events=events)

    def digest(self) -> str:
        return digest(self.state)

    def snapshot(self) -> TownSnapshot:
        return TownSnapshot(
            definition=self.definition,
            world=self.state.model_copy(deep=True),
            minds={s: m.model_copy(deep=True) for s, m in self.mind_states.items()},
        )

    @classmethod
    def restore(
        cls,
        snapshot: TownSnapshot | bytes | str,
        *,
        mind_factory: MindFactory = schedule_mind,
        dialogue: DialogueWriter | None = None,
    ) -> Town:
        snap = snapshot if isinstance(snapshot, TownSnapshot) else TownSnapshot.from_bytes(snapshot)
        return cls(
            snap.definition,
            snap.world.seed,
            mind_factory=mind_factory,
            state=snap.world.model_copy(deep=True),
            minds={s: m.model_copy(deep=True) for s, m in snap.minds.items()},
            dialogue=dialogue,
        )
