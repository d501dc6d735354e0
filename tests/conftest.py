"""Test session fixtures: a private redis-server on a free port, namespaces, buses, processes.

The redis-server is started by the session itself (``choose_redis_server``'s choice, printed in
the session header), so the suite is hermetic: it never touches a Redis the machine may run on the
default port.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import pytest

# The offline IntentInferrer reads queries with its cue reader in every test that does not ask for
# the embedding reader by name (tests/unit/test_aura_reading.py, test_suite_phrasing.py): a town
# process spawned by a test must not spend seconds loading a model for its first answer.
os.environ.setdefault("AURATOWN_INTENT_READER", "cues")

import tests.support.messages  # noqa: F401  (registers test.* models)
from actors.bus import Bus, MemoryTransport, Transport
from actors.bus._redis import RedisTransport
from actors.bus.local_server import LocalRedisServer, choose_redis_server
from bench.suite.datasets import AURA_RELEASE
from tests.support.openai_stub import OpenAIStub
from tests.support.programs import run_module

ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")

# The AURA paper's released data (external, never copied into the repository): tests that read it
# carry ``@pytest.mark.aura_release``. Without it they skip with how to get it, except under CI, where
# a missing release is a failure: CI must run them.
AURA_RELEASE_MISSING = (
    f"needs the AURA release's data, not found at {AURA_RELEASE} (../shared/data/aura, or set "
    "AURATOWN_AURA_DATA): see ../shared/data/aura/SOURCE.md / the AURA paper's repository, "
    "github.com/innovation64/AURA (paper_supplementary/benchmarks, town_simulator/assets, results)"
)


def aura_release_json(name: str) -> Any:
    """A file of the AURA release, parsed afresh (a test may change its copy): only for tests marked
    ``aura_release``, whose setup has already skipped (or failed, under CI) when it is absent."""
    return json.loads((AURA_RELEASE / name).read_text(encoding="utf-8"))


def _on_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"true", "1"}


def skip_unless_ci(reason: str) -> NoReturn:
    """Skip for want of something outside the repository; under CI fail: CI must run every test."""
    if _on_ci():
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before any fixture of a marked test runs (a module fixture may read the release)."""
    if item.get_closest_marker("aura_release") is None or AURA_RELEASE.is_dir():
        return
    skip_unless_ci(AURA_RELEASE_MISSING)


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Which redis-server the session's private servers run, its version and TLS; what was passed over."""
    return choose_redis_server().report()


def needs_tls_server() -> None:
    """For a test that runs a TLS redis-server: if the chosen binary was built without TLS, skip
    saying what installs one (under CI: fail)."""
    chosen = choose_redis_server().chosen
    if chosen is None or chosen.tls:
        return  # no server at all fails on its own, in the session fixture
    reason = (
        f"needs a redis-server built with TLS; the chosen one, {chosen.describe()}, is not "
        "(scripts/install-test-deps installs Debian's redis-server, or set AURATOWN_REDIS_SERVER)"
    )
    skip_unless_ci(reason)


def auratown(
    *args: str, timeout: float = 120, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the ``auratown`` CLI in a child process, as a user would, and capture its output."""
    return run_module("deploy.cli", *args, env={**os.environ, **(env_extra or {})}, timeout=timeout)


def wait_until(predicate: Callable[[], T], timeout: float = 10.0, what: str = "condition") -> T:
    """Poll ``predicate`` until it returns something truthy; fail the test at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.01)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[LocalRedisServer]:
    with LocalRedisServer(unix_socket=True) as server:
        yield server


@pytest.fixture
def redis_url(redis_server: LocalRedisServer) -> str:
    return redis_server.url


@pytest.fixture
def namespace() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def redis_transport(redis_url: str) -> Iterator[RedisTransport]:
    t = RedisTransport(redis_url)
    yield t
    t.close()


@pytest.fixture(params=["memory", "redis"])
def transport(request: pytest.FixtureRequest) -> Iterator[Transport]:
    """Each test using it runs once per transport: the two must behave the same."""
    if request.param == "memory":
        yield MemoryTransport()
        return
    server: LocalRedisServer = request.getfixturevalue("redis_server")
    t = RedisTransport(server.url)
    yield t
    t.close()


@pytest.fixture
def bus(transport: Transport, namespace: str) -> Iterator[Bus]:
    b = Bus(transport, namespace)
    yield b
    b.close()


@pytest.fixture
def redis_bus(redis_transport: RedisTransport, namespace: str) -> Iterator[Bus]:
    """A bus on Redis only, for tests whose other processes or servers must reach it."""
    b = Bus(redis_transport, namespace)
    yield b
    b.close()


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    """A local OpenAI-compatible model server, scripted by the test (tests/support/openai_stub.py)."""
    with OpenAIStub() as s:
        yield s


class Processes:
    """Starts worker processes and makes sure none outlives the test."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, *args: str) -> subprocess.Popen[bytes]:
        """A test worker: ``python -m tests.support.worker URL NS ROLE``."""
        return self.start_module("tests.support.worker", *args)

    def start_module(self, module: str, *args: str, stderr: int = subprocess.PIPE) -> subprocess.Popen[bytes]:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        p = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        self.procs.append(p)
        return p

    def stop_all(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=10)
            if p.stderr:
                p.stderr.close()


@pytest.fixture
def processes() -> Iterator[Processes]:
    ps = Processes()
    yield ps
    ps.stop_all()
