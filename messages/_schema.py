"""JSON Schema export, so an agent written in any language can attach."""

from __future__ import annotations

from typing import Any

from messages._envelope import ENVELOPE_FORMAT
from messages._registry import REGISTRY, MessageRegistry


def schema_file_name(name: str, version: int) -> str:
    """File name of one model's schema: ``town.tick.v1.json``."""
    return f"{name}.v{version}.json"


def envelope_schema() -> dict[str, Any]:
    """JSON Schema of the wire envelope (the decoded msgpack map)."""
    nullable_str = {"type": ["string", "null"]}
    nullable_num = {"type": ["number", "null"]}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Envelope",
        "description": (
            "msgpack map carried in the 'm' field of a stream entry. 'payload' validates "
            "against the schema of (type, version)."
        ),
        "type": "object",
        "required": [
            "format",
            "type",
            "version",
            "id",
            "sender",
            "recipient",
            "namespace",
            "wall_time",
            "attempt",
            "payload",
        ],
        "properties": {
            "format": {"const": ENVELOPE_FORMAT},
            "type": {"type": "string", "description": "registered message name"},
            "version": {"type": "integer", "minimum": 1},
            "id": {"type": "string", "minLength": 1},
            "sender": {"type": "string"},
            "recipient": {"type": "string", "minLength": 1},
            "namespace": {"type": "string", "minLength": 1},
            "wall_time": {"type": "number", "description": "unix seconds"},
            "correlation_id": nullable_str,
            "reply_to": nullable_str,
            "causation_id": nullable_str,
            "sim_time": nullable_num,
            "attempt": {"type": "integer", "minimum": 1},
            "deadline": {**nullable_num, "description": "unix seconds after which nobody waits"},
            "trace": {"type": "object", "additionalProperties": {"type": "string"}},
            "payload": {"type": "object"},
        },
    }


def json_schemas(registry: MessageRegistry = REGISTRY) -> dict[str, dict[str, Any]]:
    """Schemas of the envelope and of every registered model, keyed by file name."""
    out: dict[str, dict[str, Any]] = {"envelope.json": envelope_schema()}
    for name, model in registry.models().items():
        schema = model.model_json_schema(mode="validation")
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        schema["x-message-type"] = name
        schema["x-schema-version"] = model.schema_version
        out[schema_file_name(name, model.schema_version)] = schema
    return out
