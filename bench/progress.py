"""Progress of a benchmark run on stderr, the one way every ``bench`` command shows it.

On a terminal, a tqdm bar redrawn in place: done / total, rate and ETA, and after them what is
going on inside the unit now (the sign of life of a long unit: the session or query it finished
last). Not on a terminal (a file, a pipe, CI logs): plain lines, never a ``\\r``: one every
``1/lines`` of the total with the same figures, the permanent messages, and at most one sign of
life every ``note_every`` seconds. Quiet: nothing at all.
"""

from __future__ import annotations

import functools
import math
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from tqdm import tqdm

__all__ = ["Progress"]

LINE_FORMAT = "{desc}: {n_fmt}/{total_fmt} ({percentage:.0f}%) [{elapsed}<{remaining}, {rate_fmt}]{postfix}"
"""A plain progress line: what a bar shows, without the bar."""


REDRAW_EVERY = 0.25
"""Seconds between two redraws of the bar (tqdm's own ``mininterval`` for its counts)."""


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


class Progress:
    """``total`` units of work (cells, answers, units), counted as they finish.

    ``start(done=n)`` counts the ``n`` units a resumed run already has (they do not make the rate);
    ``advance()`` counts one more (``ok=False``: a failed one, shown as such); ``note(text)`` says
    what happened inside the running unit; ``say(text)`` writes a line that stays. Safe to call
    from several threads.
    """

    def __init__(
        self,
        total: int,
        *,
        desc: str,
        unit: str,
        quiet: bool = False,
        stream: TextIO | None = None,
        lines: int = 20,
        note_every: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = total
        self.desc = desc
        self.unit = unit
        self.quiet = quiet
        self.stream = sys.stderr if stream is None else stream
        self.terminal = _is_terminal(self.stream)
        self.step = max(1, math.ceil(total / max(1, lines)))
        self.note_every = note_every
        self.clock = clock
        self.done = 0
        self.failed = 0
        self.initial = 0
        self.started: float | None = None
        """When ``start`` was called; a display never started says nothing when closed."""
        self._bar: tqdm[Any] | None = None
        self._last_note = -math.inf
        self._note = ""
        self._closed = False
        self._shown = -1  # the count the last line of figures showed
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ counting

    def start(self, done: int = 0) -> Progress:
        with self._lock:
            self.done = self.initial = done
            self.started = self.clock()
            if self.quiet:
                return self
            if self.terminal:
                # As wide as the terminal is at each redraw.
                bar = functools.partial(tqdm, file=self.stream, dynamic_ncols=True, mininterval=REDRAW_EVERY)
                self._bar = bar(total=self.total, initial=done, desc=self.desc, unit=self.unit)
            else:
                self._line()
        return self

    def advance(self, ok: bool = True) -> None:
        with self._lock:
            self.done += 1
            self.failed += not ok
            if self._bar is not None:
                self._bar.set_postfix_str(self._postfix(), refresh=False)
                self._bar.update(1)
            elif not self.quiet and (self.done % self.step == 0 or self.done == self.total):
                self._line()
            if self.done >= self.total:
                self._close()

    def note(self, text: str) -> None:
        """What the running unit just did; on a terminal it follows the figures, elsewhere it is
        a line now and then (a unit may take minutes: the log shows it is alive)."""
        with self._lock:
            self._note = text
            if self.quiet or self._closed:
                return
            now = self.clock()
            if self._bar is not None:
                self._bar.set_postfix_str(self._postfix(), refresh=False)
                if now - self._last_note >= REDRAW_EVERY:  # a terminal redrawn at each note would lag
                    self._last_note = now
                    self._bar.refresh()
            elif now - self._last_note >= self.note_every:
                self._last_note = now
                self._write(f"{self.desc}: {text}")

    def say(self, text: str) -> None:
        """A message that stays (above the bar on a terminal)."""
        with self._lock:
            if self.quiet:
                return
            if self._bar is not None:
                self._bar.write(text, file=self.stream)
            else:
                self._write(text)

    def close(self) -> None:
        with self._lock:
            self._close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ display

    def _postfix(self) -> str:
        parts = [f"{self.failed} failed"] if self.failed else []
        if self._note:
            parts.append(self._note)
        return "; ".join(parts)

    def line(self) -> str:
        """The plain line of the figures so far."""
        postfix = self._postfix()
        return tqdm.format_meter(
            self.done,
            self.total,
            0.0 if self.started is None else self.clock() - self.started,
            prefix=self.desc,
            unit=self.unit,
            initial=self.initial,
            bar_format=LINE_FORMAT,
            postfix=postfix or None,
        )

    def _line(self) -> None:
        self._shown = self.done
        self._write(self.line())

    def _write(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def _close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.close()
        elif not self.quiet and self.started is not None and self._shown != self.done:
            self._line()  # where an interrupted run stopped
