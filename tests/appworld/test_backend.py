"""AppWorld's own apps as the episodes' backend: the bundled episodes, the oracle, a dying process.

Everything here runs the real AppWorld (its own venv and process, installed by the session, see
conftest.py) behind our episode registry.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from actors.appworld import AppWorldApps, AppWorldInstall, AppWorldService
from actors.bus import Bus, MemoryTransport, Transport
from actors.episodes import EpisodeRegistryActor
from actors.runtime import Host
from bench.episodes.command import BUNDLED, run_episodes
from bench.episodes.loader import load_episode
from messages import Message
from messages.episodes import GetStateDiff, SeedWorkspace, StateDiffData
from messages.probes import ListTools, ProbeCall, ProbeResult, ToolList
from tests.conftest import auratown


def _episode_args(out: Path, home: Path, **extra: Any) -> argparse.Namespace:
    values: dict[str, Any] = {
        "tasks": None,
        "assistants": "oracle",
        "runs": 1,
        "no_ablation": True,
        "model": None,
        "judge_model": None,
        "api_base": None,
        "cache_dir": None,
        "bus": None,
        "namespace": None,
        "max_turns": None,
        "max_tokens": None,
        "session_timeout": 300.0,
        "out": str(out),
        "quiet": True,
        "workers": 1,
        "remote_workers": None,
        "apps": "appworld",
        "shared_world": False,
        "appworld_home": str(home),
    }
    values.update(extra)
    return argparse.Namespace(**values)


def _finished(out: Path) -> list[dict[str, Any]]:
    lines = []
    for path in sorted((out / "units").glob("*.jsonl")):
        lines += [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return [x for x in lines if x.get("event") == "finished"]


@contextmanager
def registries(
    install: AppWorldInstall,
    specs: dict[str, dict[str, Any]],
    *,
    shared_world: bool = False,
    transport: Transport | None = None,
    namespace: str | None = None,
) -> Iterator[Bus]:
    """Episode registries on one AppWorld process (``specs``: address -> the actor's keywords),
    each seeded for a session ``t1``; the bus to ask them on."""
    bus = Bus(transport or MemoryTransport(), namespace or f"t-{uuid.uuid4().hex[:8]}")
    with AppWorldService(install) as service:
        apps = AppWorldApps(service, shared_world=shared_world)
        host = Host(bus, name="t")
        for address, keywords in specs.items():
            host.spawn(lambda k=keywords: EpisodeRegistryActor(apps=apps, **k), address)  # type: ignore[misc]
        host.start()
        try:
            yield bus
        finally:
            host.stop()
            bus.close()


def session(bus: Bus, address: str = "registry.u", task: str = "t1") -> None:
    assert isinstance(bus.ask(address, SeedWorkspace(task_id=task, sim_time=0.0), timeout=60), Message)


def call(bus: Bus, tool: str, address: str = "registry.u", **args: Any) -> ProbeResult:
    reply = bus.ask(address, ProbeCall(registry="episode", tool=tool, args=args), timeout=60)
    assert isinstance(reply, ProbeResult), reply
    return reply


def token_of(reply: ProbeResult) -> str:
    assert reply.status == "ok", reply.error
    return str(reply.result["response"]["access_token"])  # type: ignore[index,call-overload]


def state_since(bus: Bus, since: str, address: str = "registry.u") -> StateDiffData:
    diff = bus.ask(address, GetStateDiff(since=since), timeout=60)
    assert isinstance(diff, StateDiffData), diff
    return diff


INES = load_episode(BUNDLED / "ines_calder")
TOMAS = load_episode(BUNDLED / "tomas_ferreira")


def test_the_oracle_completes_every_bundled_task_on_appworld(
    tmp_path: Path, appworld_install: AppWorldInstall
) -> None:
    out, summary = run_episodes(_episode_args(tmp_path / "run", appworld_install.home))
    finished = _finished(out)
    assert len(finished) == 20
    comps = {x["task_id"]: x["grade"]["comp"] for x in finished}
    assert all(c == pytest.approx(1.0) for c in comps.values()), comps
    assert "| oracle | 100.0" in summary
    # The app calls went to AppWorld: its tables, keyed the way our diffs and checks read them.
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["apps"] == "appworld"


def test_the_registry_lists_appworld_s_own_schemas_for_the_offered_tools(
    appworld_install: AppWorldInstall,
) -> None:
    spec = {"registry.u": {"seed": INES.seed, "offered": INES.offered}}
    with registries(appworld_install, spec) as bus:
        listed = bus.ask("registry.u", ListTools(registry="episode"), timeout=60)
        assert isinstance(listed, ToolList)
        offered = {f"mcp_appworld_{n}" for n in INES.offered or ()}
        assert {n for n in listed.allowed if n.startswith("mcp_appworld_")} == offered
        place = next(f["function"] for f in listed.functions if f["function"]["name"].endswith("place_order"))
        assert set(place["parameters"]["required"]) == {"payment_card_id", "address_id", "access_token"}

        # A task's product id exists in AppWorld as the seed names it; AppWorld answers refusals.
        session(bus)
        shown = call(bus, "amazon__show_product", product_id=4101)
        assert shown.status == "ok"
        assert shown.result["response"]["product_id"] == 4101  # type: ignore[index,call-overload]
        assert call(bus, "amazon__show_cart", access_token="forged").status == "unauthorized"


def test_a_session_whose_appworld_dies_is_run_again_from_its_snapshot(
    tmp_path: Path, appworld_install: AppWorldInstall
) -> None:
    """AppWorld's process is killed right after the run's first app call: the next app call finds
    it dead, the registry restarts it and puts the session's snapshot back, and the runner runs
    that session again; every task still completes, and the rerun is recorded."""
    killed = threading.Event()
    original = EpisodeRegistryActor._call_appworld

    def call_then_kill(self: EpisodeRegistryActor, caller: str, msg: ProbeCall) -> Any:
        result = original(self, caller, msg)
        if not killed.is_set() and "__" in msg.tool and self.apps is not None:
            killed.set()
            pid = self.apps.service.pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            self.apps.service._proc.wait(timeout=10)  # type: ignore[union-attr]
        return result

    EpisodeRegistryActor._call_appworld = call_then_kill  # type: ignore[method-assign]
    try:
        out, _ = run_episodes(
            _episode_args(tmp_path / "run", appworld_install.home, tasks=str(BUNDLED / "ines_calder"))
        )
    finally:
        EpisodeRegistryActor._call_appworld = original  # type: ignore[method-assign]
    assert killed.is_set()
    finished = _finished(out)
    assert len(finished) == 10
    assert sum(x.get("backend_reruns", 0) for x in finished) == 1
    assert all(x["grade"]["comp"] == pytest.approx(1.0) for x in finished)


def test_appworld_missing_is_a_one_line_error(tmp_path: Path) -> None:
    done = auratown(
        "bench", "episodes", "--apps", "appworld", "--assistants", "oracle", "--runs", "1",
        "--no-ablation", "--quiet", "--out", str(tmp_path / "run"),
        "--appworld-home", str(tmp_path / "nowhere"),
    )  # fmt: skip
    assert done.returncode == 2
    assert "AppWorld 0.1.3.post1 is not installed at" in done.stderr
    assert "auratown appworld install --home" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_exception_inside_appworld_is_a_failed_call_and_what_it_wrote_is_kept(
    appworld_install: AppWorldInstall,
) -> None:
    """Without the Amazon notifier's mail account AppWorld raises after it charged the card: the
    assistant gets a refusal (``failed``), the registry keeps the world as AppWorld left it, and
    the next call is served."""
    assert INES.seed is not None
    seed = INES.seed.model_copy(
        update={"people": tuple(p for p in INES.seed.people if p.first_name != "Amazon")}
    )
    with registries(appworld_install, {"registry.u": {"seed": seed}}) as bus:
        session(bus)
        token = token_of(
            call(bus, "amazon__login", username="ines@hollowoak.example", password="KraftBox!18")
        )
        assert call(bus, "amazon__add_product_to_cart", access_token=token, product_id=4101).status == "ok"
        failed = call(bus, "amazon__place_order", access_token=token, payment_card_id=1, address_id=1)
        assert failed.status == "failed"
        assert failed.error is not None and failed.error.startswith("AppWorld failed:")
        changes = state_since(bus, "t1").changes
        assert any(c.path.startswith("apps.admin.payment_cards.") for c in changes)
        assert call(bus, "amazon__show_product", product_id=4101).status == "ok"


@pytest.mark.redis
def test_a_registry_restarted_with_a_new_appworld_process_has_its_world_back(
    redis_url: str, namespace: str, appworld_install: AppWorldInstall
) -> None:
    """The registry's state lives in Redis with each acknowledged call; a new process (new
    registry, new AppWorld) loads it into its AppWorld before the first call, so what the
    assistant did before the crash is there."""
    from actors.bus._redis import RedisTransport

    login = {"username": "ines@hollowoak.example", "password": "KraftBox!18"}
    for first in (True, False):
        transport = RedisTransport(redis_url)
        try:
            with registries(
                appworld_install,
                {"registry.u": {"seed": INES.seed}},
                transport=transport,
                namespace=namespace,
            ) as bus:
                if first:
                    session(bus)
                token = token_of(call(bus, "amazon__login", **login))
                if first:
                    assert (
                        call(bus, "amazon__add_product_to_cart", access_token=token, product_id=4103).status
                        == "ok"
                    )
                else:
                    cart = call(bus, "amazon__show_cart", access_token=token)
                    items = cart.result["response"]["cart_items"]  # type: ignore[index,call-overload]
                    assert [i["product_id"] for i in items] == [4103]
        finally:
            transport.close()


def test_an_mcp_client_lists_and_calls_appworlds_tools(appworld_install: AppWorldInstall) -> None:
    """The MCP server serves whatever the registry lists: on this backend, AppWorld's own APIs."""
    from mcp import Client

    from actors.mcp import EpisodeMcpServer, HttpEndpoint

    with registries(appworld_install, {"registry.u": {"seed": TOMAS.seed, "offered": TOMAS.offered}}) as bus:
        session(bus)
        http = HttpEndpoint(
            EpisodeMcpServer(bus, registry="registry.u", caller="mcp", ask_timeout=30)
        ).start()
        try:

            async def play() -> tuple[dict[str, Any], Any, Any]:
                async with Client(http.url) as client:
                    tools = {t.name: t for t in (await client.list_tools()).tools}
                    login = {"username": "tomas@riversidespokes.example", "password": "Minutes-0304"}
                    ok = await client.call_tool("simple_note__login", login)
                    bad = await client.call_tool("simple_note__show_account", {"access_token": "forged"})
                    return tools, ok, bad

            tools, ok, bad = asyncio.run(play())
        finally:
            http.stop()
    assert {"simple_note__login", "read_file"} <= set(tools)
    assert tools["simple_note__login"].input_schema["required"] == ["username", "password"]
    assert not ok.is_error and "access_token" in json.dumps(ok.structured_content)
    assert bad.is_error


def test_the_shared_world_is_one_world_for_every_unit(appworld_install: AppWorldInstall) -> None:
    """pi-Bench's way: the first persona's seed builds the world, the next is laid over it, and
    what one unit does the other sees."""
    spec = {"registry.a": {"seed": INES.seed}, "registry.b": {"seed": TOMAS.seed}}
    with registries(appworld_install, spec, shared_world=True) as bus:
        session(bus, "registry.a")
        login = {"username": "tomas@riversidespokes.example", "password": "Minutes-0304"}
        # Tomas's account exists in the world registry.a works on: one world.
        token = token_of(call(bus, "simple_note__login", "registry.a", **login))
        note = {"access_token": token, "title": "made by unit a", "content": "x"}
        assert call(bus, "simple_note__create_note", "registry.a", **note).status == "ok"
        session(bus, "registry.b", "b1")
        apps = state_since(bus, "", "registry.b").state["apps"]
        assert "made by unit a" in [n["title"] for n in apps["simple_note"]["notes"]]  # type: ignore[index,call-overload]
        assert 4101 in [p["product_id"] for p in apps["amazon"]["products"]]  # type: ignore[index,call-overload]
