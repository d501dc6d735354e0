"""``auratown bench aura`` and ``auratown report`` end to end, offline."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.suite.report import write_report
from tests.conftest import AURA_RELEASE, auratown, wait_until
from tests.support.openai_stub import OpenAIStub, always, hang, json_reply
from tests.support.programs import ROOT


def test_a_bundled_suite_runs_offline_reports_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    args = (
        "bench",
        "aura",
        "--suite",
        "implicit-v2",
        "--seeds",
        "42,123",
        "--conditions",
        "literal,react,aura_intent,oracle_intent",
        "--out",
        str(out),
        "--quiet",
    )
    first = auratown(*args)
    assert first.returncode == 0, first.stderr
    assert first.stderr == ""  # --quiet: no progress
    cells = [json.loads(line) for line in (out / "cells.jsonl").read_text().splitlines()]
    queries = {c["query_id"] for c in cells}
    assert len(cells) == 4 * 2 * len(queries) and all(c["ok"] for c in cells)
    assert all("implicit_score" in c["scores"] for c in cells)
    assert "| aura_intent vs react" in first.stdout and "## Implicit score by subcategory" in first.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["seeds"] == [42, 123] and manifest["git_commit"]
    assert manifest["totals"]["cells"] == len(cells) and manifest["totals"]["fallbacks"] == 0
    respelt = (*args[:9], f"{tmp_path}/./run/")  # the same directory, spelt otherwise
    again = auratown(*respelt)  # not --quiet, and stderr is not a terminal: plain progress lines
    assert again.returncode == 0, again.stderr
    assert f"0 cells run, {len(cells)} resumed" in again.stdout
    assert "\r" not in again.stderr
    assert again.stderr.splitlines() == [f"implicit-v2: {len(cells)}/{len(cells)} (100%) [00:00<?, ?cell/s]"]
    assert len((out / "cells.jsonl").read_text().splitlines()) == len(cells)  # nothing recomputed
    other = auratown(*args[:5], "42", *args[6:])  # another run: refused, each difference named
    [error] = other.stderr.strip().splitlines()
    assert other.returncode == 2 and "(seeds: [42, 123] -> [42]); use another directory" in error
    report = auratown("report", str(out))
    assert report.returncode == 0 and (out / "report.md").read_text().strip() == report.stdout.strip()
    # The Pareto panels, drawn by matplotlib, linked from the report.
    for name in ("pareto_probes", "pareto_violations"):
        png = out / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
        assert f"![{name}]({name}.png)" in report.stdout
        png.unlink()
    # Without matplotlib: no PNG, and one line saying how to get them.
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    text = write_report(out)
    assert not list(out.glob("*.png")) and "![" not in text
    assert [line for line in text.splitlines() if "matplotlib" in line] == [
        "No Pareto PNGs: matplotlib is not installed (`pip install 'auratown[plots]'`)."
    ]


@pytest.mark.aura_release
def test_the_release_suites_run_from_their_directory(tmp_path: Path) -> None:
    for suite, n in (("implicit-v1", 25), ("implicit-v2", 50)):
        out = tmp_path / suite
        result = auratown(
            "bench",
            "aura",
            "--suite",
            suite,
            "--data",
            str(AURA_RELEASE),
            "--seeds",
            "42",
            "--conditions",
            "aura_intent",
            "--out",
            str(out),
            "--quiet",
        )
        assert result.returncode == 0, result.stderr
        assert len((out / "cells.jsonl").read_text().splitlines()) == n


def _table(report: str, heading: str) -> dict[str, list[str]]:
    """Rows of the markdown table under ``heading``, by condition."""
    section = report.split(heading, 1)[1].split("\n\n", 2)[1]
    rows = [line.strip("|").split("|") for line in section.splitlines()[2:]]
    return {r[0].strip(): [c.strip() for c in r[1:]] for r in rows}


def test_the_bundled_factual_and_privacy_suites_run_offline(tmp_path: Path) -> None:
    conditions = "literal,react,fixed_probe,aura_gap_routed"
    reports = {}
    for suite in ("factual", "privacy"):
        out = tmp_path / suite
        args = ("bench", "aura", "--suite", suite, "--seeds", "42", "--conditions", conditions)
        result = auratown(*args, "--out", str(out), "--quiet")
        assert result.returncode == 0, result.stderr
        cells = [json.loads(line) for line in (out / "cells.jsonl").read_text().splitlines()]
        assert all(c["ok"] for c in cells) and len(cells) % 4 == 0
        # Paired snapshots: every condition of a query saw the same scene.
        by_query: dict[str, set[str]] = {}
        for c in cells:
            by_query.setdefault(c["query_id"], set()).add(c["snapshot"])
        assert all(len(digests) == 1 for digests in by_query.values())
        assert any({"precision", "completeness", "fa"} <= set(c["scores"]) for c in cells)
        reports[suite] = (out / "report.md").read_text()
        again = auratown(*args, "--out", str(out), "--quiet")
        assert f"0 cells run, {len(cells)} resumed" in again.stdout
    factual = _table(reports["factual"], "## Factual accuracy (Table 1)")
    assert set(factual) == set(conditions.split(","))
    # cells, unjudged, FA, strict precision, hallucination %, perfect %, probes/q, violation %, latency
    assert float(factual["fixed_probe"][6]) > float(factual["literal"][6])
    privacy = _table(reports["privacy"], "## Privacy slice (Table 12)")
    # cells, unjudged, FA, violation %, probes/q, disclosure
    assert float(privacy["fixed_probe"][3]) > float(privacy["literal"][3]) == 0.0
    assert "## Factual accuracy on the privacy slice" in reports["privacy"]


def test_bad_requests_are_one_line_errors(tmp_path: Path) -> None:
    bad = auratown("bench", "aura", "--conditions", "magic", "--out", str(tmp_path / "x"))
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "unknown condition(s) magic" in bad.stderr
    missing = auratown("report", str(tmp_path / "nothing"))
    assert missing.returncode == 2 and "is not a run directory" in missing.stderr


def test_the_privacy_suite_with_an_llm_claim_judge(tmp_path: Path) -> None:
    verdict = {"claims": [{"text": "You are here.", "label": "CORRECT"}], "completeness": 1}

    def run(out: Path, stub: OpenAIStub) -> tuple[list[dict], str]:
        result = auratown(
            *("bench", "aura", "--suite", "privacy", "--seeds", "42", "--conditions", "literal"),
            *("--judge-model", "openai/stub-model", "--api-base", stub.url, "--out", str(out), "--quiet"),
            env_extra={"OPENAI_API_KEY": "sk-stub"},
        )
        assert result.returncode == 0, result.stderr
        cells = [json.loads(line) for line in (out / "cells.jsonl").read_text().splitlines()]
        return cells, (out / "report.md").read_text()

    with OpenAIStub() as stub:
        stub.script(*[json_reply(verdict)] * 40)
        cells, report = run(tmp_path / "judged", stub)
        judged = [c for c in cells if not c.get("judge_failure")]
        no_gold = [c for c in cells if c.get("judge_failure") == "no_checkable_gold"]
        # Every cell with gold facts went to the model once; the rest have nothing to check.
        assert judged and len(judged) + len(no_gold) == len(cells) and stub.request_count == len(judged)
        assert all(c["scores"]["fa"] == 1.0 and c["claims"][0]["label"] == "CORRECT" for c in judged)
        prompt = stub.requests[0]["messages"][1]["content"]
        assert prompt.startswith("Question: ") and "Gold facts:\n- " in prompt and "Answer: " in prompt
        privacy = _table(report, "## Privacy slice (Table 12)")
        assert privacy["literal"][:3] == [str(len(cells)), str(len(no_gold)), "1.000"]
        assert "judge: openai/stub-model" in report

    with OpenAIStub() as stub:  # nothing scripted: every judge call gets a 400, a counted failure
        cells, report = run(tmp_path / "unjudged", stub)
        assert all(c["ok"] and c.get("judge_failure") and not c["scores"] for c in cells)
        assert {c["judge_failure"] for c in cells} - {"no_checkable_gold"}
        privacy = _table(report, "## Privacy slice (Table 12)")
        assert privacy["literal"][:2] == [str(len(cells)), str(len(cells))]


@pytest.mark.redis
def test_cells_answered_by_worker_processes_over_the_bus_match_the_local_run(
    tmp_path: Path, redis_url: str
) -> None:
    common = (
        "bench",
        "aura",
        "--suite",
        "implicit-v2",
        "--seeds",
        "42",
        "--conditions",
        "literal,aura_intent,oracle_intent",
        "--quiet",
    )
    local = auratown(*common, "--out", str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    remote = auratown(*common, "--bus", redis_url, "--workers", "2", "--out", str(tmp_path / "bus"))
    assert remote.returncode == 0, remote.stderr

    def answers(run: str) -> dict[str, tuple[str, list[str], dict[str, float]]]:
        cells = [json.loads(x) for x in (tmp_path / run / "cells.jsonl").read_text().splitlines()]
        assert all(c["ok"] for c in cells)
        return {c["cell"]: (c["answer"], c["tools_called"], c["scores"]) for c in cells}

    assert answers("bus") == answers("local")


def test_a_report_works_on_a_run_of_any_size(tmp_path: Path) -> None:
    """A run stopped early (Ctrl-C, a failing model) leaves a few cells: the report still renders,
    naming what a statistic lacks instead of crashing."""
    full = tmp_path / "full"
    args = ("bench", "aura", "--suite", "implicit-v2", "--seeds", "42", "--reader", "cues")
    ran = auratown(*args, "--conditions", "literal,aura_intent", "--out", str(full), "--quiet")
    assert ran.returncode == 0, ran.stderr
    lines = (full / "cells.jsonl").read_text().splitlines()
    for k in (0, 1, 2, 3, 5):
        part = tmp_path / f"first-{k}"
        part.mkdir()
        (part / "manifest.json").write_bytes((full / "manifest.json").read_bytes())
        (part / "cells.jsonl").write_text("".join(line + "\n" for line in lines[:k]))
        shown = auratown("report", str(part))
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.startswith(f"# implicit-v2 ({k} cells, 0 failed)")
        gaps = [c for c in map(json.loads, lines[:k]) if c["gap"] is not None]
        if 0 < len(gaps) < 3:
            assert "| aura_intent | - | - | pearson needs at least three pairs |" in shown.stdout


def test_ctrl_c_stops_a_run_within_seconds_and_keeps_the_finished_cells(tmp_path: Path) -> None:
    """Cells whose model call hangs do not hold the process: SIGINT ends it at once (exit 130),
    the finished cells stay in cells.jsonl, and the same command resumes from them."""
    verdict = json_reply({"claims": [{"text": "You are here.", "label": "CORRECT"}], "completeness": 1})
    out = tmp_path / "run"
    command = [
        *(sys.executable, "-m", "deploy.cli", "bench", "aura", "--suite", "privacy", "--seeds", "42"),
        *("--conditions", "literal", "--judge-model", "openai/stub-model", "--out", str(out), "--quiet"),
    ]
    with OpenAIStub(responder=always(hang())) as stub:  # after the scripted answers, calls hang
        stub.script(*[verdict] * 3)
        child = subprocess.Popen(
            [*command, "--api-base", stub.url],
            cwd=ROOT,
            env={**os.environ, "OPENAI_API_KEY": "sk-stub"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            cells = out / "cells.jsonl"
            wait_until(lambda: stub.pending == 0 and stub.request_count > 3, timeout=60, what="a hung call")
            kept = len(cells.read_text().splitlines())
            started = time.monotonic()
            child.send_signal(signal.SIGINT)
            _, err = child.communicate(timeout=20)
            stopped = time.monotonic() - started
        finally:
            child.kill()
    assert child.returncode == 130 and stopped < 5, (child.returncode, stopped, err)
    assert kept >= 1 and len(cells.read_text().splitlines()) == kept
    assert f"interrupted: {kept} of " in err and "the same command resumes from there" in err
    with OpenAIStub(responder=always(verdict)) as stub:
        again = auratown(*command[3:], "--api-base", stub.url, env_extra={"OPENAI_API_KEY": "sk-stub"})
    assert again.returncode == 0, again.stderr
    assert f", {kept} resumed" in again.stdout
