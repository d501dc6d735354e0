"""The episode registry's tools as MCP tools, and its answers as MCP tool results (no I/O).

Names: an app tool ``mcp_appworld_<app>__<api>`` is served as ``<app>__<api>``, so an MCP client
that names this server ``appworld`` shows it as ``mcp_appworld_<app>__<api>``, the name
pi-Bench's assistants see; workspace and assistant tools keep their own names.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from messages.probes import ProbeResult, ToolList
from world.episodes.apps.base import APP_PREFIX


def served_name(published: str) -> str:
    """The MCP name of a registry tool: ``mcp_appworld_amazon__login`` -> ``amazon__login``."""
    rest = published.removeprefix(APP_PREFIX)
    return rest if rest != published and "__" in rest else published


def _input_schema(parameters: object) -> dict[str, Any]:
    schema = dict(parameters) if isinstance(parameters, Mapping) else {}
    # MCP requires an object schema at the root; a tool without parameters takes an empty object.
    schema.setdefault("type", "object")
    return schema


@dataclass(frozen=True)
class ServedTools:
    """One registry's tools as MCP serves them, and the registry name behind each MCP name."""

    tools: tuple[types.Tool, ...] = ()
    published: Mapping[str, str] = field(default_factory=dict)
    """MCP name -> the registry's published name (``amazon__login`` -> ``mcp_appworld_amazon__login``)."""

    def schema(self, name: str) -> dict[str, Any] | None:
        for tool in self.tools:
            if tool.name == name:
                return tool.input_schema
        return None

    def registry_name(self, name: str) -> str:
        """What to ask the registry for: the published name, or ``name`` itself when this listing
        does not have it (the registry then answers ``unknown_tool``, and audits the attempt)."""
        return self.published.get(name, name)


def served_tools(listing: ToolList) -> ServedTools:
    """The tools a registry's ``ToolList`` offers and allows (its function-calling entries)."""
    tools: list[types.Tool] = []
    published: dict[str, str] = {}
    for entry in listing.functions:
        fn = entry.get("function", entry)
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            continue
        name = served_name(fn["name"])
        if name in published:
            continue
        published[name] = fn["name"]
        description = fn.get("description")
        tools.append(
            types.Tool(
                name=name,
                description=description if isinstance(description, str) else None,
                input_schema=_input_schema(fn.get("parameters")),
            )
        )
    return ServedTools(tuple(tools), published)


def json_result(value: Mapping[str, Any]) -> types.CallToolResult:
    """A successful tool result: the JSON object as structured content and as text."""
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(value, ensure_ascii=False))],
        structured_content=dict(value),
    )


def tool_error(status: str, error: str, body: Mapping[str, Any] | None = None) -> types.CallToolResult:
    """A tool error (``isError``): ``status: error``, then the response body when there is one."""
    text = f"{status}: {error}"
    structured: dict[str, Any] = {"status": status, "error": error}
    if body:
        text += "\n" + json.dumps(body, ensure_ascii=False)
        structured.update(body)
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=structured, is_error=True
    )


def call_result(result: ProbeResult) -> types.CallToolResult:
    """The registry's answer to a call: its result when ``ok``, else a tool error with the status."""
    if result.ok:
        return json_result(result.result or {})
    return tool_error(result.status, result.error or result.status, result.result)
