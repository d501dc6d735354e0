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


_DECODER = json.JSONDecoder(strict=False)
"""Takes a raw newline or tab inside a string, which strict JSON refuses: small models write them
(gemma-3-270m under llama.cpp's JSON grammar ended a "reason" with a newline), and what they
mean is not in doubt."""


def extract_json(text: str) -> Any:
    """The JSON value in ``text``: the whole text, else a fenced block, else the first object in
    it (models wrap JSON in ```json fences and in prose before and after)."""
    stripped = text.strip()
    if not stripped:
        raise NoJSONError("the answer is empty")
    try:
        return _DECODER.decode(stripped)
    except json.JSONDecodeError:
        pass
    for block in _FENCE.findall(stripped):
        try:
            return _DECODER.decode(block.strip())
        except json.JSONDecodeError:
            continue
    # The first '{' (or '[') from which one whole JSON value decodes; prose may contain stray braces.
    decoder = _DECODER
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


def looks_structured(text: str) -> bool:
    """Whether an answer a prose stage got is data, not prose: a whole JSON value, a code block,
    or text that opens like a JSON object or array (``{not json, 'yes': YES ,,``)."""
    stripped = text.strip()
    if not stripped:
        return False
    if stripped.startswith(("{", "[", "```")):
        return True
    try:
        json.loads(stripped)
    except ValueError:
        return False
    # A bare string, number, true/false/null is no prose answer either.
    return True


def prose_repair_prompt() -> str:
    """The follow-up when a prose stage got JSON or code: the model is asked for the answer itself."""
    return (
        "Your previous answer was data (JSON or code), not an answer for the user. Reply again with "
        "the answer itself in plain sentences: no JSON, no code fences, no braces."
    )
