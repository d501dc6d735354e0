"""The episode's tool registry: every tool by its published name, the policy, calls, audits.

The order of a call is fixed, as in ``world.probes.registry``: resolve the name (prefix-tolerant,
``canonical_tool_name``), check that the episode offers the tool (a persona's ``tools.yaml``
decides which app tools are offered; workspace and assistant tools always are), apply the policy
(a denied call is never validated nor run, only audited), validate the arguments, then run the
tool on a private copy of the state. The new state is returned only when the run succeeded;
otherwise the caller gets back the state it passed (unless the refusal says the call changed the
state anyway, as AppWorld may: ``AppError.state``).

An app tool's result is AppWorld's ``{"response": <json>}``, a refusal ``{"response": {"message":
...}}`` beside the error; a workspace or assistant tool's result is its own JSON object. A call to
a tool that is not offered, or that only AppWorld itself serves, is ``unknown_tool`` and has no
result: nothing ran.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from messages.probes import (
    JsonObject,
    ProbeOutcome,
    ProbePolicy,
    ProbeStatus,
    RegistryName,
    ToolList,
    plain_json,
)
from world.episodes.apps import amazon, gmail, phone, simple_note, splitwise, spotify, todoist
from world.episodes.apps.assistant import ASSISTANT_TOOLS
from world.episodes.apps.base import APP_PREFIX, AppError, EpisodeTool, ToolContext
from world.episodes.apps.state import EnvState, merge_app_state
from world.episodes.apps.workspace import WORKSPACE_TOOLS
from world.probes.registry import ALLOW_ALL, make_outcome, policy_verdict, validation_summary

REGISTRY: RegistryName = "episode"

APP_MODULES = (amazon, gmail, phone, simple_note, splitwise, spotify, todoist)
ALL_TOOLS: tuple[EpisodeTool[Any], ...] = (
    *WORKSPACE_TOOLS,
    *ASSISTANT_TOOLS,
    *(t for module in APP_MODULES for t in module.TOOLS),
)
APPS: tuple[str, ...] = tuple(sorted({t.app for t in ALL_TOOLS if t.app is not None}))
_BY_NAME: dict[str, EpisodeTool[Any]] = {t.name: t for t in ALL_TOOLS}
_PREFIXES = ("mcp_appworld_", "appworld_", "mcp_")


def new_state(
    seed_apps: Mapping[str, Mapping[str, Any]] | None = None, *, start_time: str | None = None
) -> EnvState:
    """A fresh environment: the apps' data from ``seed_apps`` (``seed.seed_apps`` makes it from a
    seed file; ``state`` documents the merge rule), no files, nothing sent."""
    state = EnvState() if start_time is None else EnvState(start_time=start_time)
    return merge_app_state(state, seed_apps) if seed_apps else state


def _canonical(name: str, by_name: Mapping[str, EpisodeTool[Any]]) -> str | None:
    key = name.strip().lower()
    tool = by_name.get(key)
    if tool is not None:
        return tool.name
    for prefix in ("", *_PREFIXES):
        if key.startswith(prefix):
            candidate = f"{APP_PREFIX}{key[len(prefix) :]}"
            if candidate in by_name and "__" in candidate:
                return candidate
    return None


def canonical_tool_name(name: str) -> str | None:
    """The published name of ``name`` among the built-in tools: ``amazon__place_order``,
    ``appworld_amazon__place_order``, ``mcp_amazon__place_order`` and
    ``mcp_appworld_amazon__place_order`` all give the last one; workspace and assistant tools are
    their own name. Case and surrounding blanks are ignored. None when no tool has that name."""
    return _canonical(name, _BY_NAME)


def served(name: str) -> bool:
    """Whether our built-in apps serve the tool ``name`` (any accepted spelling)."""
    return canonical_tool_name(name) is not None


def _offered_names(
    offered: Iterable[str] | None, by_name: Mapping[str, EpisodeTool[Any]]
) -> frozenset[str] | None:
    if offered is None:
        return None
    names = set()
    for name in offered:
        key = name.strip().lower()
        canonical = _canonical(key, by_name)
        names.add(canonical or (f"{APP_PREFIX}{key.removeprefix(APP_PREFIX)}" if "__" in key else key))
    return frozenset(names)


class EpisodeTools:
    """The tools of one episode under a policy. ``call`` never raises for a caller's mistake:
    an unknown tool, a denied call, bad arguments, a missing record and a refused request are
    outcomes with a status, and each carries its ``AuditRecord``.

    ``offered``: the app tools the episode offers (a persona's ``tools.yaml``, any accepted
    spelling); None offers every app tool we serve. Workspace and assistant tools are always
    offered. ``unserved`` are the offered names our apps do not serve (AppWorld's alone).

    ``app_tools``: the apps' tools (None: our built-in apps; ``appworld_tools`` gives AppWorld's own,
    forwarded to its service)."""

    def __init__(
        self,
        policy: ProbePolicy | None = None,
        *,
        offered: Iterable[str] | None = None,
        app_tools: Sequence[EpisodeTool[Any]] | None = None,
    ) -> None:
        self.policy = policy or ALLOW_ALL
        self.builtin = app_tools is None
        self.all_tools: tuple[EpisodeTool[Any], ...] = (
            ALL_TOOLS if app_tools is None else (*WORKSPACE_TOOLS, *ASSISTANT_TOOLS, *app_tools)
        )
        self._by_name = _BY_NAME if app_tools is None else {t.name: t for t in self.all_tools}
        self.apps = APPS if app_tools is None else tuple(sorted({t.app for t in app_tools if t.app}))
        self.offered = _offered_names(offered, self._by_name)
        self._tool_lists: dict[ProbePolicy | None, ToolList] = {}

    def canonical(self, name: str) -> str | None:
        """The published name of ``name`` among this registry's tools (any accepted spelling)."""
        return _canonical(name, self._by_name)

    # ---------------------------------------------------------------- describing

    def names(self) -> frozenset[str]:
        """Every published name of a tool offered here."""
        return frozenset(t.name for t in self.tools())

    def tools(self) -> tuple[EpisodeTool[Any], ...]:
        return tuple(t for t in self.all_tools if self.offers(t))

    def offers(self, tool: EpisodeTool[Any]) -> bool:
        return tool.app is None or self.offered is None or tool.name in self.offered

    @property
    def unserved(self) -> tuple[str, ...]:
        """Offered names that no tool of ours serves, sorted."""
        return tuple(sorted(n for n in self.offered or () if n not in self._by_name))

    def resolve(self, name: str) -> EpisodeTool[Any] | None:
        """The offered tool ``name`` names (any accepted spelling), else None."""
        canonical = self.canonical(name)
        if canonical is None:
            return None
        tool = self._by_name[canonical]
        return tool if self.offers(tool) else None

    def _policies(self, policy: ProbePolicy | None) -> list[ProbePolicy]:
        return [self.policy] if policy is None else [self.policy, policy]

    def allowed(self, tool: EpisodeTool[Any], policy: ProbePolicy | None = None) -> bool:
        return policy_verdict(tool.spec, self._policies(policy)) is None

    def tool_list(self, policy: ProbePolicy | None = None) -> ToolList:
        """Every offered tool's description, the allowed ones, and OpenAI function-calling entries
        of the allowed ones named by their published names (a denied tool is not offered to a
        model)."""
        listed = self._tool_lists.get(policy)
        if listed is None:  # tools and policy never change: list each narrowing policy once
            tools = self.tools()
            allowed = [t for t in tools if self.allowed(t, policy)]
            listed = self._tool_lists[policy] = ToolList(
                registry=REGISTRY,
                specs=[t.spec.data() for t in tools],
                allowed=[t.name for t in allowed],
                functions=[
                    {
                        "type": "function",
                        "function": {
                            "name": t.name,
                            "description": t.description,
                            "parameters": t.spec.parameters(),
                        },
                    }
                    for t in allowed
                ],
            )
        return listed

    # ---------------------------------------------------------------- calling

    def _unknown(self, tool: str) -> str:
        canonical = self.canonical(tool)
        if canonical is not None:
            return f"no tool {tool!r} here: this episode does not offer it"
        key = tool.strip().lower()
        offered_app_names = [n for n in self.offered or () if n.startswith(APP_PREFIX)]
        if self.builtin and any(key == n or key == n.removeprefix(APP_PREFIX) for n in offered_app_names):
            return f"no tool {tool!r} here: AppWorld serves it, the built-in apps do not"

        choices = sorted(t.name for t in self.tools())
        close = difflib.get_close_matches(key, choices, n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; apps: {', '.join(self.apps)}"
        return f"no tool {tool!r} here{hint}"

    def call(
        self,
        state: EnvState,
        caller: str,
        tool: str,
        args: Mapping[str, Any] | None,
        *,
        policy: ProbePolicy | None = None,
    ) -> tuple[ProbeOutcome, EnvState]:
        """Run ``tool`` on ``state``: the outcome, and the new state (``state`` itself unless the
        status is ``ok``). ``policy`` narrows the registry's own for this call."""
        raw: JsonObject
        try:
            raw = plain_json(dict(args)) if isinstance(args, Mapping) else {}  # type: ignore[assignment]
            raw_error = None
        except ValueError as exc:
            raw, raw_error = {}, f"arguments are not plain JSON: {exc}"
        spec = self.resolve(tool)
        if spec is None:
            return make_outcome(
                REGISTRY, caller, tool, tool, raw, status="unknown_tool", error=self._unknown(tool)
            ), state
        reason = policy_verdict(spec.spec, self._policies(policy))
        if reason is not None:
            return make_outcome(REGISTRY, caller, spec.name, tool, raw, status="denied", error=reason), state
        if args is not None and not isinstance(args, Mapping):
            error = f"arguments for {spec.name} must be an object, not {type(args).__name__}"
            return self._refusal(spec, caller, tool, raw, "invalid_args", error), state
        if raw_error is not None:
            return self._refusal(spec, caller, tool, raw, "invalid_args", raw_error), state
        if not spec.validates:
            # The app's own program checks its arguments and answers with its own refusal.
            return self._run(spec, caller, tool, raw, raw, state)
        try:
            model = spec.args_model.model_validate(raw)
        except ValidationError as exc:
            error = validation_summary(exc, spec.name, spec.args_model)
            if spec.app is not None:
                error = f"Validation error. Reason: {error}"
            return self._refusal(spec, caller, tool, raw, "invalid_args", error), state
        return self._run(spec, caller, tool, raw, model, state)

    def _run(  # noqa: PLR0917
        self,
        spec: EpisodeTool[Any],
        caller: str,
        tool: str,
        raw: JsonObject,
        args: Any,
        state: EnvState,
    ) -> tuple[ProbeOutcome, EnvState]:
        ctx = ToolContext(state=state.model_copy(deep=True), caller=caller)
        try:
            value = plain_json(spec.run(ctx, args))
        except AppError as exc:
            outcome = self._refusal(spec, caller, tool, raw, exc.status, str(exc), message=exc.message)
            return outcome, exc.state if exc.state is not None else state
        result: JsonObject = {"response": value} if spec.app is not None else value  # type: ignore[assignment,dict-item]
        return make_outcome(REGISTRY, caller, spec.name, tool, raw, status="ok", result=result), ctx.state

    def _refusal(  # noqa: PLR0917
        self,
        spec: EpisodeTool[Any],
        caller: str,
        requested: str,
        args: JsonObject,
        status: ProbeStatus,
        error: str,
        *,
        message: str | list[str] | None = None,
    ) -> ProbeOutcome:
        # An app answers a refusal with AppWorld's {"message": ...}; other tools with no result.
        result: JsonObject | None = None
        if spec.app is not None:
            result = {"response": {"message": message if message is not None else error}}
        return make_outcome(
            REGISTRY, caller, spec.name, requested, args, status=status, result=result, error=error
        )
