"""The assistant's own tools: ask the user, send a message, schedule a task on the virtual clock.

- ``ask_user(question)`` -> ``{recorded: true, question}``; appends ``{question, task_id, at,
  asker}`` to ``EnvState.questions``. The assistant ends its turn after asking: the user answers
  in the next message.
- ``send_message(to, text)`` -> ``{message_index, to}``; appends ``{to, text, sender, task_id,
  at}`` to ``EnvState.outbox`` (``sender`` is the caller).
- ``schedule_task(text, at_minutes | in_minutes)`` -> ``{id, at}``; appends ``{id, at, text,
  status: "pending", task_id, created_at}`` to ``EnvState.scheduled``. Exactly one of
  ``at_minutes`` (virtual minutes since the episode began) and ``in_minutes`` (from now) is given;
  a time before now fails. ``id`` is 1 + the highest id so far.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from messages.probes import JsonObject
from world.episodes.apps.base import Args, EpisodeTool, ToolContext, ToolFailed

MAX_MINUTES = 10_000_000.0


class AskArgs(Args):
    question: str = Field(min_length=1, description="One targeted question for the user.")


class SendArgs(Args):
    to: str = Field(min_length=1, description="Who the message is for (a name, an address, a channel).")
    text: str = Field(min_length=1)


class ScheduleArgs(Args):
    text: str = Field(min_length=1, description="What to do when the time comes.")
    at_minutes: float | None = Field(
        default=None, ge=0, le=MAX_MINUTES, description="Virtual minutes since the episode began."
    )
    in_minutes: float | None = Field(default=None, ge=0, le=MAX_MINUTES, description="Minutes from now.")

    @model_validator(mode="after")
    def _one_time(self) -> ScheduleArgs:
        if (self.at_minutes is None) == (self.in_minutes is None):
            raise ValueError("give exactly one of at_minutes and in_minutes")
        return self


def ask_user(ctx: ToolContext, args: AskArgs) -> JsonObject:
    ctx.state.questions.append(
        {"question": args.question, "task_id": ctx.state.task_id, "at": ctx.now, "asker": ctx.caller}
    )
    return {"recorded": True, "question": args.question, "note": "end your turn: the user answers next"}


def send_message(ctx: ToolContext, args: SendArgs) -> JsonObject:
    ctx.state.outbox.append(
        {"to": args.to, "text": args.text, "sender": ctx.caller, "task_id": ctx.state.task_id, "at": ctx.now}
    )
    return {"message_index": len(ctx.state.outbox) - 1, "to": args.to}


def schedule_task(ctx: ToolContext, args: ScheduleArgs) -> JsonObject:
    at = args.at_minutes if args.at_minutes is not None else ctx.now + (args.in_minutes or 0.0)
    if at < ctx.now:
        raise ToolFailed(f"at_minutes {at:g} is in the past (now is {ctx.now:g})")
    ids = [s["id"] for s in ctx.state.scheduled if isinstance(s.get("id"), int)]
    new_id = max(ids, default=0) + 1
    ctx.state.scheduled.append(
        {
            "id": new_id,
            "at": at,
            "text": args.text,
            "status": "pending",
            "task_id": ctx.state.task_id,
            "created_at": ctx.now,
        }
    )
    return {"id": new_id, "at": at, "text": args.text}


ASSISTANT_TOOLS: tuple[EpisodeTool[Any], ...] = (
    EpisodeTool(
        "ask_user", "Ask the user one targeted question; end your turn after asking.", AskArgs, ask_user
    ),
    EpisodeTool("send_message", "Send a message to someone on the user's behalf.", SendArgs, send_message),
    EpisodeTool(
        "schedule_task",
        "Schedule a task at a virtual time (at_minutes since the episode began, or in_minutes from now).",
        ScheduleArgs,
        schedule_task,
    ),
)
