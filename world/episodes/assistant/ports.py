"""How the assistant reaches the episode's tools: a port, in process or over the bus."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from messages.episodes import ToolRecord
from messages.probes import ProbeOutcome, ToolList
from world.episodes.apps.base import APP_PREFIX


class ToolPort(Protocol):
    """The episode's tool registry as the assistant sees it. ``call`` never raises for a refused
    or failed call: the record's status and ``result["error"]`` say what went wrong."""

    def call(self, tool: str, args: Mapping[str, Any]) -> ToolRecord: ...

    def tools(self) -> ToolList: ...


def record_of(outcome: ProbeOutcome, *, task_id: str = "", seq: int = 0) -> ToolRecord:
    """pi-Bench's record of a call (Appendix C.4): the result an MCP client of AppWorld gets,
    ``{"response": ...}`` (an app's refusal too: ``{"response": {"message": ...}}``); a call
    that gave no result (unknown tool, denied, a workspace tool's refusal) records
    ``{"error": ..., "status": ...}``. The registry's history and the assistant's replies both
    record calls this way; ``ToolRecord.status`` tells a refusal from a success."""
    if (
        outcome.result is not None
        and set(outcome.result) == {"response"}
        and outcome.tool.startswith(APP_PREFIX)
    ):
        result: dict[str, Any] = dict(outcome.result)
    elif outcome.ok:
        result = {"response": outcome.result or {}}
    else:
        result = {"error": outcome.error or outcome.status, "status": outcome.status}
    return ToolRecord(
        tool_name=outcome.tool or outcome.requested,
        call=outcome.args,
        result=result,
        status=outcome.status,
        task_id=task_id,
        seq=seq,
    )


def failed_record(
    tool: str, args: Mapping[str, Any], status: str, error: str, *, task_id: str = ""
) -> ToolRecord:
    """The record of a call that never reached a registry (it timed out, nobody answered)."""
    return ToolRecord(
        tool_name=tool,
        call=dict(args),
        result={"error": error, "status": status},
        status=status,
        task_id=task_id,
    )


def tool_names(tools: ToolList) -> frozenset[str]:
    """The names a caller may use: the allowed canonical names and the published function names."""
    names = set(tools.allowed)
    for entry in tools.functions:
        fn = entry.get("function", entry)
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            names.add(fn["name"])
    return frozenset(names)


def response(record: ToolRecord) -> Any:
    """The ``response`` of a call that ran, else None."""
    return record.result.get("response") if record.status == "ok" else None
