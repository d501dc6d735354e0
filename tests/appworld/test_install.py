"""``auratown appworld install``: a venv of AppWorld's own, made once, found again, explained."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import auratown


def test_install_makes_appworlds_own_venv_once_and_a_second_run_does_nothing(tmp_path: Path) -> None:
    home = tmp_path / "aw"
    first = auratown("appworld", "install", "--home", str(home), timeout=600)
    assert first.returncode == 0, first.stderr
    assert "installing appworld==0.1.3.post1" in first.stdout
    assert f"AppWorld 0.1.3.post1 installed at {home}" in first.stdout
    record = json.loads((home / "auratown-appworld.json").read_text())
    assert record["version"] == "0.1.3.post1" and record["data"] is None
    # Its own interpreter, with pydantic 1: never ours.
    assert (home / "venv" / "bin" / "appworld").exists()
    pydantic = (home / "venv" / "lib").glob("python3*/site-packages/pydantic-1.*.dist-info")
    assert list(pydantic)

    again = auratown("appworld", "install", "--home", str(home))
    assert again.returncode == 0
    assert again.stdout.strip() == f"AppWorld 0.1.3.post1 already installed at {home}: nothing to do"

    status = auratown("appworld", "status", "--home", str(home))
    assert status.returncode == 0
    assert json.loads(status.stdout)["version"] == "0.1.3.post1"


def test_bad_requests_get_one_line(tmp_path: Path) -> None:
    missing = auratown("appworld", "status", "--home", str(tmp_path / "none"))
    assert missing.returncode == 1
    assert "not installed" in missing.stdout

    not_data = auratown("appworld", "install", "--home", str(tmp_path / "x"), "--data", str(tmp_path))
    assert not_data.returncode == 2
    assert "not AppWorld's data (no data/base_dbs there" in not_data.stderr
    assert "Traceback" not in not_data.stderr
    assert not (tmp_path / "x").exists()

    serve = auratown("appworld", "serve", "--home", str(tmp_path / "none"))
    assert serve.returncode == 2
    assert serve.stderr.count("\n") == 1 and "auratown appworld install --home" in serve.stderr
