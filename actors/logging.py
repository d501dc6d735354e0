"""structlog configuration: JSON lines in production, readable console output in development."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Literal

import structlog

if TYPE_CHECKING:
    from actors.settings import Settings

Mode = Literal["json", "console"]


def configure_logging(
    mode: Mode | None = None, level: str | int | None = None, *, settings: Settings | None = None
) -> None:
    """Route structlog and stdlib logging (pykka, redis) through one renderer on stderr.

    What is not given comes from ``settings`` (None: read now): ``mode`` from ``log_format``
    (``$AURATOWN_LOG_FORMAT``), else console on a terminal and JSON otherwise; ``level`` from
    ``log_level`` (``$AURATOWN_LOG_LEVEL``). Context bound with structlog.contextvars (message id,
    correlation id, actor address, sim time) appears on every line.
    """
    if mode is None or level is None:
        if settings is None:
            from actors.settings import load_settings

            settings = load_settings()
        mode = mode or settings.log_format or ("console" if sys.stderr.isatty() else "json")
        level = level or settings.log_level
    numeric = logging.getLevelName(level.upper()) if isinstance(level, str) else level
    if not isinstance(numeric, int):
        numeric = logging.INFO
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if mode == "json" else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
