"""Private-state evolution: the seven rules of AURA's Table 6, evaluated in order, first match wins.

Plain functions over a ``RuleInput``; the thresholds and patterns live in ``PrivateStateRules``
so a town can tune them. The patterns match whole words (with their inflections): the reference
code's bare prefixes let "restock" count as resting and "ready" as reading, which we do not copy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

RULE_ORDER = (
    "sleep",
    "workplace_loaded",
    "deep_focus",
    "workplace_empty",
    "relaxed",
    "recent_stress",
    "default",
)

DND = "do_not_disturb"


def _words(pattern: str) -> re.Pattern[str]:
    return re.compile(rf"\b(?:{pattern})\b", re.IGNORECASE)


@dataclass(frozen=True)
class PrivateStateRules:
    sleep: re.Pattern[str] = field(default_factory=lambda: _words(r"sleep(?:s|ing)?|asleep|napp(?:ing)?"))
    busy: re.Pattern[str] = field(
        default_factory=lambda: _words(
            r"serv(?:e|es|ing)|brew(?:s|ing)?|cook(?:s|ing)?|bak(?:e|es|ing)|sell(?:s|ing)?"
            r"|(?:re)?stock(?:s|ing)?|work(?:s|ing)?|teach(?:es|ing)?|tend(?:s|ing)?"
            r"|handl(?:e|es|ing)|ring(?:s|ing)? up|lectur(?:e|es|ing)|tutor(?:s|ing)?|mentor(?:s|ing)?"
        )
    )
    focus: re.Pattern[str] = field(
        default_factory=lambda: _words(
            r"writ(?:e|es|ing|ten)|draft(?:s|ing|ed)?|stud(?:y|ies|ying)|research(?:es|ing)?"
            r"|meditat(?:e|es|ing|ion)"
        )
    )
    relaxed: re.Pattern[str] = field(
        default_factory=lambda: _words(
            r"walk(?:s|ing)?|stroll(?:s|ing)?|read(?:s|ing)?|tai chi|eat(?:s|ing)?|sleep(?:s|ing)?"
        )
    )
    stress: re.Pattern[str] = field(
        default_factory=lambda: _words(
            r"argu(?:e|es|ing|ment|ments)|emergenc(?:y|ies)|fail(?:s|ed|ure)?"
            r"|br(?:oke|oken|eak|eaks)|worr(?:y|ied|ies|ying)"
        )
    )
    loaded_peers: int = 3
    """A workplace counts as loaded with at least this many other agents present."""
    stress_window: int = 8
    """How many of the agent's most recently perceived events the stress rule looks at."""


DEFAULT_RULES = PrivateStateRules()


@dataclass(frozen=True, slots=True)
class RuleInput:
    action: str
    at_workplace: bool
    peers: int
    """Other agents at the same location this tick."""
    open_now: bool
    """The agent's location is within its opening hours."""
    recent_events: tuple[str, ...]
    """Texts of the agent's most recently perceived events, newest last."""
    previous_emotion: str
    standing_goal: str | None


class RuleOutcome(NamedTuple):
    rule: str
    availability: str
    emotional_state: str
    unspoken_goal: str | None


def evolve(inp: RuleInput, rules: PrivateStateRules = DEFAULT_RULES) -> RuleOutcome:
    """The private state an agent has after this tick: the first rule whose trigger matches."""
    action = inp.action
    if rules.sleep.search(action):
        return RuleOutcome("sleep", DND, "resting", None)
    if inp.at_workplace and inp.peers >= rules.loaded_peers and rules.busy.search(action):
        return RuleOutcome("workplace_loaded", "busy", "tired-focused", "close out the rush")
    if rules.focus.search(action):
        return RuleOutcome("deep_focus", DND, "creatively-flowing", "reach today's writing milestone")
    if inp.at_workplace and inp.peers == 0 and inp.open_now:
        return RuleOutcome("workplace_empty", "available", "lonely", "hoping a regular drops by")
    if rules.relaxed.search(action):
        # Rest eases stress but does not cure loneliness.
        emotion = {"stressed": "calm", "lonely": "lonely"}.get(inp.previous_emotion, "relaxed")
        return RuleOutcome("relaxed", "available", emotion, inp.standing_goal)
    window = inp.recent_events[-rules.stress_window :]
    if any(rules.stress.search(text) for text in window):
        return RuleOutcome("recent_stress", "available", "stressed", inp.standing_goal)
    return RuleOutcome("default", "available", "neutral", inp.standing_goal)
