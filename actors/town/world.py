"""``world``: the authoritative town state. Runs each tick of DESIGN.md's protocol, logs injected
events and answers state queries. The rules themselves are ``world``'s pure functions."""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Future

import structlog

from actors.bus import AskTimeoutError, RemoteError
from actors.runtime import Context, PermanentError, StatefulActor, on
from actors.town._config import TownConfig
from messages import Envelope
from messages.probes import GetProbeScene, ProbeSceneData
from messages.town import (
    Decision,
    EventAccepted,
    ExportSnapshot,
    GetMindState,
    GetTownState,
    InjectEvent,
    MindStateData,
    Perception,
    RecordExchange,
    Rejected,
    SnapshotData,
    Tick,
    TickCompleted,
    TownStateView,
)
from world import (
    TICKS_PER_DAY,
    AgentMindState,
    InvalidEventError,
    TickReport,
    TownSnapshot,
    WorldState,
    advance,
    digest,
    initial_state,
    inject,
    perceptions,
    record_exchange,
    sim_time,
    view,
)
from world.conversation import DialogueWriter
from world.probes import SceneError, scene_from_town

log = structlog.get_logger("auratown.world")

TICKS_TOPIC = "town.ticks"
EVENTS_TOPIC = "town.events"


def agent_address(slug: str) -> str:
    return f"agent.{slug}"


class WorldActor(StatefulActor[WorldState]):
    state_model = WorldState

    def __init__(self, config: TownConfig, dialogue: DialogueWriter | None = None) -> None:
        self.config = config
        self.definition = config.definition
        self.dialogue = dialogue
        """Words the conversations (a model, ``actors.town.llm_mind``); None: the templates."""
        super().__init__()

    def initial_state(self) -> WorldState:
        return initial_state(self.definition, self.config.seed)

    @on(Tick)
    def tick(self, ctx: Context, msg: Tick) -> None:
        state = self.state
        if msg.tick < state.tick:
            # Already applied (a resend by the clock, or a redelivery): say so again, change nothing.
            if msg.tick == state.tick - 1:
                ctx.publish(TICKS_TOPIC, self._completed(msg.tick, digest(state), ()), sim_time=msg.tick)
            log.info("tick already applied", tick=msg.tick, next_tick=state.tick)
            return
        if msg.tick > state.tick:
            raise PermanentError(f"tick {msg.tick} would skip tick {state.tick}")
        t0 = time.perf_counter()
        decisions = self._gather_decisions(ctx, perceptions(self.definition, state))
        report = advance(self.definition, state, decisions, dialogue=self.dialogue)
        ctx.publish(
            TICKS_TOPIC, self._completed(report.tick, report.digest, report.missed, report), sim_time=msg.tick
        )
        for event in report.events:
            ctx.publish(EVENTS_TOPIC, event, sim_time=msg.tick)
        if report.time.slot == TICKS_PER_DAY - 1:
            self._cap_topics(ctx)
        log.info(
            "tick applied",
            tick=report.tick,
            time=str(report.time),
            missed=len(report.missed),
            conversations=len(report.conversations),
            ms=round((time.perf_counter() - t0) * 1000, 1),
        )

    def _cap_topics(self, ctx: Context) -> None:
        """Once a day: a topic nobody subscribes to would grow forever; keep its recent history.
        (A topic with groups is trimmed below what they acknowledged by their hosts.)"""
        transport, keep = ctx.bus.transport, self.config.topic_history
        for topic in (TICKS_TOPIC, EVENTS_TOPIC):
            stream = ctx.bus.keys.topic(topic)
            excess = transport.length(stream) - keep
            if excess > 0 and not transport.groups(stream):
                oldest = transport.range(stream, count=excess)
                transport.trim_before(stream, oldest[-1].entry_id)

    @staticmethod
    def _completed(
        tick: int, dig: str, missed: Sequence[str], report: TickReport | None = None
    ) -> TickCompleted:
        t = sim_time(tick)
        return TickCompleted(
            tick=tick,
            day=t.day,
            time=t.hhmm,
            digest=dig,
            missed=tuple(missed),
            events=tuple(report.events) if report else (),
            conversations=len(report.conversations) if report else 0,
        )

    def _gather_decisions(self, ctx: Context, percs: dict[str, Perception]) -> dict[str, Decision]:
        slugs = list(percs)
        futures = ctx.ask_many(
            [(agent_address(s), percs[s]) for s in slugs], timeout=self.config.decision_timeout
        )
        decisions: dict[str, Decision] = {}
        deadline = time.monotonic() + self.config.decision_timeout + 0.5
        for slug, fut in zip(slugs, futures, strict=True):
            reply = _result(fut, deadline)
            if reply is not None and isinstance(reply.payload, Decision):
                decisions[slug] = reply.payload
        return decisions

    @on(InjectEvent)
    def inject_event(self, ctx: Context, msg: InjectEvent) -> EventAccepted | Rejected:
        try:
            accepted = inject(self.definition, self.state, msg)
        except InvalidEventError as exc:
            return Rejected(reason=str(exc))
        ctx.publish(EVENTS_TOPIC, accepted.event, sim_time=self.state.tick)
        log.info("event injected", kind=msg.kind, location=msg.location, witnesses=len(accepted.witnesses))
        return accepted

    @on(RecordExchange)
    def record(self, ctx: Context, msg: RecordExchange) -> EventAccepted | Rejected:
        try:
            accepted = record_exchange(self.definition, self.state, msg.asker, msg.query, msg.answer)
        except InvalidEventError as exc:
            return Rejected(reason=str(exc))
        ctx.publish(EVENTS_TOPIC, accepted.event, sim_time=self.state.tick)
        return accepted

    @on(GetTownState)
    def get_state(self, ctx: Context, msg: GetTownState) -> TownStateView | Rejected:
        try:
            return view(
                self.definition,
                self.state,
                agent=msg.agent,
                include_private=msg.include_private,
                events=msg.events,
            )
        except KeyError as exc:
            return Rejected(reason=str(exc.args[0]))

    @on(GetProbeScene)
    def probe_scene(self, ctx: Context, msg: GetProbeScene) -> ProbeSceneData | Rejected:
        """The town as the probe tools read it. Agents' memories are not the world's: the probe
        registry reads them from the agent itself when a tool needs them."""
        try:
            scene = scene_from_town(self.definition, self.state, None, msg.asker)
        except SceneError as exc:
            return Rejected(reason=str(exc))
        return ProbeSceneData(scene=scene if msg.include_private else scene.public())

    @on(ExportSnapshot)
    def export(self, ctx: Context, msg: ExportSnapshot) -> SnapshotData | Rejected:
        slugs = list(self.state.agents)
        futures = ctx.ask_many([(agent_address(s), GetMindState()) for s in slugs], timeout=msg.mind_timeout)
        deadline = time.monotonic() + msg.mind_timeout + 0.5
        minds: dict[str, AgentMindState] = {}
        for slug, fut in zip(slugs, futures, strict=True):
            reply = _result(fut, deadline)
            if reply is None or not isinstance(reply.payload, MindStateData):
                return Rejected(
                    reason=f"agent.{slug} did not hand over its mind state in {msg.mind_timeout}s"
                )
            minds[slug] = AgentMindState.model_validate_json(reply.payload.data)
        snap = TownSnapshot(definition=self.definition, world=self.state, minds=minds)
        return SnapshotData(tick=self.state.tick, data=snap.to_bytes().decode())


def _result(fut: Future[Envelope], deadline: float) -> Envelope | None:
    try:
        return fut.result(timeout=max(0.0, deadline - time.monotonic()))
    except (AskTimeoutError, RemoteError, TimeoutError) as exc:
        log.info("no answer in time", error=type(exc).__name__)
        return None
