"""AppWorld's own venv: where it lives, installing it once, and telling whether it is ready.

AppWorld pins pydantic < 2, fastapi 0.110 and SQLAlchemy 1.4, so it never shares our venv: it gets
one of its own (by default under the user's data directory, not the checkout) and runs in its own
process (``service.py``). A marker file written last says the install finished; a second install
of the same version finds it and does nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from actors.appworld._errors import AppWorldInstallError

if TYPE_CHECKING:
    from actors.settings import Settings

APPWORLD_VERSION = "0.1.3.post1"
"""The AppWorld release we install and test against (its 9 apps and 457 APIs)."""

MARKER = "auratown-appworld.json"


def default_home(settings: Settings | None = None) -> Path:
    """The settings' ``appworld_home`` (``$AURATOWN_APPWORLD_HOME``; None: read them now), else
    ``$XDG_DATA_HOME/auratown/appworld`` (``~/.local/share``)."""
    if settings is None:
        from actors.settings import load_settings

        settings = load_settings()
    explicit = settings.appworld_home
    if explicit:
        return Path(explicit).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data).expanduser() / "auratown" / "appworld"


@dataclass(frozen=True)
class AppWorldInstall:
    """An AppWorld venv: ``home`` holds ``venv/`` and the marker; ``data`` is AppWorld's downloaded
    data root (``appworld download data``), when the user has it."""

    home: Path
    data: Path | None = None

    @property
    def venv(self) -> Path:
        return self.home / "venv"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def marker(self) -> Path:
        return self.home / MARKER

    @property
    def cache(self) -> Path:
        """APPWORLD_CACHE: where ``appworld install`` unpacks its test sources (kept in ``home``)."""
        return self.home / "cache"

    def env(self) -> dict[str, str]:
        """The environment AppWorld's commands and service run with (its root and cache in ``home``)."""
        root = self.data if self.data is not None else self.home / "root"
        return {**os.environ, "APPWORLD_ROOT": str(root), "APPWORLD_CACHE": str(self.cache)}

    def recorded(self) -> dict[str, object] | None:
        """The marker's record of a finished install, or None."""
        try:
            data = json.loads(self.marker.read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def ready(self) -> bool:
        """Installed, of our pinned version, with its python present."""
        record = self.recorded()
        return record is not None and record.get("version") == APPWORLD_VERSION and self.python.exists()

    def require(self) -> AppWorldInstall:
        """This install when ready; else AppWorldInstallError saying how to install it."""
        if not self.ready():
            where = "" if self.home == default_home() else f" --home {self.home}"
            raise AppWorldInstallError(
                f"AppWorld {APPWORLD_VERSION} is not installed at {self.home}: "
                f"run `auratown appworld install{where}`"
            )
        return self.with_data_from_record()

    def with_data_from_record(self) -> AppWorldInstall:
        """This install with the data directory the install recorded, unless one is given."""
        if self.data is not None:
            return self
        record = self.recorded() or {}
        data = record.get("data")
        return AppWorldInstall(self.home, Path(str(data))) if data else self


def check_data_dir(data: Path) -> Path:
    """AppWorld's downloaded data root: a directory with ``data/base_dbs`` (or ``base_dbs``)."""
    if (data / "data" / "base_dbs").is_dir():
        return data
    if (data / "base_dbs").is_dir() and data.name == "data":
        return data.parent
    raise AppWorldInstallError(
        f"--data {data}: not AppWorld's data (no data/base_dbs there; `appworld download data` makes it)"
    )


def _run(cmd: list[str], env: dict[str, str], what: str) -> None:
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise AppWorldInstallError(f"{what} failed (exit {done.returncode}): {tail[0]}")


def install(
    install: AppWorldInstall,
    *,
    python: str | None = None,
    say: Callable[[str], None] = print,
    force: bool = False,
) -> bool:
    """Install AppWorld into ``install.venv`` (venv, pinned ``appworld``, ``appworld install``).
    Returns False when it was already installed (nothing done), True when it installed now."""
    if install.data is not None:
        check_data_dir(install.data)
    if install.ready() and not force:
        record = install.recorded() or {}
        if install.data is not None and str(install.data) != record.get("data"):
            record["data"] = str(install.data)
            install.marker.write_text(json.dumps(record, indent=2) + "\n")
            say(f"AppWorld {APPWORLD_VERSION} already installed at {install.home}; data now {install.data}")
            return False
        say(f"AppWorld {APPWORLD_VERSION} already installed at {install.home}: nothing to do")
        return False
    base = python or sys.executable
    started = time.monotonic()
    install.home.mkdir(parents=True, exist_ok=True)
    install.marker.unlink(missing_ok=True)
    if install.venv.exists():
        shutil.rmtree(install.venv)
    env = install.env()
    say(f"creating AppWorld's venv at {install.venv} ({base})")
    _run([base, "-m", "venv", str(install.venv)], env, "python -m venv")
    say(f"installing appworld=={APPWORLD_VERSION} into it (pydantic 1, fastapi 0.110, SQLAlchemy 1.4)")
    _run(
        [str(install.python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         f"appworld=={APPWORLD_VERSION}"],
        env,
        f"pip install appworld=={APPWORLD_VERSION}",
    )  # fmt: skip
    say("running `appworld install` (unpacks its apps, offline)")
    _run([str(install.venv / "bin" / "appworld"), "install"], env, "appworld install")
    seconds = round(time.monotonic() - started, 1)
    record = {
        "version": APPWORLD_VERSION,
        "python": base,
        "installed": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "seconds": seconds,
        "data": str(install.data) if install.data is not None else None,
    }
    install.marker.write_text(json.dumps(record, indent=2) + "\n")
    world = f"AppWorld's data at {install.data}" if install.data else "seeded worlds (no AppWorld data)"
    say(f"AppWorld {APPWORLD_VERSION} installed at {install.home} in {seconds:g}s; worlds: {world}")
    return True
