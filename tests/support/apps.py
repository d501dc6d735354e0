"""Calling the built-in apps in unit tests: a seeded state and one call at a time."""

from __future__ import annotations

from typing import Any

from messages.probes import ProbeOutcome
from world.episodes.apps import EnvState, EpisodeTools, new_state
from world.episodes.apps.seed import WorldSeed, seed_apps

TOOLS = EpisodeTools()


def seeded(seed: dict[str, Any]) -> EnvState:
    """A fresh state from a seed written as in a persona's ``seed.yaml``."""
    parsed = WorldSeed.model_validate(seed)
    return new_state(seed_apps(parsed), start_time=parsed.start_time)


class AppSession:
    """One state that every call advances (a refused call leaves it as it was)."""

    def __init__(self, seed: dict[str, Any]) -> None:
        self.state = seeded(seed)
        self.outcomes: list[ProbeOutcome] = []

    def call(self, tool: str, **args: Any) -> ProbeOutcome:
        outcome, self.state = TOOLS.call(self.state, "assistant", tool, args)
        self.outcomes.append(outcome)
        return outcome

    def ok(self, tool: str, **args: Any) -> Any:
        """The response of a call that must succeed (AssertionError with the error otherwise)."""
        outcome = self.call(tool, **args)
        assert outcome.status == "ok", f"{tool}: {outcome.status}: {outcome.error}"
        assert outcome.result is not None
        return outcome.result["response"]

    def login(self, app: str, username: str, password: str) -> str:
        token: str = self.ok(f"{app}__login", username=username, password=password)["access_token"]
        return token

    def refused(self, tool: str, status: str, **args: Any) -> str:
        """The message of a call that must be refused with ``status``."""
        outcome = self.call(tool, **args)
        assert outcome.status == status, f"{tool}: expected {status}, got {outcome.status}: {outcome.result}"
        assert outcome.result is not None, outcome
        message = outcome.result["response"]["message"]
        return message if isinstance(message, str) else " ".join(message)
