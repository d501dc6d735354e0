"""AppWorld's API docs as data: what each of its APIs takes, read from
``appworld.api_docs.prepare_api_docs(app, format="standard")`` at run time (never committed).

An entry of those docs is ``{app_name, api_name, path, method, description, parameters,
response_schemas}``; a parameter is ``{name, type, required, description, default, constraints}``.
AppWorld writes a parameter's type as text (``string``, ``integer``, ``number``, ``boolean``,
``list[string]``, ``number | integer | string``) and its constraints as text, too
(``value >= 1.0, <= 20.0``, ``length >= 1``, ``value in ['high', 'low']``,
``value is email address``): ``AppWorldApi.input_schema`` turns both into a JSON Schema, which is
what an MCP client of AppWorld's tools is shown.

The docs come as one list of every app's entries (what AppWorld's service serves, ``GET /apis``)
or as ``{app: [entries]}`` (``prepare_api_docs`` saved app by app); ``parse_api_docs`` reads both.

``parameter_mismatches`` compares our built-in apps' tools with these docs: every tool we serve
under an AppWorld name must take AppWorld's parameters (names, JSON types, required, and the
defaults of the optional ones). ``python -m bench.episodes.surface`` is its command line.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from messages.probes import JsonObject
from world.episodes.apps.base import APP_PREFIX, EpisodeTool

JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "object", "array", "null"})
"""AppWorld's type words are JSON Schema's (it reads them from its OpenAPI document)."""
_LIST = re.compile(r"^list\[(?P<item>.+)\]$")
_BOUNDS = {">=": "minimum", ">": "exclusiveMinimum", "<=": "maximum", "<": "exclusiveMaximum"}
_LENGTHS = {">=": ("minLength", "minItems"), "<=": ("maxLength", "maxItems")}
_BOUND = re.compile(r"^(?P<op>>=|<=|>|<)\s*(?P<number>\S+)$")


class ApiDocsError(ValueError):
    """AppWorld's API docs are not in the form this module reads."""


class AppWorldParameter(BaseModel):
    """One parameter of an AppWorld API, as its standard docs give it."""

    # Keys a later AppWorld may add are ignored; the ones read here must be there.
    model_config = ConfigDict(frozen=True, extra="ignore")

    name: str = Field(min_length=1)
    type: str = Field(min_length=1)
    required: StrictBool
    description: str
    default: Any = None
    """The default when the parameter is left out (None: none, or null)."""
    constraints: tuple[str, ...] = ()

    def json_schema(self) -> JsonObject:
        """The parameter as a JSON Schema property: its type, description, default (when it has
        one), and what its constraints say in JSON Schema's words."""
        schema = type_schema(self.type)
        schema["description"] = self.description
        unread = [c for c in self.constraints if not _apply_constraint(schema, c)]
        if unread:
            # Kept where a reader of the schema still sees them.
            schema["description"] = f"{self.description} Constraints: {'; '.join(unread)}."
        if not self.required and self.default is not None:
            schema["default"] = self.default
        return schema


class AppWorldApi(BaseModel):
    """One API of an AppWorld app, as its standard docs give it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    app_name: str = Field(min_length=1)
    api_name: str = Field(min_length=1)
    path: str
    method: str
    description: str
    parameters: tuple[AppWorldParameter, ...]
    response_schemas: dict[str, Any] = Field(default_factory=dict)

    @property
    def tool_name(self) -> str:
        """The name an MCP client of AppWorld gives the API: ``mcp_appworld_<app>__<api>``."""
        return f"{APP_PREFIX}{self.app_name}__{self.api_name}"

    def parameter(self, name: str) -> AppWorldParameter | None:
        return next((p for p in self.parameters if p.name == name), None)

    def input_schema(self) -> JsonObject:
        """The API's arguments as a JSON Schema object (``properties`` in the docs' order,
        ``required``). Unknown arguments are not refused: AppWorld's server ignores them."""
        return {
            "type": "object",
            "properties": {p.name: p.json_schema() for p in self.parameters},
            "required": [p.name for p in self.parameters if p.required],
        }


def type_schema(text: str) -> JsonObject:
    """The JSON Schema of one of AppWorld's type strings: a JSON type word, ``list[<type>]``, or
    a union ``a | b``. Raises ``ApiDocsError`` for anything else."""
    members = [m.strip() for m in text.split("|")]
    if len(members) > 1:
        return {"anyOf": [type_schema(m) for m in members]}
    word = members[0]
    listed = _LIST.match(word)
    if listed is not None:
        return {"type": "array", "items": type_schema(listed["item"])}
    if word not in JSON_TYPES:
        raise ApiDocsError(f"unknown AppWorld type {text!r}")
    return {"type": word}


def _number(text: str, integral: bool) -> int | float:
    value = float(text)
    # AppWorld prints bounds as floats (``1.0``); an integer's bound is an integer.
    return int(value) if integral and value.is_integer() else value


def _target(schema: JsonObject) -> JsonObject:
    """Where a value constraint of a parameter applies: the items of a list, else the value."""
    items = schema.get("items")
    return items if schema.get("type") == "array" and isinstance(items, dict) else schema


def _apply_constraint(schema: JsonObject, constraint: str) -> bool:
    """Write one of AppWorld's constraint texts into ``schema``; False when it cannot be read."""
    text = constraint.strip()
    if text == "value is email address":
        _target(schema)["format"] = "email"
        return True
    if text.startswith("value in "):
        try:
            choices = ast.literal_eval(text.removeprefix("value in "))
        except (ValueError, SyntaxError):
            return False
        if not isinstance(choices, list):
            return False
        _target(schema)["enum"] = choices
        return True
    for head, apply in (("length ", _apply_lengths), ("value ", _apply_bounds)):
        if text.startswith(head):
            bounds = [_BOUND.match(part.strip()) for part in text.removeprefix(head).split(",")]
            readable = [b for b in bounds if b is not None and _is_number(b["number"])]
            if len(readable) != len(bounds):
                return False
            for bound in readable:
                apply(schema, bound["op"], bound["number"])
            return True
    return False


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _apply_lengths(schema: JsonObject, op: str, number: str) -> None:
    text_key, items_key = _LENGTHS[op]
    schema[items_key if schema.get("type") == "array" else text_key] = _number(number, True)


_NO_BOUND = 2**63 - 1
"""AppWorld writes "no upper bound" as ``sys.maxsize`` (as a float, 2**63 after rounding)."""


def _apply_bounds(schema: JsonObject, op: str, number: str) -> None:
    target = _target(schema)
    bound = _number(number, target.get("type") == "integer")
    if abs(bound) >= _NO_BOUND:
        return  # no bound at all, and beyond what a 64-bit integer on the wire can carry
    target[_BOUNDS[op]] = bound


ApiDocs = Sequence[Mapping[str, Any]] | Mapping[str, Sequence[Mapping[str, Any]]]
"""AppWorld's standard API docs: every app's entries as one list, or ``{app: [entries]}``."""


def _located_entries(raw: ApiDocs) -> list[tuple[str, object]]:
    """Every entry of ``raw`` beside the words that locate it in an error. An entry of the per-app
    form takes its app's name from its key when it does not give one, and must not give another."""
    if isinstance(raw, Mapping):
        located: list[tuple[str, object]] = []
        for app, entries in raw.items():
            if not isinstance(entries, Sequence) or isinstance(entries, str):
                raise ApiDocsError(f"API docs of app {app!r}: not a list of entries")
            for index, entry in enumerate(entries):
                where = f"API docs of app {app!r}, entry {index}"
                if isinstance(entry, Mapping) and entry.get("app_name", app) != app:
                    raise ApiDocsError(f"{where}: app_name is {entry['app_name']!r}, under app {app!r}")
                named = {**entry, "app_name": app} if isinstance(entry, Mapping) else entry
                located.append((_where(where, named), named))
        return located
    if isinstance(raw, Sequence) and not isinstance(raw, str):
        return [(_where(f"API docs entry {index}", entry), entry) for index, entry in enumerate(raw)]
    raise ApiDocsError(f"API docs are a list of entries or {{app: [entries]}}, not {type(raw).__name__}")


def _where(where: str, entry: object) -> str:
    if isinstance(entry, Mapping):
        return f"{where} ({entry.get('app_name')}.{entry.get('api_name')})"
    return where


def parse_api_docs(raw: ApiDocs) -> tuple[AppWorldApi, ...]:
    """AppWorld's standard API docs (either form of ``ApiDocs``) as ``AppWorldApi``s.
    Raises ``ApiDocsError`` naming the entry for a malformed one: a missing or mistyped key, a type
    string this module cannot map, a parameter named twice, or an API listed twice; and for docs
    in neither form."""
    apis: list[AppWorldApi] = []
    seen: set[str] = set()
    for where, entry in _located_entries(raw):
        try:
            api = AppWorldApi.model_validate(entry)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'entry'}: {e['msg']}" for e in error.errors()
            )
            raise ApiDocsError(f"{where}: {problems}") from None
        names = [p.name for p in api.parameters]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ApiDocsError(f"{where}: parameter named more than once: {', '.join(twice)}")
        for parameter in api.parameters:
            try:
                type_schema(parameter.type)
            except ApiDocsError as error:
                raise ApiDocsError(f"{where}: parameter {parameter.name}: {error}") from None
        if api.tool_name in seen:
            raise ApiDocsError(f"{where}: {api.tool_name} is listed more than once")
        seen.add(api.tool_name)
        apis.append(api)
    return tuple(apis)


# ---------------------------------------------------------------- built-in tools against the docs


def _resolve(schema: JsonObject, root: JsonObject) -> JsonObject:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = root.get("$defs", {}).get(ref.removeprefix("#/$defs/"))
        if isinstance(target, dict):
            return _resolve(target, root)
    return schema


def json_type(schema: JsonObject, root: JsonObject | None = None) -> str:
    """A property's JSON type as comparable text: ``string``, ``array[integer]``, a union
    ``integer | string`` (sorted). ``null`` is left out: whether a parameter may be left out is
    ``required``'s business, and AppWorld writes an optional parameter by its type alone."""
    root = schema if root is None else root
    schema = _resolve(schema, root)
    members: list[JsonObject] = [
        m for key in ("anyOf", "oneOf") for m in schema.get(key, []) if isinstance(m, dict)
    ]
    if members:
        words = {json_type(m, root) for m in members} - {"null"}
        return " | ".join(sorted(words)) if words else "null"
    kind = schema.get("type")
    if isinstance(kind, list):
        words = {str(k) for k in kind} - {"null"}
        return " | ".join(sorted(words)) if words else "null"
    if kind == "array":
        items = schema.get("items")
        return f"array[{json_type(items, root)}]" if isinstance(items, dict) and items else "array"
    if kind is None and "enum" in schema:
        words = {_value_type(v) for v in schema["enum"]} - {"null"}
        return " | ".join(sorted(words)) if words else "null"
    return str(kind) if kind is not None else "any"


def _value_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "string"


def _tool_mismatches(tool: EpisodeTool[Any], api: AppWorldApi) -> list[str]:
    ours = tool.spec.parameters()
    theirs = api.input_schema()
    our_properties: dict[str, JsonObject] = ours.get("properties", {})
    their_properties: dict[str, JsonObject] = theirs["properties"]
    our_required = set(ours.get("required", []))
    their_required = set(theirs["required"])
    lines: list[str] = []
    for name in their_properties:
        if name not in our_properties:
            lines.append(f"{tool.name}: missing parameter {name}")
    for name, our_schema in our_properties.items():
        if name not in their_properties:
            lines.append(f"{tool.name}: extra parameter {name} (AppWorld has no such parameter)")
            continue
        our_type, their_type = json_type(our_schema, ours), json_type(their_properties[name])
        if our_type != their_type:
            lines.append(f"{tool.name}: parameter {name} is {our_type}, AppWorld's is {their_type}")
        if (name in our_required) != (name in their_required):
            word = "required" if name in their_required else "optional"
            lines.append(f"{tool.name}: parameter {name} should be {word}, as in AppWorld")
        elif name not in their_required:
            ours_default, theirs_default = our_schema.get("default"), _default(api, name)
            if not _same_value(ours_default, theirs_default):
                lines.append(
                    f"{tool.name}: parameter {name} defaults to {ours_default!r},"
                    f" AppWorld's to {theirs_default!r}"
                )
    return lines


def _default(api: AppWorldApi, name: str) -> Any:
    parameter = api.parameter(name)
    return None if parameter is None else parameter.default


def _same_value(a: Any, b: Any) -> bool:
    """Equal as JSON values: numbers by value (AppWorld writes ``0`` where we write ``0.0``, and
    its "no bound" ``sys.maxsize`` becomes ``9.223372036854776e+18`` in a float field)."""
    numbers = {"integer", "number"}
    if _value_type(a) in numbers and _value_type(b) in numbers:
        return math.isclose(a, b, rel_tol=1e-12)
    return _value_type(a) == _value_type(b) and bool(a == b)


def parameter_mismatches(
    tools: Iterable[EpisodeTool[Any]],
    apis: Iterable[AppWorldApi],
    *,
    apps: Collection[str] | None = None,
) -> list[str]:
    """Where the tools we serve under an AppWorld name (``mcp_appworld_*``; other tools are not
    compared), of ``apps`` only when given, differ from AppWorld's API of that name: a tool
    AppWorld has no API for, a parameter missing or extra, a JSON type that differs, required where
    AppWorld's is optional or the other way round, an optional parameter's default that differs.
    One line each, naming the tool and the parameter; empty when they all agree."""
    by_name = {api.tool_name: api for api in apis}
    lines: list[str] = []
    for tool in tools:
        if not tool.name.startswith(APP_PREFIX) or (apps is not None and tool.app not in apps):
            continue
        api = by_name.get(tool.name)
        if api is None:
            lines.append(f"{tool.name}: AppWorld has no API of this name")
            continue
        lines.extend(_tool_mismatches(tool, api))
    return lines
