"""The ``auratown`` command line.

Only argparse is imported to build the parser; each command imports what it needs, so
``auratown --help`` and argument errors answer at once (litellm in particular is never imported
here). ``main`` then reads the settings (every ``AURATOWN_*`` variable, ``actors.settings``) once,
fills the options' defaults from them and gives them to the command as ``args.settings``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from deploy import (
    acl_command,
    appworld_command,
    arguments,
    ask_command,
    attach_command,
    bench_commands,
    commands,
    dlq_command,
    mcp_command,
    metrics_options,
    town_commands,
    worker_command,
)
from deploy.web import command as web_command

if TYPE_CHECKING:
    from actors.settings import Settings

_int = arguments.whole
_positive_int = arguments.positive_int
_non_negative_int = arguments.non_negative_int
_positive_float = arguments.positive_seconds
_non_negative_float = arguments.non_negative_float


# Read from `messages` only when an option needs them: building the parser imports no pydantic.
_INJECTABLE = arguments.Choices("messages.town", "INJECTABLE_KINDS")
_CONDITIONS = arguments.Choices("messages.aura", "CONDITIONS")


def _town_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--town",
        default=None,
        metavar="FILE",
        help="town definition JSON (ours, or the AURA release's town_map.json); default: embedded AURATown",
    )
    p.add_argument(
        "--seed", type=_int, default=0, help="the town's seed for a new town (default: %(default)s)"
    )
    p.add_argument(
        "--decision-timeout",
        type=_positive_float,
        default=2.0,
        help="seconds the world waits for an agent's decision (default: %(default)s)",
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("auratown")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = arguments.Parser(
        prog="auratown",
        description="AURA Town: an actor framework for situated and proactive LLM agents over Redis Streams.",
        settings_fields=None,  # its help lists every AURATOWN_* variable
    )
    parser.add_argument("--version", action="version", version=f"auratown {_version()}")
    parser.add_setting(
        "--log-format",
        field="log_format",
        choices=("console", "json"),
        help="log rendering (default: %(default)s, else console on a terminal, else JSON lines)",
    )
    parser.add_setting(
        "--log-level",
        field="log_level",
        type=str.upper,
        metavar="LEVEL",
        choices=arguments.Choices("actors.settings", "LOG_LEVELS"),
        help="%(choices)s (default: %(default)s)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    check = arguments.Command(
        name="selfcheck",
        run=commands.run,
        summary="start a host on the bus and check the runtime end to end (embedded memory bus by default)",
        description="Start a host with the echo service, send it asks and a topic message, and print what "
        "the runtime measured. With --serve, keep serving until SIGTERM/SIGINT.",
        bus="in-process",
    ).add_to(sub)
    check.uses_settings(*arguments.DEAD_LETTER_SETTINGS)
    check.add_argument("--asks", type=_positive_int, default=200, help="asks to send (default: %(default)s)")
    check.add_argument("--serve", action="store_true", help="keep serving the echo address until stopped")
    check.add_argument("--json", action="store_true", help="print the summary as JSON")

    run = arguments.Command(
        name="run",
        run=town_commands.run,
        summary="run AURATown for a day, every role in this process (embedded memory bus by default)",
        description="Run the town's clock, world and agents in this process for --ticks ticks and print each "
        "tick and the final public and private state.",
        bus="in-process",
    ).add_to(sub)
    _town_options(run)
    run.uses_settings(*arguments.DEAD_LETTER_SETTINGS)
    run.add_argument("--ticks", type=_positive_int, default=35, help="ticks to run (default: a day, 35)")
    run.add_argument("--json", action="store_true", help="print the final state and digests as JSON")

    daemon = arguments.Command(
        name="daemon",
        run=town_commands.daemon,
        summary="host a persistent town (all roles, or --roles) until stopped",
        description="Host the town's actors until SIGTERM/SIGINT. On Redis the town's state and events "
        "persist, and a restart (even after kill -9) resumes where it was. Without --redis the town runs "
        "in this process on the memory bus.",
        bus="in-process",
    ).add_to(sub)
    _town_options(daemon)
    daemon.add_argument(
        "--speed",
        type=_non_negative_float,
        default=1.0,
        help="ticks per second for a new town (0: as fast as possible; default %(default)s)",
    )
    daemon.add_argument(
        "--paused", action="store_true", help="a new town starts paused (use `auratown step`)"
    )
    daemon.add_argument(
        "--roles",
        default="clock,world,agents,registry,env",
        help="comma-separated roles to host here: clock, world, agents, registry, env (default: all)",
    )
    daemon.add_argument(
        "--agents",
        default=None,
        metavar="NAMES",
        help="with the agents role: only these agents (comma-separated names or slugs)",
    )
    arguments.add_visibility_timeout_option(daemon)
    daemon.uses_settings(*arguments.DEAD_LETTER_SETTINGS, *arguments.MODEL_SETTINGS, "intent_reader")
    daemon.add_argument(
        "--mind",
        choices=("schedule", "llm"),
        default="schedule",
        help="town agents' minds: the seeded schedule, or a model via --model (default: %(default)s)",
    )
    daemon.add_argument(
        "--pool-size",
        type=_positive_int,
        default=None,
        help="worker threads shared by the agents (default 4; with --mind llm, one per agent)",
    )
    arguments.add_model_options(
        daemon,
        model_help="a litellm model for env (and for the minds, with --mind llm); default: offline",
        cache_help="env: cache model answers here",
    )
    metrics_options.add_metrics_options(daemon)
    web_command.add_http_options(daemon)
    acl_command.add_daemon_options(daemon)

    def control(name: str, help_text: str, func: Callable[[argparse.Namespace], int]) -> arguments.Parser:
        p = arguments.Command(name=name, run=func, summary=help_text, bus="redis").add_to(sub)
        p.add_argument("--timeout", type=_positive_float, default=10.0, help="seconds to wait for an answer")
        return p

    st = control(
        "state", "print the town's public state (and private state with --private)", town_commands.state
    )
    st.add_argument("--agent", default=None, metavar="NAME", help="only this agent (name or slug)")
    st.add_argument("--private", action="store_true", help="include private state and beliefs")
    st.add_argument("--events", type=_non_negative_int, default=10, help="recent events to show")
    st.add_argument("--json", action="store_true")

    stp = control("step", "run N more ticks now (even while paused) and wait for them", town_commands.step)
    stp.add_argument("count", type=_positive_int, nargs="?", default=1)
    stp.add_argument("--no-wait", action="store_true", help="return once the clock accepted the steps")
    stp.add_argument("--wait", type=_positive_float, default=300.0, help="seconds to wait for the last tick")

    inj = control("inject", "log an environment event in the town now", town_commands.inject)
    inj.add_argument("kind", choices=_INJECTABLE, metavar="KIND", help="event kind: %(choices)s")
    inj.add_argument("description", help="what happened, e.g. 'two vendors argue loudly'")
    inj.add_argument("--location", default=None, help="where (a location name); omit for a town-wide event")
    inj.add_argument(
        "--participants", default=None, metavar="NAMES", help="agents involved (comma-separated)"
    )

    control("pause", "pause the town's clock", town_commands.pause)
    control("resume", "resume the town's clock", town_commands.resume)
    control("clock", "print the clock's status", town_commands.clock_status)
    spd = control("speed", "set the clock's speed", town_commands.speed)
    spd.add_argument(
        "ticks_per_second", type=_non_negative_float, help="ticks per second (0: as fast as possible)"
    )

    exp = control(
        "export",
        "write a snapshot of the whole town (world and agents' minds) to a file",
        town_commands.export,
    )
    exp.add_argument("file", help="snapshot file to write (JSON)")
    imp = control("import", "fork a town: load a snapshot file into a new namespace", town_commands.import_)
    imp.add_argument("file", help="snapshot file written by `auratown export`")

    ask = arguments.Command(
        name="ask",
        run=ask_command.ask,
        summary="ask the AURA environment agent a question (an embedded town, or a daemon with --redis)",
        description="Infer the implicit need behind the question (IntentFrame), probe the town within the "
        "gap's budget and answer. Prints the answer, the IntentFrame, the probe trace, alerts and usage. "
        "Offline (heuristic, no model) unless --model names a litellm model.",
        bus="in-process",
    ).add_to(sub)
    _town_options(ask)
    ask.add_argument("query", help="the question, e.g. 'Where is Lin Wei?'")
    ask.add_argument("--as", dest="asker", default="Zhang Hao", help="who asks (default: %(default)s)")
    ask.add_argument(
        "--condition",
        choices=_CONDITIONS,
        default="aura_intent",
        metavar="CONDITION",
        help="which pipeline answers: %(choices)s (default: %(default)s)",
    )
    ask.add_argument("--registry", choices=("agent_state", "environment"), default="agent_state")
    ask.add_argument("--max-steps", type=_non_negative_int, default=3, help="explore_max_steps (default 3)")
    arguments.add_model_options(ask)
    ask.uses_settings(*arguments.MODEL_SETTINGS, "intent_reader")
    ask.add_argument(
        "--model-timeout",
        type=_positive_float,
        default=10.0,
        help="embedded: seconds per model request (default 10)",
    )
    ask.add_argument(
        "--model-budget",
        type=_positive_float,
        default=30.0,
        help="embedded: seconds all model calls of the question may take; then each stage left answers "
        "offline, recorded as a fallback (default 30)",
    )
    ask.add_argument(
        "--tick",
        type=_non_negative_int,
        default=9,
        help="embedded: ticks to run first (default 9: the town as of 10:00)",
    )
    ask.add_argument("--timeout", type=_positive_float, default=60.0, help="seconds to wait for the answer")
    ask.add_argument(
        "--remember",
        action="store_true",
        help="with --redis: log the exchange as an event the asker perceives (default: read-only)",
    )
    ask.add_argument("--json", action="store_true")

    bench = sub.add_parser("bench", help="run a benchmark suite (see `auratown bench aura -h`)")
    bench_sub = bench.add_subparsers(dest="bench_command", required=True)
    aura = bench_sub.add_parser(
        "aura",
        help="run an AURA suite: every condition x seed x query, judged, appended to a run directory",
        description="Cells run in parallel threads, are appended to RUN/cells.jsonl as they finish, and "
        "a rerun on the same --out resumes (finished cells are not recomputed). Offline by default.",
    )
    aura.add_argument(
        "--suite",
        default="implicit-v2",
        help="factual, privacy, implicit-v1, implicit-v2, phrasing, phrasing-dev or phrasing-test; several "
        "comma-separated implicit suites run one after the other into OUT/<suite> with one table comparing "
        "them (default: %(default)s)",
    )
    aura.add_setting(
        "--reader",
        field="intent_reader",
        choices=arguments.Choices("actors.settings", "INTENT_READERS"),
        metavar="READER",
        help="the offline IntentInferrer's social reader: embedding (the embed extra), cues (no "
        "dependency) or auto, the embedding reader when installed (default: %(default)s)",
    )
    aura.add_argument("--conditions", default=None, help="comma-separated (default: every condition)")
    aura.add_argument("--seeds", default="42,123,456", help="comma-separated (default: %(default)s)")
    aura.add_argument("--workers", type=_positive_int, default=2, help="cells at once (default: %(default)s)")
    aura.add_argument(
        "--bus",
        default=None,
        metavar="URL",
        help="answer cells in --workers processes over this Redis (default: threads in this process)",
    )
    aura.add_argument("--data", default=None, help="the AURA release's data directory (default: ours)")
    arguments.add_model_options(aura, model_help="a litellm model for the pipeline (default: offline)")
    aura.uses_settings(*arguments.MODEL_SETTINGS)
    aura.add_argument("--judge-model", default=None, help="a litellm model for the judge (default: rules)")
    aura.add_argument("--max-steps", type=_non_negative_int, default=3, help="explore_max_steps (default 3)")
    aura.add_argument("--out", default=None, help="run directory (default: runs/SUITE-TIMESTAMP)")
    aura.add_argument("--quiet", action="store_true", help="no progress line")
    worker_command.add_remote_workers_option(aura)
    aura.set_defaults(func=bench_commands.bench)
    eps = bench_sub.add_parser(
        "episodes",
        help="run pi-Bench-format episodes: simulated user, assistant, apps, grader; PROC and COMP",
        description="Each episode runs session by session for every assistant and repetition (and, "
        "unless --no-ablation, each dependency group's last task alone, without history). Sessions "
        "are appended to OUT/units/*.jsonl as they finish, per-turn traces to OUT/traces/, and a rerun "
        "on the same --out resumes. Offline (deterministic assistant, user and judges) by default.",
    )
    eps.add_argument("--tasks", default=None, metavar="DIR", help="an episode directory, or a directory of "
                     "them, in pi-Bench's layout (default: the bundled episodes)")  # fmt: skip
    eps.add_argument("--runs", type=_positive_int, default=3, help="repetitions (default: %(default)s)")
    eps.add_argument("--workers", type=_positive_int, default=1, help="worker processes (default: 1)")
    eps.add_argument(
        "--assistants",
        default="builtin,builtin+intent",
        help="comma-separated: builtin, builtin+intent (the AURA IntentFrame step), oracle (each task's "
        "gold path, metadata.oracle), external:ADDRESS (default: %(default)s)",
    )
    arguments.add_model_options(eps, model_help="a litellm model for the assistant (default: offline)")
    eps.uses_settings(*arguments.MODEL_SETTINGS)
    eps.add_argument(
        "--judge-model", default=None, help="a litellm model for the user, its judges and the rubric grader"
    )
    eps.add_argument("--bus", default=None, metavar="URL", help="run over this Redis (default: in process)")
    eps.add_argument("--namespace", default=None, help="the bus namespace (default: episodes.<run dir name>)")
    eps.add_argument("--max-turns", type=_positive_int, default=None, help="override every task's turn limit")
    eps.add_argument(
        "--max-tokens", type=_positive_int, default=None, help="cap every model answer (small local models)"
    )
    eps.add_argument(
        "--session-timeout",
        type=_positive_float,
        default=900.0,
        help="seconds a session may take (default 900)",
    )
    eps.add_argument(
        "--apps",
        choices=("builtin", "appworld"),
        default="builtin",
        help="the app backend: our built-in apps, or AppWorld's own in its own process "
        "(`auratown appworld install` first) (default: %(default)s)",
    )
    eps.add_argument(
        "--shared-world",
        action="store_true",
        help="with --apps appworld: one world for every unit, never reset (pi-Bench's way); by default "
        "each unit starts from its persona's seed",
    )
    eps.add_setting(
        "--appworld-home",
        field="appworld_home",
        metavar="DIR",
        help="where AppWorld is installed (default: %(default)s, else the user's data dir)",
    )
    eps.add_argument("--no-ablation", action="store_true", help="skip the without-history runs")
    eps.add_argument("--lint", action="store_true", help="only check the task files and list every problem")
    eps.add_argument("--out", default=None, help="run directory (default: runs/episodes-TIMESTAMP)")
    eps.add_argument("--quiet", action="store_true", help="no progress lines")
    worker_command.add_remote_workers_option(eps)
    eps.set_defaults(func=bench_commands.episodes)
    rep = sub.add_parser("report", help="write RUN_DIR/report.md (markdown tables) and print it")
    rep.add_argument("run_dir", type=Path)
    rep.set_defaults(func=bench_commands.report)

    schema = sub.add_parser("schema", help="write the JSON Schema of the envelope and every message")
    schema.add_argument("--out", required=True, metavar="DIR", help="directory to write *.json into")
    schema.set_defaults(func=commands.schema)

    ping = arguments.Command(
        name="ping",
        run=commands.ping,
        summary="ask an address for a pong and print the round trip",
        bus="redis",
    ).add_to(sub)
    ping.add_argument("address", nargs="?", default="echo", help="address to ping (default: %(default)s)")
    ping.add_argument("--count", type=_positive_int, default=3)
    ping.add_argument("--timeout", type=_positive_float, default=5.0, help="seconds per ask")

    processes = arguments.Command(
        name="processes",
        run=commands.processes,
        summary="list the processes present on a namespace",
        bus="redis",
    )
    for command in (
        processes,
        attach_command.COMMAND,
        appworld_command.COMMAND,
        dlq_command.COMMAND,
        web_command.COMMAND,
        acl_command.COMMAND,
        worker_command.COMMAND,
        mcp_command.COMMAND,
    ):
        command.add_to(sub)
    return parser


def parse_args(argv: Sequence[str] | None = None, settings: Settings | None = None) -> argparse.Namespace:
    """The command line parsed, the defaults that are settings filled in from ``settings`` (None:
    read them now) and kept as ``args.settings``; ``SettingsError`` for a bad variable."""
    args = build_parser().parse_args(argv)
    if settings is None:
        from actors.settings import load_settings

        settings = load_settings()
    args.settings = settings
    return arguments.apply_settings(args, settings)


def main(argv: Sequence[str] | None = None) -> int:
    from actors.settings import SettingsError

    try:
        args = parse_args(argv)
    except SettingsError as exc:
        print(f"auratown: error: {exc}", file=sys.stderr)
        return 2
    from actors.logging import configure_logging

    configure_logging(args.log_format, args.log_level, settings=args.settings)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except commands.UserError as exc:
        print(f"auratown {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (``auratown ask ... | head``): not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
