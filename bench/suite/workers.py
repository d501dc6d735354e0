"""Worker processes that answer benchmark cells over the bus: each hosts ``registry`` and ``env``.

They are ``auratown daemon --roles registry,env`` processes on a namespace of their own, so the
cells of a run spread over N processes (and machines, on a shared Redis). They are stopped with
SIGTERM when the run ends; a crash of one leaves its in-flight asks to time out and be recorded
as failed cells, which a resumed run retries.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from actors.bus import AskTimeoutError, Bus
from actors.bus._redis import RedisTransport
from bench.suite.cells import BusAnswerer
from messages.probes import ListTools
from world.probes import ProbeRegistry, agent_state_registry, environment_registry

ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT = 120.0


def registry_for(suite: str) -> ProbeRegistry:
    return environment_registry() if suite in ("factual", "privacy") else agent_state_registry()


class BusWorkers:
    def __init__(self, url: str, namespace: str, count: int, *, model: str | None = None) -> None:
        self.url = url
        self.namespace = namespace
        self.count = count
        self.model = model
        self.processes: list[subprocess.Popen[bytes]] = []
        self.bus: Bus | None = None

    def start(self, registry: ProbeRegistry) -> BusAnswerer:
        cmd = [
            sys.executable, "-m", "deploy.cli", "--log-level", "warning", "daemon", "--redis", self.url,
            "--namespace", self.namespace, "--roles", "registry,env", "--paused",
        ]  # fmt: skip
        if self.model:
            cmd += ["--model", self.model]
        for _ in range(self.count):
            self.processes.append(
                subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, env={**os.environ})
            )
        self.bus = Bus(RedisTransport(self.url), self.namespace)
        self._wait_ready()
        return BusAnswerer(self.bus, registry, model=self.model)

    def _wait_ready(self) -> None:
        assert self.bus is not None
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            dead = [p for p in self.processes if p.poll() is not None]
            if dead:
                raise RuntimeError(f"a bench worker exited with code {dead[0].returncode} at start")
            try:
                self.bus.ask("registry", ListTools(), timeout=2)
                return
            except AskTimeoutError:
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
