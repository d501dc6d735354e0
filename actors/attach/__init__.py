"""Attach an agent of your own to a town or an episode run: plain functions at a bus address.

::

    from actors.attach import Agent
    from messages.episodes import AssistantReply, UserTurn

    agent = Agent("redis://127.0.0.1:6379/0", "episodes.demo", "agent.mine")

    @agent.on(UserTurn)
    def turn(msg: UserTurn) -> AssistantReply:
        return AssistantReply(task_id=msg.task_id, turn=msg.turn, text=f"On it: {msg.text}")

    agent.run()

The wire protocol itself (for agents in other languages) is described in docs/protocol.md.
"""

from actors.attach._agent import Agent, Handler, HandlerActor, HandlerSpecError, load_handler
from actors.runtime import Context, PermanentError

__all__ = [
    "Agent",
    "Context",
    "Handler",
    "HandlerActor",
    "HandlerSpecError",
    "PermanentError",
    "load_handler",
]
