"""``agent.<slug>``: one town agent. Owns its memory stream; its mind chooses its actions."""

from __future__ import annotations

from actors.runtime import Context, StatefulActor, on
from actors.town.llm_mind import DeadlineAware
from messages.town import Decision, GetMindState, MindStateData, Perception
from world import AgentMindState, AgentProfile, MindFactory, TownDefinition, agent_turn, schedule_mind


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
        deadline = ctx.envelope.deadline
        if deadline is not None and isinstance(self.mind, DeadlineAware):
            # A mind that waits on a model must answer before the world stops waiting.
            self.mind.begin_turn(deadline - ctx.bus.clock())
        return agent_turn(self.state, self.mind, perception)

    @on(GetMindState)
    def mind_state(self, ctx: Context, msg: GetMindState) -> MindStateData:
        return MindStateData(slug=self.profile.slug, data=self.state.model_dump_json())
