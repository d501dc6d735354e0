"""One settings object for every ``AURATOWN_*`` variable (``actors.settings``), read once by the CLI.

Each variable is parsed into its field, unset ones take their defaults, a bad value is one line
naming the variable, ``--help`` lists every variable with its default, the CLI's options default
to the settings (``ping`` and ``processes`` honour ``AURATOWN_REDIS_URL``), and library code reads
the settings when it is built without them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.bus import Bus, DeadLetterPolicy
from actors.bus._redis import RedisTransport
from actors.llm import GatewayPool, Stage
from actors.roles import EchoActor
from actors.runtime import Host
from actors.settings import (
    ENV_PREFIX,
    MODEL_FIELDS,
    Settings,
    SettingsError,
    env_name,
    environment_help,
    load_settings,
)
from deploy import arguments, cli
from tests.conftest import auratown

# Every field: the text put in its variable, and the value it must read as.
PARSED: dict[str, tuple[str, Any]] = {
    "redis_url": ("redis://cache.example:6380/2", "redis://cache.example:6380/2"),
    "redis_server": ("/opt/redis/bin/redis-server", "/opt/redis/bin/redis-server"),
    "appworld_home": ("/srv/appworld", "/srv/appworld"),
    "aura_data": ("/data/aura", Path("/data/aura")),
    "intent_reader": ("cues", "cues"),
    "dlq_max_len": ("25", 25),
    "dlq_max_age": ("3600", 3600.0),
    "dlq_max_bytes": ("2048", 2048),
    "operator_token": ("op-secret", "op-secret"),
    "mcp_token": ("mcp-secret", "mcp-secret"),
    "model_timeout": ("2.5", 2.5),
    "model_stage_budget": ("5", 5.0),
    "model_unit_budget": ("9", 9.0),
    "model_max_tokens": ("128", 128),
    "model_context_window": ("4096", 4096),
    "log_level": ("debug", "DEBUG"),
    "log_format": ("json", "json"),
}


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """No ``AURATOWN_*`` variable set (the test session sets some for its child processes)."""
    for name in list(os.environ):
        if name.upper().startswith(ENV_PREFIX):
            monkeypatch.delenv(name)
    yield monkeypatch


def test_every_variable_is_parsed_into_its_field(clean_env: pytest.MonkeyPatch) -> None:
    assert set(PARSED) == set(Settings.model_fields), "a new setting needs a row here"
    for field, (text, _) in PARSED.items():
        clean_env.setenv(env_name(field), text)
    settings = load_settings()
    assert {field: getattr(settings, field) for field in PARSED} == {f: v for f, (_, v) in PARSED.items()}


def test_unset_variables_take_their_defaults(clean_env: pytest.MonkeyPatch) -> None:
    settings = load_settings()
    assert settings.redis_url == "redis://127.0.0.1:6379/0"
    assert settings.dlq_max_len == 10_000 and settings.dlq_max_age == 7 * 86_400.0
    assert settings.model_timeout == 60.0 and settings.model_stage_budget is None
    assert settings.log_level == "WARNING" and settings.log_format is None
    assert settings.intent_reader == "auto" and settings.appworld_home is None
    assert settings.aura_data == Path(cli.__file__).resolve().parents[2] / "shared" / "data" / "aura"
    clean_env.setenv("AURATOWN_REDIS_URL", "")  # empty is unset, as `X= auratown ...` means
    assert load_settings().redis_url == "redis://127.0.0.1:6379/0"


def test_settings_are_frozen_and_keep_tokens_out_of_their_repr(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("AURATOWN_OPERATOR_TOKEN", "op-secret")
    settings = load_settings()
    assert "op-secret" not in repr(settings)
    with pytest.raises(ValueError, match="frozen"):
        settings.redis_url = "redis://elsewhere"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("AURATOWN_DLQ_MAX_LEN", "abc", "valid integer"),
        ("AURATOWN_DLQ_MAX_LEN", "0", "greater than or equal to 1"),
        ("AURATOWN_MODEL_TIMEOUT", "inf", "finite"),
        ("AURATOWN_MODEL_TIMEOUT", "-1", "greater than 0"),
        ("AURATOWN_INTENT_READER", "vibes", "'auto', 'cues' or 'embedding'"),
        ("AURATOWN_LOG_LEVEL", "loud", "'DEBUG'"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_variable(
    clean_env: pytest.MonkeyPatch, name: str, text: str, says: str
) -> None:
    clean_env.setenv(name, text)
    with pytest.raises(SettingsError) as caught:
        load_settings()
    message = str(caught.value)
    assert message.startswith(f"{name}=") and text.casefold() in message.casefold() and says in message
    assert "\n" not in message


def test_the_cli_refuses_a_bad_variable_in_one_line_without_a_traceback() -> None:
    result = auratown("processes", env_extra={"AURATOWN_DLQ_MAX_LEN": "abc"}, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "auratown: error: AURATOWN_DLQ_MAX_LEN='abc': Input should be a valid integer, unable to parse "
        "string as an integer"
    ]


def test_help_lists_every_variable_with_its_default() -> None:
    result = auratown("--help", timeout=60)
    assert result.returncode == 0, result.stderr
    for field, info in Settings.model_fields.items():
        default = "unset" if info.default is None else str(info.default)
        assert f"{env_name(field)} (default: {default})" in result.stdout
    assert environment_help() in result.stdout  # with each description, generated from the model


def test_a_command_help_lists_the_variables_its_options_default_to() -> None:
    ping = auratown("ping", "--help", timeout=60).stdout
    assert "--redis URL" in ping and "(default: $AURATOWN_REDIS_URL)" in ping
    assert "AURATOWN_REDIS_URL (default: redis://127.0.0.1:6379/0)" in ping
    assert "AURATOWN_DLQ_MAX_LEN" not in ping
    daemon = auratown("daemon", "--help", timeout=60).stdout
    assert "AURATOWN_OPERATOR_TOKEN (default: unset)" in daemon
    # and what the actors it hosts read: dead-letter retention, model deadlines, the intent reader
    for name in ("DLQ_MAX_LEN", "DLQ_MAX_AGE", "DLQ_MAX_BYTES", "MODEL_TIMEOUT", "INTENT_READER"):
        assert f"AURATOWN_{name} (default: " in daemon
    assert "AURATOWN_REDIS_URL" not in daemon  # the daemon's bus is in process unless --redis


def test_options_default_to_the_settings_and_options_override_them() -> None:
    settings = Settings(
        redis_url="redis://settings:1/0", operator_token="t", mcp_token="m", appworld_home="/aw"
    )
    for argv in (["ping"], ["processes"], ["state"], ["dlq", "list"], ["view"], ["worker"]):
        assert cli.parse_args(argv, settings).redis == "redis://settings:1/0", argv
    assert cli.parse_args(["ping", "--redis", "redis://given:2/0"], settings).redis == "redis://given:2/0"
    assert cli.parse_args(["run"], settings).redis is None  # run, daemon, ask: the memory bus
    mcp_args = ["--namespace", "ns", "--registry", "registry.x"]
    mcp = cli.parse_args(["mcp", *mcp_args], settings)
    assert (mcp.bus, mcp.token) == ("redis://settings:1/0", "m")
    assert cli.parse_args(["daemon"], settings).operator_token == "t"
    assert cli.parse_args(["worker"], settings).appworld_home == "/aw"
    assert cli.parse_args(["bench", "aura"], settings).reader == settings.intent_reader
    parsed = cli.parse_args(["--log-level", "error", "worker"], settings)
    assert (parsed.log_level, parsed.log_format) == ("ERROR", None)
    assert parsed.settings == settings.model_copy(update={"log_level": "ERROR"})  # given: the setting
    commands = (["daemon"], ["worker"], ["bench", "episodes"], ["appworld", "status"], ["mcp", *mcp_args])
    leftovers = [
        (argv, name)
        for argv in commands
        for name, value in vars(cli.parse_args(argv, settings)).items()
        if isinstance(value, arguments.FromSettings)
    ]
    assert leftovers == []


def test_remote_workers_is_an_option_of_both_benchmarks() -> None:
    for bench in ("aura", "episodes"):
        args = cli.parse_args(["bench", bench, "--remote-workers"], Settings())
        assert args.remote_workers == arguments.DEFAULT_NAMESPACE
        assert cli.parse_args(["bench", bench, "--remote-workers", "ns"], Settings()).remote_workers == "ns"


def test_the_parser_module_spells_the_prefix_as_the_settings_do() -> None:
    assert arguments.SETTINGS_PREFIX == ENV_PREFIX
    assert arguments.MODEL_SETTINGS == MODEL_FIELDS


# Every command that may call a model, as a user would start it.
MODEL_COMMANDS = (
    ["ask", "Where is Lin Wei?"],
    ["bench", "aura"],
    ["bench", "episodes"],
    ["daemon"],
    ["run"],
    ["worker"],
)


@pytest.mark.parametrize("command", MODEL_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_every_model_command_takes_the_limits_and_its_gateways_obey_them(
    clean_env: pytest.MonkeyPatch, command: list[str]
) -> None:
    given = ["--max-tokens", "64", "--llm-timeout", "7.5", "--context-window", "2048"]
    args = cli.parse_args([*command, *given], Settings())
    assert (args.max_tokens, args.llm_timeout, args.context_window) == (64, 7.5, 2048)
    settings = args.settings
    if command[0] != "ask":  # ask's deadline is its own (10 s), passed to its backend
        assert settings.model_timeout == 7.5
    assert (settings.model_max_tokens, settings.model_context_window) == (64, 2048)
    config = GatewayPool(settings=settings).get("openai/local").config
    assert (config.max_tokens, config.context_window) == (64, 2048)
    assert config.max_tokens_for(Stage.IMPORTANCE) == 64  # every stage's cap, the paper's too


def test_the_limits_default_to_their_variables_and_each_stage_keeps_its_cap(
    clean_env: pytest.MonkeyPatch,
) -> None:
    clean_env.setenv("AURATOWN_MODEL_CONTEXT_WINDOW", "4096")
    args = cli.parse_args(["bench", "aura"])
    assert (args.max_tokens, args.context_window, args.llm_timeout) == (None, 4096, 60.0)
    config = GatewayPool(settings=args.settings).get("openai/local").config
    assert config.context_window == 4096
    assert config.max_tokens_for(Stage.IMPORTANCE) == 50  # the paper's cap
    assert config.max_tokens_for(Stage.PROBE_PLANNING) == 200
    assert cli.parse_args(["ask", "Where is Lin Wei?"]).llm_timeout == 10.0
    assert cli.parse_args(["ask", "q", "--model-timeout", "3"]).llm_timeout == 3.0  # its older name


def test_a_bad_limit_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in (["--max-tokens", "0"], ["--llm-timeout", "inf"], ["--context-window", "big"]):
        with pytest.raises(SystemExit):
            cli.parse_args(["run", *bad], Settings())
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert err.startswith("auratown run: error: argument ") and "expected" in err, err


def test_bench_workers_started_by_a_run_get_its_limits(clean_env: pytest.MonkeyPatch) -> None:
    from bench.suite.workers import BusWorkers

    args = cli.parse_args(["bench", "aura", "--max-tokens", "32", "--llm-timeout", "4"])
    env = BusWorkers("redis://x", "ns", 1, settings=args.settings).environment()
    assert (env["AURATOWN_MODEL_MAX_TOKENS"], env["AURATOWN_MODEL_TIMEOUT"]) == ("32", "4.0")
    assert "AURATOWN_MODEL_CONTEXT_WINDOW" not in env


def test_ping_and_processes_honour_the_redis_url_variable(redis_url: str, namespace: str) -> None:
    bus = Bus(RedisTransport(redis_url), namespace)
    host = Host(bus, name="echo-host")
    host.spawn(EchoActor, "echo")
    host.start()
    try:
        env = {"AURATOWN_REDIS_URL": redis_url}
        ping = auratown("ping", "--namespace", namespace, "--count", "1", env_extra=env, timeout=60)
        assert ping.returncode == 0, ping.stderr
        assert ping.stdout.startswith("seq=0 reply from ")
        procs = auratown("processes", "--namespace", namespace, env_extra=env, timeout=60)
        assert procs.returncode == 0, procs.stderr
        assert "\talive\techo-host\techo" in procs.stdout
    finally:
        host.stop()
        bus.close()
        bus.transport.close()


def test_library_code_reads_the_settings_when_built_without_them(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("AURATOWN_MODEL_TIMEOUT", "0.5")
    clean_env.setenv("AURATOWN_MODEL_UNIT_BUDGET", "3")
    clean_env.setenv("AURATOWN_DLQ_MAX_AGE", "0")
    pool = GatewayPool()
    assert (pool.timeout, pool.stage_budget, pool.unit_budget) == (0.5, None, 3.0)
    assert GatewayPool(timeout=7).get("openai/x").config.timeout == 7
    assert DeadLetterPolicy.from_settings().max_age is None  # 0: no age limit
    given = Settings(model_timeout=9, dlq_max_len=3)
    assert GatewayPool(settings=given).timeout == 9
    assert DeadLetterPolicy.from_settings(given).max_len == 3
