"""Run one unit (an episode for one assistant and one repetition) session by session, over a bus.

For each task, in the episode's order: seed the workspace with its assets and app data (which
snapshots the state), start the session at the simulated user, wait for ``SessionEnded`` (the
timeout guard aborts a session that outlives ``session_timeout``), collect the session's tool
history, state diff and files_read, have the grader score it, and append the result to the unit's
record. Sessions open on a virtual clock: an hour after the previous one, or at the task's
``metadata.at_minutes``; a heartbeat session's payload carries the scheduled items then due.

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
from typing import Any

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
from actors.episodes.oracle import OracleAssistantActor
from actors.runtime import Actor, Context, Host, HostConfig, on
from bench.episodes.loader import LoadedTask
from bench.episodes.plan import Unit
from bench.episodes.store import UnitRecord
from messages import Message
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
    """Caps every model answer (see ``GatewayPool.max_tokens``)."""


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
        self.gateways = gateways or GatewayPool(api_base=settings.api_base, max_tokens=settings.max_tokens)
        self.sink_address = f"runner.{bus.process_id}"
        self._queues: dict[tuple[str, str], queue.Queue[SessionEnded]] = {}
        self._lock = threading.Lock()
        self.host = Host(bus, config, name="episodes")
        self.host.spawn(lambda: SessionSink(self._deliver), self.sink_address)
        self.host.spawn(lambda: GraderActor(self.gateways), GRADER)
        self.host.start()

    def _queue(self, unit: str, task: str) -> queue.Queue[SessionEnded]:
        with self._lock:
            return self._queues.setdefault((unit, task), queue.Queue())

    def _deliver(self, msg: SessionEnded) -> None:
        self._queue(msg.episode_id, msg.task_id).put(msg)

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
                lambda: EpisodeRegistryActor(seed=episode.seed, offered=episode.offered), f"registry.{key}"
            )
            self.host.spawn(lambda: SimulatedUserActor(self.gateways), f"user.{key}")
            if unit.assistant.oracle:
                scripts = {t.task.task_id: t.task.extensions.oracle for t in episode.tasks}
                self.host.spawn(lambda: OracleAssistantActor(scripts), f"assistant.{key}")
            elif unit.assistant.external is None:
                intent = unit.assistant.intent_step
                model = self.settings.model or "offline"
                self.host.spawn(
                    lambda: AssistantActor(
                        model,
                        intent_step=intent,
                        gateway_factory=self.gateways.get,
                        max_steps=self.settings.max_steps,
                    ),
                    f"assistant.{key}",
                )
        return unit.assistant.external or f"assistant.{key}"

    def stop(self) -> None:
        self.host.stop()


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
    def __init__(self, episodes: EpisodeHost, unit: Unit, record: UnitRecord) -> None:
        self.eh = episodes
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
            ended = self._session(task, assistant, clock)
            grade = self._grade(task, ended)
            self.record.finish(task, ended, grade, clock)
            first = False
            log.info("session done", unit=self.key, task=tid, reason=ended.reason, comp=grade.comp)

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
            ended = self.eh.wait_ended(self.key, tid, self.settings.ask_timeout)
            if ended is None:
                raise EpisodeRunError(f"session {tid} of {self.key} neither ended nor could be aborted")
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
