"""The town's commands declared for the command line: ``run``, ``daemon``, the controls of a running
town (``state``, ``step``, ``inject``, ``pause``, ``resume``, ``clock``, ``speed``, ``export``,
``import``) and ``ask``; their options and help. What they do is ``deploy.town_commands`` and
``deploy.ask_command``.

Only argparse and the standard library are imported: building the parser stays fast.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from deploy import acl_command, arguments, ask_command, metrics_options, town_commands
from deploy.web import command as web_command

# Read from `messages` only when an option needs them: building the parser imports no pydantic.
_INJECTABLE = arguments.Choices("messages.town", "INJECTABLE_KINDS")
_CONDITIONS = arguments.Choices("messages.aura", "CONDITIONS")


def _town_options(p: arguments.Parser) -> None:
    """Which town a command starts (or embeds), and how long its world waits for a decision."""
    p.add_argument(
        "--town",
        default=None,
        metavar="FILE",
        help="town definition JSON (ours, or the AURA release's town_map.json); default: embedded AURATown",
    )
    p.add_argument(
        "--seed",
        type=arguments.whole,
        default=0,
        help="the town's seed for a new town (default: %(default)s)",
    )
    p.add_argument(
        "--decision-timeout",
        type=arguments.positive_seconds,
        default=2.0,
        help="seconds the world waits for an agent's decision (default: %(default)s); with --mind llm "
        "the model has that long to answer, so a slow local model needs more (e.g. 60)",
    )


def _mind_options(p: arguments.Parser, *, model_help: str, cache_help: str) -> None:
    """``--mind`` and the model the minds use with ``--mind llm``."""
    p.add_argument(
        "--mind",
        choices=("schedule", "llm"),
        default="schedule",
        help="town agents' minds: the seeded schedule, or a model via --model: it chooses actions, "
        "rates memories, words reflections and conversations, each falling back to the schedule's "
        "answer, counted (default: %(default)s)",
    )
    arguments.add_model_options(p, model_help=model_help, cache_help=cache_help)


def _run_options(p: arguments.Parser) -> None:
    _town_options(p)
    p.uses_settings(*arguments.DEAD_LETTER_SETTINGS)
    p.add_argument(
        "--ticks", type=arguments.positive_int, default=35, help="ticks to run (default: a day, 35)"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the final state and digests (and the minds' figures) as JSON",
    )
    _mind_options(
        p,
        model_help="with --mind llm: a litellm model, e.g. openai/NAME with --api-base for a local server",
        cache_help="cache the minds' model answers here (default: on the bus, for this run only)",
    )


RUN = arguments.Command(
    name="run",
    run=town_commands.run,
    summary="run AURATown for a day, every role in this process (embedded memory bus by default)",
    description="Run the town's clock, world and agents in this process for --ticks ticks and print each "
    "tick and the final public and private state. With --mind llm --model M the agents' minds ask the "
    "model, and the run ends with what it answered and what fell back, by stage, reason and agent.",
    bus="in-process",
    options=_run_options,
)


def _daemon_options(p: arguments.Parser) -> None:
    _town_options(p)
    p.add_argument(
        "--speed",
        type=arguments.non_negative_float,
        default=1.0,
        help="ticks per second for a new town (0: as fast as possible; default %(default)s)",
    )
    p.add_argument("--paused", action="store_true", help="a new town starts paused (use `auratown step`)")
    p.add_argument(
        "--roles",
        default="clock,world,agents,registry,env",
        help="comma-separated roles to host here: clock, world, agents, registry, env (default: all)",
    )
    p.add_argument(
        "--agents",
        default=None,
        metavar="NAMES",
        help="with the agents role: only these agents (comma-separated names or slugs)",
    )
    arguments.add_visibility_timeout_option(p)
    p.uses_settings(*arguments.DEAD_LETTER_SETTINGS, "intent_reader")
    p.add_argument(
        "--pool-size",
        type=arguments.positive_int,
        default=None,
        help="worker threads shared by the agents (default 4; with --mind llm, one per agent)",
    )
    _mind_options(
        p,
        model_help="a litellm model for env (and for the minds, with --mind llm); default: offline",
        cache_help="env: cache model answers here",
    )
    metrics_options.add_metrics_options(p)
    web_command.add_http_options(p)
    acl_command.add_daemon_options(p)


DAEMON = arguments.Command(
    name="daemon",
    run=town_commands.daemon,
    summary="host a persistent town (all roles, or --roles) until stopped",
    description="Host the town's actors until SIGTERM/SIGINT. On Redis the town's state and events "
    "persist, and a restart (even after kill -9) resumes where it was. Without --redis the town runs "
    "in this process on the memory bus.",
    bus="in-process",
    options=_daemon_options,
)


def _control(
    name: str,
    run: Callable[[argparse.Namespace], int],
    summary: str,
    options: Callable[[arguments.Parser], None] | None = None,
) -> arguments.Command:
    """A command to a running town on Redis: it waits ``--timeout`` seconds for the town's answer."""

    def control_options(p: arguments.Parser) -> None:
        p.add_argument(
            "--timeout", type=arguments.positive_seconds, default=10.0, help="seconds to wait for an answer"
        )
        if options is not None:
            options(p)

    return arguments.Command(name=name, run=run, summary=summary, bus="redis", options=control_options)


def _state_options(p: arguments.Parser) -> None:
    p.add_argument("--agent", default=None, metavar="NAME", help="only this agent (name or slug)")
    p.add_argument("--private", action="store_true", help="include private state and beliefs")
    p.add_argument("--events", type=arguments.non_negative_int, default=10, help="recent events to show")
    p.add_argument("--json", action="store_true")


def _step_options(p: arguments.Parser) -> None:
    p.add_argument("count", type=arguments.positive_int, nargs="?", default=1)
    p.add_argument("--no-wait", action="store_true", help="return once the clock accepted the steps")
    p.add_argument(
        "--wait", type=arguments.positive_seconds, default=300.0, help="seconds to wait for the last tick"
    )


def _inject_options(p: arguments.Parser) -> None:
    p.add_argument("kind", choices=_INJECTABLE, metavar="KIND", help="event kind: %(choices)s")
    p.add_argument("description", help="what happened, e.g. 'two vendors argue loudly'")
    p.add_argument("--location", default=None, help="where (a location name); omit for a town-wide event")
    p.add_argument("--participants", default=None, metavar="NAMES", help="agents involved (comma-separated)")


def _speed_options(p: arguments.Parser) -> None:
    p.add_argument(
        "ticks_per_second",
        type=arguments.non_negative_float,
        help="ticks per second (0: as fast as possible)",
    )


def _export_options(p: arguments.Parser) -> None:
    p.add_argument("file", help="snapshot file to write (JSON)")


def _import_options(p: arguments.Parser) -> None:
    p.add_argument("file", help="snapshot file written by `auratown export`")


CONTROLS = (
    _control(
        "state",
        town_commands.state,
        "print the town's public state (and private state with --private)",
        _state_options,
    ),
    _control(
        "step",
        town_commands.step,
        "run N more ticks now (even while paused) and wait for them",
        _step_options,
    ),
    _control("inject", town_commands.inject, "log an environment event in the town now", _inject_options),
    _control("pause", town_commands.pause, "pause the town's clock"),
    _control("resume", town_commands.resume, "resume the town's clock"),
    _control("clock", town_commands.clock_status, "print the clock's status"),
    _control("speed", town_commands.speed, "set the clock's speed", _speed_options),
    _control(
        "export",
        town_commands.export,
        "write a snapshot of the whole town (world and agents' minds) to a file",
        _export_options,
    ),
    _control(
        "import",
        town_commands.import_,
        "fork a town: load a snapshot file into a new namespace",
        _import_options,
    ),
)


def _ask_options(p: arguments.Parser) -> None:
    _town_options(p)
    p.add_argument("query", help="the question, e.g. 'Where is Lin Wei?'")
    p.add_argument("--as", dest="asker", default="Zhang Hao", help="who asks (default: %(default)s)")
    p.add_argument(
        "--condition",
        choices=_CONDITIONS,
        default="aura_intent",
        metavar="CONDITION",
        help="which pipeline answers: %(choices)s (default: %(default)s)",
    )
    p.add_argument("--registry", choices=("agent_state", "environment"), default="agent_state")
    arguments.add_explore_steps_option(p)
    arguments.add_model_options(p, timeout_default=10.0)
    p.uses_settings("intent_reader")
    p.add_argument(
        "--model-budget",
        type=arguments.positive_seconds,
        default=30.0,
        help="embedded: seconds all model calls of the question may take; then each stage left answers "
        "offline, recorded as a fallback (default 30)",
    )
    p.add_argument(
        "--tick",
        type=arguments.non_negative_int,
        default=9,
        help="embedded: ticks to run first (default 9: the town as of 10:00)",
    )
    p.add_argument(
        "--timeout", type=arguments.positive_seconds, default=60.0, help="seconds to wait for the answer"
    )
    p.add_argument(
        "--remember",
        action="store_true",
        help="with --redis: log the exchange as an event the asker perceives (default: read-only)",
    )
    p.add_argument("--json", action="store_true")


ASK = arguments.Command(
    name="ask",
    run=ask_command.ask,
    summary="ask the AURA environment agent a question (an embedded town, or a daemon with --redis)",
    description="Infer the implicit need behind the question (IntentFrame), probe the town within the "
    "gap's budget and answer. Prints the answer, the IntentFrame, the probe trace, alerts and usage. "
    "Offline (heuristic, no model) unless --model names a litellm model.",
    bus="in-process",
    options=_ask_options,
)

COMMANDS = (RUN, DAEMON, *CONTROLS, ASK)
"""In the order ``auratown --help`` lists them."""
