"""What can go wrong with AppWorld, each with a one-line message."""

from __future__ import annotations


class AppWorldError(RuntimeError):
    """Anything that keeps AppWorld from serving; the message says why in one line."""


class AppWorldInstallError(AppWorldError):
    """AppWorld could not be installed or is not installed; the message says why in one line."""


class AppWorldUnavailable(AppWorldError):
    """The AppWorld process is not there (never started, died, or stopped answering)."""


class AppWorldServiceError(AppWorldError):
    """The AppWorld service refused a request; the message is its one-line reason."""
