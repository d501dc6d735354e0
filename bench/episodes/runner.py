"""Run one unit (an episode for one assistant and one repetition) session by session, over a bus.

For each task, in the episode's order: seed the workspace with its assets and app data (which
snapshots the state), start the session at the simulated user, wait for ``SessionEnded`` (the
timeout guard aborts a session that outlives ``session_timeout``), collect the session's tool
history, state diff and files_read, have the grader score it, and append the result to the unit's
record. Sessions open on a virtual clock: an hour after the previous one, or at the task's
``metadata.at_minutes``; a heartbeat session's payload carries the scheduled items then due.

A session that cannot finish never stops the run: past ``session_timeout`` the runner tells the
user to abort it, and when the user does not end it within ``abort_timeout`` (it may be waiting on
a model call) or any step of the session fails, the runner records the session itself, as failed
(end reason ``error``, excluded from the averages and counted), and goes on with the next one.
The built-in assistant's model usage of a session is read from the gateway's ledger (every request
made, failed ones and the end-of-session reflection included), and the reflection's own usage and
fallbacks are recorded in the session's line of the unit record.

Resume: finished sessions are read back from the unit's record. When the bus kept the episode's
state (Redis), an interrupted session is restored from its snapshot and run again; when it did not
(the in-process bus of a new process), the unit starts over.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from actors.bus import AskTimeoutError, Bus, RemoteError
from actors.episodes import (
    GRADER,
    AssistantActor,
    EpisodeRegistryActor,
    GatewayPool,
    GraderActor,
    SimulatedUserActor,
)
from actors.episodes._gateways import actor_usage, fallback_reasons, usage_summary
from actors.episodes.oracle import OracleAssistantActor
from actors.llm import LLMGateway, UsageStats
from actors.runtime import Actor, Context, Host, HostConfig, on
from bench.episodes.loader import LoadedTask
from bench.episodes.plan import Unit
from bench.episodes.store import UnitRecord
from messages import Message
from messages.aura import UsageSummary
from messages.episodes import (
    AbortSession,
    FilesData,
    GetStateDiff,
    GetToolHistory,
    GradeSession,
    Judgement,
    ReadFiles,
    RegistryAck,
    RestoreSnapshot,
    SeedWorkspace,
    SessionEnded,
    SessionGrade,
    SessionStarted,
    StartSession,
    StateDiffData,
    ToolHistory,
)
from messages.town import Rejected
from world.episodes.tasks import describe_payload, grading_spec, opens_at, session_spec

if TYPE_CHECKING:
    from actors.appworld import AppWorldApps

log = structlog.get_logger("auratown.episodes")

SESSION_GAP_MINUTES = 60.0


class EpisodeRunError(RuntimeError):
    """A unit could not go on (an actor did not answer, a session never ended)."""


@dataclass(frozen=True)
class RunSettings:
    model: str | None = None
    """The assistant's litellm model (None: the offline assistant)."""
    judge_model: str | None = None
    """The simulated user's, its judges' and the rubric grader's model (None: deterministic)."""
    api_base: str | None = None
    session_timeout: float = 900.0
    ask_timeout: float = 120.0
    max_turns: int | None = None
    """Overrides every task's turn limit."""
    max_steps: int = 8
    max_tokens: int | None = None
    """Output tokens of every model answer (see ``GatewayPool.max_tokens``)."""
    llm_timeout: float | None = None
    """Seconds one model request may take (None: the settings')."""
    context_window: int | None = None
    """Tokens the model reads and writes in all (None: the settings', else litellm's model info)."""
    abort_timeout: float = 10.0
    """Seconds (at most ``session_timeout``) the user has to end a timed-out session after the
    abort; then the runner records the session as failed itself (the user may be blocked behind a
    model call)."""
    drain_timeout: float = 60.0
    """Seconds the runner waits, after recording the last session of a unit as failed, for the
    busy user to end it (so what it and the assistant still spend on it is counted)."""
    reflection_timeout: float = 30.0
    """Seconds after a session's end to wait for the assistant's reflection, beyond its model
    budget (the assistant may still be finishing a turn the session no longer waits for)."""
    apps: str = "builtin"
    """The app backend: ``builtin`` (our apps, in the registry) or ``appworld`` (AppWorld's own,
    in its own process, installed by ``auratown appworld install``)."""
    shared_world: bool = False
    """AppWorld only: every unit works on one world that is never reset (pi-Bench's own way);
    by default each unit starts from its persona's seed and each session from its snapshot."""
    appworld_home: str | None = None
    """Where AppWorld is installed (None: ``actors.appworld.default_home()``)."""
    max_reruns: int = 2
    """Times a session is run again after the app backend died during it."""


def gateway_pool(settings: RunSettings, *, cache_dir: Path | None = None) -> GatewayPool:
    """The gateways of a run's units: its model server and limits."""
    return GatewayPool(
        api_base=settings.api_base,
        cache_dir=cache_dir,
        max_tokens=settings.max_tokens,
        timeout=settings.llm_timeout,
        context_window=settings.context_window,
    )


class SessionSink(Actor):
    """Receives the ``SessionEnded`` of every unit of this process and hands it to the waiter."""

    def __init__(self, inbox: Callable[[SessionEnded], None]) -> None:
        self.inbox = inbox

    @on(SessionEnded)
    def ended(self, ctx: Context, msg: SessionEnded) -> None:
        self.inbox(msg)


class EpisodeHost:
    """One process's host for the units it runs: the shared grader and session sink, and each
    unit's registry, user and (built-in) assistant, spawned when the unit starts."""

    def __init__(
        self,
        bus: Bus,
        settings: RunSettings,
        *,
        gateways: GatewayPool | None = None,
        config: HostConfig | None = None,
    ) -> None:
        """``config``: the host's settings (a worker passes its visibility timeout, so a unit it
        dies in is taken over as fast as its other work)."""
        self.bus = bus
        self.settings = settings
        self.gateways = gateways or gateway_pool(settings)
        self.sink_address = f"runner.{bus.process_id}"
        self._queues: dict[tuple[str, str], queue.Queue[SessionEnded]] = {}
        self._reflections: dict[tuple[str, str], queue.Queue[UsageSummary]] = {}
        self._lock = threading.Lock()
        self.apps = open_apps(settings)
        self.host = Host(bus, config, name="episodes")
        self.host.spawn(lambda: SessionSink(self._deliver), self.sink_address)
        self.host.spawn(lambda: GraderActor(self.gateways), GRADER)
        self.host.start()

    def _queue(self, unit: str, task: str) -> queue.Queue[SessionEnded]:
        with self._lock:
            return self._queues.setdefault((unit, task), queue.Queue())

    def _deliver(self, msg: SessionEnded) -> None:
        self._queue(msg.episode_id, msg.task_id).put(msg)

    def _reflection_queue(self, unit: str, task: str) -> queue.Queue[UsageSummary]:
        with self._lock:
            return self._reflections.setdefault((unit, task), queue.Queue())

    def wait_reflection(self, unit: str, task: str, timeout: float) -> UsageSummary | None:
        """The usage of the assistant's reflection on the session, or None at the deadline."""
        try:
            return self._reflection_queue(unit, task).get(timeout=timeout)
        except queue.Empty:
            return None

    def judge_gateway(self) -> LLMGateway | None:
        """The gateway of the simulated user's judges (None: deterministic judges)."""
        return self.gateways.get(self.settings.judge_model) if self.settings.judge_model else None

    def assistant_gateway(self, unit: Unit) -> LLMGateway | None:
        """The gateway of the unit's built-in model assistant (None: offline, oracle, external)."""
        model = self.settings.model
        if unit.assistant.oracle or unit.assistant.external is not None or not model or model == "offline":
            return None
        return self.gateways.get(model)

    def wait_ended(self, unit: str, task: str, timeout: float) -> SessionEnded | None:
        """The session's end, or None at the deadline. Ends of sessions aborted by a resume (reason
        ``aborted``) are dropped: the session is being run again."""
        deadline = time.monotonic() + timeout
        q = self._queue(unit, task)
        while True:
            try:
                ended = q.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return None
            if ended.reason != "aborted":
                return ended

    def spawn_unit(self, unit: Unit) -> str:
        """Host the unit's actors (once per process); returns the assistant's address."""
        key = unit.key
        if f"registry.{key}" not in self.host.addresses:
            episode = unit.episode
            self.host.spawn(
                lambda: EpisodeRegistryActor(seed=episode.seed, offered=episode.offered, apps=self.apps),
                f"registry.{key}",
            )
            self.host.spawn(lambda: SimulatedUserActor(self.gateways), f"user.{key}")
            if unit.assistant.oracle:
                scripts = {t.task.task_id: t.task.extensions.oracle for t in episode.tasks}
                self.host.spawn(lambda: OracleAssistantActor(scripts), f"assistant.{key}")
            elif unit.assistant.external is None:
                intent = unit.assistant.intent_step
                model = self.settings.model or "offline"

                def reflected(task_id: str, usage: UsageSummary) -> None:
                    self._reflection_queue(key, task_id).put(usage)

                self.host.spawn(
                    lambda: AssistantActor(
                        model,
                        intent_step=intent,
                        gateway_factory=self.gateways.get,
                        max_steps=self.settings.max_steps,
                        on_consolidated=reflected,
                    ),
                    f"assistant.{key}",
                )
        return unit.assistant.external or f"assistant.{key}"

    def stop(self) -> None:
        self.host.stop()
        if self.apps is not None:
            self.apps.service.stop()


def open_apps(settings: RunSettings) -> AppWorldApps | None:
    """The app backend ``settings`` asks for: None for the built-in apps, else AppWorld's, its
    process started (EpisodeRunError with the reason when it is not installed or cannot start)."""
    if settings.apps == "builtin":
        return None
    if settings.apps != "appworld":
        raise EpisodeRunError(f"unknown app backend {settings.apps!r}: choose builtin or appworld")
    from actors.appworld import AppWorldApps, AppWorldError, start_service

    try:
        service = start_service(Path(settings.appworld_home) if settings.appworld_home else None)
    except AppWorldError as exc:
        raise EpisodeRunError(str(exc)) from None
    try:
        return AppWorldApps(service, shared_world=settings.shared_world)
    except (AppWorldError, ValueError) as exc:
        service.stop()
        raise EpisodeRunError(f"AppWorld's API docs could not be read: {exc}") from None


@dataclass(frozen=True)
class _Meter:
    """One actor's usage on its gateway since ``start``: calls and fallbacks it recorded."""

    gateway: LLMGateway | None
    actor: str
    before: UsageStats
    known: int

    @classmethod
    def start(cls, gateway: LLMGateway | None, actor: str) -> _Meter:
        return cls(gateway, actor, actor_usage(gateway, actor), len(fallback_reasons(gateway, actor)))

    def spent(self) -> UsageSummary:
        after = actor_usage(self.gateway, self.actor)
        return usage_summary(self.before, after, fallback_reasons(self.gateway, self.actor)[self.known :])


def _due_items(state: dict[str, Any], now: float, task_id: str) -> list[dict[str, Any]]:
    """Scheduled items whose time has come and that no earlier heartbeat delivered (a session
    run again after a crash gets the items its first run was given)."""
    due = []
    for item in state.get("scheduled", []):
        if not isinstance(item, dict) or float(item.get("at", 0.0)) > now:
            continue
        if item.get("status") == "pending" or item.get("delivered_in") == task_id:
            due.append({k: v for k, v in item.items() if k != "delivered_in"})
    return due


class UnitRunner:
    """Runs one unit's sessions in order; ``on_session`` hears of each one finished (a sign of life
    for the progress display: a unit may take minutes)."""

    def __init__(
        self,
        episodes: EpisodeHost,
        unit: Unit,
        record: UnitRecord,
        *,
        on_session: Callable[[str], None] | None = None,
    ) -> None:
        self.eh = episodes
        self.on_session = on_session
        self.bus = episodes.bus
        self.settings = episodes.settings
        self.unit = unit
        self.record = record
        self.key = unit.key
        self.registry = f"registry.{self.key}"
        self.user = f"user.{self.key}"

    def _ask(self, address: str, payload: Message, expect: type[Message], what: str) -> Any:
        try:
            reply = self.bus.ask(address, payload, timeout=self.settings.ask_timeout)
        except (AskTimeoutError, RemoteError) as exc:
            raise EpisodeRunError(f"{address} did not answer {what}: {type(exc).__name__}: {exc}") from exc
        if isinstance(reply, Rejected):
            raise EpisodeRunError(f"{address} refused {what}: {reply.reason}")
        if not isinstance(reply, expect):
            raise EpisodeRunError(f"{address} answered {what} with {reply.message_type}")
        return reply

    def run(self) -> None:
        assistant = self.eh.spawn_unit(self.unit)
        done = self.record.finished_tasks()
        tasks = [t for t in self.unit.episode.tasks if t.task.task_id in self.unit.task_ids]
        if done and not self._state_survived():
            log.warning("episode state lost; the unit starts over", unit=self.key)
            self.record.reset()
            done = set()
        clock = self.record.last_clock()
        first = self.record.last_task() is None
        for task in tasks:
            tid = task.task.task_id
            if tid in done:
                continue
            clock = self._next_clock(task, clock, first=first)
            if self.record.started(tid):
                self._restart(tid)
            self.record.mark_started(tid)
            # What the assistant and the user spend, as their gateways count it: every request,
            # failed ones, late turns and the reflection included (their messages may not say).
            meters = {
                "assistant_usage": _Meter.start(self.eh.assistant_gateway(self.unit), assistant),
                "usage": _Meter.start(self.eh.judge_gateway(), self.user),
            }
            ended_by_user = True
            reruns = 0
            try:
                ended, reruns = self._session_rerun(task, assistant, clock)
            except EpisodeRunError as exc:
                log.warning(
                    "session failed; recorded, the run goes on", unit=self.key, task=tid, error=str(exc)
                )
                ended = self._failed(task, clock, str(exc))
                # A start the user has not got to yet must not open a session nobody waits for.
                self.bus.tell(self.user, AbortSession(task_id=tid, reason="error"))
                # A later session's start waits for the busy user anyway (and counts what it still
                # spends); after the last one, give it the time to end this one, bounded.
                late = (
                    self.eh.wait_ended(self.key, tid, self.settings.drain_timeout)
                    if task is tasks[-1]
                    else None
                )
                ended_by_user = late is not None
            reflection = self._reflection(task, meters["assistant_usage"].gateway, wait=ended_by_user)
            measured = {name: m.spent() for name, m in meters.items() if m.gateway is not None}
            ended = ended.model_copy(update=measured)
            try:
                grade = self._grade(task, ended)
            except EpisodeRunError as exc:
                log.warning("session not graded", unit=self.key, task=tid, error=str(exc))
                grade = SessionGrade(
                    task_id=tid, grader_errors=(str(exc)[:500],), excluded=f"not graded: {exc}"[:500]
                )
            self.record.finish(task, ended, grade, clock, reflection=reflection, reruns=reruns)
            first = False
            log.info("session done", unit=self.key, task=tid, reason=ended.reason, comp=grade.comp)
            if self.on_session is not None:
                self.on_session(f"{self.key}: session {tid} {ended.reason}")

    def _failed(self, task: LoadedTask, clock: float, why: str) -> SessionEnded:
        """The record of a session the runner ends itself: failed, counted, left out of averages."""
        return SessionEnded(
            episode_id=self.key,
            task_id=task.task.task_id,
            reason="error",
            sim_time=clock,
            error=f"recorded as failed by the runner: {why}"[:2000],
        )

    def _reflection(
        self, task: LoadedTask, gateway: LLMGateway | None, *, wait: bool
    ) -> dict[str, Any] | None:
        """Waits (if ``wait``: the user has ended the session) for the built-in assistant's
        reflection on the session: its line of the record (its usage and fallbacks, or why it is
        missing; None for an assistant of another kind)."""
        if self.unit.assistant.oracle or self.unit.assistant.external is not None:
            return None
        tid = task.task.task_id
        usage: UsageSummary | None = None
        if wait:
            # The user told the assistant to end the session before it told us: the reflection
            # follows whatever turn the assistant was still working on.
            seconds = self.settings.reflection_timeout
            if gateway is not None:
                seconds += 2 * gateway.config.unit_limits()[0]
            usage = self.eh.wait_reflection(self.key, tid, seconds)
        line: dict[str, Any] = (
            {"usage": usage.model_dump(mode="json")}
            if usage is not None
            else {"missing": "the assistant's reflection had not come when the session was recorded"}
        )
        return line

    def _state_survived(self) -> bool:
        """Whether the registry still holds the state of the last finished session."""
        last = self.record.last_task()
        if last is None:
            return True
        try:
            reply = self.bus.ask(self.registry, GetStateDiff(since=last), timeout=self.settings.ask_timeout)
        except (AskTimeoutError, RemoteError):
            return False
        return isinstance(reply, StateDiffData)

    def _restart(self, tid: str) -> None:
        """An interrupted session: end it at the user (if it still runs), put the state back.
        The aborted session's end, if it comes, is told apart by its reason and dropped."""
        with contextlib.suppress(AskTimeoutError, RemoteError):
            self.bus.ask(
                self.user, AbortSession(task_id=tid, reason="aborted"), timeout=self.settings.ask_timeout
            )
        # No snapshot (Rejected) means the session was never seeded: nothing to put back.
        self.bus.ask(self.registry, RestoreSnapshot(label=tid), timeout=self.settings.ask_timeout)

    def _session_rerun(self, task: LoadedTask, assistant: str, clock: float) -> tuple[SessionEnded, int]:
        """The session, run again from its snapshot while the app backend died during it (at most
        ``max_reruns`` times); its end and the number of reruns."""
        tid = task.task.task_id
        reruns = 0
        while True:
            ended = self._session(task, assistant, clock)
            diff = self._ask(self.registry, GetStateDiff(since=tid), StateDiffData, "the state diff")
            if diff.backend_restarts == 0:
                return ended, reruns
            if reruns >= self.settings.max_reruns:
                raise EpisodeRunError(f"the app backend died during {tid} in each of its {reruns + 1} runs")
            reruns += 1
            log.warning("the app backend died during the session; running it again", unit=self.key,
                        task=tid, rerun=reruns)  # fmt: skip
            self._restart(tid)

    def _next_clock(self, task: LoadedTask, clock: float, *, first: bool) -> float:
        return opens_at(task.task, 0.0 if first else clock + SESSION_GAP_MINUTES)

    def _session(self, task: LoadedTask, assistant: str, clock: float) -> SessionEnded:
        tid = task.task.task_id
        assets = dict(task.assets)  # earlier tasks' assets were seeded by their own sessions
        app_state = task.task.extensions.app_state
        spec = session_spec(task.task, self.key, sim_time=clock)
        if self.settings.max_turns is not None:
            spec = spec.model_copy(update={"max_turns": self.settings.max_turns})
        due = self._due(tid, clock) if spec.trigger.source == "heartbeat" else []
        self._ask(
            self.registry,
            SeedWorkspace(
                task_id=tid,
                files=assets,
                binaries=dict(task.binaries),
                app_state=app_state,
                sim_time=clock,
                delivered=tuple(int(i["id"]) for i in due if isinstance(i.get("id"), int)),
            ),
            RegistryAck,
            "the workspace seed",
        )
        if spec.trigger.source == "heartbeat":
            payload = {"type": "heartbeat", "time_minutes": clock, "due": due, **(spec.trigger.payload or {})}
            trigger = spec.trigger.model_copy(update={"payload": payload})
            spec = spec.model_copy(
                update={"trigger": trigger, "initial_input": describe_payload("heartbeat", payload)}
            )
        judge: Judgement = "llm" if self.settings.judge_model else "deterministic"
        started = self._ask(
            self.user,
            StartSession(
                spec=spec,
                report_to=self.eh.sink_address,
                assistant=assistant,
                judge=judge,
                model=self.settings.judge_model,
            ),
            SessionStarted,
            "the session start",
        )
        if not started.accepted:
            raise EpisodeRunError(f"{self.user} did not start {tid}: {started.reason}")
        ended = self.eh.wait_ended(self.key, tid, self.settings.session_timeout)
        if ended is None:
            log.warning("session timed out", unit=self.key, task=tid, after=self.settings.session_timeout)
            self.bus.tell(self.user, AbortSession(task_id=tid, reason="timeout"))
            grace = min(self.settings.abort_timeout, self.settings.session_timeout)
            ended = self.eh.wait_ended(self.key, tid, grace)
            if ended is None:
                # The user is busy (a model call in the same actor): it ends the session when it
                # gets to the abort, and that late end is never read.
                raise EpisodeRunError(
                    f"session {tid} did not end within {self.settings.session_timeout:g}s and the user "
                    f"did not end it within {grace:g}s of the abort"
                )
        return ended

    def _due(self, task_id: str, clock: float) -> list[dict[str, Any]]:
        """The scheduled items a heartbeat opening ``task_id`` at ``clock`` delivers."""
        try:
            state = self.bus.ask(self.registry, GetStateDiff(since=""), timeout=self.settings.ask_timeout)
        except (AskTimeoutError, RemoteError) as exc:
            raise EpisodeRunError(f"{self.registry} did not answer the heartbeat's schedule: {exc}") from exc
        return _due_items(state.state if isinstance(state, StateDiffData) else {}, clock, task_id)

    def _grade(self, task: LoadedTask, ended: SessionEnded) -> SessionGrade:
        tid = task.task.task_id
        history = self._ask(self.registry, GetToolHistory(task_id=tid), ToolHistory, "the tool history")
        diff = self._ask(self.registry, GetStateDiff(since=tid), StateDiffData, "the state diff")
        files: dict[str, str] = {}
        if task.task.files_read:
            data = self._ask(
                self.registry, ReadFiles(paths=tuple(task.task.files_read)), FilesData, "files_read"
            )
            files = dict(data.files)
        spec = grading_spec(
            task.task,
            rule_scorer=task.rule_scorer,
            rule_scorer_path=str(task.rule_scorer_path) if task.rule_scorer_path else None,
        )
        judge: Judgement = "llm" if self.settings.judge_model else "deterministic"
        started = time.monotonic()
        grade: SessionGrade = self._ask(
            GRADER,
            GradeSession(
                spec=spec,
                session=ended,
                history=history.records,
                diff=diff,
                files=files,
                judge=judge,
                model=self.settings.judge_model,
            ),
            SessionGrade,
            "the grade",
        )
        log.debug("graded", task=tid, seconds=round(time.monotonic() - started, 3))
        return grade
