"""``python -m bench.episodes.surface``: our built-in apps against AppWorld's API docs from the
command line. The docs here are written from our own tools (AppWorld's are never committed; the
run against AppWorld's real docs is in tests/appworld/test_builtin_parameters.py), then drifted.

Exit codes: 0 no difference, 1 differences (one line each, then a count), 2 docs unreadable (one
line on stderr).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.episodes.surface import main
from tests.support.programs import run_module
from world.episodes.apps.appworld_api import json_type
from world.episodes.apps.base import EpisodeTool
from world.episodes.apps.registry import ALL_TOOLS, APPS

APP_TOOLS = [t for t in ALL_TOOLS if t.app is not None]


def appworld_entry(tool: EpisodeTool[Any]) -> dict[str, Any]:
    """The entry AppWorld's standard docs give an API that takes exactly what ``tool`` takes."""
    schema = tool.spec.parameters()
    required = set(schema.get("required", []))
    app, api = tool.api.split("__", 1)
    return {
        "app_name": app,
        "api_name": api,
        "path": f"/{app}/{api}",
        "method": "GET",
        "description": tool.description,
        "parameters": [
            {
                "name": name,
                "type": json_type(prop, schema).replace("array[", "list["),
                "required": name in required,
                "description": "",
                "default": None if name in required else prop.get("default"),
                "constraints": [],
            }
            for name, prop in schema.get("properties", {}).items()
        ],
        "response_schemas": {},
    }


@pytest.fixture
def docs() -> list[dict[str, Any]]:
    return [appworld_entry(t) for t in APP_TOOLS]


def write(tmp_path: Path, content: Any) -> Path:
    path = tmp_path / "api_docs.json"
    path.write_text(json.dumps(content) if not isinstance(content, str) else content, encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], list[str]]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


def summary(apps: list[str], differences: int) -> str:
    tools = sum(1 for t in APP_TOOLS if t.app in apps)
    return f"{tools} app tools of {', '.join(apps)}: {differences} differences from AppWorld's docs"


def test_docs_that_agree_with_every_app_tool_exit_0(
    tmp_path: Path, docs: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "--docs", str(write(tmp_path, docs)))
    assert (code, out, err) == (0, [summary(list(APPS), 0)], [])


def test_docs_saved_app_by_app_are_read_as_the_flat_list(
    tmp_path: Path, docs: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    by_app: dict[str, list[dict[str, Any]]] = {}
    for entry in docs:
        by_app.setdefault(entry["app_name"], []).append(entry)
    code, out, _ = run(capsys, "--docs", str(write(tmp_path, by_app)))
    assert (code, out) == (0, [summary(list(APPS), 0)])


def drift(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """AppWorld's docs changed under two of our amazon tools: a parameter's type, an API gone."""
    drifted = [e for e in docs if (e["app_name"], e["api_name"]) != ("amazon", "show_cart")]
    product = next(e for e in drifted if (e["app_name"], e["api_name"]) == ("amazon", "show_product"))
    next(p for p in product["parameters"] if p["name"] == "product_id")["type"] = "string"
    return drifted


def test_each_difference_is_a_line_and_they_exit_1(
    tmp_path: Path, docs: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "--docs", str(write(tmp_path, drift(docs))))
    assert code == 1
    assert sorted(out[:-1]) == [
        "mcp_appworld_amazon__show_cart: AppWorld has no API of this name",
        "mcp_appworld_amazon__show_product: parameter product_id is integer, AppWorld's is string",
    ]
    assert out[-1] == summary(list(APPS), 2)


def test_app_compares_only_the_tools_of_the_apps_named(
    tmp_path: Path, docs: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(write(tmp_path, drift(docs)))
    assert run(capsys, "--docs", path, "--app", "gmail", "--app", "phone") == (
        0,
        [summary(["gmail", "phone"], 0)],
        [],
    )
    code, out, _ = run(capsys, "--docs", path, "--app", "amazon")
    assert (code, len(out), out[-1]) == (1, 3, summary(["amazon"], 2))


def test_an_app_we_do_not_serve_is_a_usage_error(tmp_path: Path, docs: list[dict[str, Any]]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--docs", str(write(tmp_path, docs)), "--app", "amazn"])
    assert exit_.value.code == 2


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "cannot read {path}: No such file or directory"),
        ("{not json", "{path} is not JSON: "),
        ("3", "{path}: API docs are a list of entries or {{app: [entries]}}, not int"),
        (
            [{"app_name": "amazon", "api_name": "show_product"}],
            "{path}: API docs entry 0 (amazon.show_product): path: Field required",
        ),
        (
            {"amazon": [{"app_name": "gmail", "api_name": "show_product"}]},
            "{path}: API docs of app 'amazon', entry 0: app_name is 'gmail', under app 'amazon'",
        ),
    ],
)
def test_docs_that_cannot_be_read_exit_2_with_one_line_saying_why(
    tmp_path: Path, content: Any, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "api_docs.json" if content is None else write(tmp_path, content)
    code, out, err = run(capsys, "--docs", str(path))
    assert (code, out, len(err)) == (2, [], 1)
    assert err[0].startswith(f"surface: {says.format(path=path)}")


def test_appworld_not_installed_exits_2_saying_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AURATOWN_APPWORLD_HOME", str(tmp_path / "nowhere"))
    code, out, err = run(capsys, "--appworld")
    assert (code, out, len(err)) == (2, [], 1)
    assert f"is not installed at {tmp_path / 'nowhere'}: run `auratown appworld install`" in err[0]


def test_docs_and_appworld_are_one_or_the_other(tmp_path: Path, docs: list[dict[str, Any]]) -> None:
    for args in ([], ["--docs", str(write(tmp_path, docs)), "--appworld"]):
        with pytest.raises(SystemExit) as exit_:
            main(args)
        assert exit_.value.code == 2


def test_the_module_runs_as_a_command(tmp_path: Path, docs: list[dict[str, Any]]) -> None:
    done = run_module("bench.episodes.surface", "--docs", str(write(tmp_path, drift(docs))), timeout=60)
    assert done.returncode == 1
    assert done.stdout.splitlines()[-1] == summary(list(APPS), 2)
