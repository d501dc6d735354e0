"""Running a program as a user would: Python source in a fresh interpreter, output captured."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_python(source: str, *, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``source`` run by this venv's Python from the repository's root, fed on stdin."""
    child = [sys.executable, "-"]
    return subprocess.run(
        child, input=source, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )
