"""Word-level text helpers of the offline assistant: key terms, sentences, paths, slugs."""

from __future__ import annotations

import re
from collections.abc import Iterable

STOPWORDS = frozenset(
    """
    a about above after again all also am an and any are as at be been before being below between both
    but by can could did do does doing done for from further get got had has have having he her here
    hers him his how i if in into is it its itself just let lets like make me might more most much must
    my myself need no nor not now of off on once only or other our ours out over own please same she
    should so some such than that the their them then there these they this those through to too under
    until up us use very want was we were what when where which while who whom why will with would you
    your yours yourself okay ok thanks thank hi hello sure also one ones
    """.split()  # noqa: SIM905 - a word list reads better as text
)
"""Words too common to tell one request from another (kept small: facet words must survive)."""

_WORD = re.compile(r"[a-z][a-z0-9]*(?:['-][a-z0-9]+)*")
_PATH = re.compile(r"(?<![\w@/.-])((?:[\w.-]+/)*[\w-][\w.-]*\.[a-z][a-z0-9]{0,5})(?![\w/-])", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def stem(word: str) -> str:
    """Light stemming: plural ``s``, ``-ing``, ``-ed`` (enough to match "reports" with "report")."""
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def key_terms(text: str) -> list[str]:
    """Stemmed content words (>= 3 letters, no stopwords), in order of first appearance."""
    seen: dict[str, None] = {}
    for w in words(text):
        if len(w) >= 3 and w not in STOPWORDS:
            seen.setdefault(stem(w), None)
    return list(seen)


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
