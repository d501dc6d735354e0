"""Fitting a prompt into the model's context window, generically (pure functions, no I/O).

The gateway knows nothing of what a prompt's messages mean, so it trims the only way that keeps a
conversation usable: the system messages at the top and the last message (the question being
asked) stay; the oldest messages between them go first; if that is not enough, the longest kept
message loses the middle of its text. Callers that can summarise (history, memories) should fit
their prompts themselves; this is the safety net that turns a certain 400 into a shorter prompt.
"""

from __future__ import annotations

from collections.abc import Callable

Messages = list[dict[str, str]]

CUT = "\n[...]\n"
"""Where a shortened message lost its middle."""

MIN_KEPT_CHARS = 40
"""A message is not shortened below this: what is left would say nothing."""


def trim_messages(messages: Messages, room: int, count: Callable[[Messages], int]) -> Messages:
    """``messages`` cut until ``count`` of them is at most ``room`` tokens (or nothing more can
    go): oldest middle messages dropped, then the longest message shortened in its middle. The
    input is not modified."""
    if count(messages) <= room or len(messages) == 0:
        return list(messages)
    head_len = 0
    while head_len < len(messages) - 1 and messages[head_len].get("role") == "system":
        head_len += 1
    head, middle, tail = list(messages[:head_len]), list(messages[head_len:-1]), [messages[-1]]
    while middle and count(head + middle + tail) > room:
        middle.pop(0)
        # The kept conversation starts with a user turn (chat templates insist on alternation).
        while middle and middle[0].get("role") == "assistant":
            middle.pop(0)
    kept = [dict(m) for m in head + middle + tail]
    for _ in range(8):  # a few passes: each shortens by an estimate from the tokens counted
        over = count(kept) - room
        if over <= 0:
            break
        longest = max(range(len(kept)), key=lambda i: len(kept[i].get("content") or ""))
        text = kept[longest].get("content") or ""
        tokens = max(1, count([kept[longest]]))
        keep_chars = int(len(text) * max(0.0, (tokens - over - 8) / tokens)) - len(CUT)
        if keep_chars < MIN_KEPT_CHARS or len(text) <= MIN_KEPT_CHARS:
            break
        kept[longest]["content"] = text[: keep_chars // 2] + CUT + text[len(text) - keep_chars // 2 :]
    return kept
