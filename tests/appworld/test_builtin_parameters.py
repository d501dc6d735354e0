"""Our built-in apps against AppWorld's own API docs: every tool they serve under an AppWorld name
takes that API's parameters (names, JSON types, required, defaults), and every API's docs read
into a JSON Schema without loss; ``python -m bench.episodes.surface`` says so from the installed
AppWorld and from a saved copy of its docs.

The docs come from the AppWorld service of the session (conftest.py), read at run time: they are
AppWorld's, never committed here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.conftest import ROOT
from world.episodes.apps.appworld_api import AppWorldApi, parameter_mismatches, parse_api_docs
from world.episodes.apps.base import APP_PREFIX
from world.episodes.apps.registry import ALL_TOOLS, APPS

BUILTIN_APP_TOOLS = tuple(t for t in ALL_TOOLS if t.name.startswith(APP_PREFIX))

ALLOWED_MISMATCHES: frozenset[str] = frozenset()
"""Differences from AppWorld we keep on purpose, each with the reason beside it. None today."""


@pytest.fixture(scope="module")
def appworld_apis(appworld_api_docs: list[dict[str, Any]]) -> tuple[AppWorldApi, ...]:
    return parse_api_docs(appworld_api_docs)


def test_every_builtin_app_tool_takes_appworlds_parameters(appworld_apis: tuple[AppWorldApi, ...]) -> None:
    assert BUILTIN_APP_TOOLS, "the built-in apps serve no AppWorld tool"
    mismatches = [
        m for m in parameter_mismatches(BUILTIN_APP_TOOLS, appworld_apis) if m not in ALLOWED_MISMATCHES
    ]
    assert mismatches == []


def test_the_builtin_apps_are_apps_appworld_has(appworld_apis: tuple[AppWorldApi, ...]) -> None:
    appworld_apps = {api.app_name for api in appworld_apis}
    assert {t.app for t in BUILTIN_APP_TOOLS} <= appworld_apps


def test_every_api_of_appworld_reads_into_a_valid_json_schema_with_every_constraint(
    appworld_apis: tuple[AppWorldApi, ...],
) -> None:
    assert len(appworld_apis) > 400  # AppWorld 0.1.3 has 457 APIs in its 9 apps and 2 helpers
    for api in appworld_apis:
        schema = api.input_schema()
        jsonschema.Draft202012Validator.check_schema(schema)
        assert set(schema["required"]) == {p.name for p in api.parameters if p.required}
        for parameter in api.parameters:
            # A constraint the reader cannot put in JSON Schema's words is appended to the text.
            described = schema["properties"][parameter.name]["description"]
            assert described == parameter.description, f"{api.tool_name}.{parameter.name}: {described}"


def test_the_surface_command_finds_no_difference_in_appworlds_docs_read_either_way(
    appworld_api_docs: list[dict[str, Any]], tmp_path: Path
) -> None:
    saved = tmp_path / "api_docs.json"
    saved.write_text(json.dumps(appworld_api_docs), encoding="utf-8")
    # --appworld starts a service of its own from the installed AppWorld, as a user's run does.
    for args in (["--appworld"], ["--docs", str(saved)]):
        done = subprocess.run(
            [sys.executable, "-m", "bench.episodes.surface", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert (done.returncode, done.stdout.splitlines()) == (
            0,
            [f"{len(BUILTIN_APP_TOOLS)} app tools of {', '.join(APPS)}: 0 differences from AppWorld's docs"],
        ), done.stderr
