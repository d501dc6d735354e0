"""The ``auratown`` command line, run as a user would: a real process."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from actors.bus import Bus
from actors.bus._redis import RedisTransport
from tests.conftest import AURA_RELEASE, ROOT, auratown, wait_until
from tests.support.openai_stub import OpenAIStub, json_reply, ok


def test_run_on_the_embedded_bus_reports_a_clean_round() -> None:
    result = auratown("selfcheck", "--asks", "20", "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["bus"] == "memory://"
    assert summary["asks"] == 20
    assert summary["dead_letters"] == 0
    assert summary["stats"]["acked"] == 20
    assert summary["stats"]["received"] == 20


def test_run_on_redis_and_ping_from_another_process(redis_url: str, namespace: str) -> None:
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "deploy.cli",
            "selfcheck",
            "--redis",
            redis_url,
            "--namespace",
            namespace,
            "--asks",
            "1",
            "--serve",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        bus = Bus(RedisTransport(redis_url), namespace)
        wait_until(
            lambda: any(p.alive and "echo" in p.info.get("addresses", []) for p in bus.processes()),
            what="the serving process",
        )
        pinged = auratown("ping", "echo", "--redis", redis_url, "--namespace", namespace, "--count", "2")
        assert pinged.returncode == 0, pinged.stderr
        assert pinged.stdout.count("reply from") == 2
        listed = auratown("processes", "--redis", redis_url, "--namespace", namespace)
        assert "alive" in listed.stdout and "echo" in listed.stdout
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=30)
        assert server.returncode == 0, err
        assert "serving 'echo'" in out
        bus.close()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_schema_writes_every_message_schema(tmp_path: Path) -> None:
    result = auratown("schema", "--out", str(tmp_path / "schemas"))
    assert result.returncode == 0, result.stderr
    files = sorted(p.name for p in (tmp_path / "schemas").iterdir())
    assert {"envelope.json", "sys.ping.v1.json", "sys.pong.v1.json", "sys.error.v1.json"} <= set(files)
    assert json.loads((tmp_path / "schemas" / "sys.ping.v1.json").read_text())["x-message-type"] == "sys.ping"


def test_bad_input_gets_one_line_and_exit_2(redis_server: object) -> None:
    cases = [
        (("selfcheck", "--redis", "http://nope"), "unsupported bus URL"),
        (("selfcheck", "--asks", "zero"), "expected a whole number"),
        (("selfcheck", "--namespace", "bad name"), "invalid namespace"),
        (("ping", "--redis", "redis://127.0.0.1:1/0"), "cannot reach Redis"),
        (("ping", "--timeout", "-1"), "positive number of seconds"),
    ]
    for args, expected in cases:
        result = auratown(*args)
        assert result.returncode == 2, (args, result.stderr)
        last = result.stderr.strip().splitlines()[-1]
        assert expected in last, (args, result.stderr)
        assert "Traceback" not in result.stderr


def test_ping_an_address_nobody_hosts_fails_with_a_timeout(redis_url: str, namespace: str) -> None:
    result = auratown(
        "ping", "nobody", "--redis", redis_url, "--namespace", namespace, "--count", "1", "--timeout", "0.3"
    )
    assert result.returncode == 1
    assert "no reply from 'nobody'" in result.stdout


def test_run_lives_a_day_of_the_embedded_town_in_one_process() -> None:
    from actors.town import embedded_town
    from world import Town

    result = auratown("run", "--ticks", "35", "--seed", "42", "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["town"] == "AURATown" and out["ticks"] == 35 and out["first_tick"] == 0
    assert out["digests"] == [r.digest for r in Town(embedded_town(), seed=42).step(35)]
    assert {a["name"] for a in out["final"]["agents"]} == {
        "Lin Wei",
        "Zhang Hao",
        "Chen Mei",
        "Liu Yang",
        "Wang Jun",
    }


@pytest.mark.aura_release
def test_run_reads_the_aura_release_map_unchanged() -> None:
    aura_map = AURA_RELEASE / "town_map.json"
    result = auratown("run", "--ticks", "2", "--town", str(aura_map))
    assert result.returncode == 0, result.stderr
    assert "Lin Wei" in result.stdout


def test_a_bad_town_file_is_one_line() -> None:
    result = auratown("run", "--town", "/nonexistent/town.json")
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        == "auratown run: error: cannot read town file /nonexistent/town.json: No such file or directory"
    )


def test_the_cli_offers_exactly_the_injectable_event_kinds() -> None:
    # The CLI reads them from messages.town when `inject` is parsed (building the parser imports no
    # pydantic): each kind is accepted and listed in the help, anything else is refused.
    from deploy import cli
    from messages.town import INJECTABLE_KINDS

    for kind in INJECTABLE_KINDS:
        assert cli.build_parser().parse_args(["inject", kind, "it happened"]).kind == kind
    help_text = " ".join(auratown("inject", "--help").stdout.split())
    assert f"event kind: {', '.join(INJECTABLE_KINDS)}" in help_text
    refused = auratown("inject", "picnic", "it happened")
    assert refused.returncode == 2 and "invalid choice: 'picnic'" in refused.stderr


def test_ask_answers_embedded_with_the_frame_the_trace_and_a_heads_up() -> None:
    result = auratown("ask", "Where is Zhang Hao?", "--as", "Lin Wei", "--tick", "5")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Heads-up: Zhang Hao is not to be disturbed")
    assert "Zhang Hao's Home" in lines[0]
    assert any(line.startswith("IntentFrame (heuristic): gap 0.60") for line in lines)
    assert any("agent.private_state(agent_name='Zhang Hao') -> ok" in line for line in lines)
    as_json = auratown(
        "ask", "Where is Zhang Hao?", "--as", "Lin Wei", "--tick", "5", "--json", "--condition", "literal"
    )
    answer = json.loads(as_json.stdout)
    assert answer["condition"] == "literal" and answer["trace"] == [] and not answer["alerts"]


def test_ask_explains_bad_input_in_one_line() -> None:
    unknown = auratown("ask", "Where is Lin Wei?", "--as", "Nobody")
    assert unknown.returncode == 2
    assert unknown.stderr.strip().startswith("auratown ask: error: no agent named 'Nobody'")
    assert len(unknown.stderr.strip().splitlines()) == 1
    bad = auratown("ask", "Where is Lin Wei?", "--condition", "magic")
    assert bad.returncode == 2 and "invalid choice: 'magic'" in bad.stderr


def test_the_cli_lists_exactly_the_paper_conditions() -> None:
    from deploy import cli
    from messages.aura import CONDITIONS

    for condition in CONDITIONS:
        assert cli.build_parser().parse_args(["ask", "q", "--condition", condition]).condition == condition
    help_text = " ".join(auratown("ask", "--help").stdout.split())
    assert f"which pipeline answers: {', '.join(CONDITIONS)} (default: aura_intent)" in help_text


def test_ask_with_a_model_goes_through_the_gateway_and_reports_usage() -> None:
    frame = {
        "literal_need": "Zhang Hao's whereabouts",
        "implicit_needs": ["can I visit him?"],
        "gap": 0.7,
        "recommended_probes": ["agent.private_state"],
        "alert": True,
        "confidence": 0.8,
        "rationale": "r",
    }
    call = {
        "action": "call",
        "tool": "agent.private_state",
        "args": {"agent_name": "Zhang Hao"},
        "reason": "r",
    }
    stop = {"action": "stop", "tool": None, "args": {}, "reason": "enough"}
    with OpenAIStub() as stub:
        stub.script(json_reply(frame), json_reply(call), json_reply(stop), ok("He is writing at home."))
        result = auratown(
            "ask",
            "Where is Zhang Hao?",
            "--as",
            "Lin Wei",
            "--tick",
            "5",
            "--json",
            "--model",
            "openai/stub-model",
            "--api-base",
            stub.url,
            env_extra={"OPENAI_API_KEY": "sk-stub"},
        )
        assert result.returncode == 0, result.stderr
        answer = json.loads(result.stdout)
        assert stub.request_count == 4
    assert answer["backend"] == "llm:openai/stub-model" and answer["frame"]["backend"] == "llm"
    assert answer["usage"]["model_calls"] == 4 and answer["usage"]["fallbacks"] == []
    assert answer["text"].startswith("Heads-up: Zhang Hao is not to be disturbed")
    assert "He is writing at home." in answer["text"]


def test_version_names_the_installed_release() -> None:
    from importlib.metadata import version

    done = auratown("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"auratown {version('auratown')}"


def test_the_library_logs_nothing_unless_the_application_configures_logging() -> None:
    program = (
        "import logging, structlog, actors\n"
        "structlog.get_logger('auratown.test').warning('hidden', message='a reserved key')\n"
        "print('quiet')\n"
        "logging.basicConfig(level=logging.INFO)\n"
        "structlog.get_logger('auratown.test').warning('shown')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "quiet\n"
    assert "hidden" not in done.stderr and '"event": "shown"' in done.stderr
