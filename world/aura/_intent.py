"""The heuristic IntentInferrer (surface cues, offline) and the gap -> probe budget map."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from messages.aura import IntentFrame
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


# Order matters: the first cue that matches decides (the more specific social readings first).
_SOCIAL_CUES = (
    _cue(
        "second_order",
        r"\b(does|do|did|would)\s+\w+(\s+\w+)?\s+(think|know|believe|realise|realize|expect|suspect|assume)\b"
        r"|\bthinks?\s+(that\s+)?\w+\s+(is|was|will)\b",
        0.85,
        ("what {subject} believes about {other}",),
        # The believer's belief is the answer, not the target's truth (the paper's second-order
        # rule): reading the target's private state would disclose what the question never asked.
        ("belief",),
        False,
    ),
    _cue(
        "appropriateness",
        r"\b(should i|can i|could i|may i|is it (ok|okay|fine|a good time|appropriate|rude)|good time|"
        r"bother|interrupt|disturb|drop by|stop by|pop over|go over|visit|invite|say hi|say hello|join|"
        r"talk to|chat with|approach)\b",
        0.75,
        ("whether approaching {subject} right now would be welcome",),
        ("private", "plan"),
        True,
    ),
    _cue(
        "mood",
        r"\b(how is|how's|how are|mood|feel|feeling|seem|seems|happy|upset|sad|stressed|alright|"
        r"in a good way|doing today|(good|bad|rough|hard|long) day|look(s)? (happy|sad|tired|upset|ok|okay)|"
        r"in a (good|bad) mood|cheerful|anxious)\b",
        0.65,
        ("how {subject} is feeling right now",),
        ("private",),
        True,
    ),
    _cue(
        "latent_goal",
        r"\b(working on|up to|planning|plans|what's .+ for|busy with|goal|trying to|why is|why's|"
        r"preparing|on (his|her|their) mind)\b",
        0.7,
        ("what {subject} is really trying to get done",),
        ("private", "plan"),
        True,
    ),
    _cue(
        "availability",
        r"\b(where is|where's|where are|whereabouts|what is .+ doing|what's .+ doing|doing right now|"
        r"free|available|around|find|busy|still (at|in)|is \w+( \w+)? (at|in) )\b",
        0.6,
        ("whether {subject} is free to talk right now", "whether {subject} is taking a break"),
        ("private", "plan"),
        True,
    ),
)

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


def mentioned_agents(query: str, view: SceneView) -> list[str]:
    """Agents named in the query (full name or first name), in order of mention; not the asker."""
    found: list[tuple[int, str]] = []
    for who in view.known or tuple(a.name for a in view.agents):
        names = [who, who.split()[0]] if " " in who else [who]
        for n in names:
            m = re.search(rf"\b{re.escape(n)}\b", query, re.IGNORECASE)
            if m:
                found.append((m.start(), who))
                break
    return [name for _, name in sorted(found) if name != view.asker]


def mentioned_location(query: str, locations: Sequence[str]) -> str | None:
    q = query.lower()
    for loc in sorted(locations, key=len, reverse=True):
        if loc.lower() in q:
            return loc
        short = loc.lower().removeprefix("the ").removeprefix("town ")
        if len(short) > 3 and short in q:
            return loc
    return None


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


def infer_intent_heuristic(query: str, view: SceneView, tools: Sequence[ToolInfo]) -> IntentFrame:
    """Deterministic surface-cue matching: the subcategory's cue sets the gap and the probes."""
    agents = mentioned_agents(query, view)
    subject = agents[0] if agents else None
    other = agents[1] if len(agents) > 1 else None
    literal = query.strip().rstrip("?").strip()
    if subject is not None:
        for cue in _SOCIAL_CUES:
            if cue.pattern.search(query):
                if cue.kind == "second_order" and other is None:
                    continue
                needs = tuple(n.format(subject=subject, other=other or "them") for n in cue.needs)
                # Out of sight, even the literal fact takes a probe: locate first.
                in_view = any(a.name == subject for a in view.agents)
                probes = tools_for_roles(cue.probes if in_view else ("subject_location", *cue.probes), tools)
                return IntentFrame(
                    literal_need=f"answer: {literal}",
                    implicit_needs=needs,
                    gap=cue.gap,
                    recommended_probes=probes,
                    alert=cue.alert,
                    confidence=0.6,
                    rationale=f"a question about {subject} with {cue.kind.replace('_', ' ')} cues: "
                    "the literal fact is public, the likely need is private state",
                    subject=subject,
                    target=other if cue.kind == "second_order" else None,
                )
        # Named, but no social cue: the literal fact may still be remote.
        return IntentFrame(
            literal_need=f"answer: {literal}",
            gap=0.3,
            recommended_probes=tools_for_roles(("subject_location",), tools),
            confidence=0.5,
            rationale=f"a factual question about {subject}",
            subject=subject,
        )
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
