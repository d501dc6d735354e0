"""Worker processes that answer benchmark cells over the bus: each hosts ``registry`` and ``env``.

They are ``auratown worker --roles registry,env`` processes on a namespace of their own, so the
cells of a run spread over N processes (and machines, on a shared Redis), each holding one cell
at a time. With ``count=0`` none is started: the cells go to workers already serving the
namespace (``--remote-workers``). Started ones are stopped with SIGTERM when the run ends; a
crash of one leaves its in-flight asks to time out and be recorded as failed cells, which a
resumed run retries.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from actors.bus import AskTimeoutError, Bus
from actors.bus._redis import RedisTransport
from actors.settings import MODEL_FIELDS, settings_environment
from bench.suite.cells import BusAnswerer
from messages.probes import ListTools
from world.probes import ProbeRegistry, agent_state_registry, environment_registry

if TYPE_CHECKING:
    from actors.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT = 120.0


def registry_for(suite: str) -> ProbeRegistry:
    return environment_registry() if suite in ("factual", "privacy") else agent_state_registry()


@dataclass
class BusWorkers:
    """``count`` worker processes (0: the ones already serving ``namespace`` at ``url``), started
    with the cells' model settings, and the bus the run asks them over."""

    url: str
    namespace: str
    count: int
    _: KW_ONLY
    model: str | None = None
    api_base: str | None = None
    cache_dir: Path | None = None
    settings: Settings | None = None
    """Its model deadlines and limits are the workers' (their environment's ``AURATOWN_MODEL_*``)."""
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list, init=False)
    bus: Bus | None = field(default=None, init=False)

    def command(self) -> list[str]:
        cmd = [
            sys.executable, "-m", "deploy.cli", "--log-level", "warning", "worker", "--redis", self.url,
            "--namespace", self.namespace, "--roles", "registry,env",
        ]  # fmt: skip
        if self.model:
            cmd += ["--model", self.model]
        if self.api_base:
            cmd += ["--api-base", self.api_base]
        if self.cache_dir:
            cmd += ["--cache-dir", str(self.cache_dir)]
        return cmd

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.settings is not None:
            env.update(settings_environment(self.settings, MODEL_FIELDS))
        return env

    def start(self, registry: ProbeRegistry) -> BusAnswerer:
        for _ in range(self.count):
            self.processes.append(
                subprocess.Popen(self.command(), cwd=ROOT, stdout=subprocess.DEVNULL, env=self.environment())
            )
        self.bus = Bus(RedisTransport(self.url), self.namespace)
        self._wait_ready()
        return BusAnswerer(self.bus, registry, model=self.model)

    def env_lanes(self) -> int:
        """Cells the workers answer at once: their live processes hosting ``env``."""
        assert self.bus is not None
        return sum(1 for p in self.bus.processes() if p.alive and "env" in p.info.get("addresses", ()))

    @property
    def concurrency(self) -> int:
        """Cells to keep in flight: two per env lane (one answered, one queued), so a worker never
        waits for the next cell; at least two."""
        return max(2, 2 * (self.count or self.env_lanes()))

    def _wait_ready(self) -> None:
        assert self.bus is not None
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            dead = [p for p in self.processes if p.poll() is not None]
            if dead:
                raise RuntimeError(f"a bench worker exited with code {dead[0].returncode} at start")
            try:
                self.bus.ask("registry", ListTools(), timeout=2)
                lanes = self.env_lanes()
                if self.count == 0 and lanes == 0:
                    raise RuntimeError(f"no worker hosts env on namespace {self.namespace} at {self.url}")
                if lanes >= self.count:  # every worker started here is up: timings start even
                    return
                time.sleep(0.1)  # the workers announce themselves in their presence: poll it
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the bench workers did not all start within {READY_TIMEOUT:g}s")
            except AskTimeoutError:
                if self.count == 0:
                    raise RuntimeError(
                        f"no `auratown worker --roles registry,env` answers on namespace {self.namespace} "
                        f"at {self.url}"
                    ) from None
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the bench workers did not answer within {READY_TIMEOUT:g}s"
                    ) from None

    def stop(self) -> None:
        for p in self.processes:
            if p.poll() is None:
                p.terminate()
        for p in self.processes:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        if self.bus is not None:
            self.bus.close()
            self.bus.transport.close()
