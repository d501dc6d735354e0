"""The oracle assistant: a task's gold path, written in the task (``metadata.oracle``), played
back turn by turn. It proves that a task, the apps and the grader agree: an oracle that follows a
bundled task's gold path must reach COMP 100 and PROC 100 (``tests``).

A gold path is one entry per turn::

    metadata:
      oracle:
        - calls:
            - tool: mcp_appworld_amazon__login
              args: {username: alex@example.com, password: pw}
              save: amazon                       # keep the response as "amazon"
            - tool: mcp_appworld_amazon__place_order
              args: {access_token: "{amazon.access_token}", payment_card_id: 1, address_id: 1}
          reply: "Ordered ..."

An argument that is exactly ``{name.path}`` becomes the saved value there (any JSON type); inside
a longer text, the value is written in. A turn past the last entry replays the last entry's reply
without calls. A call that is refused is the oracle's mistake: it is kept in the reply's records
(``status``), and the tests look for it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from messages.episodes import AssistantReply, ToolRecord, UserTurn
from world.episodes.assistant.ports import ToolPort

_WHOLE = re.compile(r"^\{([A-Za-z_][\w]*(?:\.[\w]+)*)\}$")
_PART = re.compile(r"\{([A-Za-z_][\w]*(?:\.[\w]+)+)\}")


class OracleCall(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    tool: str = Field(min_length=1)
    args: dict[str, Any] = {}
    save: str | None = Field(default=None, pattern=r"^[A-Za-z_]\w*$")


class OracleTurn(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    calls: tuple[OracleCall, ...] = ()
    reply: str = Field(min_length=1)


class OracleError(ValueError):
    """A gold path that refers to a value nothing saved."""


def _lookup(saved: Mapping[str, Any], path: str) -> Any:
    head, *rest = path.split(".")
    if head not in saved:
        raise OracleError(f"{{{path}}}: nothing was saved as {head!r}")
    value = saved[head]
    for part in rest:
        if isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, Mapping) and part in value:
            value = value[part]
        else:
            raise OracleError(f"{{{path}}}: the saved {head!r} has no {part!r}")
    return value


def fill(value: Any, saved: Mapping[str, Any]) -> Any:
    """``value`` with every ``{name.path}`` replaced by the saved value (module docstring)."""
    if isinstance(value, str):
        whole = _WHOLE.match(value)
        if whole:
            return _lookup(saved, whole.group(1))

        def text(match: re.Match[str]) -> str:
            found = _lookup(saved, match.group(1))
            return found if isinstance(found, str) else json.dumps(found)

        return _PART.sub(text, value)
    if isinstance(value, list):
        return [fill(v, saved) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, saved) for k, v in value.items()}
    return value


def _response(record: ToolRecord) -> Any:
    return record.result.get("response", record.result)


def play_turn(
    script: Sequence[OracleTurn], turn: UserTurn, port: ToolPort, saved: dict[str, Any]
) -> AssistantReply:
    """Turn ``turn.turn`` of the gold path: its calls through ``port`` (saving what they name into
    ``saved``), then its reply."""
    if not script:
        return AssistantReply(
            task_id=turn.task_id,
            turn=turn.turn,
            text="This task has no gold path.",
            backend="oracle",
            error="no metadata.oracle for this task",
        )
    step = script[min(turn.turn, len(script)) - 1]
    records: list[ToolRecord] = []
    error: str | None = None
    if turn.turn <= len(script):
        for call in step.calls:
            try:
                args = fill(call.args, saved)
            except OracleError as exc:
                error = str(exc)
                break
            record = port.call(call.tool, args)
            records.append(record)
            if call.save is not None:
                saved[call.save] = _response(record)
    try:
        text = fill(step.reply, saved)
    except OracleError as exc:
        text, error = step.reply, error or str(exc)
    return AssistantReply(
        task_id=turn.task_id,
        turn=turn.turn,
        text=str(text),
        tool_records=tuple(records),
        backend="oracle",
        error=error,
    )


__all__ = ["OracleCall", "OracleError", "OracleTurn", "fill", "play_turn"]
