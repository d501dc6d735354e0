"""AppWorld's own apps as the episodes' backend: the bundled episodes, the oracle, a dying process.

Everything here runs the real AppWorld (its own venv and process, installed by the session, see
conftest.py) behind our episode registry.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from actors.appworld import AppWorldInstall
from actors.bus import Bus, MemoryTransport
from bench.episodes.command import BUNDLED, run_episodes
from bench.episodes.loader import load_episode
from messages.episodes import SeedWorkspace
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
    from actors.appworld import AppWorldApps, AppWorldService
    from actors.episodes import EpisodeRegistryActor
    from actors.runtime import Host

    episode = load_episode(BUNDLED / "ines_calder")
    bus = Bus(MemoryTransport(), "t-appworld-tools")
    with AppWorldService(appworld_install) as service:
        apps = AppWorldApps(service)
        host = Host(bus, name="t")
        host.spawn(
            lambda: EpisodeRegistryActor(seed=episode.seed, offered=episode.offered, apps=apps), "registry.u"
        )
        host.start()
        try:
            listed = bus.ask("registry.u", ListTools(registry="episode"), timeout=60)
            assert isinstance(listed, ToolList)
            names = set(listed.allowed)
            offered = {f"mcp_appworld_{n}" for n in episode.offered or ()}
            assert {n for n in names if n.startswith("mcp_appworld_")} == offered
            place = next(
                f["function"] for f in listed.functions if f["function"]["name"].endswith("place_order")
            )
            assert set(place["parameters"]["required"]) == {"payment_card_id", "address_id", "access_token"}

            # A task's product id exists in AppWorld as the seed names it; AppWorld answers refusals.
            bus.ask("registry.u", SeedWorkspace(task_id="t1", sim_time=0.0), timeout=60)
            shown = bus.ask(
                "registry.u",
                ProbeCall(registry="episode", tool="amazon__show_product", args={"product_id": 4101}),
                timeout=60,
            )
            assert isinstance(shown, ProbeResult) and shown.status == "ok"
            assert shown.result["response"]["product_id"] == 4101  # type: ignore[index,call-overload]
            bad = bus.ask(
                "registry.u",
                ProbeCall(registry="episode", tool="amazon__show_cart", args={"access_token": "forged"}),
                timeout=60,
            )
            assert isinstance(bad, ProbeResult) and bad.status == "unauthorized"
        finally:
            host.stop()
            bus.close()


def test_a_session_whose_appworld_dies_is_run_again_from_its_snapshot(
    tmp_path: Path, appworld_install: AppWorldInstall
) -> None:
    """AppWorld's process is killed right after the run's first app call: the next app call finds
    it dead, the registry restarts it and puts the session's snapshot back, and the runner runs
    that session again; every task still completes, and the rerun is recorded."""
    from actors.episodes.registry import EpisodeRegistryActor

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
    from actors.appworld import AppWorldApps, AppWorldService
    from actors.episodes import EpisodeRegistryActor
    from actors.runtime import Host
    from messages.episodes import GetStateDiff, StateDiffData

    seed = load_episode(BUNDLED / "ines_calder").seed
    assert seed is not None
    seed = seed.model_copy(update={"people": tuple(p for p in seed.people if p.first_name != "Amazon")})
    bus = Bus(MemoryTransport(), "t-appworld-500")
    with AppWorldService(appworld_install) as service:
        apps = AppWorldApps(service)
        host = Host(bus, name="t")
        host.spawn(lambda: EpisodeRegistryActor(seed=seed, apps=apps), "registry.u")
        host.start()
        try:
            bus.ask("registry.u", SeedWorkspace(task_id="t1", sim_time=0.0), timeout=60)

            def call(tool: str, **args: Any) -> ProbeResult:
                reply = bus.ask("registry.u", ProbeCall(registry="episode", tool=tool, args=args), timeout=60)
                assert isinstance(reply, ProbeResult)
                return reply

            login = call("amazon__login", username="ines@hollowoak.example", password="KraftBox!18")
            token = login.result["response"]["access_token"]  # type: ignore[index,call-overload]
            assert call("amazon__add_product_to_cart", access_token=token, product_id=4101).status == "ok"
            failed = call("amazon__place_order", access_token=token, payment_card_id=1, address_id=1)
            assert failed.status == "failed"
            assert failed.error is not None and failed.error.startswith("AppWorld failed:")
            diff = bus.ask("registry.u", GetStateDiff(since="t1"), timeout=60)
            assert isinstance(diff, StateDiffData)
            assert any(c.path.startswith("apps.admin.payment_cards.") for c in diff.changes)
            assert call("amazon__show_product", product_id=4101).status == "ok"
        finally:
            host.stop()
            bus.close()
