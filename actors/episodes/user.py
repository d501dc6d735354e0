"""``user.<episode>``: the simulated user of pi-Bench (Appendix B), one session at a time.

It opens a session with the request (or the environment trigger), judges every assistant reply in
two stages (completed, then inferred, else it provides the next open intent: the pure protocol in
``world.episodes.protocol``) and ends the session when every intent is terminal and the assistant
has replied, or at the turn limit. Each step is its own message and its progress is persisted with
the acknowledgement, so a session survives a restart of the process hosting it. Every turn and
every status change is published on ``EPISODE_EVENTS``.
"""

from __future__ import annotations

import structlog
from pydantic import BaseModel

from actors.bus import AskTimeoutError, RemoteError
from actors.episodes._gateways import (
    actor_usage,
    add_usage,
    fallback_reasons,
    usage_summary,
)
from actors.episodes.judges import LLMIntentJudge
from actors.llm import GatewayPool, LLMGateway
from actors.runtime import Context, StatefulActor, on
from messages.aura import UsageSummary
from messages.episodes import (
    EPISODE_EVENTS,
    AbortSession,
    AssistantReply,
    EndReason,
    EndSession,
    FilesData,
    IntentStatusChanged,
    ReadFiles,
    SessionEnded,
    SessionSpec,
    SessionStarted,
    StartSession,
    TurnKind,
    TurnRecord,
    TurnRecorded,
    TurnStarted,
    UserTurn,
)
from world.episodes.protocol import (
    DeterministicIntentJudge,
    IntentJudge,
    SessionTracker,
    UserVoice,
    VerbatimUserVoice,
    assess_reply,
)

log = structlog.get_logger("auratown.episode.user")


class ActiveSession(BaseModel):
    spec: SessionSpec
    report_to: str
    assistant: str
    tools: str
    judge: str = "deterministic"
    model: str | None = None
    tracker: SessionTracker
    transcript: list[TurnRecord] = []
    turn: int = 1
    """The assistant turn awaited next."""
    nonce: str = ""
    """Identifies this run of the session (the id of the StartSession message)."""
    usage: UsageSummary = UsageSummary()
    assistant_usage: UsageSummary = UsageSummary()


class UserState(BaseModel):
    session: ActiveSession | None = None
    finished: list[str] = []
    """Task ids of the sessions this user has ended (a late reply to one is ignored)."""


class SimulatedUserActor(StatefulActor[UserState]):
    state_model = UserState

    def __init__(self, gateways: GatewayPool | None = None, *, files_timeout: float = 30.0) -> None:
        super().__init__()
        self.gateways = gateways or GatewayPool()
        self.files_timeout = files_timeout
        self.address = "user"

    def on_start(self, address: str, bus: object) -> None:
        self.address = address

    # ---------------------------------------------------------------- handlers

    @on(StartSession)
    def start(self, ctx: Context, msg: StartSession) -> SessionStarted:
        current = self.state.session
        if current is not None and current.spec.task_id != msg.spec.task_id:
            return SessionStarted(
                task_id=msg.spec.task_id,
                accepted=False,
                reason=f"{ctx.address} is still in session {current.spec.task_id!r}",
            )
        spec = msg.spec
        tracker = SessionTracker.for_intents(spec.hidden_intents)
        tools = f"registry.{spec.episode_id}"
        session = ActiveSession(
            spec=spec,
            report_to=msg.report_to,
            assistant=msg.assistant,
            tools=tools,
            judge=msg.judge,
            model=msg.model,
            tracker=tracker,
            nonce=ctx.envelope.id,
        )
        self.state.session = session
        kind: TurnKind = "trigger" if spec.trigger.source != "user" else "request"
        # pi-Bench sends every first message as written, an environment trigger's too.
        self._send_user_turn(ctx, session, kind, spec.initial_input, first=True)
        log.info("session started", task=spec.task_id, intents=len(spec.hidden_intents), trigger=kind)
        return SessionStarted(task_id=spec.task_id)

    @on(AssistantReply)
    def reply(self, ctx: Context, msg: AssistantReply) -> None:
        session = self.state.session
        stale = msg.session and msg.session != session.nonce if session is not None else True
        if session is None or stale or msg.task_id != session.spec.task_id or msg.turn != session.turn:
            log.warning("stale assistant reply ignored", task=msg.task_id, turn=msg.turn)
            return
        spec = session.spec
        record = msg.turn_record(spec.sim_time)
        session.transcript.append(record)
        session.assistant_usage = add_usage(session.assistant_usage, msg.usage)
        ctx.publish(
            EPISODE_EVENTS, TurnRecorded(episode_id=spec.episode_id, task_id=spec.task_id, record=record)
        )

        files = self._files(ctx, session)
        judge, voice, gateway = self._judges(session)
        before = actor_usage(gateway, ctx.address)
        known_fallbacks = len(fallback_reasons(gateway, ctx.address))
        before_rows = {r.index: r.status for r in session.tracker.results()}
        outcome = assess_reply(
            session.tracker,
            turn=msg.turn,
            reply=msg.text,
            files=files,
            judge=judge,
            voice=voice,
            max_turns=spec.max_turns,
        )
        new_fallbacks = fallback_reasons(gateway, ctx.address)[known_fallbacks:]
        spent = usage_summary(before, actor_usage(gateway, ctx.address), new_fallbacks)
        session.usage = add_usage(session.usage, spent)
        for row in session.tracker.results():
            if before_rows.get(row.index) != row.status:
                ctx.publish(
                    EPISODE_EVENTS,
                    IntentStatusChanged(episode_id=spec.episode_id, task_id=spec.task_id, intent=row),
                )
        if outcome.done:
            error = None
            if outcome.reason == "error":
                error = f"the intent judge answered nothing readable ({outcome.judge_failures} verdicts)"
            self._end(ctx, session, outcome.reason or "complete", error=error)
            return
        assert outcome.message is not None and outcome.kind is not None
        session.turn += 1
        self._send_user_turn(ctx, session, outcome.kind, outcome.message, first=False)

    @on(AbortSession)
    def abort(self, ctx: Context, msg: AbortSession) -> SessionStarted:
        session = self.state.session
        if session is None or session.spec.task_id != msg.task_id:
            return SessionStarted(task_id=msg.task_id, accepted=False, reason="no such session in progress")
        self._end(ctx, session, msg.reason, error=f"aborted by the runner: {msg.reason}")
        return SessionStarted(task_id=msg.task_id, accepted=True, reason=msg.reason)

    # ---------------------------------------------------------------- steps

    def _send_user_turn(
        self, ctx: Context, session: ActiveSession, kind: TurnKind, text: str, *, first: bool
    ) -> None:
        spec = session.spec
        record = TurnRecord(turn=session.turn, role="user", kind=kind, text=text, sim_time=spec.sim_time)
        session.transcript.append(record)
        ctx.publish(
            EPISODE_EVENTS, TurnRecorded(episode_id=spec.episode_id, task_id=spec.task_id, record=record)
        )
        # Before the assistant can call anything for this turn (the registry reads its inbox in order).
        ctx.tell(session.tools, TurnStarted(task_id=spec.task_id, turn=session.turn), sim_time=spec.sim_time)
        ctx.tell(
            session.assistant,
            UserTurn(
                episode_id=spec.episode_id,
                task_id=spec.task_id,
                user_id=spec.user_id,
                turn=session.turn,
                kind=kind,
                text=text,
                trigger=spec.trigger if first and kind == "trigger" else None,
                reply_to=ctx.address,
                tools=session.tools,
                sim_time=spec.sim_time,
                session=session.nonce,
            ),
            sim_time=spec.sim_time,
        )

    def _end(
        self, ctx: Context, session: ActiveSession, reason: EndReason, *, error: str | None = None
    ) -> None:
        spec = session.spec
        ended = SessionEnded(
            episode_id=spec.episode_id,
            task_id=spec.task_id,
            reason=reason,
            turns=tuple(session.transcript),
            intents=tuple(session.tracker.results()),
            sim_time=spec.sim_time,
            usage=session.usage,
            assistant_usage=session.assistant_usage,
            error=error,
        )
        ctx.tell(
            session.assistant,
            EndSession(
                episode_id=spec.episode_id, task_id=spec.task_id, user_id=spec.user_id, sim_time=spec.sim_time
            ),
        )
        ctx.tell(session.report_to, ended)
        ctx.publish(EPISODE_EVENTS, ended)
        self.state.session = None
        self.state.finished = [*self.state.finished[-200:], spec.task_id]
        log.info("session ended", task=spec.task_id, reason=reason, turns=session.turn)

    def _files(self, ctx: Context, session: ActiveSession) -> dict[str, str]:
        """The files_read contents the judges see with the reply; a registry that does not answer
        leaves them empty (the judges then judge the reply alone), and the log says so."""
        paths = session.spec.files_read
        if not paths:
            return {}
        try:
            data = ctx.ask(session.tools, ReadFiles(paths=paths), timeout=self.files_timeout)
        except (AskTimeoutError, RemoteError) as exc:
            log.warning("files_read unavailable", task=session.spec.task_id, error=type(exc).__name__)
            return {}
        return dict(data.files) if isinstance(data, FilesData) else {}

    def _judges(self, session: ActiveSession) -> tuple[IntentJudge, UserVoice, LLMGateway | None]:
        if session.judge != "llm" or not session.model:
            return DeterministicIntentJudge(), VerbatimUserVoice(), None
        gateway = self.gateways.get(session.model)
        return LLMIntentJudge(gateway, actor=self.address), VerbatimUserVoice(), gateway
