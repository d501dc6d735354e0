"""The benchmark commands declared for the command line: ``bench aura``, ``bench episodes`` and
``report``; their options and help. What they do is ``deploy.bench_commands``.

Only argparse and the standard library are imported: building the parser stays fast.
"""

from __future__ import annotations

from pathlib import Path

from deploy import arguments, bench_commands, worker_command


def _aura_options(p: arguments.Parser) -> None:
    p.add_argument(
        "--suite",
        default="implicit-v2",
        help="factual, privacy, implicit-v1, implicit-v2, phrasing, phrasing-dev or phrasing-test; several "
        "comma-separated implicit suites run one after the other into OUT/<suite> with one table comparing "
        "them (default: %(default)s)",
    )
    p.add_setting(
        "--reader",
        field="intent_reader",
        choices=arguments.Choices("actors.settings", "INTENT_READERS"),
        metavar="READER",
        help="the offline IntentInferrer's social reader: embedding (the embed extra), cues (no "
        "dependency) or auto, the embedding reader when installed (default: %(default)s)",
    )
    p.add_argument("--conditions", default=None, help="comma-separated (default: every condition)")
    p.add_argument("--seeds", default="42,123,456", help="comma-separated (default: %(default)s)")
    p.add_argument(
        "--workers", type=arguments.positive_int, default=2, help="cells at once (default: %(default)s)"
    )
    p.add_argument(
        "--bus",
        default=None,
        metavar="URL",
        help="answer cells in --workers processes over this Redis (default: threads in this process)",
    )
    p.add_argument("--data", default=None, help="the AURA release's data directory (default: ours)")
    arguments.add_model_options(p, model_help="a litellm model for the pipeline (default: offline)")
    p.add_argument("--judge-model", default=None, help="a litellm model for the judge (default: rules)")
    arguments.add_explore_steps_option(p)
    p.add_argument("--out", default=None, help="run directory (default: runs/SUITE-TIMESTAMP)")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    worker_command.add_remote_workers_option(p)


AURA = arguments.Command(
    name="aura",
    run=bench_commands.bench,
    summary="run an AURA suite: every condition x seed x query, judged, appended to a run directory",
    description="Cells run in parallel threads, are appended to RUN/cells.jsonl as they finish, and "
    "a rerun on the same --out resumes (finished cells are not recomputed). Offline by default.",
    options=_aura_options,
)


def _episodes_options(p: arguments.Parser) -> None:
    p.add_argument("--tasks", default=None, metavar="DIR", help="an episode directory, or a directory of "
                   "them, in pi-Bench's layout (default: the bundled episodes)")  # fmt: skip
    p.add_argument(
        "--runs", type=arguments.positive_int, default=3, help="repetitions (default: %(default)s)"
    )
    p.add_argument("--workers", type=arguments.positive_int, default=1, help="worker processes (default: 1)")
    p.add_argument(
        "--assistants",
        default="builtin,builtin+intent",
        help="comma-separated: builtin, builtin+intent (the AURA IntentFrame step), oracle (each task's "
        "gold path, metadata.oracle), external:ADDRESS (default: %(default)s)",
    )
    arguments.add_model_options(p, model_help="a litellm model for the assistant (default: offline)")
    p.add_argument(
        "--judge-model", default=None, help="a litellm model for the user, its judges and the rubric grader"
    )
    p.add_argument("--bus", default=None, metavar="URL", help="run over this Redis (default: in process)")
    p.add_argument("--namespace", default=None, help="the bus namespace (default: episodes.<run dir name>)")
    p.add_argument(
        "--max-turns", type=arguments.positive_int, default=None, help="override every task's turn limit"
    )
    p.add_argument(
        "--session-timeout",
        type=arguments.positive_seconds,
        default=900.0,
        help="seconds a session may take (default 900)",
    )
    p.add_argument(
        "--apps",
        choices=("builtin", "appworld"),
        default="builtin",
        help="the app backend: our built-in apps, or AppWorld's own in its own process "
        "(`auratown appworld install` first) (default: %(default)s)",
    )
    p.add_argument(
        "--shared-world",
        action="store_true",
        help="with --apps appworld: one world for every unit, never reset (pi-Bench's way); by default "
        "each unit starts from its persona's seed",
    )
    p.add_setting(
        "--appworld-home",
        field="appworld_home",
        metavar="DIR",
        help="where AppWorld is installed (default: %(default)s, else the user's data dir)",
    )
    p.add_argument("--no-ablation", action="store_true", help="skip the without-history runs")
    p.add_argument("--lint", action="store_true", help="only check the task files and list every problem")
    p.add_argument("--out", default=None, help="run directory (default: runs/episodes-TIMESTAMP)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    worker_command.add_remote_workers_option(p)


EPISODES = arguments.Command(
    name="episodes",
    run=bench_commands.episodes,
    summary="run pi-Bench-format episodes: simulated user, assistant, apps, grader; PROC and COMP",
    description="Each episode runs session by session for every assistant and repetition (and, "
    "unless --no-ablation, each dependency group's last task alone, without history). Sessions "
    "are appended to OUT/units/*.jsonl as they finish, per-turn traces to OUT/traces/, and a rerun "
    "on the same --out resumes. Offline (deterministic assistant, user and judges) by default.",
    options=_episodes_options,
)

BENCH = arguments.CommandGroup(
    name="bench",
    summary="run a benchmark suite (see `auratown bench aura -h`)",
    commands=(AURA, EPISODES),
)


def _report_options(p: arguments.Parser) -> None:
    p.add_argument("run_dir", type=Path)


REPORT = arguments.Command(
    name="report",
    run=bench_commands.report,
    summary="write RUN_DIR/report.md (markdown tables) and print it",
    options=_report_options,
)
