"""Judges for the AURA benchmark suites (paper Section 5, Appendices A9 and A14).

Four judges, one failure rule:

- ``ImplicitIntentJudge``: deterministic, offline. Scores an answer to an implicit-intent v2 query on the
  paper's two dimensions (``literal_score``, ``implicit_score``) from the query's gold fields
  (``literal_requires`` public state paths, ``implicit_requires`` private state paths) and the scene
  snapshot, by general rules of what the paper's judge rewards and punishes. Scores are 1 (full), a partial
  credit (0.6, the paper's judge's own) or 0; ``bench.suite.judge_agreement`` fits its two constants on one
  seed of the paper's released cells and measures it on the others.
- ``LLMImplicitJudge``: the paper's gpt-4o-mini judge protocol through the project's gateway
  (``Stage.JUDGE``), JSON ``{literal_score, implicit_score, rationale}``.
- ``FactualClaimJudge``: deterministic claim-level factual judge (CORRECT / CONTRADICTED / UNVERIFIABLE,
  FA = 0.7 P + 0.3 C, strict precision of Appendix A9).
- ``LLMFactualJudge``: the same claim protocol and ``FactualScore`` through the gateway (``Stage.JUDGE``),
  JSON ``{claims: [{text, label}], completeness: 0|0.5|1}``.

A judge that cannot answer (exception, empty answer, model error) returns a ``JudgeFailure``: callers
count it (``JudgeTally``) and it never scores, let alone passes.

Second-order rule (A14): for ``second_order`` queries the right implicit answer is the believer's
recorded belief about the target (``beliefs_about_others.<target>.<field>``), not the target's ground
truth; an answer that reports the truth where it differs from the belief does not surface the need.

``judge_agreement`` measures how often the deterministic judge agrees with the paper's own judge on the
paper's released answers; the deterministic judge never sees those scores.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bench.suite.datasets import ImplicitQuery, ImplicitScene, read_v2, released_cells
from world.scaffolding import has_scaffolding
from world.text import prefix_stem as _stem
from world.text import stems_match as _stems_match
from world.text import words

if TYPE_CHECKING:
    from actors.llm import LLMGateway

# -- results ------------------------------------------------------------------------------------------


class JudgeScore(BaseModel):
    """A verdict on the paper's two implicit-intent dimensions, each in [0, 1]: what every implicit
    judge returns, and the JSON the LLM judge must answer with (the paper's protocol)."""

    model_config = ConfigDict(frozen=True)

    literal_score: float = Field(ge=0.0, le=1.0)
    implicit_score: float = Field(ge=0.0, le=1.0)
    rationale: str


@dataclass(frozen=True)
class JudgeFailure:
    """A judge that gave no verdict. It scores nothing: count it, never treat it as a pass."""

    reason: str
    detail: str = ""


JudgeResult = JudgeScore | JudgeFailure


def no_credit(answer: str) -> JudgeScore | None:
    """0 on both dimensions for an answer carrying chat-template or prompt scaffolding (a model's
    echo of its prompt once scored 1.0 for a place name it repeated); None for a real answer."""
    marker = has_scaffolding(answer)
    if marker is None:
        return None
    return JudgeScore(literal_score=0.0, implicit_score=0.0, rationale=f"scaffolding: {marker}")


@dataclass
class JudgeTally:
    """Counts verdicts and failures (by reason) so a run can report how many cells went unscored."""

    scored: int = 0
    failures: Counter[str] = field(default_factory=Counter)

    def add(self, result: object) -> None:
        if isinstance(result, JudgeFailure):
            self.failures[result.reason] += 1
        else:
            self.scored += 1

    @property
    def failed(self) -> int:
        return sum(self.failures.values())


# -- text matching ------------------------------------------------------------------------------------

# The judges match words with ``world.text``'s coarser stem and prefix match, and their own stop
# list, not ``world.text``'s: both were fitted with the judge's constants on the paper's released cells,
# and ``world.text``'s moved the fitted engagement threshold (0.35 -> 0.45) and one held-out mean
# difference past its target (0.064 > 0.05). The tokens are ``world.text``'s.
_STOP_WORDS = """a an the and or of to in on at for with by from is are was be been being it its this that
    these
    those he she him her his hers they them their i you me my your we our up down out over into about as
    so some any all very just now right today tonight tomorrow morning afternoon evening small big new
    one two few more most quite really still also than then there here who what where when why how town
    """
_STOP = frozenset(_STOP_WORDS.split())


def content_stems(text: str) -> set[str]:
    """Stems of the non-stopword words of ``text`` (underscores split: ``do_not_disturb``)."""
    return {_stem(w) for w in words(text) if w not in _STOP and len(w) > 2}


def _norm(text: str) -> str:
    return " ".join(words(text))


def _has_phrase(answer_norm: str, phrase: str) -> bool:
    needle = _norm(phrase)
    return bool(needle) and re.search(rf"\b{re.escape(needle)}", answer_norm) is not None


# -- state values -------------------------------------------------------------------------------------

# A small, general synonym map of states, by private-state field. A gold value belongs to the families that
# list it (by its own words or their stem); an answer surfaces the value when it affirms the value's own words
# (or their stems) or any phrase of one of its families. A value in no family (an unseen mood, a belief value
# such as "at_garden") is matched by its own words alone. For availability, denying one family affirms the
# other ("not available" is occupied, "not busy" is open).
STATE_FAMILIES: dict[str, dict[str, tuple[str, ...]]] = {
    "availability": {
        "open": (
            "available",
            "free",
            "open to",
            "open to chat",
            "open for",
            "approachable",
            "receptive",
            "has time",
            "have time",
            "can chat",
            "happy to chat",
            "sociable",
        ),
        "occupied": (
            "busy",
            "occupied",
            "engaged",
            "tied up",
            "hands full",
            "swamped",
            "unavailable",
            "preoccupied",
            "in the middle of",
            "concentrating",
            "concentration",
            "focused",
            "focusing",
            "absorbed",
            "engrossed",
            "immersed",
            "deep in",
            "do not disturb",
            "dont disturb",
            "not to be disturbed",
            "not be disturbed",
            "undisturbed",
            "not to be interrupted",
            "not be interrupted",
            "uninterrupted",
            "left alone",
            "be alone",
            "privacy",
            "solitude",
            "in a hurry",
            "hurried",
            "rushed",
        ),
    },
    "emotional_state": {
        "upbeat": (
            "cheerful",
            "happy",
            "upbeat",
            "good mood",
            "good spirits",
            "positive",
            "joyful",
            "bright",
            "friendly",
            "excited",
            "enthusiastic",
            "lively",
        ),
        "calm": (
            "calm",
            "relaxed",
            "at ease",
            "laid back",
            "easygoing",
            "peaceful",
            "serene",
            "tranquil",
            "content",
            "composed",
            "patient",
            "comfortable",
        ),
        "focused": (
            "focused",
            "absorbed",
            "concentrating",
            "engrossed",
            "immersed",
            "deep in",
            "thoughtful",
            "reflective",
            "contemplative",
            "pensive",
            "determined",
        ),
        "tense": (
            "stressed",
            "stress",
            "anxious",
            "anxiety",
            "nervous",
            "worried",
            "uneasy",
            "tense",
            "pressure",
            "overwhelmed",
            "frazzled",
            "strain",
            "restless",
            "frustrated",
            "irritated",
            "jittery",
            "on edge",
            "impatient",
        ),
        "low": ("tired", "weary", "exhausted", "sad", "lonely", "gloomy", "melancholy"),
    },
}
_OPPOSITE = {"open": "occupied", "occupied": "open"}
_UNKNOWN = ("unknown", "not sure", "unsure", "no idea", "uncertain", "unclear")
_NEGATORS = frozenset(
    [
        "not",
        "isnt",
        "arent",
        "wasnt",
        "werent",
        "no",
        "never",
        "nor",
        "without",
        "doesnt",
        "dont",
        "hardly",
        "cannot",
        "cant",
    ]
)


def _negated_at(tokens: Sequence[str], i: int) -> bool:
    return any(t in _NEGATORS for t in tokens[max(0, i - 2) : i])


def _phrase_hits(norm: str, phrase: str) -> tuple[bool, bool]:
    """(affirmed, denied): the phrase occurs at least once not negated / negated by the word or two before it.
    A one-word phrase also matches other forms of its word ("relaxing" for "relaxed")."""
    needle = _norm(phrase)
    if not needle:
        return False, False
    affirmed = denied = False
    if " " in needle:
        for m in re.finditer(rf"\b{re.escape(needle)}", norm):
            if _NEGATION.search(norm[: m.start()]):
                denied = True
            else:
                affirmed = True
        return affirmed, denied
    tokens = norm.split()
    target = _stem(needle)
    for i, tok in enumerate(tokens):
        if _stems_match(_stem(tok), target):
            if _negated_at(tokens, i):
                denied = True
            else:
                affirmed = True
    return affirmed, denied


_NEGATION = re.compile(r"\b(?:not|isnt|arent|wasnt|werent|no|never|nor|without|doesnt|dont)\s+(?:\w+\s+)?$")


def _value_words(value: str) -> str:
    return _norm(value.replace("_", " "))


def state_families(value: str, fld: str | None = None) -> list[str]:
    """The families of ``value`` (those listing its own words or their stem), in field ``fld`` (else any)."""
    words = _value_words(value)
    if not words:
        return []
    fields = [fld] if fld in STATE_FAMILIES else list(STATE_FAMILIES)
    found: list[str] = []
    for f in fields:
        for name, phrases in STATE_FAMILIES[f].items():
            if any(
                _norm(p) == words or (" " not in words and _stems_match(_stem(_norm(p)), _stem(words)))
                for p in phrases
            ):
                found.append(name)
    return found


def _family_phrases(name: str) -> tuple[str, ...]:
    return next(phrases[name] for phrases in STATE_FAMILIES.values() if name in phrases)


def _own_words_affirmed(norm: str, value: str) -> bool:
    words = _value_words(value)
    if _phrase_hits(norm, words)[0]:
        return True
    stems = [w for w in words.split() if w not in _STOP and w not in _NEGATORS and len(w) > 2]
    return len(stems) > 1 and all(_phrase_hits(norm, w)[0] for w in stems)


def family_affirmed(answer: str, name: str) -> bool:
    """The answer affirms a state of family ``name``, or denies its opposite."""
    norm = _norm(answer)
    if any(_phrase_hits(norm, p)[0] for p in _family_phrases(name)):
        return True
    opposite = _OPPOSITE.get(name)
    return opposite is not None and any(_phrase_hits(norm, p)[1] for p in _family_phrases(opposite))


def value_surfaced(answer: str, value: str, fld: str | None = None) -> bool:
    """Whether ``answer`` states the state value ``value`` of field ``fld`` (its own words, their stems, or a
    synonym of its family; case-insensitive, not negated)."""
    if value.lower() == "unknown":
        norm = _norm(answer)
        return any(_phrase_hits(norm, p)[0] for p in _UNKNOWN)
    if _own_words_affirmed(_norm(answer), value):
        return True
    return any(family_affirmed(answer, name) for name in state_families(value, fld))


def contradicts(answer: str, value: str, fld: str | None = None) -> bool:
    """Whether ``answer`` states the opposite of an availability value ("open to chat" for a busy agent)."""
    opposite = [o for name in state_families(value, fld) if (o := _OPPOSITE.get(name))]
    return (
        bool(opposite)
        and not value_surfaced(answer, value, fld)
        and any(family_affirmed(answer, o) for o in opposite)
    )


_REFUSAL = (
    "does not provide",
    "doesnt provide",
    "no information",
    "no specific information",
    "not enough information",
    "cannot determine",
    "cant determine",
    "cannot answer",
    "cannot provide",
    "unable to determine",
    "i dont know",
    "i do not know",
    "not mentioned",
)


def _says_any(text: str, phrases: Iterable[str]) -> bool:
    norm = _norm(text)
    return any(_has_phrase(norm, p) for p in phrases)


def is_refusal(answer: str) -> bool:
    """Whether the answer declines the question for lack of information."""
    return _says_any(answer, _REFUSAL)


def goal_coverage(answer: str, goal: str, public: str = "") -> float:
    """Fraction of the goal's private content words (those not in ``public``: the query, what anyone can
    see the agent doing) that the answer mentions in any form; 0 when the goal has none."""
    seen = content_stems(public)
    stems = [s for s in content_stems(goal) if not any(_stems_match(s, p) for p in seen)]
    if not stems:
        return 0.0
    said = content_stems(answer)
    return sum(1 for s in stems if any(_stems_match(s, t) for t in said)) / len(stems)


def location_mentioned(answer: str, location: str) -> bool:
    """A location matches by its full name or any distinctive word ("the cafe" for "Sunrise Cafe")."""
    norm = _norm(answer)
    return _has_phrase(norm, location) or any(_has_phrase(norm, w) for w in content_stems(location))


def action_mentioned(answer: str, action: str) -> bool:
    """An action matches when at least half of its content stems occur in the answer."""
    stems = content_stems(action)
    return bool(stems) and 2 * len(stems & content_stems(answer)) >= len(stems)


def _band(met: int, total: int) -> float:
    if total == 0:
        return 1.0
    return 1.0 if met == total else (0.5 if met else 0.0)


# -- answer structure ---------------------------------------------------------------------------------

_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_CLAUSES = re.compile(r";\s*|,?\s+(?=\b(?:but|while|whereas|although|though|however)\b)", re.IGNORECASE)
# A sentence that guesses what the asker wants ("You may also be wondering: the user may want to know if
# ...") states nothing about the town: its words are the asker's question, not the answer.
_ASKER_GUESS = re.compile(r"\bthe user\b|\buser s\b|\bwondering\b|\byou (?:may|might) want to know\b")


def answer_claims(answer: str) -> list[str]:
    """The answer's clauses that state something, without those that guess at the asker's intent."""
    out: list[str] = []
    for sentence in _SENTENCES.split(answer):
        if not sentence.strip() or _ASKER_GUESS.search(_norm(sentence)):
            continue
        out += [c for c in _CLAUSES.split(sentence) if c and c.strip()]
    return out


_LIST_ITEMS = re.compile(r",\s*|\s+\band\b\s+")  # "Lin Wei is busy, Zhang Hao is relaxed and Chen Mei ..."


def about(claims: Sequence[str], agents: Sequence[str], everyone: Iterable[str], value: str = "") -> str:
    """The claims that can be about ``agents``: those naming one of them, and those naming nobody that follow
    one (pronouns) or open the answer. A clause about other people only ("Zhang Hao is free", "he is
    reading" after it) says nothing of Chen Mei. Names inside the ``value`` looked for ("invite Chen Mei to a
    book discussion") are its objects, not whom the clause is about."""
    names = [n for n in everyone if n in agents or not _has_phrase(_norm(value), n)]
    kept = []
    current: list[str] = []  # who the last clause that named anyone was about
    for clause in (part for claim in claims for part in _LIST_ITEMS.split(claim) if part.strip()):
        norm = _norm(clause)
        named = [n for n in names if _has_phrase(norm, n)]
        if named:
            current = named
        if not current or any(a in current for a in agents):
            kept.append(clause)
    return " ".join(kept)


# A small, general synonym map of the words needs are phrased in: a need word is spoken to when the answer
# uses it or another word of its group ("a bad time" is answered by "not the moment").
NEED_SYNONYMS: tuple[frozenset[str], ...] = tuple(
    frozenset(_stem(w) for w in group.split())
    for group in (
        "time moment now",
        "interrupt disturb bother intrude distract",
        "approach catch reach visit join",
        "talk chat conversation company",
        "help assist support",
        "welcome glad appreciate receptive",
        "mood spirits feeling",
        "free available",
    )
)


def _need_word_used(word: str, said: set[str]) -> bool:
    group = next((g for g in NEED_SYNONYMS if any(_stems_match(word, w) for w in g)), frozenset({word}))
    return any(_stems_match(w, t) for w in group | {word} for t in said)


def need_engagement(query: ImplicitQuery, text: str, everyone: Iterable[str] = ()) -> float:
    """Share of the implicit need's own words (those the query does not already say, names aside) that the
    answer uses in any form or by a synonym: how far it speaks to the need rather than only stating facts."""
    skip = content_stems(query.query) | {s for n in everyone for s in content_stems(n)}
    need = [s for s in content_stems(query.implicit_need) if not any(_stems_match(s, q) for q in skip)]
    if not need:
        return 1.0
    said = content_stems(text)
    return sum(1 for s in need if _need_word_used(s, said)) / len(need)


# Words by which an answer settles the asker's decision rather than only reporting facts.
_VERDICT = (
    "best to",
    "better to",
    "best not",
    "good time",
    "best time",
    "right time",
    "good moment",
    "best moment",
    "right moment",
    "good idea",
    "wait until",
    "wait for",
    "hold off",
    "avoid",
    "go ahead",
    "feel free",
    "should",
    "recommend",
    "suggest",
    "appropriate",
    "okay to",
    "ok to",
    "fine to",
    "safe to",
    "you can",
    "you could",
    "you might",
)


def gives_verdict(text: str) -> bool:
    """Whether ``text`` gives the asker a verdict or advice on what to do."""
    return _says_any(text, _VERDICT)


# -- deterministic implicit-intent judge -------------------------------------------------------------

_FIELD_ALIASES = {"mood": "emotional_state"}
_PRIVATE_FIELDS = ("availability", "emotional_state", "unspoken_goal")
# Subcategories whose implicit need is a private value itself (what she is privately after, what he believes).
# In the others (availability, mood, appropriateness, or any unknown one) the need is the asker's decision:
# stating the state answers it only partly, full credit also needs the answer to speak to the decision.
VALUE_SUBCATEGORIES = frozenset({"latent_goal", "second_order"})
# A query about the whole town rather than the people at hand.
_WHOLE_TOWN = re.compile(r"\b(?:in|around|across) (?:the )?town\b|\beveryone\b|\beverybody\b")


@dataclass(frozen=True)
class JudgeParams:
    """The deterministic judge's constants. Defaults are those fitted on seed 42 of the paper's cells
    (``bench.suite.judge_agreement``); nothing else was fitted."""

    partial: float = 0.6  # score of a partial verdict (the paper's judge's mean partial score, on its grid)
    engage: float = 0.35  # share of the implicit need's own words for "speaks to the need"
    goal_full: float = 0.5  # share of the unspoken goal's content words for full credit on that requirement
    goal_part: float = 0.25


@dataclass(frozen=True)
class _Check:
    name: str
    met: float  # 1 met, 0.5 partly met, 0 not met
    note: str
    echoed: bool = False  # the matched value also appears in the query text itself
    contradicted: bool = False  # the answer states the opposite state for the agent


@dataclass(frozen=True)
class Assessment:
    """What an answer does for one query, before scoring."""

    literal: tuple[_Check, ...]
    implicit: tuple[_Check, ...]
    unchecked: tuple[str, ...]  # implicit requirements the snapshot cannot check (e.g. secrets)
    grounded: bool  # states some state of the agents asked about
    volunteered: bool  # states some private value of those agents that the query does not already say
    engagement: float  # share of the implicit need's own words the answer uses
    verdict: bool  # gives the asker a verdict or advice ("best to wait", "you can approach him")
    refusal: bool


class ImplicitIntentJudge:
    """Scores an answer from the gold fields of an implicit-intent v2 query and its scene snapshot.

    Literal: each checkable ``literal_requires`` path (agent_location, agent_action, agent_plan,
    nearby_agents, location_state, all_agents_action, all_agents_location) is met when the answer states
    the public fact leniently, or the answer grounds itself in the state of the agents asked about.

    Implicit: each ``implicit_requires`` field (availability, emotional_state / mood, unspoken_goal,
    beliefs_about_others.<target>.<field>) is met when the answer surfaces the private value for the agent
    it belongs to: the value's own words or stems, or a synonym of its state family (``STATE_FAMILIES``), not
    negated; for a goal, at least ``goal_full`` of its private words (those the query and the agent's public
    state do not already give away). Only clauses about that agent count (a clause naming only someone else,
    or the pronouns after it, does not); sentences that guess at the asker's intent ("you may also be
    wondering ...") state nothing. Requirements the snapshot cannot check (current_time, relationships,
    agent_history, secrets) are skipped for matching but bar full credit. A belief is met by the believer's
    belief, not the target's truth where it is of another family (both: half); when the need asks whether
    the belief matches the facts, by the facts set against it.

    Scores are 1, ``partial`` or 0, in the way of the paper's judge:

    - implicit 1: every checkable requirement met (or, for a judgement combining several states, a verdict
      for the asker grounded in one of them), no contradiction (a state opposite to an agent's truth), no
      uncheckable requirement, and, unless the need is a value itself (latent goal, belief), the answer
      speaks to the need: ``need_engagement`` (its words, or synonyms, ``NEED_SYNONYMS``) >= ``engage``;
    - partial: some requirement met, or some other private state of the agents volunteered, or (for an
      availability need) the agent's current activity stated, which bears on whether they are free;
    - 0: none of that, or a refusal ("no information") that volunteers nothing the query did not say.

    Group queries (no subject) concern the people at the place the query names, or at the scene, or the
    whole town when it says so; a requirement is met when the value of at least half of them is surfaced,
    partly when some is.
    """

    name = "deterministic"

    def __init__(self, params: JudgeParams | None = None) -> None:
        self.params = params or JudgeParams()

    def judge(self, query: ImplicitQuery, scene: ImplicitScene, answer: str) -> JudgeResult:
        if not answer or not answer.strip():
            return JudgeFailure("empty_answer")
        if (none := no_credit(answer)) is not None:
            return none
        try:
            return self._judge(query, scene, answer)
        except Exception as exc:  # noqa: BLE001 - a crashing judge is a counted failure, never a score
            return JudgeFailure("judge_error", f"{type(exc).__name__}: {exc}")

    # -- scoring --

    def _judge(self, query: ImplicitQuery, scene: ImplicitScene, answer: str) -> JudgeScore:
        a = self.assess(query, scene, answer)
        literal_score, implicit_score = self.score(query, a)
        notes = "; ".join(f"{c.name}={c.met:g} ({c.note})" for c in (*a.literal, *a.implicit))
        notes += f"; need words {a.engagement:.2f}; verdict={a.verdict}; volunteered={a.volunteered}"
        notes += f"; grounded={a.grounded}; refusal={a.refusal}"
        notes += f"; unchecked {', '.join(a.unchecked)}" if a.unchecked else ""
        return JudgeScore(literal_score=literal_score, implicit_score=implicit_score, rationale=notes)

    def assess(self, query: ImplicitQuery, scene: ImplicitScene, answer: str) -> Assessment:
        """What the answer does, requirement by requirement, before any score."""
        agents = self._agents(query, scene)
        claims = answer_claims(answer)
        body = " ".join(claims)
        refusal = is_refusal(answer)
        return Assessment(
            literal=tuple(
                c for r in query.literal_requires if (c := self._literal(r, agents, scene, answer))
            ),
            implicit=tuple(
                c for r in query.implicit_requires if (c := self._implicit(r, query, agents, scene, claims))
            ),
            unchecked=tuple(
                r for r in query.implicit_requires if not self._checkable(r, query, agents, scene)
            ),
            grounded=self._grounded(query, agents, scene, body, skip_echo=refusal),
            volunteered=self._volunteered(query, agents, scene, claims),
            engagement=need_engagement(query, answer, scene.public_state),
            verdict=gives_verdict(body),
            refusal=refusal,
        )

    def score(self, query: ImplicitQuery, a: Assessment) -> tuple[float, float]:
        """(literal, implicit) from an assessment, by the rules of the class docstring."""
        p = self.params
        literal_score = _dimension_score(a.literal, p.partial)
        # The surface question is also answered when the answer grounds itself in the state of the agents
        # asked about (any public or private value, or the believer's belief), even if it skips the exact
        # public path the gold lists: the paper's judge scores "answers the question", not "repeats it".
        if literal_score < 1.0 and a.grounded:
            literal_score = 1.0
        met = sum(c.met for c in a.implicit)
        settled = bool(a.implicit) and met == len(a.implicit)
        # A judgement that combines several states is also settled by a verdict grounded in one of them.
        settled = settled or (len(a.implicit) > 1 and a.verdict and any(c.met == 1.0 for c in a.implicit))
        if settled:
            full = not a.unchecked and not any(c.contradicted for c in a.implicit)
            # A decision (may I interrupt, is it a good time) wants the answer to speak to it as well; for a
            # latent goal or a belief, the private value is itself the answer.
            if query.subcategory not in VALUE_SUBCATEGORIES:
                full = full and a.engagement >= p.engage
            implicit_score = 1.0 if full else p.partial
        else:
            implicit_score = p.partial if met > 0 or a.volunteered else 0.0
        if a.refusal:  # "no information / cannot determine": the question is declined, whatever else is said
            literal_score = min(literal_score, p.partial) if a.grounded else 0.0
            # A declining answer that only echoes the question's own words ("open to chat") surfaces
            # nothing; one that still volunteers state keeps at most partial credit.
            kept = any(c.met == 1.0 and not c.echoed for c in a.implicit) or a.volunteered
            implicit_score = min(implicit_score, p.partial) if kept else 0.0
        return literal_score, implicit_score

    def _grounded(
        self,
        query: ImplicitQuery,
        agents: list[str],
        scene: ImplicitScene,
        answer: str,
        skip_echo: bool = False,
    ) -> bool:
        """Whether the answer states some state of the agents asked about (with ``skip_echo``, values the
        query itself already names do not count)."""
        about_ = [*agents, *([query.target] if query.target else [])]
        values: list[tuple[str, str]] = []
        for a in about_:
            values += [(v, k) for k, v in scene.private_state.get(a, {}).items() if k != "unspoken_goal"]
        if query.target and query.agent_subject:
            belief = scene.beliefs_about_others.get(query.agent_subject, {}).get(query.target, {})
            values += [(v, k) for k, v in belief.items() if isinstance(v, str)]  # a day number says nothing
        if skip_echo:
            values = [(v, k) for v, k in values if not value_surfaced(query.query, v, k)]
        if any(value_surfaced(answer, v, k) for v, k in values if v and v != "unknown"):
            return True
        return any(
            action_mentioned(answer, scene.public_state.get(a, {}).get("action", ""))
            or goal_coverage(
                answer, scene.private_state.get(a, {}).get("unspoken_goal", ""), _public(query, scene, a)
            )
            >= self.params.goal_full
            for a in about_
        )

    def _volunteered(
        self, query: ImplicitQuery, agents: list[str], scene: ImplicitScene, claims: Sequence[str]
    ) -> bool:
        """Whether the answer states some private value (any field) of the agents asked about that the query
        itself does not already say. In a question about a belief, the target's own state is not volunteered
        insight: it is the truth the belief question is not asking for."""
        about_belief = any(r.startswith("beliefs_about_others.") for r in query.implicit_requires)
        for a in [*agents, *([query.target] if query.target and not about_belief else [])]:
            for fld in _PRIVATE_FIELDS:
                value = scene.private_state.get(a, {}).get(fld)
                if not value or value == "unknown":
                    continue
                text = about(claims, [a], scene.public_state, value)
                if fld == "unspoken_goal":
                    if goal_coverage(text, value, _public(query, scene, a)) >= self.params.goal_full:
                        return True
                elif value_surfaced(text, value, fld) and not value_surfaced(query.query, value, fld):
                    return True
        return False

    def _agents(self, query: ImplicitQuery, scene: ImplicitScene) -> list[str]:
        """The agents a query is about: its subject, else those at a location the query names, else all."""
        if query.agent_subject:
            return [query.agent_subject]
        names = [a for a in scene.public_state if _has_phrase(_norm(query.query), a)]
        if names:
            return names
        at = [
            a
            for a, pub in scene.public_state.items()
            if any(_has_phrase(_norm(query.query), w) for w in content_stems(pub.get("location", "")))
        ]
        if at:
            return at
        if _WHOLE_TOWN.search(_norm(query.query)):
            return list(scene.public_state)
        here = [a for a, pub in scene.public_state.items() if pub.get("location", "") in scene.summary[:40]]
        return here or list(scene.public_state)

    def _literal(self, req: str, agents: list[str], scene: ImplicitScene, answer: str) -> _Check | None:
        pub = [scene.public_state.get(a, {}) for a in agents]
        if req in ("agent_location", "all_agents_location"):
            hits = [location_mentioned(answer, p.get("location", "")) for p in pub]
        elif req in ("agent_action", "agent_plan", "all_agents_action"):
            hits = [action_mentioned(answer, p.get("action", "")) for p in pub]
        elif req in ("nearby_agents", "location_state"):
            hits = [_has_phrase(_norm(answer), a) for a in agents]
        else:
            return None  # current_time, relationships, agent_history: not in the snapshot
        if req.startswith("all_agents") or req in ("nearby_agents", "location_state"):
            met = 1.0 if 2 * sum(hits) >= len(hits) else (0.5 if any(hits) else 0.0)
        else:
            met = 1.0 if any(hits) else 0.0
        return _Check(req, met, f"{sum(hits)}/{len(hits)} agents")

    def _checkable(self, req: str, query: ImplicitQuery, agents: list[str], scene: ImplicitScene) -> bool:
        if req.startswith("beliefs_about_others."):
            _, target, fld = req.split(".", 2)
            return bool(_belief_value(scene, query.agent_subject or "", target, fld))
        fld = _FIELD_ALIASES.get(req, req)
        return any(scene.private_state.get(a, {}).get(fld) for a in agents)

    def _implicit(
        self, req: str, query: ImplicitQuery, agents: list[str], scene: ImplicitScene, claims: Sequence[str]
    ) -> _Check | None:
        if req.startswith("beliefs_about_others."):
            return self._belief(req, query, scene, claims)
        fld = _FIELD_ALIASES.get(req, req)
        owners = [a for a in agents if scene.private_state.get(a, {}).get(fld)]
        if not owners:
            return None  # e.g. "secrets": no gold value to check
        hits: list[float] = []
        echoed = contradicted = False
        for a in owners:
            value = scene.private_state[a][fld]
            text = about(claims, [a], scene.public_state, value)
            if fld == "unspoken_goal":
                cover = goal_coverage(text, value, _public(query, scene, a))
                hits.append(
                    1.0 if cover >= self.params.goal_full else (0.5 if cover >= self.params.goal_part else 0)
                )
                continue
            if value_surfaced(text, value, fld):
                hits.append(1.0)
                echoed = echoed or value_surfaced(query.query, value, fld)
            elif fld == "availability" and action_mentioned(
                text, scene.public_state.get(a, {}).get("action", "")
            ):
                hits.append(0.5)  # what they are doing bears on whether they are free
            else:
                hits.append(0.0)
            contradicted = contradicted or contradicts(text, value, fld)
        if len(hits) == 1:
            met = hits[0]
        else:
            full = sum(1 for h in hits if h == 1.0)
            met = 1.0 if 2 * full >= len(hits) else (0.5 if any(hits) else 0.0)
        values = "/".join(sorted({scene.private_state[a][fld] for a in owners}))
        note = f"{values}: {sum(1 for h in hits if h)}/{len(hits)}" + (
            " contradicted" if contradicted else ""
        )
        return _Check(req, met, note, echoed, contradicted)

    def _belief(
        self, req: str, query: ImplicitQuery, scene: ImplicitScene, claims: Sequence[str]
    ) -> _Check | None:
        _, target, fld = req.split(".", 2)
        believer = query.agent_subject or ""
        belief = _belief_value(scene, believer, target, fld)
        if not belief:
            return None
        truth = scene.private_state.get(target, {}).get(fld, "")
        text = about(claims, [believer, target], scene.public_state)
        states_belief = value_surfaced(text, belief, fld)
        echoed = value_surfaced(query.query, belief, fld)
        # The second-order rule: the belief is the answer. Reporting the target's truth where it differs
        # from the belief (a state of another family, not a synonym of the belief), without the belief,
        # earns nothing; both together earn part (hedged).
        differs = bool(truth) and truth != belief and not value_surfaced(_value_words(truth), belief, fld)
        states_truth = differs and value_surfaced(text, truth, fld)
        if _COMPARISON.search(_norm(query.implicit_need)):
            # The need asks whether the belief matches the facts: the belief alone does not answer it; the
            # facts (the target's true state or what they are visibly doing) set against it do.
            seen = states_truth or action_mentioned(
                text, scene.public_state.get(target, {}).get("action", "")
            )
            return _Check(
                req, 1.0 if seen else 0.0, f"comparison: truth {'stated' if seen else 'missing'}", echoed
            )
        if states_belief and not states_truth:
            return _Check(req, 1.0, f"belief {belief}", echoed)
        if states_belief:
            return _Check(req, 0.5, f"belief {belief} and truth {truth}", echoed)
        return _Check(
            req, 0.0, f"belief {belief} missing" + (f", truth {truth} stated" if states_truth else "")
        )


# An implicit need that asks whether a belief matches the facts, not what the belief is.
_COMPARISON = re.compile(r"\b(?:match|matches|mismatch|differ|differs|compare|compared)\b")


def _belief_value(scene: ImplicitScene, believer: str, target: str, fld: str) -> str:
    """What ``believer`` holds of ``target``'s ``fld`` as text ("" when none is held, or it is not text)."""
    value = scene.beliefs_about_others.get(believer, {}).get(target, {}).get(fld)
    return value if isinstance(value, str) else ""


def _public(query: ImplicitQuery, scene: ImplicitScene, agent: str) -> str:
    """What the asker knows of ``agent`` without any private probe: the query and the agent's public state."""
    return " ".join([query.query, *scene.public_state.get(agent, {}).values()])


def _dimension_score(checks: Sequence[_Check], partial: float) -> float:
    if not checks:
        return 1.0
    total = sum(c.met for c in checks)
    return 1.0 if total == len(checks) else (partial if total > 0 else 0.0)


# -- LLM implicit-intent judge ------------------------------------------------------------------------


JUDGE_SYSTEM = (
    "You are an impartial judge of a situated assistant's answers in a small town simulation. "
    "Score the response on two dimensions in [0, 1]: literal_score (does it correctly answer the surface "
    "question, using the public state?) and implicit_score (does it surface the user's implicit need, "
    "using the private state?). For second-order questions (what X thinks about Y) the correct implicit "
    "answer is X's recorded belief about Y, not Y's ground truth. "
    'Reply with JSON only: {"literal_score": <0-1>, "implicit_score": <0-1>, "rationale": "<one sentence>"}'
)


def judge_messages(query: ImplicitQuery, scene: ImplicitScene, answer: str) -> list[dict[str, str]]:
    """The judge prompt: the query, its implicit need, the ground truth, and the answer."""
    truth: dict[str, Any] = {
        "public_state": scene.public_state,
        "private_state": scene.private_state,
        "beliefs_about_others": scene.beliefs_about_others,
    }
    user = (
        f"Query: {query.query}\n"
        f"Subcategory: {query.subcategory}\n"
        f"Implicit need: {query.implicit_need}\n"
        f"Ground-truth state: {json.dumps(truth, sort_keys=True)}\n"
        f"Response: {answer}"
    )
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]


_Verdict = TypeVar("_Verdict", bound=BaseModel)


class _ModelJudge:
    """A judge that asks a model through the gateway (``Stage.JUDGE``) for a JSON verdict. An empty
    answer or a model error is a counted failure, never a score."""

    def __init__(self, gateway: LLMGateway, *, actor: str = "judge") -> None:
        self.gateway = gateway
        self.actor = actor

    def _verdict(
        self, answer: str, messages: list[dict[str, str]], schema: type[_Verdict]
    ) -> _Verdict | JudgeFailure:
        from actors.llm import LLMError, Stage

        if not answer or not answer.strip():
            return JudgeFailure("empty_answer")
        try:
            return self.gateway.structured(Stage.JUDGE, messages, schema, actor=self.actor).value
        except LLMError as err:
            return JudgeFailure(f"llm_{err.reason}", err.detail)


class LLMImplicitJudge(_ModelJudge):
    """The paper's LLM judge through the gateway."""

    name = "llm"

    def judge(self, query: ImplicitQuery, scene: ImplicitScene, answer: str) -> JudgeResult:
        if answer.strip() and (none := no_credit(answer)) is not None:
            return none
        return self._verdict(answer, judge_messages(query, scene, answer), JudgeScore)


# -- factual claim judge ------------------------------------------------------------------------------

ClaimLabel = Literal["CORRECT", "CONTRADICTED", "UNVERIFIABLE"]
_TIME = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*([ap])\.?m\.?\b|\b(\d{1,2}):(\d{2})\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def _times(text: str) -> set[int]:
    """Times of day in ``text`` as minutes after midnight ("10:15 AM", "2 pm", "14:30")."""
    found: set[int] = set()
    for m in _TIME.finditer(text):
        if m.group(3):
            hour, minute = int(m.group(1)) % 12, int(m.group(2) or 0)
            hour += 12 if m.group(3).lower() == "p" else 0
        else:
            hour, minute = int(m.group(4)), int(m.group(5))
        found.add(hour * 60 + minute)
    return found


@dataclass(frozen=True)
class Claim:
    text: str
    label: ClaimLabel
    facts: tuple[str, ...]  # the gold facts it matched or contradicted


@dataclass(frozen=True)
class FactualScore:
    """Claim-level verdict. ``precision`` and ``strict_precision`` are None with no verifiable claim."""

    claims: tuple[Claim, ...]
    correct: int
    contradicted: int
    unverifiable: int
    precision: float | None
    completeness: float
    fa: float

    @property
    def strict_precision(self) -> float | None:
        """A9: correct / (correct + contradicted), no completeness term; None (excluded) if unverifiable."""
        return self.precision

    @property
    def hallucinated(self) -> bool:
        return self.contradicted > 0

    @property
    def perfect(self) -> bool:
        return self.contradicted == 0 and self.correct > 0


class FactualClaimJudge:
    """Deterministic claim judge against gold facts (fact name -> value).

    The answer is split into claims (sentences). A claim is CORRECT when it states a gold value (times
    compared as clock times, other values by their content words) and states no conflicting value;
    CONTRADICTED when it states a time that differs from every gold time, or names one of the
    ``known_values`` (e.g. the town's location names) that is not a gold value of that fact kind; else
    UNVERIFIABLE. Completeness C is 1 when every gold fact is stated somewhere, 0.5 when some are, 0 when
    none. P = correct / (correct + contradicted); FA = 0.7 P + 0.3 C, with P counted as 0 when no claim is
    verifiable (strict precision then excludes the cell, as in A9).
    """

    name = "factual"

    def __init__(self, known_values: Iterable[str] = ()) -> None:
        self.known_values = tuple(known_values)

    def judge(self, gold: Mapping[str, str], answer: str) -> FactualScore | JudgeFailure:
        if not answer or not answer.strip():
            return JudgeFailure("empty_answer")
        if has_scaffolding(answer) is not None:  # no claim of a template echo counts
            return factual_score((), 0.0)
        try:
            return self._judge(gold, answer)
        except Exception as exc:  # noqa: BLE001 - a crashing judge is a counted failure, never a score
            return JudgeFailure("judge_error", f"{type(exc).__name__}: {exc}")

    def _judge(self, gold: Mapping[str, str], answer: str) -> FactualScore:
        claims = tuple(self.classify(gold, s) for s in _SENTENCE.split(answer) if s.strip())
        stated = sum(1 for name in gold if any(name in c.facts and c.label == "CORRECT" for c in claims))
        return factual_score(claims, _band(stated, len(gold)) if gold else 0.0)

    def classify(self, gold: Mapping[str, str], claim: str) -> Claim:
        gold_times = {name: _times(v) for name, v in gold.items() if _times(v)}
        supported: list[str] = []
        conflicts: list[str] = []
        said_times = _times(claim)
        for name, value in gold.items():
            if name in gold_times:
                if said_times & gold_times[name]:
                    supported.append(name)
            elif value_stated(claim, value):
                supported.append(name)
        all_gold_times = set().union(*gold_times.values()) if gold_times else set()
        if gold_times and said_times - all_gold_times:
            conflicts.extend(gold_times)
        gold_values = {_norm(v) for v in gold.values()}
        for known in self.known_values:
            if _norm(known) not in gold_values and _has_phrase(_norm(claim), known):
                conflicts.append(known)
        if conflicts:
            return Claim(claim.strip(), "CONTRADICTED", tuple(conflicts))
        if supported:
            return Claim(claim.strip(), "CORRECT", tuple(supported))
        return Claim(claim.strip(), "UNVERIFIABLE", ())


def value_stated(text: str, value: str) -> bool:
    """A gold value is stated when its full phrase or all its content words occur in ``text``."""
    stems = content_stems(value)
    return _has_phrase(_norm(text), value) or (bool(stems) and stems <= content_stems(text))


# -- LLM factual claim judge --------------------------------------------------------------------------


class ClaimVerdict(BaseModel):
    text: str
    label: ClaimLabel


class FactualVerdict(BaseModel):
    """The JSON the LLM factual judge must return (A9: labelled claims and a banded completeness)."""

    claims: list[ClaimVerdict]
    completeness: float

    @field_validator("completeness")
    @classmethod
    def _banded(cls, value: float) -> float:
        if value not in (0.0, 0.5, 1.0):  # A9 bands completeness; anything else is an invalid verdict
            raise ValueError("completeness must be 0, 0.5 or 1")
        return value


FACTUAL_JUDGE_SYSTEM = (
    "You are an impartial judge of factual answers given by a resident of a small town simulation. "
    "Split the answer into its atomic factual claims and label each against the gold facts: CORRECT "
    "(supported by a gold fact), CONTRADICTED (conflicts with a gold fact), UNVERIFIABLE (the gold facts "
    "neither support nor contradict it). Then rate completeness: 1 if the answer states every gold fact, "
    "0.5 if it states some, 0 if none. "
    'Reply with JSON only: {"claims": [{"text": "<claim>", "label": "CORRECT|CONTRADICTED|UNVERIFIABLE"}], '
    '"completeness": 0|0.5|1}'
)


def factual_judge_messages(question: str, gold: Mapping[str, str], answer: str) -> list[dict[str, str]]:
    """The factual judge prompt: the question, the gold facts, and the answer."""
    facts = "\n".join(f"- {name}: {value}" for name, value in gold.items())
    user = f"Question: {question}\nGold facts:\n{facts}\nAnswer: {answer}"
    return [{"role": "system", "content": FACTUAL_JUDGE_SYSTEM}, {"role": "user", "content": user}]


def factual_score(claims: Sequence[Claim], completeness: float) -> FactualScore:
    """P = correct / (correct + contradicted) (None when nothing is verifiable), FA = 0.7 P + 0.3 C."""
    counts = Counter(c.label for c in claims)
    correct, contradicted = counts["CORRECT"], counts["CONTRADICTED"]
    precision = correct / (correct + contradicted) if correct + contradicted else None
    fa = 0.7 * (precision or 0.0) + 0.3 * completeness
    return FactualScore(
        tuple(claims), correct, contradicted, counts["UNVERIFIABLE"], precision, completeness, round(fa, 6)
    )


class LLMFactualJudge(_ModelJudge):
    """The paper's claim-level factual judge through the gateway (``Stage.JUDGE``); it produces the same
    ``FactualScore`` as ``FactualClaimJudge``. A model error is a counted failure, never a score."""

    name = "llm_factual"

    def judge(
        self, gold: Mapping[str, str], answer: str, known: tuple[str, ...] = (), question: str = ""
    ) -> FactualScore | JudgeFailure:
        """Matches ``factual.FactualJudgeFn``; ``known`` is unused (the model sees the gold facts)."""
        if answer.strip() and has_scaffolding(answer) is not None:  # no claim of a template echo counts
            return factual_score((), 0.0)
        v = self._verdict(answer, factual_judge_messages(question, gold, answer), FactualVerdict)
        if isinstance(v, JudgeFailure):
            return v
        claims = [Claim(c.text.strip(), c.label, ()) for c in v.claims]
        return factual_score(claims, float(v.completeness))


# -- agreement with the paper's judge ----------------------------------------------------------------

LABELS = (0.0, 0.5, 1.0)


def band(score: float) -> float:
    """The paper's judge scores in steps of 0.2; map to {0, 0.5, 1}: <0.3 -> 0, >0.7 -> 1, else 0.5."""
    return 0.0 if score < 0.3 else (1.0 if score > 0.7 else 0.5)


def cohen_kappa(pairs: Sequence[tuple[Any, Any]]) -> float:
    """Cohen's kappa of paired labels (1.0 when both raters use a single identical label)."""
    n = len(pairs)
    if n == 0:
        return float("nan")
    observed = sum(1 for a, b in pairs if a == b) / n
    left, right = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    expected = sum(left[k] * right[k] for k in left) / (n * n)
    return 1.0 if expected == 1.0 else (observed - expected) / (1.0 - expected)


@dataclass(frozen=True)
class Agreement:
    """Agreement of two raters on one dimension (ours vs the paper's, both banded to {0, .5, 1})."""

    n: int
    exact: float
    binary: float  # both >= 0.5 or both < 0.5
    kappa: float
    binary_kappa: float
    confusion: dict[tuple[float, float], int]  # (paper band, our band) -> count

    @classmethod
    def of(cls, pairs: Sequence[tuple[float, float]]) -> Agreement:
        """Both raters banded to {0, .5, 1} (ours is already on 0 / partial / 1); binary at >= 0.5."""
        banded = [(band(p), band(o)) for p, o in pairs]
        binar = [(band(p) >= 0.5, o >= 0.5) for p, o in pairs]
        n = len(pairs)
        return cls(
            n=n,
            exact=sum(p == o for p, o in banded) / n if n else float("nan"),
            binary=sum(p == o for p, o in binar) / n if n else float("nan"),
            kappa=cohen_kappa(banded),
            binary_kappa=cohen_kappa(binar),
            confusion={(p, o): sum(1 for x in banded if x == (p, o)) for p in LABELS for o in LABELS},
        )


@dataclass(frozen=True)
class AgreementReport:
    cells: int
    failures: int
    implicit: Agreement
    literal: Agreement
    by_subcategory: dict[str, tuple[Agreement, Agreement]]  # subcategory -> (implicit, literal)

    def format(self) -> str:
        lines = [f"cells {self.cells}, judge failures {self.failures}"]
        rows = [("all", self.implicit, self.literal)]
        rows += [(s, i, lit) for s, (i, lit) in sorted(self.by_subcategory.items())]
        lines.append("| slice | n | implicit exact | bin | kappa | bin kappa | literal exact | bin | kappa |")
        lines.append("|---|---|---|---|---|---|---|---|---|")
        for name, i, lit in rows:
            lines.append(
                f"| {name} | {i.n} | {i.exact:.3f} | {i.binary:.3f} | {i.kappa:.3f} | {i.binary_kappa:.3f} "
                f"| {lit.exact:.3f} | {lit.binary:.3f} | {lit.kappa:.3f} |"
            )
        for title, agr in (("implicit", self.implicit), ("literal", self.literal)):
            lines.append(f"{title} confusion (rows paper band, cols ours 0/0.5/1):")
            for p in LABELS:
                lines.append(f"  {p:g}: " + " ".join(f"{agr.confusion[(p, o)]:4d}" for o in LABELS))
        return "\n".join(lines)


def judge_agreement(
    results_path: str | Path,
    queries_path: str | Path,
    judge: Callable[[ImplicitQuery, ImplicitScene, str], JudgeResult] | None = None,
) -> AgreementReport:
    """Run a judge (default: the deterministic one) on every real answer of the paper's implicit-intent v2
    cells and compare with the paper's judge scores. Failed cells are counted and left out of the pairs."""
    queries, scenes = read_v2(queries_path)
    run = judge or ImplicitIntentJudge().judge
    pairs: list[tuple[str, float, float, float, float]] = []
    failures = cells = 0
    for cell in released_cells(results_path):
        cells += 1
        query = queries[cell.query_id]
        paper_literal, paper_implicit = cell.judged()
        verdict = run(query, scenes[query.scene], cell.answer)
        if isinstance(verdict, JudgeFailure):
            failures += 1
            continue
        pairs.append(
            (query.subcategory, paper_implicit, verdict.implicit_score, paper_literal, verdict.literal_score)
        )
    by_sub: dict[str, tuple[Agreement, Agreement]] = {}
    for sub in sorted({p[0] for p in pairs}):
        mine = [p for p in pairs if p[0] == sub]
        by_sub[sub] = (Agreement.of([(p[1], p[2]) for p in mine]), Agreement.of([(p[3], p[4]) for p in mine]))
    return AgreementReport(
        cells=cells,
        failures=failures,
        implicit=Agreement.of([(p[1], p[2]) for p in pairs]),
        literal=Agreement.of([(p[3], p[4]) for p in pairs]),
        by_subcategory=by_sub,
    )
