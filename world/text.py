"""Words of a text, the one way: tokens, stopwords and two stemmers (a light one to a root; a
coarser one with a prefix match for fuzzy matching), shared by the memory stream's retrieval, the
episode assistant, the episode judges and the benchmark's judges.

Pure functions of their input (no I/O, no state). A token is a run of lowercase letters and digits;
apostrophes are dropped first ("she'd" is one token, "shed") and anything else splits
("do_not_disturb", "follow-up"). A stopword is a word that never tells one request, memory or
answer from another: function words, and the words of generic requests ("anything else?",
"do you want more?"). The stemmer is applied alike to both sides of every comparison.
"""

from __future__ import annotations

import re

_STOPWORD_TEXT = """
    a an the and or but nor so if as while of to in on at for with by from into onto upon via per
    about above below over under after before between through until up down out off again
    further once within without
    i me my myself you your yours yourself he him his she her hers it its itself we us our ours
    they them their theirs this that these those there here
    what which who whom whose when where why how
    is are was were be been being am do does did doing done have has had having
    will would shall should can could may might must
    not no also just very really quite too than then now only even still right
    all any each every both few more most other some such own same much many
    let lets please thanks thank okay ok yes yeah sure hi hello
    like want wants wanted need needs make makes made get gets got use used using
    one ones two thing things something anything everything nothing else etc
    maybe perhaps lot lots way well back able
    s t
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
"""Function words and the words of generic requests: words too common to tell one text from
another. Content words (places, states, facets of a request) never belong here."""

_WORD = re.compile(r"[a-z0-9]+")
_APOSTROPHES = str.maketrans("", "", "'\u2019")


def words(text: str) -> list[str]:
    """The lowercase tokens of ``text``, in order (apostrophes dropped, anything else splits)."""
    return _WORD.findall(text.lower().translate(_APOSTROPHES))


def _has_vowel(text: str) -> bool:
    return any(c in "aeiouy" for c in text)


def stem(word: str) -> str:
    """A light suffix stripper: plurals, then ``-ing``/``-ed`` (a doubled final consonant undone),
    then a final ``e``, so that "saves", "saved", "saving" and "save" all read "sav"."""
    w = word
    if w.endswith(("ies", "ied")) and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith(("ches", "shes", "xes", "sses", "zes")) and len(w) > 4:
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")) and len(w) > 3:
        w = w[:-1]
    for suffix in ("ing", "ed"):
        root = w[: -len(suffix)]
        if w.endswith(suffix) and len(root) >= 3 and _has_vowel(root):
            w = root
            if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "aeiouylsfzd":
                w = w[:-1]
            break
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    return w


def prefix_stem(word: str) -> str:
    """A coarser stem for fuzzy matching with ``stems_match``: the longest listed suffix is cut when
    at least four letters remain ("serving" -> "serv", "drafts" -> "draft"; "notes" -> "note")."""
    for suffix in ("ations", "ation", "ising", "izing", "ness", "ing", "ies", "ied", "ed", "es", "ly", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def stems_match(a: str, b: str) -> bool:
    """Two ``prefix_stem`` stems name the same word: equal, or one extends the other by at most one
    letter past a shared prefix of five ("patien(t|ce)", "concentrat(e|ion)"), never by "-ful" or
    "-less" (which turn a word into its opposite)."""
    if a == b:
        return True
    shared = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    tail = (a if len(a) > len(b) else b)[shared:]
    return shared >= 5 and shared >= min(len(a), len(b)) - 1 and not tail.startswith(("ful", "less"))


def content_words(text: str, min_len: int = 3) -> list[str]:
    """The tokens of ``text`` that carry content: at least ``min_len`` characters, not stopwords,
    not numbers (a number is compared as a number, not as a word)."""
    return [w for w in words(text) if len(w) >= min_len and w not in STOPWORDS and not w.isdigit()]


def key_terms(text: str) -> tuple[str, ...]:
    """The stemmed content words of ``text``, once each, in order of first appearance."""
    return tuple(dict.fromkeys(stem(w) for w in content_words(text)))
