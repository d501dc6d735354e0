"""The contract of proactive-assistant episodes (pi-Bench, Sections 3-4, Appendices B-C).

Actors of one episode ``EP`` (all in the run's namespace):

- ``user.EP``: the simulated user. ``StartSession`` starts a session; it sends ``UserTurn`` to
  the assistant, judges each ``AssistantReply`` (completed, then inferred, else it provides the
  next open intent) and tells ``SessionEnded`` to the session's ``report_to`` address.
- ``assistant.EP``: the agent under test: the built-in one or any external process that answers
  ``UserTurn`` with ``AssistantReply`` sent to ``UserTurn.reply_to``, and takes ``EndSession``.
- ``registry.EP``: the episode's tools (workspace, messages, scheduler, simulated apps), called
  with ``probes.ProbeCall(registry="episode")``; it owns the app state, its snapshots and the
  authoritative tool history.
- ``grader``: scores a finished session (``GradeSession`` -> ``SessionGrade``).

Events of a session (``TurnRecorded``, ``IntentStatusChanged``) are published on
``EPISODE_EVENTS`` so a trace writer or a dashboard can follow an episode live.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt

from messages._base import Message
from messages._registry import message
from messages.aura import IntentFrame, UsageSummary
from messages.probes import JsonObject

EPISODE_EVENTS = "episode.events"
"""Topic of the typed events of every session (turns, intent statuses, session ends)."""

TriggerSource = Literal["user", "webhook", "heartbeat"]
"""Who opens a session: the user's request, or an environment trigger (a structured payload from
an outside system, or the agent's own heartbeat)."""
IntentStatus = Literal["open", "completed", "inferred", "provided"]
TerminalStatus = Literal["completed", "inferred", "provided"]
TurnKind = Literal["request", "trigger", "answer", "provide", "followup"]
"""What a user turn is: the initial request, an environment trigger, the answer to a targeted
question (inferred intents), a provided intent, or a plain nudge (nothing left to reveal)."""
EndReason = Literal["complete", "max_turns", "timeout", "aborted", "error"]
"""``error``: the session could not go on (a judge answered nothing readable after its retries);
its grade is left out of the averages and counted."""
Judgement = Literal["deterministic", "llm"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolRecord(_Frozen):
    """One tool call in pi-Bench's record shape (Appendix C.4), plus where it happened."""

    tool_name: str
    """The published name, e.g. ``mcp_appworld_amazon__place_order`` or ``read_file``."""
    call: JsonObject = {}
    result: JsonObject = {}
    """``{"response": ...}`` for a call that ran; ``{"error": ..., "status": ...}`` otherwise."""
    status: str = "ok"
    task_id: str = ""
    seq: int = Field(default=0, ge=0)
    """Position in the episode's tool history (the registry's count)."""
    turn: int = Field(default=0, ge=0)
    """The session turn the call was made in (the user message it answers; 0: unknown)."""


class SessionTrigger(_Frozen):
    source: TriggerSource = "user"
    payload: JsonObject | None = None
    """The structured input of an environment trigger (a webhook body, a heartbeat's due items)."""


class SessionSpec(_Frozen):
    """What the simulated user holds for one session: the request and the hidden intents.

    Checklists and rule scorers are not here: the user never sees how the session is graded.
    """

    episode_id: str
    task_id: str
    user_id: str
    title: str = ""
    initial_input: str
    trigger: SessionTrigger = SessionTrigger()
    hidden_intents: tuple[str, ...] = ()
    files_read: tuple[str, ...] = ()
    """Workspace paths whose contents the judges read with each reply."""
    max_turns: int = Field(default=30, ge=1, le=200)
    """Assistant replies before the session ends (pi-Bench's ``BenchmarkRunner.max_turns``: 30)."""
    sim_time: float = 0.0
    """Virtual minutes since the episode began, when the session opens."""


class IntentResult(_Frozen):
    index: int = Field(ge=0)
    content: str
    status: IntentStatus
    turn: int = Field(default=0, ge=0)
    """The assistant turn whose reply settled it (0: never settled)."""
    judge: Judgement = "deterministic"
    judge_failures: int = Field(default=0, ge=0)
    """Judge answers that could not be read for this intent (each counted as NO, never YES)."""


class TurnRecord(_Frozen):
    turn: int = Field(ge=1)
    role: Literal["user", "assistant"]
    kind: str = ""
    """A user turn's ``TurnKind``; an assistant turn's backend."""
    text: str
    tool_records: tuple[ToolRecord, ...] = ()
    sim_time: float = 0.0
    frame: IntentFrame | None = None
    """The assistant's IntentFrame for this turn, when it ran the AURA step."""


# ---------------------------------------------------------------- runner <-> simulated user


@message("episode.start_session", 1)
class StartSession(Message):
    spec: SessionSpec
    report_to: str
    """The address ``SessionEnded`` goes to (the episode runner)."""
    assistant: str
    """The assistant's address (``assistant.EP`` or an external agent's)."""
    judge: Judgement = "deterministic"
    model: str | None = None
    """The user's and judges' litellm model when ``judge`` is ``llm``."""


@message("episode.turn_started", 1)
class TurnStarted(Message):
    """User -> ``registry.EP`` before each user message: the calls from now on answer message
    ``turn`` of the task (pi-Bench scores rule scorers and rubric items per turn)."""

    task_id: str
    turn: int = Field(ge=1)


@message("episode.started", 1)
class SessionStarted(Message):
    task_id: str
    accepted: bool = True
    reason: str = ""


@message("episode.abort_session", 1)
class AbortSession(Message):
    """Runner -> user: stop the session now (the timeout guard); it ends with this reason."""

    task_id: str
    reason: EndReason = "timeout"


@message("episode.session_ended", 1)
class SessionEnded(Message):
    episode_id: str
    task_id: str
    reason: EndReason
    turns: tuple[TurnRecord, ...] = ()
    intents: tuple[IntentResult, ...] = ()
    sim_time: float = 0.0
    usage: UsageSummary = UsageSummary()
    """The user's and its judges' model use."""
    assistant_usage: UsageSummary = UsageSummary()
    error: str | None = None


# ---------------------------------------------------------------- user <-> assistant


@message("episode.user_turn", 1)
class UserTurn(Message):
    episode_id: str
    task_id: str
    user_id: str
    turn: int = Field(ge=1)
    kind: TurnKind
    text: str
    """The user's words; for a trigger, a line describing the event."""
    trigger: SessionTrigger | None = None
    """Set on the first turn of an environment-triggered session."""
    reply_to: str
    """Send the ``AssistantReply`` here (with ``tell``)."""
    tools: str = ""
    """The address of the episode's tool registry (``registry.EP``)."""
    sim_time: float = 0.0
    session: str = ""
    """This run of the session (a nonce): echo it in the reply. A reply to an aborted run of the
    same task (redelivered after a crash) carries another and is ignored."""


@message("episode.assistant_reply", 1)
class AssistantReply(Message):
    task_id: str
    turn: int = Field(ge=1)
    text: str
    tool_records: tuple[ToolRecord, ...] = ()
    """The calls made for this reply, as the assistant saw them (the registry's history is the
    authoritative one for grading)."""
    frame: IntentFrame | None = None
    """The IntentFrame of the turn, when the assistant runs the AURA step."""
    usage: UsageSummary = UsageSummary()
    backend: str = "offline"
    error: str | None = None
    """The assistant could not do its work (the reply says so to the user)."""
    session: str = ""
    """``UserTurn.session``, echoed."""

    def turn_record(self, sim_time: float) -> TurnRecord:
        """The reply as the assistant's turn of a transcript."""
        return TurnRecord(
            turn=self.turn,
            role="assistant",
            kind=self.backend,
            text=self.text,
            tool_records=self.tool_records,
            sim_time=sim_time,
            frame=self.frame,
        )


@message("episode.end_session", 1)
class EndSession(Message):
    """User -> assistant: the session is over; consolidate what is worth remembering."""

    episode_id: str
    task_id: str
    user_id: str
    sim_time: float = 0.0


# ---------------------------------------------------------------- events (EPISODE_EVENTS)


@message("episode.turn", 1)
class TurnRecorded(Message):
    episode_id: str
    task_id: str
    record: TurnRecord


@message("episode.intent_status", 1)
class IntentStatusChanged(Message):
    episode_id: str
    task_id: str
    intent: IntentResult


# ---------------------------------------------------------------- the episode's tool registry


@message("episode.seed", 1)
class SeedWorkspace(Message):
    """Runner -> ``registry.EP`` when a task starts: copy its assets in, merge app data, set the
    task that tool calls are recorded under; then snapshot the state as ``task_id``."""

    task_id: str
    files: dict[str, str] = {}
    """Workspace path -> text content (a task's asset files)."""
    binaries: dict[str, str] = {}
    """Workspace path -> base64 of a binary asset, copied byte for byte."""
    app_state: JsonObject = {}
    """Per-app data merged into the app state (``{"amazon": {"products": [...]}}``)."""
    sim_time: float = 0.0
    delivered: tuple[int, ...] = ()
    """Ids of scheduled items this session's heartbeat delivers: marked ``delivered``, so the
    next heartbeat does not deliver them again."""


@message("episode.restore", 1)
class RestoreSnapshot(Message):
    """Put the state back as it was when ``label`` was snapshotted (resume of a session)."""

    label: str


@message("episode.get_diff", 1)
class GetStateDiff(Message):
    since: str
    """A snapshot label (the task id of a session); "" for the state alone, with no diff."""


@message("episode.read_files", 1)
class ReadFiles(Message):
    paths: tuple[str, ...]


@message("episode.get_history", 1)
class GetToolHistory(Message):
    task_id: str | None = None
    """None: the whole episode's history."""


class StateChange(_Frozen):
    path: str
    """Dotted path into the state: ``files.report.md``, ``apps.amazon.orders.901``."""
    kind: Literal["added", "removed", "changed"]
    before: JsonObject | None = None
    """``{"value": ...}`` (wrapped, so that any JSON value fits); None when added."""
    after: JsonObject | None = None


@message("episode.registry_ack", 1)
class RegistryAck(Message):
    label: str = ""
    files: int = 0
    records: int = 0


@message("episode.state_diff", 1)
class StateDiffData(Message):
    since: str
    changes: tuple[StateChange, ...] = ()
    state: JsonObject = {}
    """The app state now (files excluded), for checks on the final state."""
    backend_restarts: int = 0
    """Times the app backend (AppWorld's process) died during the session ``since`` began: its
    calls since then are lost, and the session is to be run again from its snapshot."""


@message("episode.files", 1)
class FilesData(Message):
    files: dict[str, str] = {}
    missing: tuple[str, ...] = ()


@message("episode.tool_history", 1)
class ToolHistory(Message):
    records: tuple[ToolRecord, ...] = ()


# ---------------------------------------------------------------- grading


class CriterionSpec(_Frozen):
    criterion: str
    weight: float = Field(default=1.0, gt=0, le=1000)


class StateCheckSpec(_Frozen):
    """A checklist item verified on the app state after the session (our extension, written in a
    task's ``metadata.state_checks``): the value at ``path`` must exist, equal or contain ``value``."""

    criterion: str
    path: str
    op: Literal["exists", "equals", "contains", "absent"] = "exists"
    value: JsonObject | None = None
    """``{"value": ...}``; ignored by ``exists`` and ``absent``."""


class ToolSelection(_Frozen):
    """A task's ``tools`` entry: which calls and fields the rubric judge is shown."""

    tool_name: str
    call: tuple[str, ...] = ()
    result: tuple[str, ...] = ()


class GradingSpec(_Frozen):
    """What the grader needs of a task: never shown to the user or the assistant."""

    task_id: str
    hidden_intents: tuple[str, ...] = ()
    checklist: tuple[CriterionSpec, ...] = ()
    tools: tuple[ToolSelection, ...] = ()
    files_read: tuple[str, ...] = ()
    rule_scorer: str | None = None
    """The source of the task's ``tools_evaluation_path`` file."""
    rule_scorer_path: str | None = None
    """Where that source came from (for messages)."""
    state_checks: tuple[StateCheckSpec, ...] = ()


@message("episode.grade", 1)
class GradeSession(Message):
    spec: GradingSpec
    session: SessionEnded
    history: tuple[ToolRecord, ...] = ()
    """The session's tool history from the registry."""
    diff: StateDiffData | None = None
    files: dict[str, str] = {}
    """Contents of the task's files_read at the end of the session."""
    judge: Judgement = "deterministic"
    model: str | None = None


class CriterionResult(_Frozen):
    criterion: str
    weight: float = 1.0
    source: Literal["rubric", "rule", "state"]
    passed: bool
    """Our reading."""
    passed_faithful: bool
    """pi-Bench's reading."""
    evidence: str = ""
    error: str | None = None
    """A judge or scorer failure: the item counts as not passed, and the failure is reported."""


@message("episode.session_grade", 1)
class SessionGrade(Message):
    task_id: str
    criteria: tuple[CriterionResult, ...] = ()
    comp: float | None = None
    """Weighted mean of the items (our reading); None for a task with no items or left out."""
    comp_faithful: float | None = None
    """pi-Bench's reading (``world.episodes.grading``): rubric and rule scorer per turn, any turn."""
    grader_errors: tuple[str, ...] = ()
    """Rule scorers that crashed or returned garbage, judges that answered nothing readable."""
    judge_failures: int = Field(default=0, ge=0)
    usage: UsageSummary = UsageSummary()
    excluded: str | None = None
    """Why a COMP of this grade is left out of the averages (the session ended in error, a judge
    answered nothing readable, the scorer's key set failed); None when both readings count."""


# ---------------------------------------------------------------- units on worker processes

EPISODE_UNITS = "episode.units"
"""Topic of a run's unit progress (``UnitEvent``), published by the workers running its units;
the coordinator (``auratown bench episodes --workers``) appends it to the run directory."""

UNIT_WORKER = "episodes"
"""The address of the ``auratown worker`` role that runs whole units (``RunUnit``)."""


class UnitTask(_Frozen):
    """One task of a unit, carried whole so a worker needs no shared filesystem."""

    task: JsonObject
    """The task file (``world.episodes.tasks.TaskFile``), dumped in JSON mode."""
    assets: dict[str, str] = {}
    """Workspace path -> text."""
    binaries: dict[str, str] = {}
    """Workspace path -> base64 of a binary asset."""
    rule_scorer: str | None = None
    """The source of its tools_evaluation file."""
    rule_scorer_path: str | None = None
    depends_on: tuple[str, ...] = ()


class UnitSettings(_Frozen):
    model: str | None = None
    judge_model: str | None = None
    api_base: str | None = None
    session_timeout: float = Field(default=900.0, gt=0)
    ask_timeout: float = Field(default=120.0, gt=0)
    max_turns: int | None = None
    """Overrides every task's turn limit (at least 1)."""
    max_tokens: int | None = None
    """Output tokens of every model answer (``--max-tokens``); None: each stage's cap."""
    llm_timeout: PositiveFloat | None = None
    """Seconds one model request may take (``--llm-timeout``); None: the worker's settings."""
    context_window: PositiveInt | None = None
    """Tokens the model reads and writes in all (``--context-window``); None: litellm's model info."""
    apps: Literal["builtin", "appworld"] = "builtin"
    """The app backend the unit runs on (AppWorld's: installed on the worker)."""
    shared_world: bool = False
    """AppWorld only: one world for every unit, never reset (pi-Bench's own way)."""


@message("episode.run_unit", 1)
class RunUnit(Message):
    """Coordinator -> ``episodes``: run one unit (an episode for one assistant and repetition) in
    ``namespace`` and publish its progress there on ``EPISODE_UNITS``."""

    namespace: str
    """The run's namespace: the unit's actors (``registry.KEY``, ``user.KEY``...) live there."""
    owner: str
    """The coordinator invocation that sent it; a worker drops a unit whose owner was replaced."""
    unit: str
    """The unit's key (``bench.episodes.plan.Unit.key``); checked against the rebuilt unit."""
    episode: JsonObject
    """The episode file (``world.episodes.tasks.EpisodeFile``), dumped in JSON mode."""
    directory: str = ""
    """Where the episode lives on the coordinator's machine (for messages only)."""
    tasks: tuple[UnitTask, ...] = ()
    """Every task of the episode, in order (an ablation unit runs one of them)."""
    offered: tuple[str, ...] | None = None
    """The app tools the persona's tools.yaml offers (None: every tool the apps serve)."""
    seed: JsonObject | None = None
    """The persona's app world seed (``world.episodes.apps.seed.WorldSeed``), dumped."""
    assistant: str = "builtin"
    """The assistant choice (``builtin``, ``builtin+intent`` or ``external:ADDRESS``)."""
    run: int = Field(default=1, ge=1)
    only: str | None = None
    settings: UnitSettings = UnitSettings()
    progress: tuple[JsonObject, ...] = ()
    """The unit's record lines the coordinator holds (``event``, ``task_id``, ``clock``), for a
    unit the worker has no stored progress of (a run begun in one process, resumed on workers)."""


UnitEventKind = Literal["started", "finished", "reset", "done", "failed"]


@message("episode.unit_event", 1)
class UnitEvent(Message):
    """Worker -> ``EPISODE_UNITS``: one line of a unit's record (``started``, ``finished`` with its
    trace lines, ``reset``), or the unit's end (``done``, or ``failed`` with the error)."""

    unit: str
    owner: str
    event: UnitEventKind
    seq: int = Field(default=0, ge=0)
    """Position of the line in the unit's stored progress (0 for ``done``/``failed``)."""
    line: JsonObject = {}
    """The record line, exactly as ``bench.episodes.store`` writes it to ``units/KEY.jsonl``."""
    trace: tuple[JsonObject, ...] = ()
    """With ``finished``: the session's lines of ``traces/KEY.jsonl``."""
    error: str = ""
    worker: str = ""
    """The process id of the worker that ran it."""
