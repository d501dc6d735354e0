"""``auratown daemon`` on a real Redis, run as a user runs it: killed with SIGKILL mid-run and
restarted, it resumes with no tick lost or applied twice; the controls work from other processes."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from actors.bus import Bus
from actors.bus._redis import RedisTransport
from actors.town import TICKS_TOPIC, TownClient, embedded_town
from messages.town import GetMindState, InjectEvent, MindStateData, TickCompleted
from tests.conftest import Processes, auratown, wait_until
from tests.support.openai_stub import OpenAIStub
from tests.support.topics import topic_messages
from world import AgentMindState, Town, TownSnapshot

pytestmark = pytest.mark.redis


class Daemons:
    """``auratown daemon`` processes on one namespace, with short takeover and generous decision times."""

    def __init__(self, processes: Processes, url: str, namespace: str) -> None:
        self.processes, self.url, self.namespace = processes, url, namespace

    def start(self, *extra: str) -> subprocess.Popen[bytes]:
        return self.processes.start_module(
            "deploy.cli",
            "daemon",
            "--redis",
            self.url,
            "--namespace",
            self.namespace,
            "--visibility-timeout",
            "2",
            "--decision-timeout",
            "20",
            *extra,
            stderr=subprocess.DEVNULL,
        )


@pytest.fixture
def daemons(processes: Processes, redis_url: str, namespace: str) -> Daemons:
    return Daemons(processes, redis_url, namespace)


def completed_ticks(bus: Bus) -> list[TickCompleted]:
    return topic_messages(bus, TICKS_TOPIC, TickCompleted)


def test_the_daemon_survives_kill_9_without_losing_or_repeating_a_tick(
    daemons: Daemons, redis_url: str, namespace: str
) -> None:
    bus = Bus(RedisTransport(redis_url), namespace)
    client = TownClient(bus, timeout=30)
    first = daemons.start("--paused", "--seed", "42")
    wait_until(lambda: _answers(client), timeout=60, what="the daemon to answer")
    target = client.step(40, wait=None).target  # the kill comes while they run
    assert target == 39
    wait_until(lambda: client.status().completed >= 12, timeout=60, what="some ticks to complete")
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    done_before = client_status_completed(bus)
    assert done_before < 39, "the steps finished before the kill; nothing was tested"

    daemons.start("--seed", "7")  # the stored town and seed win over new flags
    client.wait_for_tick(39, timeout=120)
    view = client.state(private=True)
    assert view.tick == 40 and view.seed == 42

    pure = Town(embedded_town(), seed=42)
    reference = [r.digest for r in pure.step(40)]
    assert view.digest == reference[-1]  # not one tick lost, not one applied twice
    published = completed_ticks(bus)
    # A tick in flight at the kill may be announced twice; each announcement is the same tick.
    by_tick = {c.tick: c.digest for c in published}
    assert sorted(by_tick) == list(range(40))
    assert all(reference[t] == d for t, d in by_tick.items())
    bus.close()


def client_status_completed(bus: Bus) -> int:
    # The clock's stored state, read directly: the daemon is dead, nobody can answer an ask.
    raw = bus.transport.get(bus.keys.state("clock"))
    assert raw is not None
    return int(json.loads(raw)["completed"])


def _answers(client: TownClient) -> bool:
    try:
        client.status()
    except Exception:
        return False
    return True


def test_the_controls_from_the_command_line(
    daemons: Daemons, redis_url: str, namespace: str, tmp_path: Path
) -> None:
    base = ("--redis", redis_url, "--namespace", namespace)
    daemons.start("--paused", "--seed", "42")
    bus = Bus(RedisTransport(redis_url), namespace)
    wait_until(lambda: _answers(TownClient(bus, timeout=2)), timeout=60, what="the daemon to answer")

    stepped = auratown("step", "20", *base)
    assert stepped.returncode == 0, stepped.stderr
    assert "completed: tick 19" in stepped.stdout

    # Who would an argument at their location stress next tick? Ask the pure town, from a snapshot.
    exported = tmp_path / "town.json"
    result = auratown("export", str(exported), *base)
    assert result.returncode == 0, result.stderr
    snap = TownSnapshot.from_bytes(exported.read_bytes())
    assert snap.world.tick == 20
    location, stressed = _a_place_where_an_argument_stresses(snap)

    refused = auratown("inject", "argument", "x", "--location", "Atlantis", *base)
    assert refused.returncode == 2
    assert refused.stderr.strip().startswith("auratown inject: error: no location named 'Atlantis'")
    assert len(refused.stderr.strip().splitlines()) == 1

    injected = auratown("inject", "argument", "a shouting match", "--location", location, *base)
    assert injected.returncode == 0, injected.stderr
    assert stressed in injected.stdout
    assert auratown("step", *base).returncode == 0
    shown = auratown("state", "--agent", stressed, "--private", "--json", *base)
    assert shown.returncode == 0, shown.stderr
    view = json.loads(shown.stdout)
    private = view["agents"][0]["private"]
    assert (private["rule"], private["emotional_state"]) == ("recent_stress", "stressed")
    assert any(e["kind"] == "argument" and e["source"] == "environment" for e in view["events"])

    public = json.loads(auratown("state", "--json", *base).stdout)
    assert all(a["private"] is None for a in public["agents"])  # private only when asked for

    # The environment agent, hosted by the daemon, surfaces the stress behind a literal question.
    name = view["agents"][0]["name"]
    asker = next(a["name"] for a in public["agents"] if a["name"] != name)
    asked = auratown("ask", f"How is {name} doing?", "--as", asker, "--json", *base)
    assert asked.returncode == 0, asked.stderr
    answer = json.loads(asked.stdout)
    assert answer["alerts"] and f"{name} seems stressed" in answer["alerts"][0]
    assert answer["text"].startswith("Heads-up") and "agent.private_state" in [
        s["tool"] for s in answer["trace"]
    ]

    assert "paused" in auratown("pause", *base).stdout
    assert "paused at 4 ticks/s" in auratown("speed", "4", *base).stdout
    assert "running at 4 ticks/s" in auratown("resume", *base).stdout
    assert "paused" in auratown("pause", *base).stdout
    assert "paused at 4 ticks/s" in auratown("clock", *base).stdout

    # Fork the exported town into a new namespace and run it in its own daemon.
    fork_ns = namespace + ".fork"
    imported = auratown("import", str(exported), "--redis", redis_url, "--namespace", fork_ns)
    assert imported.returncode == 0, imported.stderr
    again = auratown("import", str(exported), "--redis", redis_url, "--namespace", fork_ns)
    assert again.returncode == 2 and "already holds a town" in again.stderr
    Daemons(daemons.processes, redis_url, fork_ns).start()
    fork_bus = Bus(RedisTransport(redis_url), fork_ns)
    fork_client = TownClient(fork_bus, timeout=20)
    wait_until(lambda: _answers(fork_client), timeout=60, what="the fork to answer")
    fork_client.step(3, wait=60)
    pure = Town.restore(snap)
    pure.step(3)
    assert fork_client.state().digest == pure.digest()
    fork_bus.close()
    bus.close()


def _a_place_where_an_argument_stresses(snap: TownSnapshot) -> tuple[str, str]:
    for loc in sorted({a.location for a in snap.world.agents.values() if a.location}):
        trial = Town.restore(snap)
        trial.inject(InjectEvent(kind="argument", description="a shouting match", location=loc))
        trial.step()
        for slug, a in trial.state.agents.items():
            if a.private.rule == "recent_stress":
                return loc, slug
    raise AssertionError("no agent in this town state would be stressed by an argument")


def test_the_daemon_runs_llm_minds_through_the_gateway(
    daemons: Daemons, redis_url: str, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stub")  # the daemon inherits it
    with OpenAIStub() as stub:  # unscripted requests get a 400: every model call fails at once
        daemons.start("--paused", "--mind", "llm", "--model", "openai/stub-model", "--api-base", stub.url)
        bus = Bus(RedisTransport(redis_url), namespace)
        client = TownClient(bus, timeout=20)
        wait_until(lambda: _answers(client), timeout=60, what="the daemon to answer")
        client.step(2, wait=90)
        assert stub.request_count > 0  # the minds asked the model ...
        mind = bus.ask("agent.lin-wei", GetMindState(), timeout=10)
    assert isinstance(mind, MindStateData)
    fallbacks = AgentMindState.model_validate_json(mind.data).fallbacks
    assert fallbacks.get("action", 0) >= 1  # ... and fell back to the schedule, counted
    ticks = completed_ticks(bus)
    assert [t.tick for t in ticks] == [0, 1] and all(t.missed == () for t in ticks)
    bus.close()
