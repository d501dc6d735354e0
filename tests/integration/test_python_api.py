"""The Python API's front: a typed ask on the bus, the embedded town whose ``step`` waits, and a
library that prints nothing of its own while a program uses it."""

from __future__ import annotations

import textwrap

import pytest

from actors.bus import Bus, UnexpectedReplyError
from actors.roles import EchoActor
from actors.runtime import Host, HostConfig
from actors.town import EmbeddedTown, TownRequestError, embedded_town
from messages import Ping, Pong
from messages.town import ClockStatus, InjectEvent
from tests.support.programs import run_python
from world import Town


def test_an_ask_with_expect_returns_that_type_and_any_other_reply_is_a_typed_error(bus: Bus) -> None:
    with Host(bus, HostConfig(block_ms=50)) as host:
        host.spawn(EchoActor, "echo")
        pong: Pong = bus.ask("echo", Ping(seq=3, body="typed"), expect=Pong, timeout=10)
        assert (pong.seq, pong.body) == (3, "typed")
        with pytest.raises(UnexpectedReplyError) as caught:
            bus.ask("echo", Ping(seq=4), expect=ClockStatus, timeout=10)
    error = caught.value
    assert (error.recipient, error.expected, error.received) == ("echo", "clock.status", "sys.pong")
    assert isinstance(error.reply, Pong) and error.reply.seq == 4
    assert str(error) == "'echo' answered sys.pong, expected clock.status"


def test_the_embedded_town_steps_to_the_pure_towns_state_and_answers_questions() -> None:
    reference = [r.digest for r in Town(embedded_town(), seed=42).step(5)]
    with EmbeddedTown(seed=42, reader="cues") as town:
        status = town.step(5)  # returns once tick 4 ran: nothing to wait for afterwards
        assert (status.completed, status.next_tick) == (4, 5)
        view = town.state()
        assert (view.tick, view.time, view.digest) == (5, "08:00", reference[-1])
        answer = town.ask("Where is Zhang Hao?", asker="Lin Wei")
        assert answer.asker == "Lin Wei" and "Zhang Hao's Home" in answer.text
        with pytest.raises(TownRequestError, match="no agent named 'Nobody'"):
            town.ask("Where is Zhang Hao?", asker="Nobody")
        accepted = town.inject(InjectEvent(kind="argument", description="a quarrel", location="Sunrise Cafe"))
        town.step()
        assert accepted.event in town.state(events=5).events
    assert town.bus.closed
    town.close()  # a second close does nothing


def test_a_program_using_the_library_prints_only_its_own_output() -> None:
    """No library log line reaches stdout or stderr unless the application configures logging."""
    program = textwrap.dedent(
        """
        import actors, bench, world
        from actors.town import EmbeddedTown

        with EmbeddedTown(seed=42, reader="cues") as town:
            town.step(3)
            town.ask("Where is Zhang Hao?", asker="Lin Wei")
            print(town.state().time)
        """
    )
    done = run_python(program)
    assert (done.returncode, done.stdout, done.stderr) == (0, "07:00\n", "")
