"""Model-backed minds for town agents: action choice, importance, reflection and dialogue through
the LLM gateway (paper, Appendix A6 stages), behind the town's ``Mind`` interface.

Every model answer has a deterministic default to fall back to: the schedule mind's decision, the
memory stream's keyword importance and heuristic reflection, the templated conversation lines.
An answer that fails, does not validate (a place the town does not have, a speaker who is not in
the conversation) or comes too late falls back to that default, and the fallback is recorded with
``LLMGateway.record_fallback`` and counted on the agent's state (``AgentMindState.fallbacks``):
never a crash, never a silent default.

Time: the world waits ``decision_timeout`` for each agent's decision and an agent that misses it
keeps its scheduled action. The agent actor tells its mind the perception's deadline
(``begin_turn``); model calls run on daemon threads and the mind stops waiting for them in time to
answer with the schedule's decision itself, so a slow model costs the agent its choice, never the
tick, and is counted as a fallback with reason "deadline".
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, Field

from actors.llm import LLMError, LLMGateway, Stage, schema_prompt
from actors.town.world import agent_address
from messages.town import Decision, Perception
from world.clock import sim_time
from world.conversation import ConversationDraft
from world.definition import Activity, AgentProfile, TownDefinition
from world.memory import MemoryDraft, MemoryItem, MemoryStream
from world.minds import ScheduleMind
from world.plans import PlanStep

R = TypeVar("R")

MIND_STAGES = frozenset({Stage.ACTION, Stage.IMPORTANCE, Stage.REFLECTION, Stage.CONVERSATION})


@dataclass(frozen=True)
class LLMMindSettings:
    stages: frozenset[Stage] = MIND_STAGES
    """Stages asked of the model; the others use the deterministic default (by choice: no fallback)."""
    turn_budget: float | None = None
    """Seconds one agent turn may wait on the model. The perception's deadline (less
    ``deadline_margin``) caps it when the agent actor passes it on; None: no cap of its own."""
    memory_share: float = 0.4
    """Share of a turn's time the memory hooks (importance, reflection) may use before the action."""
    deadline_margin: float = 0.25
    """Seconds kept from the world's deadline for the decision to travel back."""
    dialogue_budget: float | None = 20.0
    """Seconds the world's tick waits for its conversations' lines (written in parallel)."""
    max_concurrency: int = 16
    """Model calls in flight at once across the minds of one factory."""
    memories_in_prompt: int = 5
    places_in_prompt: int = 40
    max_lines: int = 6

    def __post_init__(self) -> None:
        unknown = self.stages - MIND_STAGES
        if unknown:
            raise ValueError(f"not a mind stage: {sorted(unknown)}")
        if not 0.0 < self.memory_share < 1.0:
            raise ValueError(f"memory_share must be in (0, 1), got {self.memory_share}")
        if self.max_concurrency < 1 or self.max_lines < 2:
            raise ValueError("max_concurrency must be >= 1 and max_lines >= 2")


# ---------------------------------------------------------------- what the model answers


class ActionChoice(BaseModel):
    location: str = Field(min_length=1, max_length=200, description="one of the town's places, as listed")
    action: str = Field(min_length=1, max_length=200, description="what you do there, a short phrase")
    reason: str = Field(default="", max_length=500)


class ImportanceScores(BaseModel):
    scores: list[Annotated[int, Field(ge=1, le=10)]] = Field(description="one score per memory, in order")


class DialogueLine(BaseModel):
    speaker: str = Field(min_length=1, max_length=100)
    text: str = Field(min_length=1, max_length=400)


class DialogueOut(BaseModel):
    lines: list[DialogueLine] = Field(min_length=2, max_length=16)


# ---------------------------------------------------------------- timed calls


class _Fallback(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Expired(Exception):
    """The caller's deadline passed while the call waited for a free slot: it was never sent."""


class _Runner:
    """Runs model calls on daemon threads, at most ``slots`` at once, so a caller can stop waiting
    at its deadline while the call finishes (and is accounted) in the background. Daemon threads:
    a process that stops is not held up by a model that hangs."""

    def __init__(self, slots: int) -> None:
        self._slots = threading.BoundedSemaphore(slots)
        self._lock = threading.Lock()
        self._running = 0

    @property
    def in_flight(self) -> int:
        """Calls submitted and not finished, including those nobody waits for any more."""
        with self._lock:
            return self._running

    def submit(self, fn: Callable[[], R], deadline: float | None) -> Future[R]:
        fut: Future[R] = Future()
        fut.set_running_or_notify_cancel()

        def run() -> None:
            try:
                with self._slots:
                    if deadline is not None and time.monotonic() >= deadline:
                        fut.set_exception(_Expired())
                        return
                    try:
                        fut.set_result(fn())
                    except Exception as exc:  # noqa: BLE001 - handed to the waiting caller, never lost
                        fut.set_exception(exc)
            finally:
                with self._lock:
                    self._running -= 1

        with self._lock:
            self._running += 1
        threading.Thread(target=run, name="llm-mind-call", daemon=True).start()
        return fut


def _outcome(fut: Future[R], deadline: float | None) -> R:
    """The call's result, or _Fallback with the reason it gave none."""
    try:
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        return fut.result(timeout=timeout)
    except TimeoutError as exc:
        raise _Fallback("deadline") from exc
    except _Expired as exc:
        raise _Fallback("deadline") from exc
    except LLMError as exc:
        raise _Fallback(exc.reason) from exc
    # Whatever else a call raises (a bug in a prompt builder, a provider oddity) must end in the
    # deterministic answer, counted, and not in a crashed agent.
    except Exception as exc:
        raise _Fallback(f"error:{type(exc).__name__}") from exc


def _done(value: R) -> Future[R]:
    fut: Future[R] = Future()
    fut.set_running_or_notify_cancel()
    fut.set_result(value)
    return fut


class AnswerTally:
    """The model answers the minds used, by stage and actor: beside the gateway's fallback records
    (``LLMGateway.usage``), how many of the minds' questions the model answered. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[Stage, str], int] = {}

    def add(self, stage: Stage, actor: str) -> None:
        with self._lock:
            self._counts[(stage, actor)] = self._counts.get((stage, actor), 0) + 1

    def counts(self) -> dict[tuple[Stage, str], int]:
        with self._lock:
            return dict(self._counts)


# ---------------------------------------------------------------- the agent's mind


@runtime_checkable
class DeadlineAware(Protocol):
    """A mind that wants to know how long the world waits for this turn's decision."""

    def begin_turn(self, seconds: float) -> None: ...


@dataclass
class _Turn:
    minute: int
    memory_deadline: float | None
    action_deadline: float | None


@dataclass
class _Choice:
    slot: tuple[int, str, str]
    activity: Activity


class LLMMind:
    """Chooses the agent's activity for each slot of its day, rates its memories and words its
    reflections with a model; the schedule mind answers whenever the model cannot."""

    name = "llm"

    def __init__(
        self,
        definition: TownDefinition,
        profile: AgentProfile,
        seed: int,
        gateway: LLMGateway,
        *,
        settings: LLMMindSettings | None = None,
        runner: _Runner | None = None,
        answers: AnswerTally | None = None,
    ) -> None:
        self.definition = definition
        self.profile = profile
        self.gateway = gateway
        self.settings = settings or LLMMindSettings()
        self.schedule = ScheduleMind(definition, profile, seed)
        self.actor = agent_address(profile.slug)
        self._runner = runner or _Runner(self.settings.max_concurrency)
        self.answers = answers or AnswerTally()
        self._fallbacks: dict[str, int] = {}
        self._in_flight: dict[Stage, Future[Any]] = {}
        self._offered: float | None = None
        self._turn: _Turn | None = None
        self._choice: _Choice | None = None
        self._places = {loc.name.casefold(): loc.name for loc in definition.locations}

    # -- the Mind protocol ---------------------------------------------------------------------

    def plan(self, day: int) -> list[PlanStep]:
        return self.schedule.plan(day)

    def decide(self, perception: Perception, memory: MemoryStream) -> Decision:
        scheduled = self.schedule.decide(perception, memory)
        if Stage.ACTION not in self.settings.stages:
            return scheduled
        slot = (perception.day, scheduled.action, scheduled.target)
        news = any(e.kind != "conversation" for e in perception.events)
        if self._choice is not None and self._choice.slot == slot and not news:
            return self._decision(perception, self._choice.activity)  # chosen for this slot already
        options = self._options(scheduled)
        messages = self._action_messages(perception, memory, scheduled, options)
        deadline = self._deadlines(perception.minute).action_deadline
        try:
            choice = self._call(
                Stage.ACTION,
                lambda: self.gateway.structured(Stage.ACTION, messages, ActionChoice, actor=self.actor).value,
                deadline,
            )
            activity = self._validated(choice)
        except _Fallback as fb:
            self._fallback(Stage.ACTION, fb.reason)
            return scheduled.model_copy(update={"mind": f"{self.name}-fallback"})
        self.answers.add(Stage.ACTION, self.actor)
        self._choice = _Choice(slot, activity)
        return self._decision(perception, activity)

    # -- optional hooks (world.minds) ----------------------------------------------------------

    def begin_turn(self, seconds: float) -> None:
        self._offered = seconds
        self._turn = None

    def score_importance(self, drafts: Sequence[MemoryDraft], memory: MemoryStream) -> Sequence[int | None]:
        if Stage.IMPORTANCE not in self.settings.stages or not drafts:
            return [None] * len(drafts)
        messages = self._importance_messages(drafts)
        deadline = self._deadlines(drafts[0].minute).memory_deadline
        try:
            scores = self._call(
                Stage.IMPORTANCE,
                lambda: (
                    self.gateway.structured(
                        Stage.IMPORTANCE, messages, ImportanceScores, actor=self.actor
                    ).value.scores
                ),
                deadline,
            )
            if len(scores) != len(drafts):
                raise _Fallback("wrong_count")
        except _Fallback as fb:
            self._fallback(Stage.IMPORTANCE, fb.reason)
            return [None] * len(drafts)
        self.answers.add(Stage.IMPORTANCE, self.actor)
        return list(scores)

    def write_reflection(self, recent: Sequence[MemoryItem], draft: str, minute: int) -> str | None:
        if Stage.REFLECTION not in self.settings.stages or not recent:
            return None
        messages = self._reflection_messages(recent)
        deadline = self._deadlines(minute).memory_deadline
        try:
            text = self._call(
                Stage.REFLECTION,
                lambda: self.gateway.complete(Stage.REFLECTION, messages, actor=self.actor).text,
                deadline,
            )
            insight = " ".join(text.split()).removeprefix("Reflection:").strip()[:400]
            if not insight:
                raise _Fallback("empty")
        except _Fallback as fb:
            self._fallback(Stage.REFLECTION, fb.reason)
            return None
        self.answers.add(Stage.REFLECTION, self.actor)
        return f"Reflection: {insight}"

    def take_fallbacks(self) -> Mapping[str, int]:
        taken, self._fallbacks = self._fallbacks, {}
        return taken

    # -- calls, time and fallbacks ---------------------------------------------------------------

    def _deadlines(self, minute: int) -> _Turn:
        """This turn's deadlines (monotonic), fixed by its first hook: the memory hooks get the
        first ``memory_share`` of the time, the action the rest."""
        if self._turn is None or self._turn.minute != minute:
            budget = self.settings.turn_budget
            if self._offered is not None:
                offered = self._offered - self.settings.deadline_margin
                budget = offered if budget is None else min(budget, offered)
            self._offered = None
            if budget is None:
                self._turn = _Turn(minute, None, None)
            else:
                now = time.monotonic()
                self._turn = _Turn(minute, now + budget * self.settings.memory_share, now + budget)
        return self._turn

    def _call(self, stage: Stage, fn: Callable[[], R], deadline: float | None) -> R:
        if deadline is None:
            return _outcome(_direct(fn), None)
        if deadline <= time.monotonic():
            raise _Fallback("deadline")
        previous = self._in_flight.get(stage)
        if previous is not None and not previous.done():
            # The model has not answered this agent's last question yet: asking again would only
            # pile calls onto a slow model.
            raise _Fallback("busy")
        fut = self._runner.submit(fn, deadline)
        self._in_flight[stage] = fut
        return _outcome(fut, deadline)

    def _fallback(self, stage: Stage, reason: str) -> None:
        self.gateway.record_fallback(stage, self.actor, reason)
        self._fallbacks[str(stage)] = self._fallbacks.get(str(stage), 0) + 1

    # -- action choice ---------------------------------------------------------------------------

    def _decision(self, perception: Perception, activity: Activity) -> Decision:
        return Decision(
            tick=perception.tick, action=activity.action, target=activity.location, mind=self.name
        )

    def _validated(self, choice: ActionChoice) -> Activity:
        place = self._places.get(choice.location.strip().casefold())
        if place is None:
            raise _Fallback("invalid_location")
        action = " ".join(choice.action.split())
        if not action:
            raise _Fallback("invalid_action")
        return Activity(location=place, action=action[:300])

    def _options(self, scheduled: Decision) -> list[Activity]:
        """What is plausible now: the scheduled activity and its alternatives, home, work."""
        now = Activity(location=scheduled.target, action=scheduled.action)
        options = [now]
        for entry in self.profile.schedule:
            if now in entry.activities:
                options.extend(entry.activities)
        options.append(Activity(location=self.profile.home, action="resting at home"))
        options.extend(Activity(location=w, action="working") for w in self.profile.workplaces)
        return list(dict.fromkeys(options))

    def _places_near(self, x: int, y: int) -> list[str]:
        locations = sorted(
            self.definition.locations,
            key=lambda loc: (math.dist((x, y), loc.center), loc.name),
        )
        return [f"{loc.name} ({loc.type})" for loc in locations[: self.settings.places_in_prompt]]

    def _action_messages(
        self, perception: Perception, memory: MemoryStream, scheduled: Decision, options: list[Activity]
    ) -> list[dict[str, str]]:
        where = perception.location or "in the street"
        lines = [
            f"It is {perception.time} on day {perception.day}. You are at {where}: {perception.action}.",
            f"Nearby: {', '.join(perception.nearby) if perception.nearby else 'nobody'}.",
        ]
        happened = [f"- {e.kind}: {e.description}" for e in perception.events if e.kind != "conversation"]
        if happened:
            lines += ["What just happened:", *happened]
        for conv in perception.conversations:
            lines.append(f"You just talked about {conv.topic}: " + " ".join(conv.lines))
        events = [e.description for e in perception.events]
        query = " ".join([scheduled.action, scheduled.target, *perception.nearby, *events])
        recalled = memory.retrieve(query, perception.minute, k=self.settings.memories_in_prompt)
        if recalled:
            lines += ["What you remember:", *(f"- {m.item.text}" for m in recalled)]
        lines += [
            f"Your schedule says: {scheduled.action} at {scheduled.target}.",
            "Plausible now:",
            *(f"{i}. {o.action} at {o.location}" for i, o in enumerate(options, 1)),
            "The town's places (only these exist): "
            + "; ".join(self._places_near(perception.x, perception.y)),
            "Decide what you do next: usually one of the plausible options, unless something gives you "
            "a reason to do otherwise. Give the place's name exactly as listed.",
            schema_prompt(ActionChoice),
        ]
        return _chat(self.profile, "\n".join(lines))

    # -- memory ----------------------------------------------------------------------------------

    def _importance_messages(self, drafts: Sequence[MemoryDraft]) -> list[dict[str, str]]:
        listed = "\n".join(f"{i}. {d.text}" for i, d in enumerate(drafts, 1))
        return _chat(
            self.profile,
            (
                "On the scale of 1 to 10, where 1 is purely mundane (e.g., brushing teeth, making "
                "bed) and 10 is extremely poignant (e.g., a break up, college acceptance), rate the "
                f"likely poignancy of each of these memories for you.\n{listed}\n"
                f"Give exactly {len(drafts)} scores, in order. {schema_prompt(ImportanceScores)}"
            ),
        )

    def _reflection_messages(self, recent: Sequence[MemoryItem]) -> list[dict[str, str]]:
        listed = "\n".join(f"{i}. {m.text}" for i, m in enumerate(recent, 1))
        return _chat(
            self.profile,
            (
                f"What you observed lately:\n{listed}\n"
                "What is the most important high-level insight you can draw from these? Answer in "
                "one or two sentences in the first person, with no preamble."
            ),
        )


def _direct(fn: Callable[[], R]) -> Future[R]:
    """Run ``fn`` now, in the caller's thread (no deadline to keep): its outcome as a future."""
    try:
        return _done(fn())
    except Exception as exc:  # noqa: BLE001 - sorted into a fallback reason by _outcome
        fut: Future[R] = Future()
        fut.set_running_or_notify_cancel()
        fut.set_exception(exc)
        return fut


def _chat(profile: AgentProfile, prompt: str) -> list[dict[str, str]]:
    """``prompt`` put to the agent's own mind, told first who it is. Never its unspoken goal:
    whatever the model writes (an action, a reflection, a line) may become public, and that goal
    is private state that only the private-state tools may disclose."""
    return [
        {"role": "system", "content": f"You are {_bio(profile)}"},
        {"role": "user", "content": prompt},
    ]


def _bio(profile: AgentProfile) -> str:
    about = f"{profile.name}, {profile.age}" + (f", {profile.occupation}" if profile.occupation else "")
    parts = [f"{about}, living in a small town."]
    if profile.personality:
        parts.append(f"Personality: {profile.personality}.")
    parts.append(f"Home: {profile.home}.")
    if profile.workplaces:
        parts.append(f"Works at {', '.join(profile.workplaces)}.")
    if profile.interests:
        parts.append(f"Likes to talk about {', '.join(profile.interests)}.")
    return " ".join(parts)


# ---------------------------------------------------------------- conversations


class LLMDialogue:
    """Words the town's conversations (``world.conversation.DialogueWriter``): all of a tick's
    conversations in parallel, each falling back to its templated lines."""

    def __init__(
        self,
        gateway: LLMGateway,
        settings: LLMMindSettings | None = None,
        runner: _Runner | None = None,
        answers: AnswerTally | None = None,
    ) -> None:
        self.gateway = gateway
        self.settings = settings or LLMMindSettings()
        self._runner = runner or _Runner(self.settings.max_concurrency)
        self.answers = answers or AnswerTally()

    def write_dialogue(self, drafts: Sequence[ConversationDraft]) -> Sequence[tuple[str, ...] | None]:
        if Stage.CONVERSATION not in self.settings.stages:
            return [None] * len(drafts)
        budget = self.settings.dialogue_budget
        deadline = None if budget is None else time.monotonic() + budget
        asks: list[Callable[[], DialogueOut]] = [functools.partial(self._ask, d) for d in drafts]
        futures = [_direct(a) if deadline is None else self._runner.submit(a, deadline) for a in asks]
        out: list[tuple[str, ...] | None] = []
        for draft, fut in zip(drafts, futures, strict=True):
            actor = agent_address(draft.record.participants[0])
            try:
                out.append(self._lines(draft, _outcome(fut, deadline)))
            except _Fallback as fb:
                self.gateway.record_fallback(Stage.CONVERSATION, actor, fb.reason)
                out.append(None)
            else:
                self.answers.add(Stage.CONVERSATION, actor)
        return out

    def _ask(self, draft: ConversationDraft) -> DialogueOut:
        actor = agent_address(draft.record.participants[0])
        return self.gateway.structured(
            Stage.CONVERSATION, self._messages(draft), DialogueOut, actor=actor
        ).value

    def _lines(self, draft: ConversationDraft, dialogue: DialogueOut) -> tuple[str, ...]:
        names: dict[str, str] = {}
        for p in draft.speakers:
            names[p.name.casefold()] = p.name
            names.setdefault(p.name.split()[0].casefold(), p.name)
        lines = []
        for line in dialogue.lines[: self.settings.max_lines]:
            speaker = names.get(line.speaker.strip().casefold())
            text = " ".join(line.text.split())
            if speaker is None:
                raise _Fallback("invalid_speaker")
            if text:
                lines.append(f"{speaker}: {text}")
        if len(lines) < 2:
            raise _Fallback("too_few_lines")
        return tuple(lines)

    def _messages(self, draft: ConversationDraft) -> list[dict[str, str]]:
        a, b = draft.speakers
        record = draft.record
        who = "\n".join(
            f"- {_bio(p)} Now: {action}; feeling {mood}."
            for p, action, mood in zip(draft.speakers, draft.actions, draft.moods, strict=True)
        )
        return [
            {
                "role": "system",
                "content": "You write short, natural dialogue between residents of a small town. "
                "Each speaker stays in character.",
            },
            {
                "role": "user",
                "content": (
                    f"At {sim_time(record.tick).hhmm}, at {record.location}, these two meet:\n{who}\n"
                    f"Write their conversation about {record.topic}: 3 to {self.settings.max_lines} "
                    f"lines, {a.name} speaks first, then they take turns. Each line is what one of them "
                    f"says (speaker: {a.name} or {b.name}), without narration. {schema_prompt(DialogueOut)}"
                ),
            },
        ]


# ---------------------------------------------------------------- the factory


@dataclass
class LLMMinds:
    """A ``MindFactory`` of ``LLMMind``s sharing one gateway, plus ``dialogue``, the writer of the
    town's conversations for the world (``spawn_town(..., dialogue=minds.dialogue)``)."""

    gateway: LLMGateway
    settings: LLMMindSettings = field(default_factory=LLMMindSettings)

    def __post_init__(self) -> None:
        self._runner = _Runner(self.settings.max_concurrency)
        self.answers = AnswerTally()
        """Every answer the minds and the dialogue used; the fallbacks are the gateway's."""
        self.dialogue = LLMDialogue(self.gateway, self.settings, self._runner, self.answers)

    @property
    def calls_in_flight(self) -> int:
        """Model calls still running, late ones included (a slow model shows here first)."""
        return self._runner.in_flight

    def __call__(self, definition: TownDefinition, profile: AgentProfile, seed: int) -> LLMMind:
        return LLMMind(
            definition,
            profile,
            seed,
            self.gateway,
            settings=self.settings,
            runner=self._runner,
            answers=self.answers,
        )


def llm_mind_factory(gateway: LLMGateway, settings: LLMMindSettings | None = None) -> LLMMinds:
    """The mind factory for ``spawn_town(mind_factory=...)`` / ``Town(mind_factory=...)``."""
    return LLMMinds(gateway, settings or LLMMindSettings())
