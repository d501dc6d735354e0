"""Tests that read the AURA paper's released data (``@pytest.mark.aura_release``, tests/conftest.py) skip
without it, saying how to get it, and fail under CI=true, where the release must be there. Each case runs
one marked test in a pytest of its own, pointed at a release directory that does not exist."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support.programs import run_module

MARKED = "tests/unit/test_world_town.py::test_the_aura_release_map_loads_unchanged"


def pytest_without_the_release(absent: Path, *, ci: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}  # the outer run may itself be on CI
    env["AURATOWN_AURA_DATA"] = str(absent)
    if ci:
        env["CI"] = "true"
    return run_module("pytest", "-q", "-p", "no:cacheprovider", MARKED, env=env)


def test_without_the_release_a_marked_test_skips_and_says_how_to_get_it(tmp_path: Path) -> None:
    result = pytest_without_the_release(tmp_path / "absent", ci=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 skipped" in result.stdout
    assert f"not found at {tmp_path / 'absent'}" in result.stdout
    assert "AURATOWN_AURA_DATA" in result.stdout and "../shared/data/aura/SOURCE.md" in result.stdout


def test_under_ci_a_marked_test_without_the_release_fails(tmp_path: Path) -> None:
    result = pytest_without_the_release(tmp_path / "absent", ci=True)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 error" in result.stdout and "skipped" not in result.stdout
    assert f"not found at {tmp_path / 'absent'}" in result.stdout
