"""An assistant hosted by another process, attached to a run by address only:
``python -m tests.support.external_assistant URL NAMESPACE ADDRESS``.

It knows nothing of the runner: it answers each ``UserTurn`` at ``reply_to``, writes the request
into the workspace through the registry named in ``tools``, and asks one question in its first
reply. That is all an external agent needs to implement.
"""

from __future__ import annotations

import argparse

from actors.bus import Bus, open_transport
from actors.logging import configure_logging
from actors.runtime import Actor, Context, Host, HostConfig, on
from messages.episodes import AssistantReply, EndSession, ToolRecord, UserTurn
from messages.probes import ProbeCall, ProbeResult


class ExternalAssistant(Actor):
    @on(UserTurn)
    def turn(self, ctx: Context, msg: UserTurn) -> None:
        records: list[ToolRecord] = []
        if msg.tools:
            result = ctx.ask(
                msg.tools,
                ProbeCall(
                    registry="episode",
                    tool="write_file",
                    args={"path": f"external/{msg.task_id}-{msg.turn}.md", "content": msg.text},
                    caller=ctx.address,
                ),
                timeout=30,
            )
            if isinstance(result, ProbeResult):
                records.append(
                    ToolRecord(
                        tool_name=result.tool, call=result.args, result={"response": result.result or {}}
                    )
                )
        text = f"External agent here: noted '{msg.text[:80]}'."
        if msg.turn == 1:
            text += " Is there a deadline I should plan around?"
        ctx.tell(
            msg.reply_to,
            AssistantReply(
                task_id=msg.task_id, turn=msg.turn, text=text, tool_records=tuple(records), backend="external"
            ),
        )

    @on(EndSession)
    def end(self, ctx: Context, msg: EndSession) -> None:
        return None


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("namespace")
    p.add_argument("address")
    args = p.parse_args()
    configure_logging("json", "WARNING")
    bus = Bus(open_transport(args.url), args.namespace)
    host = Host(bus, HostConfig(heartbeat_every=0.2), name="external-assistant")
    host.spawn(ExternalAssistant, args.address)
    host.run_until_signal()
    bus.close()


if __name__ == "__main__":
    main()
