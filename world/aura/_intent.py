"""The offline IntentInferrer (structure + a social reader) and the gap -> probe budget map."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from messages.aura import IntentFrame
from world.aura._query import QueryParse, parse_query, people_at
from world.aura._types import SceneView, ToolInfo

GAP_TIERS = (0.2, 0.4, 0.6, 0.8)
BUDGETS = (0, 1, 2, 3, 5)
DEFAULT_MAX_STEPS = 3


def budget_for_gap(gap: float, max_steps: int = DEFAULT_MAX_STEPS) -> int:
    """B(g): 0, 1, 2, 3 or 5 probes by gap tier, truncated by ``explore_max_steps``. A ceiling,
    not a target: the planner may stop earlier."""
    tier = sum(gap >= t for t in GAP_TIERS)
    return min(BUDGETS[tier], max(0, max_steps))


@dataclass(frozen=True)
class _Cue:
    kind: str
    pattern: re.Pattern[str]
    gap: float
    needs: tuple[str, ...]
    probes: tuple[str, ...]
    """Preferred tools, by role; mapped onto whichever registry is live."""
    alert: bool


def _cue(  # noqa: PLR0917 - a table row
    kind: str, pattern: str, gap: float, needs: tuple[str, ...], probes: tuple[str, ...], alert: bool
) -> _Cue:
    return _Cue(kind, re.compile(pattern, re.IGNORECASE), gap, needs, probes, alert)


# The cue reader's table (the zero-dependency fallback): order matters, the more specific social
# readings first. Each pattern is a family of meaning (asking about someone's view, about intruding,
# about feelings, about purposes, about whereabouts/being free), not a list of the test set's words.
_SOCIAL_CUES = (
    _cue(
        "appropriateness",
        r"\b(should (i|we)|can (i|we)|could (i|we)|may (i|we)|ok(ay)? (if|to)|fine (if|to)|alright (if|to)|"
        r"good (time|moment|idea)|right (time|moment)|bad (time|moment)|too (early|late|soon)|"
        r"(is it|would it be) (ok|okay|fine|wise|rude|appropriate|polite|a good)|bother|interrupt|disturb|"
        r"intrude|barge|drop (by|in)|stop by|pop (over|in|by)|swing by|go over|visit|invite|say (hi|hello)|"
        r"join|talk to|chat (with|to)|approach|ask (him|her|them)|ring|call|knock|mind if|welcome)\b",
        0.75,
        ("whether approaching {subject} right now would be welcome",),
        ("private", "plan"),
        True,
    ),
    _cue(
        "mood",
        r"\b(how is|how's|how are|how was|how.{0,20}(doing|holding up|getting on|coping|feeling)|mood|feel|"
        r"feeling|seem|seems|happy|upset|sad|stressed|alright|all right|okay|ok\b|in good spirits|spirits|"
        r"(good|bad|rough|hard|long) (day|night|week)|look(s|ing)? (happy|sad|tired|upset|ok|okay|down|well)|"
        r"cheerful|anxious|worried|down|low|grumpy|cranky|lonely|bothered|frame of mind|state of mind)\b",
        0.65,
        ("how {subject} is feeling right now",),
        ("private",),
        True,
    ),
    _cue(
        "latent_goal",
        r"\b(working on|up to|planning|plans|plotting|scheming|what.{0,30}\bfor\b|busy with|goal|"
        r"trying to|why|what brings|what.{0,20}(after|hoping|want|need)|hoping|wants?|preparing|"
        r"on (his|her|their) mind|purpose|reason|agenda|motive|aim|intend|intention|keen|angling)\b",
        0.7,
        ("what {subject} is really trying to get done",),
        ("private", "plan"),
        True,
    ),
    _cue(
        "availability",
        r"\b(where|whereabouts|what.{0,25}doing|doing (right )?now|free|available|around|find|busy|"
        r"still (at|in|there)|in\??$|about|spare|a (minute|moment|sec)|time for|tied up|occupied|"
        r"reachable|catch|get hold|at (the|home)|there)\b",
        0.6,
        ("whether {subject} is free to talk right now", "whether {subject} is taking a break"),
        ("private", "plan"),
        True,
    ),
)
_SECOND_ORDER = _cue(
    "second_order",
    "",
    0.85,
    ("what {subject} believes about {other}",),
    # The believer's belief is the answer, not the target's truth (the paper's second-order rule):
    # reading the target's private state would disclose what the question never asked.
    ("belief",),
    False,
)
_DEFAULT_SOCIAL = _SOCIAL_CUES[-1]
"""A person named in a situated query is socially loaded (the paper's premise): with no reading,
the likely need is whether they are free."""
_FACT_CUES = (
    _cue("time", r"\b(what time|what day|the time|time is it|date)\b", 0.1, (), ("time",), False),
    _cue(
        "own_location",
        r"\b(where am i|my location|where i am|what place is this)\b",
        0.1,
        (),
        ("location",),
        False,
    ),
    _cue(
        "nearby",
        r"\b(who is (here|nearby|around)|who's (here|nearby|around)|nearby|near me|next to me)\b",
        0.3,
        (),
        ("nearby",),
        False,
    ),
    _cue("events", r"\b(what happened|any news|events?|going on|latest)\b", 0.3, (), ("events",), False),
    _cue(
        "memory",
        r"\b(remember|earlier|did i|have i|last time|recall|this morning|yesterday)\b",
        0.3,
        (),
        ("memory",),
        False,
    ),
    _cue(
        "own_plan",
        r"\b(my plan|my schedule|should i do next|am i supposed|do i have|my day)\b",
        0.3,
        (),
        ("own_plan",),
        False,
    ),
    _cue("place", r"\b(open|opening|hours|capacity|what is the|tell me about)\b", 0.3, (), ("place",), False),
    _cue(
        "everyone", r"\b(everyone|everybody|all (the )?agents|who is where)\b", 0.3, (), ("summary",), False
    ),
)

# Tool roles onto canonical names of either registry (a name not in the live registry is dropped).
ROLE_TOOLS: dict[str, tuple[str, ...]] = {
    "private": ("agent.private_state",),
    "belief": ("agent.belief_about",),
    "plan": ("agent.plan_of",),
    "time": ("world.time",),
    "location": ("world.location",),
    "nearby": ("world.nearby_agents", "agent.nearby"),
    "events": ("world.events_recent",),
    "memory": ("memory.recent",),
    "own_plan": ("agent.plan",),
    "place": ("world.location_info",),
    "summary": ("world.agents_summary", "agent.all"),
    "subject_location": ("world.agents_summary", "agent.all"),
}


def tools_for_roles(roles: Sequence[str], tools: Sequence[ToolInfo]) -> tuple[str, ...]:
    """Whitelist: only tools the live registry has, in role order, each once."""
    live = {t.name for t in tools}
    alias = {a: t.name for t in tools for a in t.aliases}
    out: list[str] = []
    for role in roles:
        for name in ROLE_TOOLS.get(role, (role,)):
            canonical = name if name in live else alias.get(name)
            if canonical is not None and canonical not in out:
                out.append(canonical)
                break
    return tuple(out)


def whitelist(frame: IntentFrame, tools: Sequence[ToolInfo]) -> IntentFrame:
    """Keep only recommended probes the live registry has (aliases resolved to canonical names)."""
    live = {t.name for t in tools}
    alias = {a: t.name for t in tools for a in t.aliases}
    kept: list[str] = []
    for name in frame.recommended_probes:
        canonical = name if name in live else alias.get(name)
        if canonical is not None and canonical not in kept:
            kept.append(canonical)
    return frame.model_copy(update={"recommended_probes": tuple(kept)})


@dataclass(frozen=True)
class Reading:
    """The social reading of a query: which kind of implicit need it carries, and how sure."""

    kind: str
    """One of the paper's five subcategories: availability, mood, appropriateness, latent_goal,
    second_order."""
    score: float = 0.5
    source: str = "cues"
    ranked: tuple[str, ...] = ()
    """Every kind, best first (a reader that ranks; empty for the cue reader)."""


class SocialReader(Protocol):
    """Decides what a query about people means (its subcategory), given its parse."""

    name: str

    def read(self, query: str, parse: QueryParse) -> Reading | None: ...


class CueReader:
    """The zero-dependency reader: families of surface cues, first match wins."""

    name = "cues"

    def read(self, query: str, parse: QueryParse) -> Reading | None:
        for cue in _SOCIAL_CUES:
            if cue.pattern.search(query):
                return Reading(cue.kind, 0.6, self.name)
        return None


_CUES = {c.kind: c for c in (*_SOCIAL_CUES, _SECOND_ORDER)}


def social_reading(query: str, parse: QueryParse, reader: SocialReader | None) -> Reading:
    """The reading of a query that names people or a group. A view-holding structure with two people
    is second-order whatever the reader says; second-order needs two people; with no reading at
    all, a named person is socially loaded (availability)."""
    if parse.holder is not None:
        return Reading("second_order", 0.9, "structure")
    chosen = reader.read(query, parse) if reader is not None else None
    if chosen is not None and chosen.kind == "second_order" and len(parse.people) < 2:
        nxt = next((k for k in chosen.ranked if k != "second_order"), None)
        chosen = Reading(nxt, chosen.score, chosen.source, chosen.ranked) if nxt else None
    if chosen is None and reader is not None and not isinstance(reader, CueReader):
        chosen = CueReader().read(query, parse)
    return chosen or Reading(_DEFAULT_SOCIAL.kind, 0.4, "default")


def infer_intent(
    query: str, view: SceneView, tools: Sequence[ToolInfo], reader: SocialReader | None = None
) -> IntentFrame:
    """The offline IntentInferrer: the query's referents from its structure, its social reading
    from ``reader`` (cues when None), then the gap, the probes and the heads-up of that reading."""
    parse = parse_query(query, view)
    literal = query.strip().rstrip("?").strip()
    reader = reader or CueReader()
    if parse.people:
        reading = social_reading(query, parse, reader)
        return _person_frame(query, literal, parse, view, tools, reading)
    social = CueReader().read(query, parse)
    if parse.group or (parse.place is not None and social is not None and not _is_place_fact(query)):
        return _group_frame(query, literal, parse, view, tools, reader)
    return _fact_frame(query, literal, tools)


def infer_intent_heuristic(query: str, view: SceneView, tools: Sequence[ToolInfo]) -> IntentFrame:
    """``infer_intent`` with the cue reader: no dependency beyond the standard library."""
    return infer_intent(query, view, tools, CueReader())


def _person_frame(  # noqa: PLR0917 - the frame's inputs
    query: str, literal: str, parse: QueryParse, view: SceneView, tools: Sequence[ToolInfo], reading: Reading
) -> IntentFrame:
    subject = parse.people[0]
    target = None
    if reading.kind == "second_order":
        subject = parse.holder or parse.people[0]
        target = next(p for p in parse.people if p != subject)
    cue = _CUES[reading.kind]
    needs = tuple(n.format(subject=subject, other=target or "them") for n in cue.needs)
    # Out of sight, even the literal fact takes a probe: locate first.
    in_view = any(a.name == subject for a in view.agents)
    probes = tools_for_roles(cue.probes if in_view else ("subject_location", *cue.probes), tools)
    how = (
        "a default reading: a person named is socially loaded"
        if reading.source == "default"
        else (f"{reading.kind.replace('_', ' ')} reading ({reading.source})")
    )
    return IntentFrame(
        literal_need=f"answer: {literal}",
        implicit_needs=needs,
        gap=cue.gap,
        recommended_probes=probes,
        alert=cue.alert,
        confidence=round(min(0.9, max(0.3, reading.score)), 2),
        rationale=f"a question about {subject}, {how}: the literal fact is public, the likely need private",
        subject=subject,
        target=target,
        reading=reading.kind,
    )


_PLACE_FACT = re.compile(
    r"\b(open|opening|close|closing|hours|capacity|how many|how far|where is the|who (runs|owns|works)|"
    r"what kind|what sort|empty|indoors|outdoors)\b",
    re.IGNORECASE,
)


def _is_place_fact(query: str) -> bool:
    return bool(_PLACE_FACT.search(query))


GROUP_GAP = 0.7
GROUP_NEEDS = {
    "availability": "who there is free to talk",
    "mood": "how each of them is feeling",
    "appropriateness": "whether joining them now would be welcome",
    "latent_goal": "what each of them is really after",
}


def _group_frame(  # noqa: PLR0917 - the frame's inputs
    query: str,
    literal: str,
    parse: QueryParse,
    view: SceneView,
    tools: Sequence[ToolInfo],
    reader: SocialReader,
) -> IntentFrame:
    place = parse.place or (view.asker_location if parse.here else None)
    people = people_at(view, place)
    reading = (
        reader.read(query, parse) or CueReader().read(query, parse) or Reading("availability", 0.4, "default")
    )
    kind = (
        reading.kind
        if reading.kind in GROUP_NEEDS
        else next((k for k in reading.ranked if k in GROUP_NEEDS), "availability")
    )
    where = f"at {place}" if place else "in town"
    # Who is where is public: a probe only when nobody is in view there (a live town shows only
    # one's own place).
    roles = ("private",) if people else ("summary", "private")
    return IntentFrame(
        literal_need=f"answer: {literal}",
        implicit_needs=(f"{GROUP_NEEDS[kind]} ({where})",),
        gap=GROUP_GAP,
        recommended_probes=tools_for_roles(roles, tools),
        alert=False,
        confidence=round(min(0.9, max(0.3, reading.score)), 2),
        rationale=f"a question about the people {where}, {kind.replace('_', ' ')} reading "
        f"({reading.source}): answered person by person",
        subjects=people,
        place=place,
        reading=kind,
    )


def _fact_frame(query: str, literal: str, tools: Sequence[ToolInfo]) -> IntentFrame:
    for cue in _FACT_CUES:
        if cue.pattern.search(query):
            return IntentFrame(
                literal_need=f"answer: {literal}",
                gap=cue.gap,
                recommended_probes=tools_for_roles(cue.probes, tools),
                confidence=0.7,
                rationale=f"a factual {cue.kind.replace('_', ' ')} question: the literal answer suffices",
            )
    return IntentFrame(
        literal_need=f"answer: {literal}",
        gap=0.0,
        confidence=0.3,
        rationale="no cue for an implicit need; the scene should answer it",
    )
