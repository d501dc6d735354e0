"""Running a program as a user would: Python source or a module in a fresh interpreter, output captured."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_python(source: str, *, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``source`` run by this venv's Python from the repository's root, fed on stdin."""
    child = [sys.executable, "-"]
    return subprocess.run(
        child, input=source, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )


def run_module(
    module: str, *args: str, env: Mapping[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``python -m module args`` with this venv's Python from the repository's root (``env``: the
    whole environment, when not this process's)."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
