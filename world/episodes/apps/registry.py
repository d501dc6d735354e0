"""The episode's tool registry: every tool by its published name, the policy, calls, audits.

The order of a call is fixed, as in ``world.probes.registry``: resolve the name (prefix-tolerant,
``canonical_tool_name``), apply the policy (a denied call is never validated nor run, only
audited), validate the arguments, then run the tool on a private copy of the state. The new state
is returned only when the run succeeded; otherwise the caller gets back the state it passed.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Mapping
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
from world.episodes.apps.base import (
    APP_PREFIX,
    EpisodeTool,
    ToolContext,
    ToolFailed,
    ToolInvalid,
    ToolNotFound,
)
from world.episodes.apps.state import EnvState, merge_app_state
from world.episodes.apps.workspace import FILE_SYSTEM_TOOLS, WORKSPACE_TOOLS
from world.probes.registry import ALLOW_ALL, make_outcome, policy_verdict, validation_summary

REGISTRY: RegistryName = "episode"

APP_MODULES = (amazon, gmail, phone, simple_note, splitwise, spotify, todoist)
ALL_TOOLS: tuple[EpisodeTool[Any], ...] = (
    *WORKSPACE_TOOLS,
    *ASSISTANT_TOOLS,
    *(t for module in APP_MODULES for t in module.TOOLS),
    *FILE_SYSTEM_TOOLS,
)
APPS: tuple[str, ...] = tuple(sorted({t.app for t in ALL_TOOLS if t.app is not None}))
_BY_NAME: dict[str, EpisodeTool[Any]] = {t.name: t for t in ALL_TOOLS}
_PREFIXES = ("mcp_appworld_", "appworld_", "mcp_")


def default_apps() -> dict[str, dict[str, Any]]:
    """The hand-written seed data of every app (a fresh copy)."""
    apps: dict[str, dict[str, Any]] = {m.APP: copy.deepcopy(m.SEED) for m in APP_MODULES}
    apps["file_system"] = {}  # its data is the workspace itself
    return apps


def new_state(seed_apps: Mapping[str, Mapping[str, Any]] | None = None) -> EnvState:
    """A fresh environment: the default seed data of every app with ``seed_apps`` merged over it
    (``world.episodes.apps.state`` documents the merge rule), no files, nothing sent."""
    state = EnvState(apps=default_apps())
    return merge_app_state(state, seed_apps) if seed_apps else state


def canonical_tool_name(name: str) -> str | None:
    """The published name of ``name``: ``amazon__place_order``, ``appworld_amazon__place_order``,
    ``mcp_amazon__place_order`` and ``mcp_appworld_amazon__place_order`` all give the last one;
    workspace and assistant tools are their own name. Case and surrounding blanks are ignored.
    None when no tool has that name."""
    key = name.strip().lower()
    tool = _BY_NAME.get(key)
    if tool is not None:
        return tool.name
    for prefix in ("", *_PREFIXES):
        if key.startswith(prefix):
            candidate = f"{APP_PREFIX}{key[len(prefix) :]}"
            if candidate in _BY_NAME and "__" in candidate:
                return candidate
    return None


class EpisodeTools:
    """The tools of one episode under a policy. ``call`` never raises for a caller's mistake:
    an unknown tool, a denied call, bad arguments, a missing record and a refused request are
    outcomes with a status, and each carries its ``AuditRecord``."""

    def __init__(self, policy: ProbePolicy | None = None) -> None:
        self.policy = policy or ALLOW_ALL
        self._tool_lists: dict[ProbePolicy | None, ToolList] = {}

    # ---------------------------------------------------------------- describing

    def names(self) -> frozenset[str]:
        """Every published tool name."""
        return frozenset(_BY_NAME)

    def tools(self) -> tuple[EpisodeTool[Any], ...]:
        return ALL_TOOLS

    def resolve(self, name: str) -> EpisodeTool[Any] | None:
        canonical = canonical_tool_name(name)
        return None if canonical is None else _BY_NAME[canonical]

    def _policies(self, policy: ProbePolicy | None) -> list[ProbePolicy]:
        return [self.policy] if policy is None else [self.policy, policy]

    def allowed(self, tool: EpisodeTool[Any], policy: ProbePolicy | None = None) -> bool:
        return policy_verdict(tool.spec, self._policies(policy)) is None

    def tool_list(self, policy: ProbePolicy | None = None) -> ToolList:
        """Every tool's description, the allowed ones, and OpenAI function-calling entries of the
        allowed ones named by their published names (a denied tool is not offered to a model)."""
        listed = self._tool_lists.get(policy)
        if listed is None:  # tools and policy never change: list each narrowing policy once
            allowed = [t for t in ALL_TOOLS if self.allowed(t, policy)]
            listed = self._tool_lists[policy] = ToolList(
                registry=REGISTRY,
                specs=[t.spec.data() for t in ALL_TOOLS],
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
            close = difflib.get_close_matches(tool.strip().lower(), sorted(_BY_NAME), n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(close)}?" if close else f"; apps: {', '.join(APPS)}"
            error = f"no tool {tool!r} here{hint}"
            return self._outcome(caller, tool, tool, raw, "unknown_tool", error=error), state
        reason = policy_verdict(spec.spec, self._policies(policy))
        if reason is not None:
            return self._outcome(caller, spec.name, tool, raw, "denied", error=reason), state
        if args is not None and not isinstance(args, Mapping):
            error = f"arguments for {spec.name} must be an object, not {type(args).__name__}"
            return self._outcome(caller, spec.name, tool, raw, "invalid_args", error=error), state
        if raw_error is not None:
            return self._outcome(caller, spec.name, tool, raw, "invalid_args", error=raw_error), state
        try:
            model = spec.args_model.model_validate(raw)
        except ValidationError as exc:
            error = validation_summary(exc, spec.name, spec.args_model)
            return self._outcome(caller, spec.name, tool, raw, "invalid_args", error=error), state
        # The call payload as the caller gave it, normalised (paths, address lists).
        call_args: JsonObject = model.model_dump(mode="json", exclude_unset=True)
        ctx = ToolContext(state=state.model_copy(deep=True), caller=caller)
        status: ProbeStatus
        try:
            result: JsonObject = plain_json(spec.run(ctx, model))  # type: ignore[assignment]
        except ToolNotFound as exc:
            status, error = "not_found", str(exc)
        except ToolFailed as exc:
            status, error = "failed", str(exc)
        except ToolInvalid as exc:
            status, error = "invalid_args", str(exc)
        else:
            return self._outcome(caller, spec.name, tool, call_args, "ok", result=result), ctx.state
        return self._outcome(caller, spec.name, tool, call_args, status, error=error), state

    def _outcome(
        self,
        caller: str,
        tool: str,
        requested: str,
        args: JsonObject,
        status: ProbeStatus,
        *,
        result: JsonObject | None = None,
        error: str | None = None,
    ) -> ProbeOutcome:
        return make_outcome(
            REGISTRY, caller, tool, requested, args, status=status, result=result, error=error
        )
