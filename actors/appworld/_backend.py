"""AppWorld as the episodes' app backend: its tools, and one world per registry kept in step.

One AppWorld process serves every episode registry of a host process. Each registry's state
keeps the authoritative copy of its world (``EnvState.apps``, AppWorld's tables as dumped after
every call that changed them), so snapshots, diffs and a registry's own restart work as on the
built-in apps. Before a call, the world AppWorld holds is the calling registry's at its latest
revision; when it is not (another unit's world, a snapshot put back, a restarted process), it is
loaded first. In the shared-world mode (pi-Bench's own way: one world, never reset) nothing is
ever loaded back: every unit works on the one world.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from typing import Any

from actors.appworld._errors import AppWorldUnavailable
from actors.appworld._service import AppWorldService
from world.episodes.apps import EnvState
from world.episodes.apps.appworld_api import AppWorldApi, parse_api_docs
from world.episodes.apps.appworld_tools import appworld_tools
from world.episodes.apps.base import EpisodeTool
from world.episodes.apps.seed import TIME_FORMAT, WorldSeed

Holder = tuple[str, int]


def world_time(state: EnvState) -> str:
    """The wall time of ``state``'s virtual clock, as AppWorld's clock is set."""
    start = datetime.strptime(state.start_time, TIME_FORMAT)
    return (start + timedelta(minutes=state.clock)).strftime(TIME_FORMAT)


class AppWorldApps:
    """AppWorld's tools over one service process, shared by the registries of a host."""

    name = "appworld"

    def __init__(self, service: AppWorldService, *, shared_world: bool = False) -> None:
        self.service = service
        self.shared_world = shared_world
        self.apis: tuple[AppWorldApi, ...] = parse_api_docs(service.api_docs())
        self.tools: tuple[EpisodeTool[Any], ...] = appworld_tools(self.apis, self._forward)
        self._holder: Holder | None = None
        self._clock: str | None = None
        self._seeded_shared = False
        self._changed = False
        self.lock = threading.RLock()
        """Held by a registry from the sync to the end of its call: one world at a time."""

    # ---------------------------------------------------------------- the world a registry holds

    def default_offered(self) -> tuple[str, ...]:
        """The tools offered when a persona's tools.yaml names none: every app's but the
        supervisor's (it shows the user's passwords) and the API docs'."""
        return tuple(t.name for t in self.tools if t.app not in ("supervisor", "api_docs"))

    def sync(self, holder: Holder, env: EnvState) -> None:
        """Make AppWorld hold ``env``'s world, unless it holds it already (call under ``lock``)."""
        if self.shared_world or self._holder == holder:
            return
        self.service.load_state(env.apps)
        self._holder = holder

    def committed(self, holder: Holder) -> None:
        """The world AppWorld holds is now ``holder``'s (a change made through it)."""
        self._holder = holder

    def take_changed(self) -> bool:
        """Whether a call since the last ``take_changed`` changed the world."""
        changed, self._changed = self._changed, False
        return changed

    def seed(self, seed: WorldSeed | None, holder: Holder) -> dict[str, Any]:
        """A new world from ``seed`` (None: an empty one, or AppWorld's data when installed with
        it), through AppWorld's models; returns its tables. In the shared mode the first seed builds
        the world and later ones are laid over it."""
        with self.lock:
            if self.shared_world and self._seeded_shared:
                # Later personas join the one world (their ids must not clash with earlier ones').
                return self.service.merge_seed(seed.model_dump(mode="json")) if seed else self.service.state()
            apps = self.service.seed(seed.model_dump(mode="json") if seed is not None else {})
            self._seeded_shared = True
            self._holder = holder
            return apps

    def merge(self, app_state: dict[str, Any], holder: Holder, env: EnvState) -> dict[str, Any]:
        """A task's records (the seed format's ``apps``) added to ``env``'s world (``holder``'s);
        its tables. The caller commits the new revision (``committed``)."""
        with self.lock:
            self.sync(holder, env)
            return self.service.merge(app_state)

    def current(self) -> dict[str, Any]:
        """The tables of the world AppWorld holds now (the shared mode's session start)."""
        with self.lock:
            return self.service.state()

    def restart(self) -> None:
        """A new AppWorld process after the old one died; its world is loaded on the next call."""
        with self.lock:
            self._holder = None
            self._clock = None
            self.service.restart()

    # ---------------------------------------------------------------- a call

    def _forward(
        self, state: EnvState, app: str, api: str, args: dict[str, Any]
    ) -> tuple[int, Any, dict[str, Any] | None]:
        now = world_time(state)
        if now != self._clock:
            self.service.set_clock(now)
            self._clock = now
        result = self.service.call(app, api, args)
        if result.state is not None:
            self._changed = True
        return result.status_code, result.response, result.state


__all__ = ["AppWorldApps", "AppWorldUnavailable", "world_time"]
