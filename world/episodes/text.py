"""Term extraction shared by the deterministic judges (and by anyone writing data for them).

- key terms: ``world.text.key_terms`` (content words of at least 3 letters, no stopwords, lightly
  stemmed: plural ``s``/``es``/``ies``, ``-ing``, ``-ed``), in order of first appearance;
- anchors: numbers and quoted strings. Numbers are compared as numbers (``1,578`` = ``1578``,
  ``12.50`` = ``12.5``, ``05`` = ``5``); quoted strings (``"..."``, curly quotes, backticks, and
  ``'...'`` not inside a word) as case-insensitive substrings with whitespace collapsed;
- questions: the sentences of a text that end with ``?``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from world.text import key_terms

_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,:]\d+)*")
_QUOTED = re.compile(r"\"([^\"\n]+)\"|\u201c([^\u201d\n]+)\u201d|`([^`\n]+)`|(?<![\w'])'([^'\n]+)'(?![\w'])")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def _number(raw: str) -> str:
    text = raw.replace(",", "") if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", raw) else raw
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        whole, _, frac = text.partition(".")
        whole = whole.lstrip("0") or "0"
        frac = frac.rstrip("0")
        return f"{whole}.{frac}" if frac else whole
    return text


def numbers(text: str) -> frozenset[str]:
    return frozenset(_number(m.group(0).rstrip(".,:")) for m in _NUMBER.finditer(text))


def _squash(text: str) -> str:
    return " ".join(text.lower().split())


def quoted(text: str) -> tuple[str, ...]:
    out: dict[str, None] = {}
    for m in _QUOTED.finditer(text):
        value = _squash(next(g for g in m.groups() if g is not None))
        if value:
            out.setdefault(value, None)
    return tuple(out)


@dataclass(frozen=True)
class Anchors:
    numbers: frozenset[str]
    quoted: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.numbers) + len(self.quoted)


def anchors(text: str) -> Anchors:
    return Anchors(numbers(text), quoted(text))


@dataclass(frozen=True)
class Haystack:
    """A text prepared once for many look-ups (a reply plus its files, a rendered history)."""

    terms: frozenset[str]
    numbers: frozenset[str]
    squashed: str

    @classmethod
    def of(cls, parts: Iterable[str]) -> Haystack:
        text = "\n".join(parts)
        return cls(frozenset(key_terms(text)), numbers(text), _squash(text))

    def has_anchor_number(self, number: str) -> bool:
        return number in self.numbers

    def has_phrase(self, phrase: str) -> bool:
        return phrase in self.squashed


@dataclass(frozen=True)
class Coverage:
    """How much of a requirement a text covers."""

    terms_found: int
    terms_total: int
    anchors_found: int
    anchors_total: int

    @property
    def term_share(self) -> float:
        return self.terms_found / self.terms_total if self.terms_total else 0.0

    @property
    def all_anchors(self) -> bool:
        return self.anchors_found == self.anchors_total

    def describe(self) -> str:
        return (
            f"terms {self.terms_found}/{self.terms_total}, anchors {self.anchors_found}/{self.anchors_total}"
        )


def coverage(requirement: str, haystack: Haystack) -> Coverage:
    terms = key_terms(requirement)
    marks = anchors(requirement)
    found_anchors = sum(haystack.has_anchor_number(n) for n in marks.numbers) + sum(
        haystack.has_phrase(q) for q in marks.quoted
    )
    return Coverage(
        terms_found=sum(t in haystack.terms for t in terms),
        terms_total=len(terms),
        anchors_found=found_anchors,
        anchors_total=len(marks),
    )


def _is_question(sentence: str) -> bool:
    return sentence.rstrip(")]\"'\u201d\u2019*_ ").endswith("?")


def questions(text: str) -> list[str]:
    """The sentences of ``text`` that end with a question mark (closing quotes, brackets and
    emphasis aside)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip() and _is_question(s.strip())]


def statements(text: str) -> str:
    """``text`` without its questions: what it asserts or reports doing."""
    kept = (s.strip() for s in _SENTENCE_END.split(text))
    return "\n".join(s for s in kept if s and not _is_question(s))
