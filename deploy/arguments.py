"""What the command line's parsers share: the parser class, the options several commands take
(``--redis``, ``--namespace``), defaults taken from the settings, and argument types (a bad number
is a one-line argparse error).

Nothing here imports pydantic: building the parser stays fast (``auratown --help``, argument
errors). The settings are read after parsing (``apply_settings``); only a help text imports them,
to list the ``AURATOWN_*`` variables with their defaults.
"""

from __future__ import annotations

import argparse
import importlib
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

if TYPE_CHECKING:
    from actors.settings import Settings

T = TypeVar("T", int, float)


def number(
    convert: Callable[[str], T], what: str, ok: Callable[[T], bool] | None = None, bound: str = ""
) -> Callable[[str], T]:
    """An argparse type: ``convert`` the text, then require ``ok`` (NaN fails any comparison)."""

    def parse(text: str) -> T:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if ok is not None and not ok(value):
            raise argparse.ArgumentTypeError(f"expected {bound}, got {text}")
        return value

    return parse


whole = number(int, "a whole number")
positive_int = number(int, "a whole number", lambda v: v >= 1, "a number >= 1")
non_negative_int = number(int, "a whole number", lambda v: v >= 0, "a number >= 0")
positive_seconds = number(
    float, "a number of seconds", lambda v: v > 0 and not math.isinf(v), "a positive number of seconds"
)
non_negative_float = number(float, "a number", lambda v: v >= 0, "a number >= 0")


def listen_address(text: str) -> tuple[str, int]:
    """An argparse type for ``HOST:PORT``, ``:PORT``, ``PORT`` or ``[V6]:PORT``."""
    from deploy.web.server import parse_address  # stdlib only, but keep start-up minimal

    try:
        return parse_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


DEFAULT_NAMESPACE = "town:main"
SETTINGS_PREFIX = "AURATOWN_"
"""``actors.settings.ENV_PREFIX``, spelled out so that this module imports no pydantic (a test
keeps them equal)."""


@dataclass(frozen=True)
class FromSettings:
    """An option's default that is a ``Settings`` field: ``apply_settings`` puts the value in once
    the settings are read, after parsing. Shown in help as the variable's name."""

    field: str

    def __str__(self) -> str:
        return "$" + SETTINGS_PREFIX + self.field.upper()


_GIVEN_SETTINGS = "_given_settings"


class _StoreSetting(argparse._StoreAction):
    """Stores the option's value, and notes it as the setting ``field``'s value for the command."""

    def __init__(self, *args: Any, field: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.field = field

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: Any = None
    ) -> None:
        super().__call__(parser, namespace, values, option)
        given = namespace.__dict__.setdefault(_GIVEN_SETTINGS, {})
        given[self.field] = values


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose help ends with the ``AURATOWN_*`` variables its options default
    to (the top-level parser, ``settings_fields=None``: every variable), with their defaults.

    Subcommand parsers are made of the same class (argparse makes them of the parent's)."""

    def __init__(self, *args: Any, settings_fields: Sequence[str] | None = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings_fields: list[str] | None = None if settings_fields is None else list(settings_fields)

    def add_setting(self, *flags: str, field: str, **kwargs: Any) -> argparse.Action:
        """An option whose default is the ``Settings`` field ``field``; given, it is that setting
        for the command (``apply_settings`` puts it in ``args.settings``)."""
        self.uses_settings(field)
        return self.add_argument(
            *flags, default=FromSettings(field), action=_StoreSetting, field=field, **kwargs
        )

    def uses_settings(self, *fields: str) -> None:
        """List these settings in the command's help too: what it builds reads them (no option)."""
        if self.settings_fields is not None:
            self.settings_fields.extend(fields)

    def format_help(self) -> str:
        text = super().format_help()
        if self.settings_fields == []:
            return text
        from actors.settings import environment_help

        return f"{text}\n{environment_help(self.settings_fields)}"


DEAD_LETTER_SETTINGS = ("dlq_max_len", "dlq_max_age", "dlq_max_bytes")
"""What a command that hosts actors reads: how its dead letters are kept."""
MODEL_SETTINGS = (
    "model_timeout",
    "model_stage_budget",
    "model_unit_budget",
    "model_max_tokens",
    "model_context_window",
)
"""What a command that may call a model reads: its deadlines and limits (``actors.settings.MODEL_FIELDS``,
spelled out so that this module imports no pydantic; a test keeps them equal)."""


def apply_settings(args: argparse.Namespace, settings: Settings) -> argparse.Namespace:
    """Replace every ``FromSettings`` default left in ``args`` by the settings' value, and keep as
    ``args.settings`` the settings with the options given on the command line in them: what a
    command builds from its settings (gateways, dead-letter policies) obeys its options too."""
    given: dict[str, Any] = vars(args).pop(_GIVEN_SETTINGS, {})
    if given:
        settings = settings.model_copy(update=given)
    args.settings = settings
    for name, value in vars(args).items():
        if isinstance(value, FromSettings):
            setattr(args, name, getattr(settings, value.field))
    return args


@dataclass(frozen=True)
class Command:
    """One ``auratown`` subcommand, declared: its name, the function that runs it, its help, whether
    it takes the bus options (``redis``: ``--redis``/``--namespace``; ``in-process``: the memory bus
    unless ``--redis`` is given) and the function that adds its own options. A command module
    exposes its ``COMMAND``; the command line adds each (``add_to``)."""

    name: str
    run: Callable[[argparse.Namespace], int]
    summary: str
    description: str | None = None
    bus: Literal["redis", "in-process"] | None = None
    options: Callable[[Parser], None] | None = None

    def add_to(self, sub: argparse._SubParsersAction[Parser]) -> Parser:
        """The command's parser, added to ``sub``: its bus options first, then its own."""
        p = sub.add_parser(self.name, help=self.summary, description=self.description or self.summary)
        if self.bus is not None:
            add_bus_options(p, in_process=self.bus == "in-process")
        if self.options is not None:
            self.options(p)
        p.set_defaults(func=self.run)
        return p


@dataclass(frozen=True)
class CommandGroup:
    """A subcommand that only names subcommands of its own (``auratown bench aura|episodes``); the
    one chosen is ``args.<name>_command``."""

    name: str
    summary: str
    commands: tuple[Command, ...]

    def add_to(self, sub: argparse._SubParsersAction[Parser]) -> Parser:
        p = sub.add_parser(self.name, help=self.summary)
        group = p.add_subparsers(dest=f"{self.name}_command", required=True)
        for command in self.commands:
            command.add_to(group)
        return p


BUS_URL_HELP = "bus URL: redis://, rediss://, unix:// (password or ACL user in the URL)"


def add_redis_option(
    parser: Parser, *, in_process: bool = False, flag: str = "--redis", what: str = BUS_URL_HELP
) -> None:
    """``--redis URL``: the bus; ``$AURATOWN_REDIS_URL`` by default, or with ``in_process`` the
    in-process memory bus (``memory://`` may be given too)."""
    if in_process:
        in_memory = f"{what}, or memory:// (default: the in-process memory bus)"
        parser.add_argument(flag, metavar="URL", default=None, help=in_memory)
    else:
        parser.add_setting(flag, field="redis_url", metavar="URL", help=f"{what} (default: %(default)s)")


def add_namespace_option(
    parser: argparse.ArgumentParser, *, what: str = "town or episode namespace", **kwargs: Any
) -> None:
    """``--namespace NS`` (default ``town:main``, unless ``kwargs`` say otherwise)."""
    kwargs.setdefault("default", DEFAULT_NAMESPACE)
    suffix = "" if kwargs.get("required") else " (default: %(default)s)"
    parser.add_argument("--namespace", metavar="NS", help=what + suffix, **kwargs)


def add_bus_options(parser: Parser, *, in_process: bool = False) -> None:
    """``--redis`` and ``--namespace``, as most commands take them."""
    add_redis_option(parser, in_process=in_process)
    add_namespace_option(parser)


def add_visibility_timeout_option(parser: argparse.ArgumentParser, *, whose: str = "a dead one's") -> None:
    """``--visibility-timeout SECONDS``: how long a process's unfinished messages wait for it."""
    parser.add_argument(
        "--visibility-timeout",
        type=positive_seconds,
        default=30.0,
        metavar="SECONDS",
        help=f"seconds before another process takes over {whose} unfinished messages (default: %(default)s)",
    )


def add_explore_steps_option(parser: argparse.ArgumentParser) -> None:
    """``--max-steps N``: how many probe steps the AURA pipeline may explore (``ask``, ``bench aura``)."""
    parser.add_argument("--max-steps", type=non_negative_int, default=3, help="explore_max_steps (default 3)")


def add_model_options(
    parser: Parser,
    *,
    model_help: str = "a litellm model (default: offline)",
    cache_help: str = "cache model answers here",
    timeout_default: float | None = None,
) -> None:
    """``--model``, ``--api-base`` and ``--cache-dir``: which litellm model, where, and its cache;
    ``--max-tokens``, ``--llm-timeout`` and ``--context-window``: the limits every call to it keeps
    (settings: ``fold_options`` puts them in ``args.settings``, which the gateways read).
    ``timeout_default``: a command's own request deadline instead of the settings' one. Its help
    lists every ``MODEL_SETTINGS`` variable."""
    parser.uses_settings(*MODEL_SETTINGS)
    parser.add_argument("--model", default=None, help=model_help)
    parser.add_argument("--api-base", default=None, help="an OpenAI-compatible server's URL")
    parser.add_argument("--cache-dir", type=Path, default=None, help=cache_help)
    parser.add_setting(
        "--max-tokens",
        field="model_max_tokens",
        type=positive_int,
        metavar="N",
        help="output tokens of every model answer, replacing each stage's own cap (default: "
        "%(default)s, else each stage's: the paper's where it gives one)",
    )
    timeout_help = "seconds one model request may take; an abandoned request is cancelled on the server"
    if timeout_default is None:
        parser.add_setting(
            "--llm-timeout",
            field="model_timeout",
            type=positive_seconds,
            metavar="SECONDS",
            help=timeout_help + " (default: %(default)s)",
        )
    else:
        parser.add_argument(
            "--llm-timeout",
            "--model-timeout",
            dest="llm_timeout",
            type=positive_seconds,
            default=timeout_default,
            metavar="SECONDS",
            help=timeout_help + " (default: %(default)s)",
        )
    parser.add_setting(
        "--context-window",
        field="model_context_window",
        type=positive_int,
        metavar="TOKENS",
        help="tokens the model reads and writes in all; prompts are trimmed to fit, recorded (default: "
        "%(default)s, else litellm's model info: give it for a local model, its server's context size)",
    )


class Choices(Sequence[str]):
    """An option's choices named by a constant of a module that building the parser must not import
    (``messages``: pydantic): read the first time they are used, to check a value or write help.
    Give the option a ``metavar``, or argparse lists them as it builds the parser."""

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(getattr(importlib.import_module(self.module), self.name))

    def __getitem__(self, index: Any) -> Any:
        return self.names[index]

    def __len__(self) -> int:
        return len(self.names)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __contains__(self, value: object) -> bool:
        return value in self.names
