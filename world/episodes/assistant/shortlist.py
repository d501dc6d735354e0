"""Which tools a model-backed assistant is shown in full for one turn.

Describing all 56 tools with their JSON Schemas makes a prompt of some 5,500 tokens, more than a
small local model evaluates in reasonable time. A turn is shown the workspace and assistant tools
in full, plus the tools of the apps its words point at (or that the session already used); every
other app's tools are listed by name only, and stay callable.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass

APP_PREFIX = "mcp_appworld_"

APP_WORDS: dict[str, tuple[str, ...]] = {
    "amazon": ("amazon", "buy", "order", "purchase", "shop", "cart", "product", "reorder"),
    "gmail": ("gmail", "email", "e-mail", "mail", "inbox", "reply", "draft"),
    "phone": ("phone", "text", "sms", "call", "contact", "contacts"),
    "simple_note": ("note", "notes", "simple_note"),
    "splitwise": ("splitwise", "expense", "expenses", "split", "owe", "owes", "balance", "balances", "paid"),
    "spotify": ("spotify", "song", "songs", "playlist", "music", "play", "track"),
    "todoist": ("todoist", "task", "tasks", "todo", "to-do", "reminder", "remind", "project"),
    "file_system": ("file_system",),
}
"""Words that point at an app. Broad on purpose: showing one app too many costs a few hundred
tokens, hiding the one the user meant costs the turn."""


def app_of(tool: str) -> str | None:
    """``mcp_appworld_amazon__place_order`` -> ``amazon``; None for a workspace or assistant tool."""
    if not tool.startswith(APP_PREFIX) or "__" not in tool:
        return None
    return tool[len(APP_PREFIX) :].split("__", 1)[0]


@dataclass(frozen=True)
class Shortlist:
    full: frozenset[str]
    """Tools described with their schemas."""
    by_name: dict[str, tuple[str, ...]]
    """Other apps' tools, by app: their API names only."""


def shortlist(names: Collection[str], texts: Iterable[str], used: Iterable[str] = ()) -> Shortlist:
    """The tools to show in full for a turn whose words are ``texts`` and whose session has
    called ``used``; the rest grouped by app."""
    words = set(re.findall(r"[a-z_][a-z_-]*", " ".join(texts).lower()))
    apps = {app for app, cues in APP_WORDS.items() if words & set(cues)}
    apps |= {a for a in (app_of(t) for t in used) if a is not None}
    full = frozenset(n for n in names if app_of(n) is None or app_of(n) in apps)
    others: dict[str, list[str]] = {}
    for name in sorted(set(names) - full):
        app = app_of(name)
        if app is not None:
            others.setdefault(app, []).append(name.split("__", 1)[1])
    return Shortlist(full=full, by_name={a: tuple(v) for a, v in others.items()})
