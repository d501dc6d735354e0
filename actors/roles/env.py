"""``env``: the AURA environment agent. Answers ``AskQuery`` with the pipeline of the condition
asked for; stateless, so any number may serve the address."""

from __future__ import annotations

import structlog

from actors.aura import BackendFactory, BusProbes, make_backend_factory
from actors.bus import AskTimeoutError, RemoteError
from actors.llm import MeteredCalls
from actors.runtime import Actor, Context, on
from messages.aura import AnswerData, AskQuery
from messages.probes import GetProbeScene, ProbeScene, ProbeSceneData
from messages.town import GetMindState, MindStateData, RecordExchange, Rejected
from world import AgentMindState
from world.aura import answer_query, scene_view
from world.probes import memory_facts

log = structlog.get_logger("auratown.env")

ENV = "env"


class EnvActor(Actor):
    def __init__(
        self,
        backends: BackendFactory | None = None,
        *,
        registry: str = "registry",
        world: str = "world",
        timeout: float = 10.0,
        model_budget: float | None = 45.0,
    ) -> None:
        """``model_budget``: seconds every model call of one question may take together (within
        ``auratown ask``'s default 60 s wait); past it each remaining stage answers offline,
        recorded as a fallback on the answer. None: the gateway's own unit budget."""
        self.backends = backends or make_backend_factory()
        self.registry = registry
        self.world = world
        self.timeout = timeout
        self.model_budget = model_budget

    @on(AskQuery)
    def ask(self, ctx: Context, msg: AskQuery) -> AnswerData | Rejected:
        scene = msg.scene if msg.scene is not None else self._live_scene(ctx, msg.asker)
        if isinstance(scene, Rejected):
            return scene
        view = scene_view(scene, msg.asker, msg.query)
        probes = BusProbes(
            ctx,
            registry=msg.registry,
            caller=f"{ENV}:{view.asker}",
            asker=view.asker,
            scene=msg.scene,  # None: the registry reads the live town itself
            address=self.registry,
            timeout=self.timeout,
        )
        backend = self.backends(msg.model)
        if isinstance(backend, MeteredCalls) and self.model_budget is not None:
            backend.budget_s = min(backend.budget_s, self.model_budget)
            backend.reset()  # the question's budget starts now
        answer = answer_query(
            msg.query,
            view.asker,
            msg.condition,
            view,
            probes,
            backend,
            explore_max_steps=msg.explore_max_steps,
            gold=msg.gold,
        )
        if not msg.read_only and msg.scene is None:
            # Sent with this message's acknowledgement: recorded once, even if we are redelivered.
            ctx.tell(self.world, RecordExchange(asker=view.asker, query=msg.query, answer=answer.text))
        log.info(
            "query answered",
            condition=msg.condition,
            probes=len(answer.trace),
            gap=answer.frame.gap if answer.frame else None,
            alerts=len(answer.alerts),
            backend=answer.backend,
        )
        return answer

    def _live_scene(self, ctx: Context, asker: str) -> ProbeScene | Rejected:
        try:
            reply = ctx.ask(self.world, GetProbeScene(asker=asker), timeout=self.timeout)
        except (AskTimeoutError, RemoteError) as exc:
            return Rejected(reason=f"the town did not answer ({type(exc).__name__}): is the world running?")
        if isinstance(reply, Rejected):
            return reply
        if not isinstance(reply, ProbeSceneData):
            return Rejected(reason=f"the world answered {type(reply).__name__}")
        return self._with_memories(ctx, reply.scene, asker)

    def _with_memories(self, ctx: Context, scene: ProbeScene, asker: str) -> ProbeScene:
        """The Memory stage reads the asker's own memory stream, which lives in its agent actor."""
        agent = next((a for a in scene.agents.values() if asker.lower() in (a.name.lower(), a.slug)), None)
        if agent is None or agent.slug is None:
            return scene
        try:
            reply = ctx.ask(f"agent.{agent.slug}", GetMindState(), timeout=self.timeout)
        except (AskTimeoutError, RemoteError) as exc:
            log.warning("asker's memories unavailable", asker=agent.name, error=type(exc).__name__)
            return scene
        if not isinstance(reply, MindStateData):
            return scene
        items = AgentMindState.model_validate_json(reply.data).memory.items
        memories = {**scene.memories, agent.name: [memory_facts(i) for i in items]}
        return scene.model_copy(update={"memories": memories})
