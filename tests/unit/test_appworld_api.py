"""AppWorld's API docs read as data: the parser, the JSON Schema of an API's arguments, and the
comparison of our built-in tools with the docs, on small hand-written entries (no AppWorld)."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from pydantic import Field

from world.episodes.apps.appworld_api import (
    ApiDocsError,
    AppWorldApi,
    parameter_mismatches,
    parse_api_docs,
)
from world.episodes.apps.base import AppArgs, AuthArgs, EpisodeTool, NoAppArgs, app_tool
from world.episodes.apps.workspace import WORKSPACE_TOOLS


def param(name: str, type_: str = "string", *, required: bool = False, **more: Any) -> dict[str, Any]:
    return {
        "name": name,
        "type": type_,
        "required": required,
        "description": more.pop("description", f"The {name}."),
        "default": more.pop("default", None),
        "constraints": more.pop("constraints", []),
    }


def entry(app: str, api: str, *parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "app_name": app,
        "api_name": api,
        "path": f"/{app}/{api}",
        "method": "GET",
        "description": f"The {api} API.",
        "parameters": list(parameters),
        "response_schemas": {"success": {"message": "string"}, "failure": {"message": "string"}},
    }


def token() -> dict[str, Any]:
    return param("access_token", required=True, description="Access token obtained from shop app login.")


def one(*parameters: dict[str, Any]) -> AppWorldApi:
    (api,) = parse_api_docs([entry("shop", "do", *parameters)])
    return api


def property_of(parameter: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = one(parameter).input_schema()["properties"][parameter["name"]]
    return schema


def valid(schema: dict[str, Any], value: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


# ---------------------------------------------------------------- parsing


def test_an_entry_is_read_with_its_parameters_and_named_as_an_mcp_client_names_it() -> None:
    (api,) = parse_api_docs([entry("amazon", "show_product", param("product_id", "integer", required=True))])
    assert (api.app_name, api.api_name, api.method, api.path) == (
        "amazon",
        "show_product",
        "GET",
        "/amazon/show_product",
    )
    assert api.tool_name == "mcp_appworld_amazon__show_product"
    assert [(p.name, p.type, p.required) for p in api.parameters] == [("product_id", "integer", True)]
    assert api.response_schemas["success"] == {"message": "string"}


def test_keys_a_later_appworld_adds_are_ignored() -> None:
    raw = entry("shop", "do", {**param("q"), "example": "x"})
    raw["tags"] = ["new"]
    (api,) = parse_api_docs([raw])
    assert api.parameters[0].name == "q"


@pytest.mark.parametrize(
    ("break_it", "says"),
    [
        (lambda e: e.pop("api_name"), "api_name: Field required"),
        (lambda e: e["parameters"][0].pop("type"), "parameters.0.type: Field required"),
        (lambda e: e["parameters"][0].update(required="yes"), "parameters.0.required"),
        (lambda e: e.update(parameters="none"), "parameters"),
        (lambda e: e["parameters"][0].update(type="dict[string]"), "unknown AppWorld type 'dict[string]'"),
        (lambda e: e["parameters"].append(param("q")), "parameter named more than once: q"),
    ],
)
def test_a_malformed_entry_is_refused_naming_the_entry_and_what_is_wrong(break_it: Any, says: str) -> None:
    good = entry("shop", "search", param("q"))
    broken = entry("shop", "do", param("q"))
    break_it(broken)
    with pytest.raises(ApiDocsError) as error:
        parse_api_docs([good, broken])
    assert "API docs entry 1" in str(error.value)
    assert says in str(error.value)


def test_an_entry_that_is_not_an_object_or_an_api_listed_twice_is_refused() -> None:
    with pytest.raises(ApiDocsError, match="API docs entry 0"):
        parse_api_docs(["show_product"])  # type: ignore[list-item]
    with pytest.raises(ApiDocsError, match="mcp_appworld_shop__do is listed more than once"):
        parse_api_docs([entry("shop", "do"), entry("shop", "do")])


def test_docs_saved_app_by_app_read_as_the_flat_list_does() -> None:
    flat = [entry("shop", "search", param("q")), entry("mail", "send", param("to", required=True))]
    by_app = {
        "shop": [{k: v for k, v in flat[0].items() if k != "app_name"}],  # the key names the app
        "mail": [flat[1]],
    }
    assert parse_api_docs(by_app) == parse_api_docs(flat)
    assert [a.tool_name for a in parse_api_docs(by_app)] == [
        "mcp_appworld_shop__search",
        "mcp_appworld_mail__send",
    ]


def test_docs_saved_app_by_app_are_refused_naming_the_app_and_entry() -> None:
    with pytest.raises(ApiDocsError, match=r"API docs of app 'mail', entry 0: app_name is 'shop'"):
        parse_api_docs({"mail": [entry("shop", "search")]})
    unlisted = {k: v for k, v in entry("shop", "do").items() if k != "parameters"}
    with pytest.raises(ApiDocsError, match=r"API docs of app 'shop', entry 1 \(shop.do\): parameters"):
        parse_api_docs({"shop": [entry("shop", "search"), unlisted]})
    with pytest.raises(ApiDocsError, match="API docs of app 'shop': not a list of entries"):
        parse_api_docs({"shop": entry("shop", "search")})  # type: ignore[dict-item]


@pytest.mark.parametrize("raw", ["api_docs", 3, None])
def test_docs_in_neither_form_are_refused(raw: Any) -> None:
    with pytest.raises(ApiDocsError, match=r"API docs are a list of entries or \{app: \[entries\]\}"):
        parse_api_docs(raw)


# ---------------------------------------------------------------- the JSON Schema of an API


def test_the_input_schema_lists_every_parameter_in_order_and_the_required_ones() -> None:
    api = one(
        param("product_id", "integer", required=True),
        param("page_index", "integer", default=0),
        token(),
    )
    schema = api.input_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert list(schema["properties"]) == ["product_id", "page_index", "access_token"]
    assert schema["required"] == ["product_id", "access_token"]
    assert schema["properties"]["access_token"]["description"] == "Access token obtained from shop app login."
    assert valid(schema, {"product_id": 3, "access_token": "t"})
    assert not valid(schema, {"product_id": 3})
    assert not valid(schema, {"product_id": "3", "access_token": "t"})
    # AppWorld's server ignores arguments it does not know, so the schema does not refuse them.
    assert valid(schema, {"product_id": 3, "access_token": "t", "extra": 1})


@pytest.mark.parametrize(
    ("appworld_type", "json_schema"),
    [
        ("string", {"type": "string"}),
        ("integer", {"type": "integer"}),
        ("number", {"type": "number"}),
        ("boolean", {"type": "boolean"}),
        ("list[string]", {"type": "array", "items": {"type": "string"}}),
        ("list[number]", {"type": "array", "items": {"type": "number"}}),
        (
            "number | integer | string",
            {"anyOf": [{"type": "number"}, {"type": "integer"}, {"type": "string"}]},
        ),
    ],
)
def test_every_type_string_appworld_writes_maps_to_json_schema(
    appworld_type: str, json_schema: dict[str, Any]
) -> None:
    schema = property_of(param("x", appworld_type))
    assert {k: v for k, v in schema.items() if k != "description"} == json_schema


def test_a_union_takes_a_value_of_any_of_its_types() -> None:
    schema = property_of(param("answer", "number | integer | string"))
    assert all(valid(schema, v) for v in (10, 2.5, "ten"))
    assert not valid(schema, [10])


def test_bounds_become_minimum_and_maximum_integers_for_an_integer() -> None:
    schema = property_of(param("page_limit", "integer", default=5, constraints=["value >= 1.0, <= 20.0"]))
    assert (schema["minimum"], schema["maximum"], schema["default"]) == (1, 20, 5)
    assert isinstance(schema["minimum"], int)
    assert valid(schema, 20)
    assert not valid(schema, 21)
    assert not valid(schema, 0)


def test_appworlds_no_upper_bound_is_no_maximum_and_stays_a_64_bit_schema() -> None:
    # AppWorld prints sys.maxsize as a float: 9.223372036854776e+18 rounds to 2**63.
    schema = property_of(
        param("page_limit", "integer", default=5, constraints=["value >= 1.0, <= 9.223372036854776e+18"])
    )
    assert schema["minimum"] == 1
    assert "maximum" not in schema
    assert valid(schema, 10**12)


def test_bounds_of_a_number_stay_numbers_and_strict_bounds_are_exclusive() -> None:
    schema = property_of(param("amount", "number", constraints=["value > 0.0, < 1e+16"]))
    assert schema["exclusiveMinimum"] == 0.0
    assert schema["exclusiveMaximum"] == 1e16
    assert valid(schema, 0.01)
    assert not valid(schema, 0)


def test_lengths_bound_a_string_and_the_items_of_a_list() -> None:
    text = property_of(param("code", constraints=["length >= 10, <= 10"]))
    assert (text["minLength"], text["maxLength"]) == (10, 10)
    assert valid(text, "0123456789")
    assert not valid(text, "012345678")
    listed = property_of(param("tags", "list[string]", constraints=["length >= 1"]))
    assert listed["minItems"] == 1
    assert "minLength" not in listed
    assert not valid(listed, [])


def test_a_choice_becomes_an_enum_and_an_email_a_format() -> None:
    choice = property_of(param("priority", constraints=["value in ['high', 'medium', 'low']"], default="low"))
    assert choice["enum"] == ["high", "medium", "low"]
    assert choice["default"] == "low"
    assert not valid(choice, "urgent")
    email = property_of(param("email", constraints=["value is email address"]))
    assert email["format"] == "email"


def test_a_constraint_of_a_list_of_values_applies_to_its_items() -> None:
    schema = property_of(param("amounts", "list[number]", constraints=["value >= 0.0"]))
    assert schema["items"] == {"type": "number", "minimum": 0.0}
    assert valid(schema, [0.0, 2.5])
    assert not valid(schema, [-1])


def test_a_constraint_that_cannot_be_read_is_kept_in_the_description() -> None:
    schema = property_of(param("path", constraints=["value is a path", "length >= 1", "length >= inf"]))
    assert schema["minLength"] == 1
    assert schema["description"] == "The path. Constraints: value is a path; length >= inf."


def test_a_default_is_given_only_for_an_optional_parameter_that_has_one() -> None:
    api = one(
        param("query", default=""),
        param("label"),
        param("archived", "boolean", default=False),
        param("name", required=True, default=None),
    )
    properties = api.input_schema()["properties"]
    assert properties["query"]["default"] == ""
    assert properties["archived"]["default"] is False
    assert "default" not in properties["label"]
    assert "default" not in properties["name"]


# ---------------------------------------------------------------- our tools against the docs


class ShowArgs(AuthArgs):
    product_id: int = Field(description="The product.")
    query: str = Field(default="", description="Words.")
    label: str | None = Field(default=None, description="A label.")
    tags: list[str] | None = Field(default=None, description="Tags.")
    min_rating: float = Field(default=0.0, description="Lowest rating.")


def shop_tool(args_model: type[AppArgs], api: str = "show") -> EpisodeTool[Any]:
    return app_tool("shop", api, "Show.", args_model, lambda ctx, args: {})


SHOW = entry(
    "shop",
    "show",
    param("product_id", "integer", required=True),
    param("query", default=""),
    param("label"),
    param("tags", "list[string]"),
    param("min_rating", "number", default=0),
    token(),
)


def test_a_tool_that_takes_appworlds_parameters_has_no_mismatch() -> None:
    # Optional parameters are nullable in pydantic's schema and plain in AppWorld's; an integral
    # default compares equal to the same float.
    assert parameter_mismatches([shop_tool(ShowArgs)], parse_api_docs([SHOW])) == []


def test_every_kind_of_difference_is_one_line_naming_the_tool_and_the_parameter() -> None:
    class Drifted(AuthArgs):
        product_id: str = Field(description="Now text.")
        query: str = Field(description="Now required.")
        label: str | None = Field(default="mine", description="Another default.")
        min_rating: int = Field(default=0, description="Now an integer.")
        colour: str | None = Field(default=None, description="Not AppWorld's.")

    lines = parameter_mismatches([shop_tool(Drifted)], parse_api_docs([SHOW]))
    name = "mcp_appworld_shop__show"
    assert sorted(lines) == sorted(
        [
            f"{name}: missing parameter tags",
            f"{name}: parameter product_id is string, AppWorld's is integer",
            f"{name}: parameter query should be optional, as in AppWorld",
            f"{name}: parameter label defaults to 'mine', AppWorld's to None",
            f"{name}: parameter min_rating is integer, AppWorld's is number",
            f"{name}: extra parameter colour (AppWorld has no such parameter)",
        ]
    )


def test_a_parameter_that_appworld_requires_but_we_do_not_is_named() -> None:
    class Loose(AuthArgs):
        product_id: int | None = Field(default=None, description="Optional here.")
        query: str = ""
        label: str | None = None
        tags: list[str] | None = None
        min_rating: float = 0.0

    assert parameter_mismatches([shop_tool(Loose)], parse_api_docs([SHOW])) == [
        "mcp_appworld_shop__show: parameter product_id should be required, as in AppWorld"
    ]


def test_a_list_of_another_item_type_differs() -> None:
    class Numbers(ShowArgs):
        tags: list[int] | None = None  # type: ignore[assignment]

    assert parameter_mismatches([shop_tool(Numbers)], parse_api_docs([SHOW])) == [
        "mcp_appworld_shop__show: parameter tags is array[integer], AppWorld's is array[string]"
    ]


def test_a_tool_appworld_has_no_api_for_is_named_and_other_tools_are_not_compared() -> None:
    lines = parameter_mismatches(
        [shop_tool(NoAppArgs, "vanish"), *WORKSPACE_TOOLS, shop_tool(ShowArgs)], parse_api_docs([SHOW])
    )
    assert lines == ["mcp_appworld_shop__vanish: AppWorld has no API of this name"]


def test_only_the_tools_of_the_apps_asked_for_are_compared() -> None:
    class Drifted(ShowArgs):
        product_id: str = Field(description="Now text.")  # type: ignore[assignment]

    tools = [shop_tool(Drifted), app_tool("mail", "send", "Send.", NoAppArgs, lambda ctx, args: {})]
    apis = parse_api_docs([SHOW])
    assert parameter_mismatches(tools, apis, apps=["mail"]) == [
        "mcp_appworld_mail__send: AppWorld has no API of this name"
    ]
    assert parameter_mismatches(tools, apis, apps=["shop"]) == [
        "mcp_appworld_shop__show: parameter product_id is string, AppWorld's is integer"
    ]
    assert parameter_mismatches(tools, apis, apps=[]) == []
    assert len(parameter_mismatches(tools, apis)) == 2
