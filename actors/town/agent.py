"""``agent.<slug>``: one town agent. Owns its memory stream; its mind chooses its actions."""

from __future__ import annotations

import json

import structlog

from actors.runtime import Context, StatefulActor, on
from actors.town.clock import WORLD
from actors.town.llm_mind import DeadlineAware
from messages.town import Decision, GetMindState, MindStateData, Perception
from world import AgentMindState, AgentProfile, MindFactory, TownDefinition, agent_turn, schedule_mind
from world.clock import MINUTES_PER_DAY

log = structlog.get_logger("auratown.agent")


def forget_from(state: AgentMindState, perception: Perception) -> AgentMindState:
    """``state`` without what it formed from ``perception``'s tick on (its minute or later)."""
    memory = state.memory.model_copy(deep=True)
    kept = [i for i in memory.items if i.minute < perception.minute]
    memory.items = kept
    memory.next_id = max((i.id for i in kept), default=0) + 1
    # A reflection follows every ``reflection_every`` observations: count those since the last.
    last = max((n for n, i in enumerate(kept) if i.kind == "reflection"), default=-1)
    since = sum(i.kind == "observation" for i in kept[last + 1 :])
    memory.observations_since_reflection = since % memory.reflection_every
    # The day of the last plan it still remembers is the last day it planned.
    planned = max((i.minute // MINUTES_PER_DAY for i in kept if i.kind == "plan"), default=-1)
    plan_day = min(state.plan_day, planned)
    return state.model_copy(
        update={
            "memory": memory,
            "last_tick": perception.tick - 1,
            "last_decision": None,
            "plan_day": plan_day,
        }
    )


class TownAgentActor(StatefulActor[AgentMindState]):
    state_model = AgentMindState
    pooled = True  # a town has hundreds of agents: a thread each costs more than their handlers

    def __init__(
        self,
        definition: TownDefinition,
        profile: AgentProfile,
        seed: int,
        mind_factory: MindFactory = schedule_mind,
    ) -> None:
        self.profile = profile
        self.mind = mind_factory(definition, profile, seed)
        super().__init__()

    def initial_state(self) -> AgentMindState:
        return AgentMindState(slug=self.profile.slug)

    @on(Perception)
    def perceive(self, ctx: Context, perception: Perception) -> Decision:
        if perception.tick < self.state.last_tick and self._world_went_back(ctx, perception):
            self._roll_back(ctx, perception)
        deadline = ctx.envelope.deadline
        if deadline is not None and isinstance(self.mind, DeadlineAware):
            # A mind that waits on a model must answer before the world stops waiting.
            self.mind.begin_turn(deadline - ctx.bus.clock())
        return agent_turn(self.state, self.mind, perception)

    @staticmethod
    def _world_went_back(ctx: Context, perception: Perception) -> bool:
        """An older perception than this agent's last is the world running that tick again only
        if the world's stored tick is not past it; else it is a stale delivery (the ask of a
        world that was killed, taken over late), answered without being remembered."""
        raw = ctx.bus.load_state(WORLD)
        world_tick = int(json.loads(raw)["tick"]) if raw is not None else 0
        return world_tick <= perception.tick

    def _roll_back(self, ctx: Context, perception: Perception) -> None:
        """The world is running a tick again that this agent has lived past: Redis lost the last
        writes and the world went back to what it holds. Go back to the same moment, so no
        memory is ahead of the world: the stored state if it is from that moment too, else the
        memories formed from this tick on are dropped (logged and counted)."""
        ahead = self.state.last_tick
        stored = ctx.bus.load_state(ctx.address)
        back = AgentMindState.model_validate_json(stored) if stored is not None else self.initial_state()
        how = "stored state"
        if back.last_tick != perception.tick - 1:  # Redis holds another moment than the world's
            back, how = forget_from(self.state, perception), "memories dropped"
        self.state = back
        ctx.bus.count("town_rollbacks")
        log.warning(
            "the world is behind this agent; rolled back",
            agent=self.profile.slug,
            had_tick=ahead,
            world_tick=perception.tick,
            now_tick=back.last_tick,
            how=how,
        )

    @on(GetMindState)
    def mind_state(self, ctx: Context, msg: GetMindState) -> MindStateData:
        return MindStateData(slug=self.profile.slug, data=self.state.model_dump_json())
