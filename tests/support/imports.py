"""What running some code loads, seen from a fresh interpreter (the test's own has loaded
everything)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def modules_loaded_by(code: str, watched: tuple[str, ...]) -> list[str]:
    """The modules of ``watched`` that are loaded once ``code`` has run in a new interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {watched!r} if m in sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    loaded: list[str] = json.loads(result.stdout)
    return loaded
