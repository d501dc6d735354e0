"""Fixtures of the host's middleware tests: a bus on the in-memory transport, with a clock to move."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from actors.bus import Bus, MemoryTransport
from tests.support.actors import FlakyActor


class FakeClock:
    """Time that moves only when a test moves it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def transport() -> MemoryTransport:
    return MemoryTransport()


@pytest.fixture
def bus(transport: MemoryTransport) -> Iterator[Bus]:
    FlakyActor.attempts.clear()
    b = Bus(transport, "host")
    yield b
    b.close()
