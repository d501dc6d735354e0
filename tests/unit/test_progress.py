"""bench.progress: a bar with rate and ETA on a terminal, plain lines elsewhere, nothing when quiet."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import select
import struct
import termios
import tty

from bench.progress import Progress

FIGURES = re.compile(r"\[\d\d:\d\d<(\d\d:\d\d|\?), +([\d.]+cell/s|[\d.]+s/cell|\?cell/s)")
"""tqdm's elapsed<remaining (the ETA) and rate."""


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_not_a_terminal_plain_lines_with_rate_and_eta() -> None:
    out, clock = io.StringIO(), Clock()
    progress = Progress(100, desc="implicit-v2", unit="cell", stream=out, lines=10, clock=clock)
    progress.start(done=20)  # resumed: 20 done before, they make no rate
    for n in range(80):
        clock.now += 0.5
        progress.advance(ok=n != 7)
    text = out.getvalue()
    assert "\r" not in text and text.endswith("\n")
    lines = text.splitlines()
    assert lines[0] == "implicit-v2: 20/100 (20%) [00:00<?, ?cell/s]"
    # One line every tenth of the total, with done/total, ETA and rate (0.5 s a cell: 2 cells/s).
    assert lines[1] == "implicit-v2: 30/100 (30%) [00:05<00:35,  2.00cell/s], 1 failed"
    assert lines[-1] == "implicit-v2: 100/100 (100%) [00:40<00:00,  2.00cell/s], 1 failed"
    assert len(lines) == 9


def test_signs_of_life_inside_a_unit_are_lines_now_and_then() -> None:
    out, clock = io.StringIO(), Clock()
    progress = Progress(3, desc="episodes", unit="unit", stream=out, lines=1, note_every=10.0, clock=clock)
    progress.start()
    for n in range(6):  # a long unit: a session every 4 s
        clock.now += 4.0
        progress.note(f"alice/builtin/1: session s{n} done")
    progress.say("unit alice/builtin/1 FAILED: boom")
    lines = out.getvalue().splitlines()
    assert lines == [
        "episodes: 0/3 (0%) [00:00<?, ?unit/s]",
        "episodes: alice/builtin/1: session s0 done",
        "episodes: alice/builtin/1: session s3 done",  # 12 s later: at most one every 10 s
        "unit alice/builtin/1 FAILED: boom",
    ]
    progress.advance()  # 1/3: not a line of its own (one every 3 units) ...
    progress.close()  # ... but where the run stopped is
    assert out.getvalue().splitlines()[4:] == [
        "episodes: 1/3 (33%) [00:24<00:48, 24.00s/unit], alice/builtin/1: session s5 done"
    ]


def test_closed_before_it_started_it_says_nothing() -> None:
    out = io.StringIO()  # e.g. a run that failed before its first unit went out
    Progress(3, desc="episodes", unit="unit", stream=out).close()
    assert out.getvalue() == ""


def test_quiet_writes_nothing() -> None:
    out = io.StringIO()
    with Progress(5, desc="x", unit="cell", stream=out, quiet=True) as progress:
        progress.start()
        for _ in range(5):
            progress.note("busy")
            progress.advance()
        progress.say("a message")
    assert out.getvalue() == ""


def _read_all(fd: int) -> bytes:
    data = b""
    while select.select([fd], [], [], 0)[0]:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the terminal's other end is closed and everything was read
            break
        if not chunk:
            break
        data += chunk
    return data


def test_a_terminal_gets_a_bar_redrawn_in_place_with_rate_and_eta() -> None:
    master, slave = pty.openpty()
    tty.setraw(slave)  # no output translation: the "\r" read are the ones written
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 160, 0, 0))  # 160 columns
    try:
        with os.fdopen(slave, "w", closefd=True) as terminal:
            progress = Progress(50, desc="implicit-v2", unit="cell", stream=terminal).start(done=10)
            assert progress.terminal
            for n in range(40):
                progress.note(f"query {n}")
                progress.advance()
            terminal.flush()
        text = _read_all(master).decode()
    finally:
        os.close(master)
    assert "\r" in text  # redrawn in place
    assert text.endswith("\n") and text.count("\n") == 1  # one line, drawn over and over
    final = text.rstrip("\n").split("\r")[-1]
    assert final.startswith("implicit-v2: 100%|") and "50/50" in final
    assert FIGURES.search(final), final
    assert "query 39" in final  # the sign of life follows the figures
