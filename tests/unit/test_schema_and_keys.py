"""JSON Schema export and the Redis key layout."""

from __future__ import annotations

import pytest

from actors.bus import InvalidNameError, KeyLayout, reply_address
from messages import REGISTRY, Ping, envelope_to_dict, json_schemas
from tests.unit.test_codec import envelope


def test_every_registered_model_exports_a_schema() -> None:
    schemas = json_schemas()
    assert "envelope.json" in schemas
    for name, model in REGISTRY.models().items():
        schema = schemas[f"{name}.v{model.schema_version}.json"]
        assert schema["x-message-type"] == name
        assert schema["x-schema-version"] == model.schema_version
        assert set(schema.get("properties", {})) == set(model.model_fields)


def test_envelope_schema_lists_every_wire_field() -> None:
    wire = envelope_to_dict(envelope(Ping(seq=1)))
    schema = json_schemas()["envelope.json"]
    assert set(wire) == set(schema["properties"])
    assert set(schema["required"]) <= set(wire)


def test_all_keys_of_a_namespace_share_one_hash_tag() -> None:
    k = KeyLayout("town:main")
    keys = [
        k.inbox("agent.lin-wei"),
        k.topic("town.tick"),
        k.dead_letters,
        k.state("world"),
        k.seen("world"),
        k.presence,
        k.alive("p1"),
        k.kv("snapshot"),
        k.inbox(reply_address("p1")),
    ]
    for key in keys:
        assert key.count("{") == 1
        assert key[key.index("{") : key.index("}") + 1] == "{town:main}"
    assert k.address_of_inbox(k.inbox("agent.lin-wei")) == "agent.lin-wei"


@pytest.mark.parametrize("bad", ["", "a b", "x{y}", "{town}", "a/b", "x" * 300])
def test_invalid_names_are_refused_with_a_reason(bad: str) -> None:
    with pytest.raises(InvalidNameError, match="invalid"):
        KeyLayout("town:ok").inbox(bad)
    if bad:
        with pytest.raises(InvalidNameError, match="namespace"):
            KeyLayout(bad)
