"""Everything that talks to Redis, an LLM or the OS: the bus, the runtime and the actor roles.

As a library it logs nothing unless the application configures logging: structlog goes through
the standard library's ``auratown.*`` loggers, which hold a ``NullHandler`` (the command line, or
an application, calls ``actors.logging.configure_logging`` or its own logging set-up)."""

import logging as _logging

import structlog as _structlog

_logging.getLogger("auratown").addHandler(_logging.NullHandler())
if not _structlog.is_configured():
    _structlog.configure(
        processors=[
            _structlog.contextvars.merge_contextvars,
            _structlog.stdlib.add_log_level,
            # One rendered line as the record's message: an event's own keys (``message``, say)
            # must never collide with a LogRecord's attributes.
            _structlog.processors.JSONRenderer(),
        ],
        logger_factory=_structlog.stdlib.LoggerFactory(),
        wrapper_class=_structlog.stdlib.BoundLogger,
    )
