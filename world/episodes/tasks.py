"""pi-Bench's task schema v2 as strict models, parsed from mappings (``bench.episodes.loader`` reads
the files; nothing here does I/O).

A ``task.yaml`` and an ``episode.yaml`` in pi-Bench's published layout validate unchanged.
Compatibility with what pi-Bench's own loader accepts:

- ``files_read``, ``tools`` and ``tools_evaluation_path`` may sit at the top level or under
  ``objectives`` (where pi-Bench reads them); parsed, they are always the top-level fields.
- ``trigger.type``: ``user`` (also ``user_query``) or, for environment triggers, ``env`` or
  ``environment`` (also ``environmental_signal``); ``TaskFile.is_environment`` normalises them.
- a ``tools`` entry is ``{<tool_name>: {call: [arg keys], result: [dotted paths]}}``, or the
  ``call``/``result`` lists beside the name; at least one of them is given.
- a hidden intent may carry pi-Bench's ``status`` (``not_provided`` | ``provided``).
- a list or mapping written as an empty YAML value (null) reads as empty; integer ids read as text.

Our extensions live in ``metadata`` (``TaskMetadata``); other metadata keys are kept and ignored.

Every problem is reported with a dotted field (``intent.hidden_intent[2].content``) so that a
message reads ``<file>: <field>: <problem>`` on one line.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, TypeVar, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from messages.episodes import (
    CriterionSpec,
    GradingSpec,
    SessionSpec,
    SessionTrigger,
    StateCheckSpec,
    ToolSelection,
    TriggerSource,
)
from messages.probes import plain_json
from world.episodes.assistant.oracle import OracleTurn

KNOWN_TASK_TYPES = ("long_term", "short_term_independent", "short_term_contextual")
"""The task types pi-Bench's schema documents; its loader stores any text and nothing reads it
(pi-Bench's own data has ``val`` and ``test`` too), so any non-blank text is accepted."""
USER_TRIGGERS = ("user", "user_query")
ENVIRONMENT_TRIGGERS = ("env", "environment", "environmental_signal")
TRIGGER_TYPES = USER_TRIGGERS + ENVIRONMENT_TRIGGERS
ROOT_FIELD = "(file)"
"""The field named by a problem of the whole document (not a mapping, not YAML)."""

_FIELD_ERROR = "task_field"
Parsed = TypeVar("Parsed", bound=BaseModel)
# Keys pi-Bench reads under ``objectives`` that we hold at the top level.
_LIFTED = ("files_read", "tools", "tools_evaluation_path")


class TaskFormatError(ValueError):
    """A task or episode file that does not follow the format; its text is one line."""

    def __init__(self, file: str, field: str, problem: str) -> None:
        self.file = file
        self.field = field
        self.problem = one_line(problem)
        super().__init__(f"{file}: {field}: {self.problem}")


@dataclass(frozen=True)
class FieldProblem:
    field: str
    """Dotted path into the document (``tools[0].call``), or ``ROOT_FIELD``."""
    message: str


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def _field_error(at: Sequence[str | int], problem: str) -> PydanticCustomError:
    # A validator's error is located at the validator's field; ``at`` goes deeper into it.
    return PydanticCustomError(_FIELD_ERROR, "{problem}", {"at": list(at), "problem": problem})


def _id_text(value: Any) -> Any:
    # YAML reads ``task_id: 12`` as an int; pi-Bench's loader takes str() of every id.
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


Identifier = Annotated[str, BeforeValidator(_id_text), Field(min_length=1, pattern=r"^[^/\\\s]+$")]
NonBlank = Annotated[str, Field(min_length=1, pattern=r"\S")]


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    NULL_AS_DEFAULT: ClassVar[tuple[str, ...]] = ()
    """Fields whose empty YAML value (null) reads as the field's default (an empty list or mapping)."""

    @model_validator(mode="before")
    @classmethod
    def _nulls(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            return {k: v for k, v in data.items() if not (k in cls.NULL_AS_DEFAULT and v is None)}
        return data


# ---------------------------------------------------------------- task file parts


def trigger_problem(value: str) -> str | None:
    """None for an accepted trigger spelling, else the message suggesting the accepted ones."""
    if value in TRIGGER_TYPES:
        return None
    close = difflib.get_close_matches(value.lower(), TRIGGER_TYPES, n=1, cutoff=0.5)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown trigger type {value!r}{hint}; accepted: {', '.join(TRIGGER_TYPES)}"


class Trigger(_Strict):
    type: str

    @field_validator("type")
    @classmethod
    def _spelling(cls, value: str) -> str:
        problem = trigger_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @property
    def is_environment(self) -> bool:
        return self.type in ENVIRONMENT_TRIGGERS


class HiddenIntent(_Strict):
    content: NonBlank
    status: Literal["not_provided", "provided"] = "not_provided"


def _initial_input(value: Any) -> Any:
    if isinstance(value, str):
        if not value.strip():
            raise ValueError("initial_input is empty")
        return value
    if isinstance(value, Mapping):
        try:
            return plain_json(dict(value))
        except ValueError as exc:
            raise ValueError(f"a JSON initial_input must hold JSON data only: {exc}") from None
    raise ValueError(f"expected text or a JSON object, not {type(value).__name__}")


class Intent(_Strict):
    initial_input: Annotated[str | dict[str, Any], BeforeValidator(_initial_input)]
    """The request's text, or the JSON payload of an environment trigger (a webhook body)."""
    hidden_intent: tuple[HiddenIntent, ...] = ()

    NULL_AS_DEFAULT = ("hidden_intent",)


class ChecklistItem(_Strict):
    criterion: NonBlank
    weight: float = Field(default=1.0, gt=0, le=1000, allow_inf_nan=False)


class ToolEntry(_Strict):
    """A ``tools`` entry: the calls of ``name`` whose ``call`` keys and ``result`` dotted paths the
    rubric judge is shown. Written ``{<name>: {call: [...], result: [...]}}`` in a task file."""

    name: NonBlank
    call: tuple[NonBlank, ...] = ()
    result: tuple[NonBlank, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _published_shape(cls, data: Any) -> Any:
        if not isinstance(data, Mapping) or "name" in data:
            return data
        names = [k for k in data if k not in ("call", "result")]
        if len(names) != 1:
            raise _field_error((), f"expected exactly one tool name key, found {len(names)}")
        name = names[0]
        config = data[name]
        if config is None:
            config = {}
        if not isinstance(config, Mapping):
            raise _field_error((str(name),), "expected a mapping with call and/or result lists")
        unknown = [k for k in config if k not in ("call", "result")]
        if unknown:
            raise _field_error((str(name), str(unknown[0])), "unknown key (expected call or result)")
        merged: dict[str, Any] = {"name": name}
        for part in ("call", "result"):
            value = config.get(part, data.get(part))
            merged[part] = [] if value is None else value
        return merged

    @model_validator(mode="after")
    def _some_paths(self) -> ToolEntry:
        if not self.call and not self.result:
            raise _field_error((), f"{self.name}: declare call keys or result paths")
        return self


class Objectives(_Strict):
    checklist: tuple[ChecklistItem, ...] = ()
    # Where pi-Bench keeps them; TaskFile lifts them to its own fields.
    files_read: tuple[NonBlank, ...] | None = None
    tools: tuple[ToolEntry, ...] | None = None
    tools_evaluation_path: str | None = None

    NULL_AS_DEFAULT = ("checklist",)


def _state_check_shape(check: StateCheckSpec) -> str | None:
    if check.value is not None and set(check.value) != {"value"}:
        return "write the expected value as {value: ...}"
    if check.op in ("equals", "contains") and check.value is None:
        return f"op {check.op!r} needs a value ({{value: ...}})"
    return None


class TaskMetadata(BaseModel):
    """Our documented extensions, read from a task's ``metadata`` (other keys are kept, ignored)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    trigger_source: Literal["webhook", "heartbeat"] | None = None
    """Which environment trigger opens the session (environment triggers only; default webhook)."""
    at_minutes: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Virtual minutes since the episode began at which the session opens."""
    max_turns: int | None = Field(default=None, ge=1, le=200)
    app_state: dict[str, dict[str, Any]] = {}
    """``{app: {collection: [records], ...}}`` merged into the app state before the session."""
    oracle: tuple[OracleTurn, ...] = ()
    """The task's gold path, one entry per turn, played by ``--assistants oracle``."""
    state_checks: tuple[StateCheckSpec, ...] = ()

    @field_validator("app_state")
    @classmethod
    def _json_apps(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for app, data in value.items():
            for collection, records in data.items():
                try:
                    plain_json(records)
                except ValueError as exc:
                    raise _field_error((app, collection), f"not JSON data: {exc}") from None
                if isinstance(records, list):
                    for i, record in enumerate(records):
                        if not isinstance(record, dict):
                            raise _field_error((app, collection, i), "a record is a mapping")
        return value

    @field_validator("state_checks", mode="before")
    @classmethod
    def _wrapped_values(cls, value: Any) -> Any:
        # A bare ``value: 3`` is the likeliest slip; say how to write it instead of "not a dict".
        if isinstance(value, list | tuple):
            for i, item in enumerate(value):
                if isinstance(item, Mapping) and not isinstance(item.get("value"), Mapping | None):
                    raise _field_error((i, "value"), "write the expected value as {value: ...}")
        return value

    @field_validator("state_checks")
    @classmethod
    def _check_values(cls, value: tuple[StateCheckSpec, ...]) -> tuple[StateCheckSpec, ...]:
        for i, check in enumerate(value):
            problem = _state_check_shape(check)
            if problem is not None:
                raise _field_error((i, "value"), problem)
        return value


class TaskFile(_Strict):
    """One ``tasks/<task_id>/task.yaml`` (pi-Bench task schema v2)."""

    schema_version: Literal["v2"]
    task_id: Identifier
    user_id: Identifier
    environment_id: str = ""
    title: str
    description: str = ""
    task_type: NonBlank
    trigger: Trigger
    intent: Intent
    objectives: Objectives = Objectives()
    files_read: tuple[NonBlank, ...] = ()
    """Workspace paths the judges read with each reply."""
    tools: tuple[ToolEntry, ...] = ()
    tools_evaluation_path: str | None = None
    """A Python file defining ``score(tools_history) -> dict[str, int]``; the loader resolves it."""
    metadata: dict[str, Any] = {}
    """Free-form; our extension keys are checked against ``TaskMetadata`` (see ``extensions``)."""

    NULL_AS_DEFAULT = ("environment_id", "description", "objectives", *_LIFTED, "metadata")

    @field_validator("tools_evaluation_path")
    @classmethod
    def _python_file(cls, value: str | None) -> str | None:
        if value is not None and not value.strip().endswith(".py"):
            raise ValueError(f"expected the path of a .py file, not {value!r}")
        return value.strip() if value is not None else None

    @field_validator("metadata")
    @classmethod
    def _extensions(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            TaskMetadata.model_validate(value)
        except ValidationError as exc:
            # One error per field fits pydantic's shape: the first bad extension, located.
            err = exc.errors(include_url=False)[0]
            at = [*err["loc"], *(err.get("ctx") or {}).get("at", [])]
            raise _field_error(at, _message(err)) from None
        return value

    @model_validator(mode="after")
    def _lift_objectives(self) -> TaskFile:
        update: dict[str, Any] = {}
        for key in _LIFTED:
            nested = getattr(self.objectives, key)
            if nested is None:
                continue
            if key in self.model_fields_set:
                raise _field_error(("objectives", key), f"{key} is given both here and at the top level")
            update[key] = nested
        if not update:
            return self
        objectives = self.objectives.model_copy(update=dict.fromkeys(update))
        return self.model_copy(update={**update, "objectives": objectives})

    @property
    def is_environment(self) -> bool:
        return self.trigger.is_environment

    @property
    def extensions(self) -> TaskMetadata:
        """``metadata`` read as our extensions (validated when the task was parsed)."""
        return TaskMetadata.model_validate(self.metadata)

    @property
    def hidden_intents(self) -> tuple[str, ...]:
        return tuple(h.content for h in self.intent.hidden_intent)

    @property
    def checklist(self) -> tuple[ChecklistItem, ...]:
        return self.objectives.checklist


# ---------------------------------------------------------------- episode file


class EpisodeTask(_Strict):
    task_id: Identifier
    depends_on: tuple[Identifier, ...] = ()

    NULL_AS_DEFAULT = ("depends_on",)


class EpisodeFile(_Strict):
    """An ``episode.yaml``: the sessions in order and what each depends on."""

    schema_version: Annotated[str, BeforeValidator(_id_text)] = "v2"
    episode_id: Identifier
    user_id: Identifier
    tasks: tuple[EpisodeTask, ...] = Field(min_length=1)
    runtime: dict[str, Any] = {}
    """pi-Bench's runtime binding (``docker_image_id``); kept, unused."""

    NULL_AS_DEFAULT = ("runtime",)

    @property
    def task_ids(self) -> tuple[str, ...]:
        return tuple(t.task_id for t in self.tasks)


# ---------------------------------------------------------------- parsing


def format_field(loc: Sequence[str | int]) -> str:
    """``("intent", "hidden_intent", 0, "content")`` -> ``intent.hidden_intent[0].content``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or ROOT_FIELD


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _model_at(root: type[BaseModel], path: Sequence[str | int]) -> type[BaseModel] | None:
    current: type[BaseModel] | None = root
    for part in path:
        if isinstance(part, int):
            continue  # an item of a list: _model_in already unwrapped the list's element model
        if current is None or part not in current.model_fields:
            return None
        current = _model_in(current.model_fields[part].annotation)
    return current


def _unknown_key(root: type[BaseModel], loc: Sequence[str | int]) -> str:
    key = str(loc[-1]) if loc else ""
    model = _model_at(root, loc[:-1])
    if model is None:
        return f"unknown key {key!r}"
    known = sorted(model.model_fields)
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown key {key!r}{hint}; known here: {', '.join(known)}"


def problems_of(exc: ValidationError, root: type[BaseModel]) -> tuple[FieldProblem, ...]:
    """Each error of ``exc`` as a dotted field and a one-line message, in document order."""
    out: list[FieldProblem] = []
    for err in exc.errors(include_url=False):
        loc: list[str | int] = list(err["loc"])
        ctx = err.get("ctx") or {}
        if err["type"] == _FIELD_ERROR:
            loc += list(ctx.get("at", []))
        message = _unknown_key(root, loc) if err["type"] == "extra_forbidden" else _message(err)
        out.append(FieldProblem(format_field(loc), one_line(message)))
    return tuple(out)


def _message(err: Any) -> str:
    if err["type"] == _FIELD_ERROR:
        return str((err.get("ctx") or {}).get("problem", err["msg"]))
    if err["type"] == "missing":
        return "missing required field"
    return str(err["msg"]).removeprefix("Value error, ")


def _not_a_mapping(data: object) -> FieldProblem:
    return FieldProblem(ROOT_FIELD, f"expected a mapping of fields, not {type(data).__name__}")


def _problems(model: type[Parsed], data: object) -> tuple[Parsed | None, tuple[FieldProblem, ...]]:
    """``data`` parsed as ``model``, or None and every problem found (the linter reports them all)."""
    if not isinstance(data, Mapping):
        return None, (_not_a_mapping(data),)
    try:
        return model.model_validate(dict(data)), ()
    except ValidationError as exc:
        return None, problems_of(exc, model)


def _parsed(model: type[Parsed], data: Mapping[str, Any], where: str) -> Parsed:
    """``data`` parsed as ``model``; TaskFormatError naming ``where`` and the first bad field otherwise."""
    parsed, problems = _problems(model, data)
    if parsed is None:
        raise TaskFormatError(where, problems[0].field, problems[0].message)
    return parsed


def task_problems(data: object) -> tuple[TaskFile | None, tuple[FieldProblem, ...]]:
    return _problems(TaskFile, data)


def episode_problems(data: object) -> tuple[EpisodeFile | None, tuple[FieldProblem, ...]]:
    return _problems(EpisodeFile, data)


def parse_task(data: Mapping[str, Any], *, where: str) -> TaskFile:
    return _parsed(TaskFile, data, where)


def parse_episode(data: Mapping[str, Any], *, where: str) -> EpisodeFile:
    return _parsed(EpisodeFile, data, where)


# ---------------------------------------------------------------- what the session and grader get


def trigger_source(task: TaskFile) -> TriggerSource:
    if not task.is_environment:
        return "user"
    return task.extensions.trigger_source or "webhook"


def trigger_payload(task: TaskFile) -> dict[str, Any] | None:
    """The structured input: a JSON-object initial_input, or an environment trigger's text that
    holds a JSON object (pi-Bench writes webhook bodies as text)."""
    value = task.intent.initial_input
    if isinstance(value, dict):
        return value
    if task.is_environment and value.lstrip().startswith("{"):
        try:
            parsed = json.loads(value)
        except ValueError:
            return None
        return parsed if isinstance(parsed, dict) else None
    return None


_PAYLOAD_LABELS: dict[str, str] = {
    "webhook": "Webhook event",
    "heartbeat": "Heartbeat",
    "user": "Request",
}


def describe_payload(source: TriggerSource, payload: Mapping[str, Any]) -> str:
    """One line for a structured input: its label and the payload as sorted, compact JSON."""
    body = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))
    return f"{_PAYLOAD_LABELS[source]}: {body}"


def opens_at(task: TaskFile, clock: float) -> float:
    """When the session opens on the virtual clock: at ``metadata.at_minutes`` if that is still
    ahead of ``clock``, else now (a session never opens in the past)."""
    at = task.extensions.at_minutes
    return clock if at is None else max(clock, at)


def session_spec(task: TaskFile, episode_id: str, *, sim_time: float) -> SessionSpec:
    """What the simulated user holds for ``task`` (no checklist: the user never sees grading).
    The first message is ``initial_input`` verbatim, as pi-Bench sends it
    (``BaseUserAgent.initial_user_message``), an environment trigger's text included; a JSON
    object written as YAML (our extension) is sent as its JSON text."""
    source = trigger_source(task)
    payload = trigger_payload(task)
    value = task.intent.initial_input
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    extra: dict[str, Any] = {}
    if task.extensions.max_turns is not None:
        extra["max_turns"] = task.extensions.max_turns
    return SessionSpec(
        episode_id=episode_id,
        task_id=task.task_id,
        user_id=task.user_id,
        title=task.title,
        initial_input=text,
        trigger=SessionTrigger(source=source, payload=payload),
        hidden_intents=task.hidden_intents,
        files_read=task.files_read,
        sim_time=sim_time,
        **extra,
    )


def grading_spec(task: TaskFile, *, rule_scorer: str | None, rule_scorer_path: str | None) -> GradingSpec:
    """What the grader needs of ``task``; ``rule_scorer`` is the tools_evaluation file's source."""
    return GradingSpec(
        task_id=task.task_id,
        hidden_intents=task.hidden_intents,
        checklist=tuple(CriterionSpec(criterion=c.criterion, weight=c.weight) for c in task.checklist),
        tools=tuple(ToolSelection(tool_name=t.name, call=t.call, result=t.result) for t in task.tools),
        files_read=task.files_read,
        rule_scorer=rule_scorer,
        rule_scorer_path=rule_scorer_path,
        state_checks=task.extensions.state_checks,
    )


def workspace_path(path: str) -> str:
    """A files_read or asset path as the workspace names it: posix, no leading ``./``. pi-Bench
    copies a task directory's entries to the workspace root under their own names
    (``BaseUserAgent._stage_task_workspace``) and reads files_read relative to it."""
    parts = [p for p in path.strip().replace("\\", "/").split("/") if p not in ("", ".")]
    return "/".join(parts)


__all__ = [
    "ENVIRONMENT_TRIGGERS",
    "KNOWN_TASK_TYPES",
    "ROOT_FIELD",
    "TRIGGER_TYPES",
    "USER_TRIGGERS",
    "ChecklistItem",
    "EpisodeFile",
    "EpisodeTask",
    "FieldProblem",
    "HiddenIntent",
    "Intent",
    "Objectives",
    "TaskFile",
    "TaskFormatError",
    "TaskMetadata",
    "ToolEntry",
    "Trigger",
    "describe_payload",
    "episode_problems",
    "format_field",
    "grading_spec",
    "one_line",
    "opens_at",
    "parse_episode",
    "parse_task",
    "problems_of",
    "session_spec",
    "task_problems",
    "trigger_payload",
    "trigger_problem",
    "trigger_source",
    "workspace_path",
]
