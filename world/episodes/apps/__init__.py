"""The simulated tool environment of one pi-Bench episode: pure and stateful by value.

``EnvState`` holds the workspace files, the apps' JSON data, and what the assistant sent, asked
and scheduled. ``EpisodeTools.call(state, caller, tool, args)`` returns a ``ProbeOutcome`` (the
tool's JSON response in ``result``, an ``AuditRecord`` of registry ``episode``) and the new state.

Published tool names:

- workspace: ``read_file``, ``write_file``, ``edit_file``, ``list_dir``, ``glob``,
  ``grep``;
- assistant: ``ask_user``, ``send_message``, ``schedule_task``;
- apps, AppWorld's tools under ``mcp_appworld_<app>__<api>`` (also ``<app>__<api>``):
  ``amazon``, ``gmail``, ``phone``, ``simple_note``, ``splitwise``, ``spotify``, ``todoist``.
  ``base`` gives AppWorld's conventions (login and access tokens, refusals, search and pages);
  each app module's docstring lists its records' fields and its tools; ``seed`` the seed format.

App data, ids, the merge rule and the diff/lookup path scheme: see ``state``. Statuses:
``ok``, ``denied`` (policy), ``unknown_tool`` (not offered, or served by AppWorld alone),
``invalid_args``, ``unauthorized`` (no valid access token), ``not_found`` (a record or file the
call names), ``failed`` (the tool refused: an empty cart, an ambiguous edit).
"""

from __future__ import annotations

from world.episodes.apps.base import (
    AppError,
    EpisodeTool,
    ToolContext,
    ToolFailed,
    ToolInvalid,
    ToolNotFound,
    Unauthorized,
)
from world.episodes.apps.registry import (
    ALL_TOOLS,
    APPS,
    EpisodeTools,
    canonical_tool_name,
    new_state,
)
from world.episodes.apps.state import (
    RECORD_KEYS,
    EnvState,
    lookup_path,
    merge_app_state,
    record_key,
    state_diff,
    state_value,
)
from world.episodes.apps.workspace import normalise_path

__all__ = [
    "ALL_TOOLS",
    "APPS",
    "RECORD_KEYS",
    "AppError",
    "EnvState",
    "EpisodeTool",
    "EpisodeTools",
    "ToolContext",
    "ToolFailed",
    "ToolInvalid",
    "ToolNotFound",
    "Unauthorized",
    "canonical_tool_name",
    "lookup_path",
    "merge_app_state",
    "new_state",
    "normalise_path",
    "record_key",
    "state_diff",
    "state_value",
]
