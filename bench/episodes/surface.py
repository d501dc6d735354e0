"""Our built-in apps against AppWorld's own API docs: names, parameters, types, required fields.

AppWorld generates its API docs from its apps (``appworld.api_docs.prepare_api_docs``, run in
AppWorld's own venv); given that JSON (``{app: [{api_name, parameters: [{name, type, required,
default}]}]}``), this module lists every difference of ours. Nothing of AppWorld's is read at run
time otherwise, and nothing of it is committed.

    python -m bench.episodes.surface --docs api_docs.json [--app amazon]
"""

from __future__ import annotations

import argparse
import json
import sys
import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from world.episodes.apps import ALL_TOOLS, EpisodeTool

_SCALARS: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


@dataclass(frozen=True)
class Difference:
    api: str
    problem: str

    def __str__(self) -> str:
        return f"{self.api}: {self.problem}"


def type_name(annotation: Any) -> str:
    """AppWorld's docs' name of a parameter type: string, integer, number, boolean, list[...]."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        inner = [a for a in get_args(annotation) if a is not type(None)]
        return type_name(inner[0]) if len(inner) == 1 else " | ".join(type_name(a) for a in inner)
    if origin is Literal:
        values = get_args(annotation)
        return _SCALARS.get(type(values[0]), "string") if values else "string"
    if origin in (list, tuple, Sequence):
        args = [a for a in get_args(annotation) if a is not Ellipsis]
        return f"list[{type_name(args[0]) if args else 'any'}]"
    if origin is not None and hasattr(annotation, "__metadata__"):
        return type_name(get_args(annotation)[0])
    if isinstance(annotation, type):
        return _SCALARS.get(annotation, annotation.__name__)
    return str(annotation)


def our_parameters(model: type[BaseModel]) -> dict[str, tuple[str, bool]]:
    return {name: (type_name(f.annotation), f.is_required()) for name, f in model.model_fields.items()}


def compare(
    tools: Iterable[EpisodeTool[Any]], docs: Mapping[str, Sequence[Mapping[str, Any]]]
) -> list[Difference]:
    """Every difference between ``tools`` (app tools) and AppWorld's docs of the same APIs."""
    index = {f"{app}__{api['api_name']}": api for app, apis in docs.items() for api in apis}
    out: list[Difference] = []
    for tool in tools:
        if tool.app is None:
            continue
        doc = index.get(tool.api)
        if doc is None:
            out.append(Difference(tool.api, "AppWorld has no such API"))
            continue
        ours = our_parameters(tool.args_model)
        theirs = {p["name"]: (str(p["type"]), bool(p["required"])) for p in doc["parameters"]}
        for name in sorted(set(ours) | set(theirs)):
            if name not in ours:
                out.append(Difference(tool.api, f"parameter {name!r} missing (AppWorld: {theirs[name]})"))
            elif name not in theirs:
                out.append(Difference(tool.api, f"parameter {name!r} is not AppWorld's"))
            elif ours[name] != theirs[name]:
                out.append(
                    Difference(tool.api, f"parameter {name!r}: ours {ours[name]}, AppWorld {theirs[name]}")
                )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.episodes.surface", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--docs", type=Path, required=True, help="AppWorld's API docs as JSON")
    parser.add_argument("--app", action="append", default=[], help="only these apps (repeatable)")
    ns = parser.parse_args(argv)
    try:
        docs = json.loads(ns.docs.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        parser.error(f"cannot read {ns.docs}: {exc}")
    tools = [t for t in ALL_TOOLS if t.app is not None and (not ns.app or t.app in ns.app)]
    differences = compare(tools, docs)
    for d in differences:
        print(d)
    apps = sorted({t.app for t in tools if t.app})
    print(f"{len(tools)} app tools of {', '.join(apps)}: {len(differences)} differences from AppWorld's docs")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
