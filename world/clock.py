"""Simulation time: 30-minute ticks over 06:00-23:00, then the next day at 06:00.

A tick number is absolute (0 = day 0, 06:00). Time is arithmetic on tick numbers; nothing here
reads a wall clock.
"""

from __future__ import annotations

from dataclasses import dataclass

MINUTES_PER_TICK = 30
DAY_START_MINUTE = 6 * 60
DAY_END_MINUTE = 23 * 60
TICKS_PER_DAY = (DAY_END_MINUTE - DAY_START_MINUTE) // MINUTES_PER_TICK + 1  # 06:00 .. 23:00 inclusive
MINUTES_PER_DAY = 24 * 60
NIGHT_MOVES = (MINUTES_PER_DAY - (DAY_END_MINUTE - DAY_START_MINUTE)) // MINUTES_PER_TICK - 1
"""Ticks' worth of walking between the day's last tick (23:00) and the next day's first (06:00):
the night is not simulated, but whoever is still on the way gets home."""


@dataclass(frozen=True, slots=True)
class SimTime:
    """A moment of the simulation: which day, and the minute of that day."""

    tick: int
    day: int
    minute: int

    @property
    def hhmm(self) -> str:
        return format_minute(self.minute)

    @property
    def absolute_minutes(self) -> int:
        """Minutes since day 0, 00:00: the real elapsed time between two moments, nights included."""
        return self.day * MINUTES_PER_DAY + self.minute

    @property
    def slot(self) -> int:
        """The tick's index within its day (0 = 06:00)."""
        return self.tick - self.day * TICKS_PER_DAY

    def __str__(self) -> str:
        return f"day {self.day} {self.hhmm}"


def sim_time(tick: int) -> SimTime:
    if tick < 0:
        raise ValueError(f"tick must be >= 0, got {tick}")
    day, slot = divmod(tick, TICKS_PER_DAY)
    return SimTime(tick, day, DAY_START_MINUTE + slot * MINUTES_PER_TICK)


def tick_at(day: int, minute: int) -> int:
    """The tick of ``day`` at ``minute`` (rounded down to a tick; clamped to the day's span)."""
    minute = min(max(minute, DAY_START_MINUTE), DAY_END_MINUTE)
    return day * TICKS_PER_DAY + (minute - DAY_START_MINUTE) // MINUTES_PER_TICK


def parse_minute(text: str) -> int:
    """'07:30' -> 450. Raises ValueError with the offending text."""
    try:
        hh, mm = text.split(":")
        h, m = int(hh), int(mm)
    except ValueError:
        raise ValueError(f"not a HH:MM time: {text!r}") from None
    if not (0 <= h <= 24 and 0 <= m < 60) or h * 60 + m > MINUTES_PER_DAY:
        raise ValueError(f"not a HH:MM time: {text!r}")
    return h * 60 + m


def format_minute(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"
