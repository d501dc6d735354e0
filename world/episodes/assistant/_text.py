"""Word-level text helpers of the offline assistant: term overlap, sentences, paths, slugs (the key
terms and stopwords themselves are ``world.text``'s)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from world.text import STOPWORDS, key_terms

_WORD = re.compile(r"[a-z][a-z0-9]*(?:['-][a-z0-9]+)*")
_PATH = re.compile(r"(?<![\w@/.-])((?:[\w.-]+/)*[\w-][\w.-]*\.[a-z][a-z0-9]{0,5})(?![\w/-])", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def words(text: str) -> list[str]:
    """Words as a file name keeps them ("follow-up", "don't" whole): the slug's parts, not terms."""
    return _WORD.findall(text.lower())


def overlap(a: str | Iterable[str], b: str | Iterable[str]) -> int:
    """How many key terms two texts (or term lists) share."""
    ta = set(key_terms(a) if isinstance(a, str) else a)
    tb = set(key_terms(b) if isinstance(b, str) else b)
    return len(ta & tb)


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def paths_in(text: str) -> list[str]:
    """Workspace-looking paths named in a text (``notes/plan.md``, ``data.csv``), in order, once each.
    E-mail addresses and URLs are not paths."""
    found: dict[str, None] = {}
    for m in _PATH.finditer(text):
        path = m.group(1).rstrip(".")
        if "@" in path or path.lower().startswith(("http", "www.")) or re.fullmatch(r"[\d.]+", path):
            continue
        found.setdefault(path, None)
    return list(found)


def slug(text: str, max_words: int = 6) -> str:
    terms = [w for w in words(text) if w not in STOPWORDS and len(w) >= 3][:max_words]
    return "-".join(terms) or "note"


def clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."
