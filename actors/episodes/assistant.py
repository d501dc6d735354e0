"""``assistant.<episode>``: the built-in assistant under test.

It answers each ``UserTurn`` with an ``AssistantReply`` (told to ``turn.reply_to``), calling the
episode's tools through ``registry.<episode>`` (``ProbeCall(registry="episode")``). Its state,
persisted by the runtime with every acknowledgement (in Redis on the redis bus), is its memory
of each user and the running transcript of each open session; ``EndSession`` consolidates the
session into the user's memory.

Two backends: the deterministic offline policy (``world.episodes.assistant``), or a model through
the LLM gateway, as a ReAct loop of JSON steps. Every model failure falls back to the offline
policy for that turn (or that consolidation), recorded on the gateway and in the reply's usage.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal, TypeVar

import structlog
from pydantic import BaseModel, Field

from actors.bus import AskTimeoutError, Bus, RemoteError
from actors.episodes import _assistant_prompts as prompts
from actors.llm import GatewayConfig, LLMError, LLMGateway, MeteredCalls, Stage
from actors.llm._json import looks_structured
from actors.runtime import Context, StatefulActor, on
from messages.aura import IntentFrame, UsageSummary
from messages.episodes import AssistantReply, EndSession, ToolRecord, TurnRecord, UserTurn
from messages.probes import ListTools, ProbeCall, ProbeResult, ToolList
from world.aura import budget_for_gap
from world.episodes.assistant import (
    AssistantMemory,
    MemoryNote,
    OfflineAssistant,
    Situation,
    ToolPort,
    consolidate,
    failed_record,
    record_of,
    relevant_notes,
    situation,
    tool_names,
)
from world.episodes.assistant.shortlist import shortlist

log = structlog.get_logger("auratown.episode.assistant")

T = TypeVar("T", bound=BaseModel)
GatewayFactory = Callable[[str], LLMGateway]
ConsolidatedHook = Callable[[str, UsageSummary], None]
"""(task id, the reflection's model usage and fallbacks): told when a session is consolidated."""
REPLY = "reply"
ASK_USER = "ask_user"
_FIRST_KINDS = frozenset({"request", "trigger"})


# ---------------------------------------------------------------- the tools, over the bus


@dataclass(eq=False)
class BusToolPort:
    """The episode registry as a ``ToolPort``: each call is an ask to ``address``. A registry that
    does not answer gives a record with status ``unavailable``, never an exception."""

    ctx: Context
    address: str
    _: KW_ONLY
    caller: str
    task_id: str
    timeout: float = 30.0
    _tools: ToolList | None = field(default=None, init=False, repr=False)

    @classmethod
    def for_turn(cls, ctx: Context, turn: UserTurn, *, timeout: float = 30.0) -> BusToolPort:
        """The registry a user turn names (its ``tools``, else the episode's), called as this actor."""
        address = turn.tools or f"registry.{turn.episode_id}"
        return cls(ctx, address, caller=ctx.address, task_id=turn.task_id, timeout=timeout)

    def tools(self) -> ToolList:
        if self._tools is None:
            try:
                reply = self.ctx.ask(self.address, ListTools(registry="episode"), timeout=self.timeout)
            except (AskTimeoutError, RemoteError) as exc:
                log.warning("tool list unavailable", registry=self.address, error=type(exc).__name__)
                reply = None
            self._tools = (
                reply
                if isinstance(reply, ToolList)
                else ToolList(registry="episode", specs=[], allowed=[], functions=[])
            )
        return self._tools

    def call(self, tool: str, args: Mapping[str, Any]) -> ToolRecord:
        request = ProbeCall(registry="episode", tool=tool, args=dict(args), caller=self.caller)
        try:
            reply = self.ctx.ask(self.address, request, timeout=self.timeout)
        except (AskTimeoutError, RemoteError) as exc:
            return failed_record(
                tool, args, "unavailable", f"{self.address}: {type(exc).__name__}", task_id=self.task_id
            )
        if not isinstance(reply, ProbeResult):
            why = getattr(reply, "reason", reply.message_type)
            return failed_record(
                tool, args, "unavailable", f"{self.address} refused: {why}", task_id=self.task_id
            )
        return record_of(reply, task_id=self.task_id)


# ---------------------------------------------------------------- the model path


class StepOut(BaseModel):
    """One ReAct step: call a tool, or reply and end the turn."""

    thought: str = ""
    action: str = Field(min_length=1)
    args: dict[str, Any] = {}
    reply: str = ""


class IntentOut(BaseModel):
    literal_need: str
    implicit_needs: list[str] = []
    gap: float = Field(ge=0.0, le=1.0)
    recommended_probes: list[str] = []
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    rationale: str = ""


class NoteOut(BaseModel):
    kind: Literal["preference", "fact", "decision"]
    text: str = Field(min_length=1, max_length=1000)


class NotesOut(BaseModel):
    notes: list[NoteOut] = []


class LLMAssistant(MeteredCalls):
    """The ReAct assistant: JSON steps through ``LLMGateway.structured`` (Stage.ANSWER), each tool
    result fed back, at most ``max_steps`` steps a turn. One instance serves one actor; ``usage``
    is reset at the start of each turn."""

    def __init__(
        self, gateway: LLMGateway, *, actor: str = "assistant", max_steps: int = 8, probe_limit: int = 3
    ) -> None:
        super().__init__(gateway, actor=actor)
        self.max_steps = max(1, max_steps)
        self.offline = OfflineAssistant(probe_limit=probe_limit)
        self.probe_limit = probe_limit
        self.name = f"llm:{gateway.config.model}"

    # -- a turn

    def respond(
        self,
        turn: UserTurn,
        transcript: Sequence[TurnRecord],
        memory: AssistantMemory,
        tools: ToolPort,
        *,
        intent_step: bool,
    ) -> AssistantReply:
        self.reset()
        listing = tools.tools()
        names = tool_names(listing)
        seen = situation(turn, transcript)
        notes = relevant_notes(memory, seen.combined)
        frame: IntentFrame | None = None
        budget: int | None = None
        if intent_step and seen.first:
            frame = self._frame(turn, seen, memory=memory, notes=notes, listing=listing, names=names)
            budget = budget_for_gap(frame.gap, self.probe_limit)
        used = [r.tool_name for t in transcript for r in t.tool_records]
        shown = shortlist(names, [seen.combined, *(t.text for t in transcript)], used)
        messages = prompts.react_messages(
            turn,
            transcript,
            notes,
            listing,
            frame=frame,
            budget=budget,
            max_steps=self.max_steps,
            shown=shown,
        )
        records: list[ToolRecord] = []
        try:
            text = self._loop(messages, tools, names, records)
        except LLMError as exc:
            self._fallback(Stage.ANSWER, exc)
            fallback = self.offline.respond(turn, transcript, memory, tools, intent_step=intent_step)
            return fallback.model_copy(
                update={
                    "tool_records": (*records, *fallback.tool_records),
                    "frame": frame or fallback.frame,
                    "usage": self.usage(),
                    "backend": f"offline (fallback from {self.name})",
                }
            )
        return AssistantReply(
            task_id=turn.task_id,
            turn=turn.turn,
            text=text,
            tool_records=tuple(records),
            frame=frame,
            usage=self.usage(),
            backend=self.name,
        )

    def _frame(
        self,
        turn: UserTurn,
        seen: Situation,
        *,
        memory: AssistantMemory,
        notes: Sequence[MemoryNote],
        listing: ToolList,
        names: frozenset[str],
    ) -> IntentFrame:
        try:
            out = self._structured(Stage.INTENT, prompts.intent_messages(turn, notes, listing), IntentOut)
        except LLMError as exc:
            self._fallback(Stage.INTENT, exc)
            heuristic, _ = self.offline.frame(seen, memory, names)
            return heuristic.model_copy(update={"fallback": exc.reason})
        return IntentFrame(
            literal_need=out.literal_need,
            implicit_needs=tuple(out.implicit_needs),
            gap=out.gap,
            # Only tools the registry has: a model may name tools that do not exist.
            recommended_probes=tuple(dict.fromkeys(p for p in out.recommended_probes if p in names)),
            confidence=out.confidence,
            rationale=out.rationale,
            backend="llm",
        )

    def _loop(
        self,
        messages: list[dict[str, str]],
        tools: ToolPort,
        names: frozenset[str],
        records: list[ToolRecord],
    ) -> str:
        """Steps until a reply; raises LLMError. Out of steps, the reply says what was done."""
        thought = ""
        for step in range(self.max_steps):
            if step == self.max_steps - 1:
                messages.append({"role": "user", "content": "This is your last step: reply now."})
            out = self._structured(Stage.ANSWER, messages, StepOut)
            thought = out.thought or thought
            if out.action == REPLY:
                text = out.reply.strip() or out.thought.strip() or "Done."
                if looks_structured(text):
                    # JSON or code where the user gets prose: never sent as if it were an answer.
                    raise LLMError(Stage.ANSWER, "invalid_text", "the reply is data, not prose", 0)
                return text
            messages.append({"role": "assistant", "content": out.model_dump_json()})
            if out.action not in names:
                error = {"error": f"no tool named {out.action!r}; use one of the listed tools or reply"}
                messages.append(prompts.observation(out.action, "unknown_tool", error))
                continue
            record = tools.call(out.action, out.args)
            records.append(record)
            if out.action == ASK_USER and record.status == "ok":
                return str(out.args.get("question") or out.reply or thought)
            messages.append(prompts.observation(out.action, record.status, dict(record.result)))
        done = ", ".join(f"{r.tool_name} ({r.status})" for r in records) or "no tool calls"
        return f"I ran out of steps for this turn. So far: {done}. {thought}".strip()

    # -- memory

    def consolidate(
        self, memory: AssistantMemory, *, task_id: str, transcript: Sequence[TurnRecord], sim_time: float
    ) -> AssistantMemory:
        self.reset()
        # Logins are remembered by the deterministic rule (the ones that worked, none refused):
        # the model never sees a password to rewrite, and never forgets one the user gave.
        ruled = consolidate(memory, task_id=task_id, transcript=transcript, sim_time=sim_time)
        logins = [n for n in ruled.notes if n.kind == "credential"]
        kept = [n for n in memory.notes if n.task_id != task_id and n.kind != "credential"]
        try:
            out = self._structured(Stage.REFLECTION, prompts.memory_messages(kept, transcript), NotesOut)
        except LLMError as exc:
            self._fallback(Stage.REFLECTION, exc)
            return ruled
        fresh = [MemoryNote(task_id=task_id, kind=n.kind, text=n.text, sim_time=sim_time) for n in out.notes]
        return AssistantMemory(user_id=memory.user_id, notes=[*kept, *logins, *fresh])


# ---------------------------------------------------------------- the actor


class AssistantState(BaseModel):
    memories: dict[str, AssistantMemory] = {}
    """By user id."""
    transcripts: dict[str, list[TurnRecord]] = {}
    """By task id: the open sessions' turns so far."""


class AssistantActor(StatefulActor[AssistantState]):
    state_model = AssistantState

    def __init__(
        self,
        backend: str = "offline",
        *,
        intent_step: bool = False,
        gateway_factory: GatewayFactory | None = None,
        max_steps: int = 8,
        probe_limit: int = 3,
        timeout: float = 30.0,
        on_consolidated: ConsolidatedHook | None = None,
    ) -> None:
        """``backend``: "offline" or a litellm model string. ``gateway_factory``: model -> the
        gateway to use (default: a new one with default settings). ``timeout``: seconds per tool call.
        ``on_consolidated``: told each session's end-of-session reflection with its usage (the
        runner of this process records it in the run directory)."""
        super().__init__()
        self.backend = backend
        self.intent_step = intent_step
        self.gateway_factory = gateway_factory or (lambda model: LLMGateway(GatewayConfig(model=model)))
        self.max_steps = max_steps
        self.probe_limit = probe_limit
        self.timeout = timeout
        self.address = "assistant"
        self.on_consolidated = on_consolidated
        self._llm: LLMAssistant | None = None

    def on_start(self, address: str, bus: Bus) -> None:
        self.address = address

    def _model(self) -> LLMAssistant | None:
        if self.backend == "offline":
            return None
        if self._llm is None:
            self._llm = LLMAssistant(
                self.gateway_factory(self.backend),
                actor=self.address,
                max_steps=self.max_steps,
                probe_limit=self.probe_limit,
            )
        return self._llm

    @on(UserTurn)
    def turn(self, ctx: Context, turn: UserTurn) -> None:
        fresh = turn.turn == 1 and turn.kind in _FIRST_KINDS  # a (re)started session
        transcript = [] if fresh else list(self.state.transcripts.get(turn.task_id, []))
        memory = self.state.memories.get(turn.user_id) or AssistantMemory(user_id=turn.user_id)
        port = BusToolPort.for_turn(ctx, turn, timeout=self.timeout)
        model = self._model()
        try:
            if model is not None:
                reply = model.respond(turn, transcript, memory, port, intent_step=self.intent_step)
            else:
                reply = OfflineAssistant(probe_limit=self.probe_limit).respond(
                    turn, transcript, memory, port, intent_step=self.intent_step
                )
        # A bug in a policy must not leave the user waiting for a reply that never comes.
        except Exception as exc:
            log.exception("assistant turn failed", task=turn.task_id, turn=turn.turn)
            reply = AssistantReply(
                task_id=turn.task_id,
                turn=turn.turn,
                text="Sorry, I could not work on this turn because of an internal error.",
                backend=self.backend,
                error=f"{type(exc).__name__}: {exc}"[:500],
            )
        user = TurnRecord(turn=turn.turn, role="user", kind=turn.kind, text=turn.text, sim_time=turn.sim_time)
        self.state.transcripts[turn.task_id] = [*transcript, user, reply.turn_record(turn.sim_time)]
        # The session's nonce goes back with the reply, so a late reply to an aborted run of the
        # same session is told apart from the current one.
        reply = reply.model_copy(update={"session": turn.session})
        ctx.tell(turn.reply_to, reply, sim_time=turn.sim_time)
        log.info(
            "assistant replied",
            task=turn.task_id,
            turn=turn.turn,
            calls=len(reply.tool_records),
            backend=reply.backend,
            gap=reply.frame.gap if reply.frame else None,
        )

    @on(EndSession)
    def end(self, ctx: Context, msg: EndSession) -> None:
        transcript = self.state.transcripts.pop(msg.task_id, [])
        memory = self.state.memories.get(msg.user_id) or AssistantMemory(user_id=msg.user_id)
        model = self._model()
        usage = UsageSummary()
        if model is not None:
            memory = model.consolidate(
                memory, task_id=msg.task_id, transcript=transcript, sim_time=msg.sim_time
            )
            usage = model.usage()  # its fallback too: the reflection is a stage like any other
        else:
            memory = consolidate(memory, task_id=msg.task_id, transcript=transcript, sim_time=msg.sim_time)
        self.state.memories[msg.user_id] = memory
        log.info(
            "session consolidated",
            task=msg.task_id,
            user=msg.user_id,
            notes=len(memory.notes),
            model_calls=usage.model_calls,
            fallbacks=list(usage.fallbacks),
        )
        if self.on_consolidated is not None:
            self.on_consolidated(msg.task_id, usage)
