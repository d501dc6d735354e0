"""Message models used only by tests (registered under ``test.*``)."""

from __future__ import annotations

from pydantic import Field

from messages import Message, message


@message("test.incr", 1)
class Incr(Message):
    n: int = 1
    hold: bool = False
    """If set, the handler announces it started and blocks until released (or killed)."""


@message("test.work", 1)
class Work(Message):
    seq: int
    seconds: float = Field(default=0.0, ge=0.0)


@message("test.done", 1)
class Done(Message):
    seq: int
    by: str = ""


@message("test.flaky", 1)
class Flaky(Message):
    key: str
    fail_times: int = 0
    crash: bool = False
    """Raise a BaseException (SystemExit) instead of an Exception, killing the actor."""


@message("test.total", 1)
class GetTotal(Message):
    pass


@message("test.total_reply", 1)
class Total(Message):
    total: int
    applied: list[str]
