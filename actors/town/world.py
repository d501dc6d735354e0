"""``world``: the authoritative town state. Runs each tick of DESIGN.md's protocol, logs injected
events and answers state queries. The rules themselves are ``world``'s pure functions.

Its tick is the town's authority. Before every message it checks that Redis still holds the state
it last stored: Redis restarted without its last writes (an OS crash under ``appendfsync
everysec``) holds every actor's state as of one earlier moment, so the world goes back to it and
runs the lost ticks again (the agents, ahead of it, roll back to the same moment). A tick the
world is sent that is not its next one (nor its last, answered again) is not dead-lettered: the
world tells the clock where it is and the clock adopts that position.

A Redis outage while agents decide is not their fault: the world watches the bus while it waits
for their decisions, and asks again (with a fresh deadline) the agents whose answer an outage kept
from it, so the tick comes out as it would have undisturbed. Only an agent that does not answer
while the bus is up misses the tick.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import ClassVar

import structlog

from actors.bus import AskTimeoutError, Bus, RemoteError
from actors.runtime import Context, on
from actors.town._config import TownConfig
from actors.town._stored import StoreGuardedActor
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

CLOCK = "clock"
OUTAGE_PROBE_S = 0.5
"""A probe of the bus that takes longer than this (or fails) means the bus was away."""
PROBE_EVERY = 0.25
ASK_ROUNDS = 5
"""Rounds of asking agents a tick's decision when outages keep interrupting them."""

TICKS_TOPIC = "town.ticks"
EVENTS_TOPIC = "town.events"


def agent_address(slug: str) -> str:
    return f"agent.{slug}"


class WorldActor(StoreGuardedActor[WorldState]):
    state_model = WorldState
    stored_here: ClassVar[dict[tuple[str, str], int]] = {}

    def __init__(self, config: TownConfig, dialogue: DialogueWriter | None = None) -> None:
        self.config = config
        self.definition = config.definition
        self.dialogue = dialogue
        """Words the conversations (a model, ``actors.town.llm_mind``); None: the templates."""
        super().__init__("world")

    def on_start(self, address: str, bus: Bus) -> None:
        self.guard_start(address, bus)

    def position(self) -> int:
        return self.state.tick

    def behind_stored(self, bus: Bus, stored_here: int) -> None:
        bus.count("town_repairs")
        log.warning(
            "the world's stored state is behind what this process stored (Redis lost writes, "
            "or a commit did not apply); running the lost ticks again",
            had_tick=stored_here,
            stored_tick=self.state.tick,
        )

    def initial_state(self) -> WorldState:
        return initial_state(self.definition, self.config.seed)

    def lost_writes(self, ctx: Context, lost: WorldState) -> None:
        ctx.bus.count("town_repairs")
        log.warning(
            "Redis lost the world's last writes; going back to what it holds and running the lost "
            "ticks again",
            had_tick=lost.tick,
            stored_tick=self.state.tick,
        )

    def _tell_position(self, ctx: Context, sent: int) -> None:
        """The clock sent a tick that is neither the world's next nor its last: tell it where
        the world is (to its inbox: the topic's history stays one announcement per tick)."""
        state = self.state
        last = state.tick - 1
        position = TickCompleted(tick=last, day=-1, time="", digest=digest(state))
        if last >= 0:
            position = self._completed(last, digest(state), ())
        ctx.tell(CLOCK, position, sim_time=sent)  # which tick it answers, for the clock
        ctx.bus.count("town_repairs")
        log.warning("the clock is not at the world's tick; told it", sent=sent, next_tick=state.tick)

    @on(Tick)
    def tick(self, ctx: Context, msg: Tick) -> None:
        state = self.state
        if msg.tick == state.tick - 1:
            # Already applied (a resend by the clock, or a redelivery): say so again, change nothing.
            ctx.publish(TICKS_TOPIC, self._completed(msg.tick, digest(state), ()), sim_time=msg.tick)
            log.info("tick already applied", tick=msg.tick, next_tick=state.tick)
            return
        if msg.tick != state.tick:
            self._tell_position(ctx, msg.tick)
            return
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
        """Each agent's decision, asked with the decision timeout. Agents an outage of the bus
        kept from answering are asked again once it is back (an agent answers a perception it
        already handled with the decision it gave), up to ``ASK_ROUNDS`` rounds."""
        decisions: dict[str, Decision] = {}
        asking = list(percs)
        for round_ in range(1, ASK_ROUNDS + 1):
            outage = self._ask_round(ctx, percs, asking, decisions)
            missing = [s for s in asking if s not in decisions]
            if not missing or not outage:
                break
            ctx.bus.count("decisions_asked_again", len(missing))
            log.warning("the bus was away while agents decided; asking again", agents=missing, round=round_)
            asking = missing
        return decisions

    def _ask_round(
        self,
        ctx: Context,
        percs: dict[str, Perception],
        slugs: list[str],
        decisions: dict[str, Decision],
    ) -> bool:
        """Ask ``slugs`` once; True if the bus was away (slow or failing) while they decided."""
        started = time.monotonic()
        try:
            futures = ctx.ask_many(
                [(agent_address(s), percs[s]) for s in slugs], timeout=self.config.decision_timeout
            )
        except Exception as exc:  # noqa: BLE001 - Redis away longer than the transport waits
            log.warning("could not ask the agents", error=repr(exc))
            self._wait_for_bus(ctx)
            return True
        # Sending waited for Redis to come back: the deadline may have passed before they got it.
        outage = time.monotonic() - started >= OUTAGE_PROBE_S
        deadline = time.monotonic() + self.config.decision_timeout + 0.5
        for slug, fut in zip(slugs, futures, strict=True):
            while not fut.done() and time.monotonic() < deadline:
                with contextlib.suppress(FutureTimeout):
                    fut.exception(timeout=min(PROBE_EVERY, max(0.0, deadline - time.monotonic())))
                if not fut.done():
                    outage = not self._bus_up(ctx) or outage
            reply = _result(fut, deadline)
            if reply is not None and isinstance(reply.payload, Decision):
                decisions[slug] = reply.payload
        if any(s not in decisions for s in slugs):
            outage = not self._bus_up(ctx) or outage
        return outage

    @staticmethod
    def _probe(ctx: Context) -> None:
        ctx.bus.transport.exists(ctx.bus.keys.state(ctx.address))  # one round trip, any answer

    def _bus_up(self, ctx: Context) -> bool:
        started = time.monotonic()
        try:
            self._probe(ctx)
        except Exception:  # noqa: BLE001 - any failure is an outage
            return False
        return time.monotonic() - started < OUTAGE_PROBE_S

    def _wait_for_bus(self, ctx: Context) -> None:
        while not ctx.bus.closed:
            started = time.monotonic()
            try:
                self._probe(ctx)
                return
            except Exception:  # noqa: BLE001 - still away
                time.sleep(max(0.0, PROBE_EVERY - (time.monotonic() - started)))

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
