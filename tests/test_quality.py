"""The code base stays ruff- and mypy-clean, the README opens with its two commands, the CLI starts
fast (the README's examples run in tests/test_readme.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.imports import modules_loaded_by

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


def test_ruff_is_clean() -> None:
    result = run(str(BIN / "ruff"), "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_is_clean() -> None:
    result = run(str(BIN / "mypy"))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_readme_opens_with_the_run_and_test_commands() -> None:
    head = (ROOT / "README.md").read_text().splitlines()[:8]
    block = "\n".join(head)
    assert "auratown run" in block
    command = (
        "python3 -m venv .venv && .venv/bin/pip install -e '.[test,embed]' && scripts/install-test-deps"
        " && .venv/bin/python -m pytest"
    )
    assert command in block
    assert command in (ROOT / ".ci" / "run").read_text()  # CI runs the README's very test command


def test_the_cli_does_not_import_litellm_or_redis_to_start() -> None:
    code = "from deploy import cli; cli.build_parser()"
    assert modules_loaded_by(code, ("litellm", "redis", "pydantic")) == []
