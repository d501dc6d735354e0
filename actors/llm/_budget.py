"""How long and how many requests a piece of model work may take.

Every model request has a deadline (``GatewayConfig.timeout``, enforced by the gateway even when
the provider's client would wait longer); every gateway call (one stage: its retries and its
repair call) has a ``Budget`` of time and requests; and a unit of work (a question, an assistant
turn, an end-of-session reflection) has one more that every stage of it draws from. Out of
budget, a stage gets ``LLMError("budget")`` without sending anything, and its caller falls back.
"""

from __future__ import annotations

import math
import threading
import time


class Budget:
    """Seconds and requests left; thread-safe. ``None`` for either means no limit."""

    def __init__(
        self, seconds: float | None = None, calls: int | None = None, *, parent: Budget | None = None
    ) -> None:
        if seconds is not None and not (math.isfinite(seconds) and seconds > 0):
            raise ValueError(f"a budget's seconds must be positive and finite, got {seconds}")
        if calls is not None and calls < 0:
            raise ValueError(f"a budget's calls must be >= 0, got {calls}")
        self.seconds = seconds
        self.calls = calls
        self.parent = parent
        self._deadline: float | None = None
        """Set when the budget is first used: a unit's clock starts with its first model call."""
        self._spent = 0
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the clock (of this budget and those above it) if it has not started yet."""
        with self._lock:
            if self._deadline is None and self.seconds is not None:
                self._deadline = time.monotonic() + self.seconds
        if self.parent is not None:
            self.parent.start()

    def child(self, seconds: float | None = None, calls: int | None = None) -> Budget:
        """A budget within this one: it ends at its own limits or at this one's, whichever comes first."""
        return Budget(seconds, calls, parent=self)

    def remaining(self) -> float:
        """Seconds left (``inf`` without a deadline anywhere up the chain); never negative."""
        self.start()
        own = math.inf if self._deadline is None else max(0.0, self._deadline - time.monotonic())
        return own if self.parent is None else min(own, self.parent.remaining())

    def calls_left(self) -> float:
        own = math.inf if self.calls is None else self.calls - self._spent
        return own if self.parent is None else min(own, self.parent.calls_left())

    def take_call(self) -> bool:
        """Spend one request on this budget and every one above it; False (nothing spent) when
        one of them has no request or no time left."""
        if self.calls_left() < 1 or self.remaining() <= 0:
            return False
        budget: Budget | None = self
        while budget is not None:
            with budget._lock:
                budget._spent += 1
            budget = budget.parent
        return True

    def describe(self) -> str:
        secs = "no time limit" if self.seconds is None else f"{self.seconds:g}s"
        calls = "no call limit" if self.calls is None else f"{self.calls} calls"
        return f"{secs}, {calls}"
