"""Finding the JSON object in a model's answer, and the prompts that ask for one."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.S)


class NoJSONError(ValueError):
    """The answer holds no parsable JSON value."""


def extract_json(text: str) -> Any:
    """The JSON value in ``text``: the whole text, else a fenced block, else the first object in
    it (models wrap JSON in ```json fences and in prose before and after)."""
    stripped = text.strip()
    if not stripped:
        raise NoJSONError("the answer is empty")
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        pass
    for block in _FENCE.findall(stripped):
        try:
            return json.loads(block.strip())
        except json.JSONDecodeError:
            continue
    # The first '{' (or '[') from which one whole JSON value decodes; prose may contain stray braces.
    decoder = json.JSONDecoder()
    for opener in ("{", "["):
        start = stripped.find(opener)
        while start != -1:
            try:
                value, _ = decoder.raw_decode(stripped, start)
                return value
            except json.JSONDecodeError:
                start = stripped.find(opener, start + 1)
    raise NoJSONError("no JSON object found in the answer")


def schema_prompt(schema: type[BaseModel]) -> str:
    """An instruction callers may put in their prompt: answer with one object of ``schema``."""
    return (
        "Answer with a single JSON object and nothing else. It must validate against this JSON Schema:\n"
        + json.dumps(schema.model_json_schema(), sort_keys=True)
    )


def repair_prompt(schema: type[BaseModel], problem: str) -> str:
    """The follow-up of the one repair attempt: the model sees why its answer was rejected."""
    return (
        f"Your previous answer could not be used: {problem}\n"
        "Reply again with only the corrected JSON object, no code fences and no other text. "
        "It must validate against this JSON Schema:\n"
        + json.dumps(schema.model_json_schema(), sort_keys=True)
    )
