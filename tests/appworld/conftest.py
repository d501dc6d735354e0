"""AppWorld in its own venv, for the appworld-backend tests.

``scripts/install-test-deps`` (which the README's test command runs before pytest) installs it
where ``auratown appworld install`` would (``$AURATOWN_APPWORLD_HOME``, else the user's data
directory); the tests only check that it is there. Without it they skip saying how to install it,
except under CI=true, where they fail. (``test_install.py`` tests the installer itself, into a
temporary home.)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.appworld._errors import AppWorldInstallError
from actors.appworld._install import AppWorldInstall, default_home


@pytest.fixture(scope="session")
def appworld_install() -> AppWorldInstall:
    try:
        return AppWorldInstall(default_home()).require()
    except AppWorldInstallError as exc:
        if os.environ.get("CI", "").lower() == "true":
            raise
        pytest.skip(f"{exc} (or scripts/install-test-deps, which the README's test command runs)")


@pytest.fixture(scope="session")
def appworld_python(appworld_install: AppWorldInstall) -> Path:
    """The python of a ready AppWorld venv."""
    return appworld_install.python


@pytest.fixture(scope="session")
def appworld_service(appworld_install: AppWorldInstall) -> Iterator[Any]:
    """One AppWorld service process for the session's read-only uses (its API docs)."""
    from actors.appworld import AppWorldService

    with AppWorldService(appworld_install) as service:
        yield service


@pytest.fixture(scope="session")
def appworld_api_docs(appworld_service: Any) -> list[dict[str, Any]]:
    """AppWorld's own docs of every API, as its service serves them at run time."""
    docs: list[dict[str, Any]] = appworld_service.api_docs()
    return docs
