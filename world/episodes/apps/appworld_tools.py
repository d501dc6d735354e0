"""AppWorld's own apps as episode tools: one tool per API of its docs, run by forwarding the call.

The registry stays the same on both backends (policy, audit, history, snapshots, diffs); only
the app tools differ. Here each is built from AppWorld's API docs, read from its service at run
time: named ``mcp_appworld_<app>__<api>``, listed with AppWorld's own argument schema, and run by
a ``Forward`` the caller supplies (the actors layer, which owns the AppWorld process). AppWorld
checks the arguments itself, so the registry passes them on as they came.

AppWorld's HTTP answer becomes the registry's outcome as the built-in apps' refusals do: 2xx is
``ok`` with ``{"response": ...}``; 401 ``unauthorized``; 404 and a 409 "does not exist"
``not_found``; 422 "Validation error" ``invalid_args``; any other refusal ``failed``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from world.episodes.apps.appworld_api import AppWorldApi
from world.episodes.apps.base import (
    APP_PREFIX,
    AppError,
    Conflict,
    EpisodeTool,
    ToolContext,
    ToolFailed,
    ToolInvalid,
    ToolNotFound,
    Unauthorized,
)
from world.episodes.apps.state import EnvState

HIDDEN_APPS = frozenset({"admin"})
"""AppWorld's administrative app: never a tool."""


class Forward(Protocol):
    """Runs one AppWorld API on the world ``state`` holds (the caller keeps AppWorld in step with
    it): AppWorld's HTTP status, its JSON, and the world's apps after the call when it changed them
    (None: unchanged). Raises when AppWorld cannot be reached."""

    def __call__(
        self, state: EnvState, app: str, api: str, args: dict[str, Any]
    ) -> tuple[int, Any, dict[str, Any] | None]: ...


class ForwardedArgs(BaseModel):
    """Placeholder argument model of a forwarded tool (AppWorld checks the arguments)."""

    model_config = ConfigDict(extra="allow", frozen=True)


def refusal(status_code: int, response: Any) -> AppError:
    """The registry's refusal for AppWorld's non-2xx answer, with AppWorld's message."""
    message = response.get("message") if isinstance(response, dict) else None
    text: str | list[str] = message if isinstance(message, str | list) else f"AppWorld answered {status_code}"
    flat = text if isinstance(text, str) else " ".join(map(str, text))
    if status_code == 401:
        return Unauthorized(text)
    if status_code == 404 or (status_code == 409 and "does not exist" in flat):
        return ToolNotFound(text)
    if status_code == 409:
        return Conflict(text)
    if status_code == 422 and flat.lower().startswith("validation error"):
        return ToolInvalid(text)
    return ToolFailed(text)


def _runner(app: str, api: str, forward: Forward) -> Any:
    def run(ctx: ToolContext, args: dict[str, Any]) -> Any:
        status, response, apps = forward(ctx.state, app, api, dict(args))
        if apps is not None:
            ctx.state.apps = apps
        if not 200 <= status < 300:
            error = refusal(status, response)
            # AppWorld may write before it refuses (a card charged, then its notifier fails).
            error.state = ctx.state if apps is not None else None
            raise error
        return response

    return run


def appworld_tools(apis: Iterable[AppWorldApi], forward: Forward) -> tuple[EpisodeTool[Any], ...]:
    """One episode tool per AppWorld API (its administrative app left out)."""
    tools: list[EpisodeTool[Any]] = []
    for api in apis:
        if api.app_name in HIDDEN_APPS:
            continue
        tools.append(
            EpisodeTool(
                name=f"{APP_PREFIX}{api.app_name}__{api.api_name}",
                description=api.description,
                args_model=ForwardedArgs,
                run=_runner(api.app_name, api.api_name, forward),
                app=api.app_name,
                schema=api.input_schema(),
            )
        )
    return tuple(tools)
