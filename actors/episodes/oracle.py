"""``assistant.<episode>`` played by the oracle: each task's gold path (``metadata.oracle``), turn
by turn, through the episode registry like any assistant. ``world.episodes.assistant.oracle``
holds the rules; this actor persists what the calls saved (access tokens, ids) per session."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import structlog
from pydantic import BaseModel

from actors.episodes.assistant import BusToolPort
from actors.runtime import Context, StatefulActor, on
from messages.episodes import EndSession, UserTurn
from world.episodes.assistant.oracle import OracleTurn, play_turn

log = structlog.get_logger("auratown.episode.oracle")


class OracleState(BaseModel):
    saved: dict[str, dict[str, Any]] = {}
    """By task id: the responses the gold path saved so far."""


class OracleAssistantActor(StatefulActor[OracleState]):
    state_model = OracleState

    def __init__(self, scripts: Mapping[str, Sequence[OracleTurn]], *, timeout: float = 30.0) -> None:
        super().__init__()
        self.scripts = {task: tuple(turns) for task, turns in scripts.items()}
        self.timeout = timeout

    @on(UserTurn)
    def turn(self, ctx: Context, turn: UserTurn) -> None:
        saved = {} if turn.turn == 1 else dict(self.state.saved.get(turn.task_id, {}))
        port = BusToolPort.for_turn(ctx, turn, timeout=self.timeout)
        reply = play_turn(self.scripts.get(turn.task_id, ()), turn, port, saved)
        self.state.saved[turn.task_id] = saved
        refused = [r.tool_name for r in reply.tool_records if r.status != "ok"]
        if refused or reply.error:
            log.warning(
                "oracle off its path", task=turn.task_id, turn=turn.turn, refused=refused, error=reply.error
            )
        ctx.tell(turn.reply_to, reply.model_copy(update={"session": turn.session}), sim_time=turn.sim_time)

    @on(EndSession)
    def end(self, ctx: Context, msg: EndSession) -> None:
        self.state.saved.pop(msg.task_id, None)
