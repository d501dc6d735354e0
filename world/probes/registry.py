"""A probe registry: typed tools, an allow/deny glob policy, and an audit record for every call.

The order of a call is fixed and is the privacy guarantee: resolve the name, apply the policy
(a denied call stops here: it is never validated, never executed, only audited), validate the
arguments, then run the tool. A public tool runs on ``scene.public()``, the scene with every
private fact and belief removed, so no bug in a public tool can hand out a private field.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from messages.probes import (
    AuditRecord,
    JsonObject,
    ProbeOutcome,
    ProbePolicy,
    ProbeScene,
    ProbeStatus,
    RegistryName,
    SceneAgent,
    ToolList,
    ToolSpecData,
)
from world.probes.names import NotFoundError, find_agent

A = TypeVar("A", bound=BaseModel)

ALLOW_ALL = ProbePolicy()


@dataclass(frozen=True)
class ProbeContext:
    """Who is calling, and whose point of view the self-referential tools take."""

    caller: str
    asker: str | None
    """The scene's name of the agent whose location, plan and memories "own" refers to."""
    no_asker: str = ""
    """Why there is no point of view (shown to the caller by a tool that needs one)."""

    def me(self, scene: ProbeScene) -> SceneAgent:
        if self.asker is None:
            raise NotFoundError(self.no_asker or "this tool needs an asker: the agent whose view it takes")
        return scene.agents[self.asker]


ToolFn = Callable[[ProbeScene, ProbeContext, A], JsonObject]


@functools.cache
def _schema_json(model: type[BaseModel]) -> str:
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema.setdefault("properties", {})
    return json.dumps(schema)


@dataclass(frozen=True)
class ToolSpec(Generic[A]):
    name: str
    """The paper's name (``world.time``); the canonical name in audits and outcomes."""
    aliases: tuple[str, ...]
    """The AURA release's names (``get_time``); function-calling schemas use the first."""
    description: str
    args_model: type[A]
    run: ToolFn[A] = field(repr=False)
    disclosure: int
    private: bool
    """Reads private facts or beliefs; runs on the full scene. Public tools see ``scene.public()``."""
    registry: RegistryName
    needs_memories: bool = False
    """Reads the asker's memories (a live registry fetches them from the agent's mind)."""
    schema: JsonObject | None = field(default=None, repr=False)
    """The arguments' JSON Schema when another program owns them (AppWorld's API docs); else the
    schema of ``args_model``."""

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    @property
    def function_name(self) -> str:
        """OpenAI function names allow no dots: the release alias, else the name with '_'."""
        return self.aliases[0] if self.aliases else self.name.replace(".", "_")

    def parameters(self) -> JsonObject:
        if self.schema is not None:
            return json.loads(json.dumps(self.schema))  # type: ignore[no-any-return]
        # Building a JSON Schema is most of a cheap query's time: once per argument model.
        parsed: JsonObject = json.loads(_schema_json(self.args_model))
        return parsed

    def data(self) -> ToolSpecData:
        return ToolSpecData(
            name=self.name,
            aliases=list(self.aliases),
            description=self.description,
            parameters=self.parameters(),
            disclosure=self.disclosure,
            private=self.private,
            registry=self.registry,
        )

    def function_schema(self) -> JsonObject:
        return {
            "type": "function",
            "function": {
                "name": self.function_name,
                "description": f"{self.description} (also called {self.name})",
                "parameters": self.parameters(),
            },
        }


def release_tool(
    name: str,
    alias: str,
    description: str,
    args_model: type[BaseModel],
    run: Any,
    *,
    registry: RegistryName,
    disclosure: int,
    private: bool = False,
    needs_memories: bool = False,
) -> ToolSpec[Any]:
    """A town probe of ``registry``: the paper's ``name`` and the AURA release's ``alias``."""
    return ToolSpec(
        name=name,
        aliases=(alias,),
        description=description,
        args_model=args_model,
        run=run,
        disclosure=disclosure,
        private=private,
        registry=registry,
        needs_memories=needs_memories,
    )


@dataclass(frozen=True)
class PreparedCall:
    """A call that passed the policy and argument checks: only a scene is missing to run it."""

    spec: ToolSpec[Any]
    args: BaseModel
    caller: str
    requested: str
    asker: str | None


def _jsonable(value: Any) -> JsonObject:
    if value is None:
        return {}
    data = json.loads(json.dumps(value, default=str, ensure_ascii=False))
    return data if isinstance(data, dict) else {"_": data}


def _size(result: JsonObject | None) -> int:
    return 0 if result is None else len(json.dumps(result, ensure_ascii=False, sort_keys=True))


def policy_verdict(spec: ToolSpec[Any], policies: Iterable[ProbePolicy]) -> str | None:
    """None if every policy allows the tool, else why not. Patterns match the canonical name and
    every alias, case-insensitively; a deny pattern wins over any allow pattern."""
    names = [n.casefold() for n in spec.names]
    for policy in policies:
        for pattern in policy.deny:
            if any(fnmatchcase(n, pattern.casefold()) for n in names):
                return f"{spec.name} is denied by the policy pattern {pattern!r}"
        if not any(fnmatchcase(n, p.casefold()) for p in policy.allow for n in names):
            allowed = ", ".join(repr(p) for p in policy.allow) or "nothing"
            return f"{spec.name} is not in the policy's allow list ({allowed})"
    return None


def validation_summary(exc: ValidationError, name: str, args_model: type[BaseModel]) -> str:
    """One line for arguments that failed validation: the first problems and what the tool takes."""
    parts = []
    for err in exc.errors()[:4]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    props = args_model.model_json_schema().get("properties", {})
    expected = ", ".join(props) if props else "no arguments"
    return f"invalid arguments for {name} ({'; '.join(parts)}); it takes {expected}"


class ProbeRegistry:
    """One registry of tools under a policy. ``call`` never raises for a caller's mistake: an
    unknown tool, a denied call, bad arguments and an unknown name are outcomes with a status."""

    def __init__(
        self, name: RegistryName, tools: Iterable[ToolSpec[Any]], policy: ProbePolicy | None = None
    ) -> None:
        self.name = name
        self.policy = policy or ALLOW_ALL
        self._specs = list(tools)
        self._tool_lists: dict[ProbePolicy | None, ToolList] = {}
        self._by_name: dict[str, ToolSpec[Any]] = {}
        for spec in self._specs:
            if spec.registry != name:
                raise ValueError(f"tool {spec.name} belongs to the {spec.registry} registry, not {name}")
            for n in spec.names:
                key = n.casefold()
                if key in self._by_name:
                    raise ValueError(f"two tools of the {name} registry answer to {n!r}")
                self._by_name[key] = spec

    def with_policy(self, policy: ProbePolicy) -> ProbeRegistry:
        return ProbeRegistry(self.name, self._specs, policy)

    # ---------------------------------------------------------------- describing

    def specs(self) -> list[ToolSpec[Any]]:
        return list(self._specs)

    def resolve(self, name: str) -> ToolSpec[Any] | None:
        """The tool called ``name`` (its paper name or a release alias, any case)."""
        return self._by_name.get(name.strip().casefold())

    def _policies(self, policy: ProbePolicy | None) -> list[ProbePolicy]:
        return [self.policy] if policy is None else [self.policy, policy]

    def allowed(self, spec: ToolSpec[Any], policy: ProbePolicy | None = None) -> bool:
        return policy_verdict(spec, self._policies(policy)) is None

    def allowed_specs(self, policy: ProbePolicy | None = None) -> list[ToolSpec[Any]]:
        return [s for s in self._specs if self.allowed(s, policy)]

    def function_schemas(self, policy: ProbePolicy | None = None) -> list[JsonObject]:
        """OpenAI function-calling ``tools`` entries of the allowed tools: a denied tool is not
        offered to a model (and is refused if called anyway)."""
        return [s.function_schema() for s in self.allowed_specs(policy)]

    def tool_list(self, policy: ProbePolicy | None = None) -> ToolList:
        listed = self._tool_lists.get(policy)
        if listed is None:  # the registry and its policy never change: list each policy once
            listed = self._tool_lists[policy] = ToolList(
                registry=self.name,
                specs=[s.data() for s in self._specs],
                allowed=[s.name for s in self.allowed_specs(policy)],
                functions=self.function_schemas(policy),
            )
        return listed

    # ---------------------------------------------------------------- calling

    def prepare(
        self,
        caller: str,
        tool: str,
        args: Mapping[str, Any] | None,
        *,
        asker: str | None = None,
        policy: ProbePolicy | None = None,
    ) -> PreparedCall | ProbeOutcome:
        """Resolve, apply the policy, validate: a ``PreparedCall`` to execute, or the refusal."""
        raw = _jsonable(args)
        spec = self.resolve(tool)
        if spec is None:
            known = ", ".join(f"{s.name} ({'/'.join(s.aliases)})" for s in self._specs)
            error = f"no tool {tool!r} here; tools: {known}"
            return make_outcome(
                self.name, caller, tool, tool, raw, status="unknown_tool", asker=asker, error=error
            )
        reason = policy_verdict(spec, self._policies(policy))
        if reason is not None:
            return make_outcome(
                self.name, caller, spec.name, tool, raw, status="denied", asker=asker, error=reason
            )
        model = _validated(spec, args)
        if isinstance(model, str):
            return make_outcome(
                self.name, caller, spec.name, tool, raw, status="invalid_args", asker=asker, error=model
            )
        return PreparedCall(spec=spec, args=model, caller=caller, requested=tool, asker=asker)

    def execute(self, prepared: PreparedCall, scene: ProbeScene) -> ProbeOutcome:
        spec = prepared.spec
        ctx = perspective(scene, prepared.caller, prepared.asker)
        args = prepared.args.model_dump(mode="json")
        view = scene if spec.private else scene.public()
        status: ProbeStatus = "ok"
        result: JsonObject | None = None
        error: str | None = None
        try:
            result = _jsonable(spec.run(view, ctx, prepared.args))
        except NotFoundError as exc:
            status, error = "not_found", str(exc)
        return make_outcome(
            self.name,
            prepared.caller,
            spec.name,
            prepared.requested,
            args,
            status=status,
            asker=ctx.asker,
            result=result,
            error=error,
            disclosure=spec.disclosure,
        )

    def call(
        self,
        scene: ProbeScene,
        caller: str,
        tool: str,
        args: Mapping[str, Any] | None = None,
        *,
        asker: str | None = None,
        policy: ProbePolicy | None = None,
    ) -> ProbeOutcome:
        """Run one tool on ``scene``. ``policy`` narrows the registry's own for this call."""
        prepared = self.prepare(caller, tool, args, asker=asker, policy=policy)
        if isinstance(prepared, ProbeOutcome):
            return prepared
        return self.execute(prepared, scene)

    def refuse(
        self, prepared: PreparedCall, status: ProbeStatus, error: str, *, asker: str | None = None
    ) -> ProbeOutcome:
        """An outcome for a prepared call that could not run (e.g. the live town did not answer)."""
        return make_outcome(
            self.name,
            prepared.caller,
            prepared.spec.name,
            prepared.requested,
            prepared.args.model_dump(mode="json"),
            status=status,
            asker=asker if asker is not None else prepared.asker,
            error=error,
        )


def _validated(spec: ToolSpec[A], args: Any) -> A | str:
    """The call's arguments as the tool's model, or why they cannot be."""
    if args is not None and not isinstance(args, Mapping):
        return f"arguments for {spec.name} must be an object, not {type(args).__name__}"
    try:
        return spec.args_model.model_validate(dict(args or {}))
    except ValidationError as exc:
        return validation_summary(exc, spec.name, spec.args_model)


def make_outcome(
    registry: RegistryName,
    caller: str,
    tool: str,
    requested: str,
    args: JsonObject,
    *,
    status: ProbeStatus,
    asker: str | None = None,
    result: JsonObject | None = None,
    error: str | None = None,
    disclosure: int = 0,
) -> ProbeOutcome:
    """An outcome and its audit record, for any registry (the town's and the episodes')."""
    audit = AuditRecord(
        caller=caller,
        registry=registry,
        tool=tool,
        requested=requested,
        args=args,
        status=status,
        result_chars=_size(result),
        disclosure=disclosure,
        asker=asker,
        error=error,
    )
    return ProbeOutcome(
        tool=tool,
        requested=requested,
        args=args,
        status=status,
        result=result,
        error=error,
        disclosure=disclosure,
        audit=audit,
    )


def perspective(scene: ProbeScene, caller: str, asker: str | None = None) -> ProbeContext:
    """Whose view a call takes: ``asker`` if given, else the scene's asker, else the caller when
    it names one of the scene's agents."""
    for who, what in ((asker, "asker"), (scene.asker, "the scene's asker")):
        if who:
            try:
                return ProbeContext(caller, find_agent(scene, who))
            except NotFoundError as exc:
                return ProbeContext(caller, None, f"{what}: {exc}")
    if caller:
        try:
            return ProbeContext(caller, find_agent(scene, caller))
        except NotFoundError:
            pass
    return ProbeContext(
        caller,
        None,
        f"this tool takes the asker's point of view, and the caller {caller!r} is not an agent of "
        "this scene: give the asker",
    )
