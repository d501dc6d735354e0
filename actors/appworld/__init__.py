"""AppWorld itself as the episodes' app backend: its own venv, its own process, its own tools.

- ``AppWorldInstall`` / ``install``: AppWorld's venv (pinned ``APPWORLD_VERSION``), installed once.
- ``AppWorldService``: the process running ``service.py`` in that venv, reached over HTTP.
- ``AppWorldApps``: its APIs as episode tools, one world per registry kept in step.
"""

from typing import TYPE_CHECKING, Any

from actors.appworld._errors import (
    AppWorldError,
    AppWorldInstallError,
    AppWorldServiceError,
    AppWorldUnavailable,
)
from actors.appworld._install import APPWORLD_VERSION, AppWorldInstall, check_data_dir, default_home, install
from actors.appworld._service import AppWorldService, CallResult, start_service

if TYPE_CHECKING:
    from actors.appworld._backend import AppWorldApps, world_time


def __getattr__(name: str) -> Any:
    # The backend imports the episode tools; the errors, the installer and the CLI need not.
    if name in ("AppWorldApps", "world_time"):
        from actors.appworld import _backend

        return getattr(_backend, name)
    raise AttributeError(name)


__all__ = [
    "APPWORLD_VERSION",
    "AppWorldApps",
    "AppWorldError",
    "AppWorldInstall",
    "AppWorldInstallError",
    "AppWorldService",
    "AppWorldServiceError",
    "AppWorldUnavailable",
    "CallResult",
    "check_data_dir",
    "default_home",
    "install",
    "start_service",
    "world_time",
]
