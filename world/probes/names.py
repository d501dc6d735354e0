"""Resolving the names a caller (often a language model) gives to an agent or a place.

Forgiving where it cannot be wrong (any case, a slug, a unique first name, "the library"),
strict where it could be: an ambiguous or unknown name is a ``NotFoundError`` that lists what the
scene does hold, so the caller can correct itself on the next probe.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from messages.probes import ProbeScene

_TOKEN = re.compile(r"[a-z0-9]+")
_SHOWN = 12
# Words that name no place in particular: "the town library" must still find "Town Library",
# but "town" alone must not pick one of the many "Town ..." places.
_GENERIC = frozenset(("the", "a", "an", "at", "of", "in", "to", "town", "place", "s"))


class NotFoundError(LookupError):
    """No agent or place answers to a name; the message says what the scene holds instead."""


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.casefold())


def _clean(text: str) -> str:
    text = text.strip().strip("\"'`").strip()
    return re.sub(r"'s$", "", text)


def _known(names: Iterable[str]) -> str:
    names = sorted(names)
    shown = ", ".join(names[:_SHOWN])
    return shown + (f", ... ({len(names)} in all)" if len(names) > _SHOWN else "")


def find_agent(scene: ProbeScene, name: str, *, role: str = "agent") -> str:
    """The scene's name for the agent called ``name``: its full name in any case, its slug, or a
    name part (first name, surname) that only one agent has."""
    text = _clean(name)
    if not text:
        raise NotFoundError(f"no {role} given: name one of {_known(scene.agents)}")
    folded = text.casefold()
    for agent_name, agent in scene.agents.items():
        if agent_name.casefold() == folded or _tokens(agent_name) == _tokens(text):
            return agent_name
        if agent.slug is not None and agent.slug == folded:
            return agent_name
    wanted = _tokens(text)
    if len(wanted) == 1:
        first = [n for n in scene.agents if _tokens(n)[:1] == wanted]
        parts = first or [n for n in scene.agents if wanted[0] in _tokens(n)]
        if len(parts) == 1:
            return parts[0]
        if len(parts) > 1:
            raise NotFoundError(f"{role} {text!r} is ambiguous: {_known(parts)}; give the full name")
    raise NotFoundError(f"no {role} named {text!r} in this scene (agents: {_known(scene.agents)})")


def find_location(scene: ProbeScene, name: str) -> str:
    """The scene's name for the place called ``name``: exact in any case, or the one place whose
    name holds every distinctive word given ("library" -> "Town Library")."""
    text = _clean(name)
    if not text:
        raise NotFoundError(f"no location given: name one of {_known(scene.locations)}")
    wanted = _tokens(text)
    for loc in scene.locations:
        if loc.casefold() == text.casefold() or _tokens(loc) == wanted:
            return loc
    useful = [t for t in wanted if t not in _GENERIC]
    if wanted and wanted[0] == "the" and _tokens(" ".join(wanted[1:])):
        for loc in scene.locations:
            if _tokens(loc) == wanted[1:]:
                return loc
    if useful:
        hits = [loc for loc in scene.locations if set(useful) <= set(_tokens(loc))]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise NotFoundError(f"location {text!r} is ambiguous: {_known(hits)}; give the full name")
    raise NotFoundError(f"no location named {text!r} in this scene (known: {_known(scene.locations)})")
