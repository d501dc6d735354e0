"""Chat-template and prompt scaffolding in a model's answer: the one detector.

A small model that loses track of its prompt format echoes the template's control tokens
(``[INST]``, ``<|im_start|>``, ``<start_of_turn>``...), role headers ("### Assistant:") or its
prompt (the system message, or the templated request that opens the conversation) back as its
"answer". Such text is never an answer: the LLM gateway refuses it
(``LLMError("scaffolding")``) and the judges (bench.suite, world.episodes) give it no credit, all
through ``has_scaffolding``. It lives here, at the bottom of the import order, so the pure judges
can use it; it imports nothing but ``re``. Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_SPECIAL_TOKENS: tuple[str, ...] = (
    # Llama 2 / Mistral
    r"\[/?INST\]",
    r"<</?SYS>>",
    r"\[/?(?:SYSTEM_PROMPT|AVAILABLE_TOOLS|TOOL_CALLS|TOOL_RESULTS)\]",
    r"</s>|<s>\s*\[",
    # ChatML (Qwen, many fine-tunes) and every other ``<|name|>`` special token: Llama 3's
    # <|eot_id|> and <|start_header_id|>, Phi's <|end|> and <|assistant|>, GPT's <|endoftext|>.
    r"<\|[A-Za-z_][A-Za-z0-9_]*\|>",
    # DeepSeek's tokens between full-width bars (U+FF5C): begin-of-sentence, User, Assistant
    "<\uff5c[^\uff5c>\n]{1,40}\uff5c>",
    # Gemma
    r"</?(?:start_of_turn|end_of_turn|bos|eos)>",
    # XML-style turn wrappers some prompts (ours included) and templates use
    r"</?(?:system|user|assistant|human)(?:_message|_prompt|_turn)?>",
)

_HASH_HEADER = re.compile(
    # Alpaca / Vicuna-style headers opening a line: "### Assistant:", "## Response", "### Instruction:"
    r"^[ \t]*#{1,4}[ \t]*(?:system|user|assistant|human|instruction|response)[ \t]*(?::|$)",
    re.MULTILINE | re.IGNORECASE,
)
_ROLE_LINE = re.compile(
    # Legacy completion formats open a line with the role: "USER:", "ASSISTANT:", "Human:",
    # "Assistant:". Case-sensitive, so prose ("the user: ...", "User: ..." quoted) does not count.
    r"^[ \t]*(?:USER|ASSISTANT|SYSTEM|Human|Assistant)[ \t]*:",
    re.MULTILINE,
)

_TOKENS = tuple(re.compile(pattern) for pattern in _SPECIAL_TOKENS)

ECHO_WORDS = 12
"""The opening words of a prompt message that, found verbatim in an answer, make it an echo. Only
the opening: a model regurgitating its prompt starts from the top, while an answer may rightly
quote a fact or a file from further down."""

_WORD = re.compile(r"[a-z0-9']+")
_NUMBER = "#"


def has_scaffolding(text: str, prompt: str | Sequence[str] | None = None) -> str | None:
    """The first scaffolding ``text`` carries, as found (``"[INST]"``, ``"<|im_start|>"``,
    ``"### Assistant:"``) or ``"echoed prompt"``; None for an answer without any. ``prompt``: the
    prompt's messages, when known (the system message and the request that opens the
    conversation), so an answer that says one of them back is caught too."""
    for pattern in (*_TOKENS, _HASH_HEADER, _ROLE_LINE):
        found = pattern.search(text)
        if found is not None:
            return found.group(0).strip()
    prompts = (prompt,) if isinstance(prompt, str) else prompt or ()
    if any(_echoes(text, p) for p in prompts if p):
        return "echoed prompt"
    for p in prompts:
        heading = _copied_heading(text, p) if p else None
        if heading is not None:
            return f"the prompt's {heading!r} line"
    return None


ECHO_MISMATCHES = 2
"""Words of the opening an echo may change: a small model says its prompt back loosely (gemma-3-270m
gave "day 2" and "AURatown" for the prompt's "day 1" and "AURATown")."""


def _echoes(text: str, prompt: str) -> bool:
    opening = _words(prompt)[:ECHO_WORDS]
    if len(opening) < ECHO_WORDS // 2:  # a prompt of a few words may well be said back in an answer
        return False
    words = _words(text)
    n = len(opening)
    for i in range(len(words) - n + 1):
        if sum(a != b for a, b in zip(words[i : i + n], opening, strict=True)) <= ECHO_MISMATCHES:
            return True
    return False


_LABELLED = re.compile(r"^[ \t]*([A-Z][A-Za-z' ]{0,30}):[ \t]*(\S.*)$", re.MULTILINE)
_ITEM = re.compile(r"^[ \t]*[-*][ \t]+(\S.*)$", re.MULTILINE)
HEADING_WORDS = 4
"""Words after a prompt line's label that, said back after the same label, make the line copied."""


def _copied_heading(text: str, prompt: str) -> str | None:
    """The label of a line of ``prompt`` that ``text`` says back as the prompt's format, not as an
    answer: a labelled line ("Scene: AURATown, day 1, ...": the same label opening a line, then
    the same first words, numbers as one word); a list item of it ("- 08:30 at the street: ...")
    copied as a line; or a line opening with the label of the line the prompt ends on (its cue,
    "Question:"): a model writing the template's next turn. A fact quoted from the prompt
    carries neither label nor list mark."""
    labelled = list(_LABELLED.finditer(prompt))
    said = {(m.group(1), tuple(_words(m.group(2))[:HEADING_WORDS])) for m in _LABELLED.finditer(text)}
    for m in labelled:
        opening = tuple(_words(m.group(2))[:HEADING_WORDS])
        if len(opening) == HEADING_WORDS and (m.group(1), opening) in said:
            return m.group(1) + ":"
    if labelled and labelled[-1].end() == len(prompt.rstrip()):  # the prompt ends on its cue
        cue = labelled[-1].group(1)
        if any(m.group(1) == cue for m in _LABELLED.finditer(text)):
            return cue + ":"
    items = {tuple(_words(m.group(1))) for m in _ITEM.finditer(prompt)}
    for m in _ITEM.finditer(text):
        words = tuple(_words(m.group(1)))
        if len(words) >= HEADING_WORDS and words in items:
            return "- " + m.group(1).strip()[:40]
    return None


def _words(text: str) -> list[str]:
    """Lower-case words, every number one word: a time or a day said back with another value is
    the same echo."""
    return [_NUMBER if w.isdigit() else w for w in _WORD.findall(text.lower())]
