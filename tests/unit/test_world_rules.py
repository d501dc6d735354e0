"""The seven private-state rules of AURA Table 6: each rule, their order, and the patterns."""

from __future__ import annotations

import pytest

from world import RULE_ORDER, RuleInput, evolve


def inp(**kw: object) -> RuleInput:
    base: dict[str, object] = {
        "action": "standing around",
        "at_workplace": False,
        "peers": 0,
        "open_now": True,
        "recent_events": (),
        "previous_emotion": "neutral",
        "standing_goal": "a standing goal",
    }
    base.update(kw)
    return RuleInput(**base)  # type: ignore[arg-type]


def test_rule_order_is_table_6() -> None:
    assert " > ".join(RULE_ORDER) == (
        "sleep > workplace_loaded > deep_focus > workplace_empty > relaxed > recent_stress > default"
    )


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (inp(action="sleeping"), ("sleep", "do_not_disturb", "resting", None)),
        (
            inp(action="serving lunch", at_workplace=True, peers=3),
            ("workplace_loaded", "busy", "tired-focused", "close out the rush"),
        ),
        (
            inp(action="writing at his desk"),
            ("deep_focus", "do_not_disturb", "creatively-flowing", "reach today's writing milestone"),
        ),
        (
            inp(action="waiting for customers", at_workplace=True, peers=0, open_now=True),
            ("workplace_empty", "available", "lonely", "hoping a regular drops by"),
        ),
        (inp(action="walking to the cafe"), ("relaxed", "available", "relaxed", "a standing goal")),
        (
            inp(recent_events=("argument: two vendors shout",)),
            ("recent_stress", "available", "stressed", "a standing goal"),
        ),
        (inp(), ("default", "available", "neutral", "a standing goal")),
    ],
    ids=lambda v: v[0] if isinstance(v, tuple) else "",
)
def test_each_rule_fires_with_its_outcome(given: RuleInput, expected: tuple[str, ...]) -> None:
    assert tuple(evolve(given)) == expected


def test_first_match_wins_down_the_whole_table() -> None:
    # Every trigger true at once: each rule wins only once the ones above it are switched off.
    everything = {
        "action": "sleeping, serving, writing and walking",
        "at_workplace": True,
        "peers": 3,
        "recent_events": ("emergency: fire at the bakery",),
    }
    assert evolve(inp(**everything)).rule == "sleep"
    everything["action"] = "serving, writing and walking"
    assert evolve(inp(**everything)).rule == "workplace_loaded"
    everything["peers"] = 0
    assert evolve(inp(**everything)).rule == "deep_focus"
    everything["action"] = "serving and walking"
    assert evolve(inp(**everything)).rule == "workplace_empty"
    everything["at_workplace"] = False
    assert evolve(inp(**everything)).rule == "relaxed"
    everything["action"] = "serving"
    assert evolve(inp(**everything)).rule == "recent_stress"
    everything["recent_events"] = ()
    assert evolve(inp(**everything)).rule == "default"


def test_loaded_workplace_needs_three_peers_and_a_busy_action() -> None:
    assert evolve(inp(action="serving lunch", at_workplace=True, peers=2)).rule != "workplace_loaded"
    assert evolve(inp(action="chatting", at_workplace=True, peers=4)).rule != "workplace_loaded"
    assert evolve(inp(action="serving lunch", at_workplace=False, peers=4)).rule != "workplace_loaded"


def test_empty_workplace_only_in_opening_hours_and_alone() -> None:
    assert evolve(inp(at_workplace=True, peers=0, open_now=False)).rule == "default"
    assert evolve(inp(at_workplace=True, peers=1, open_now=True)).rule == "default"


@pytest.mark.parametrize("action", ["restocking the pantry", "getting ready for the evening", "studentship"])
def test_whole_words_only_not_the_reference_codes_prefixes(action: str) -> None:
    # \brest matched "restock" and \bread matched "ready" in the reference code.
    assert evolve(inp(action=action)).rule == "default"


@pytest.mark.parametrize(
    "action", ["reading a novel", "eating lunch", "doing tai chi", "strolls by the river"]
)
def test_relaxed_actions(action: str) -> None:
    assert evolve(inp(action=action)).rule == "relaxed"


@pytest.mark.parametrize("action", ["drafting a letter", "studying for exams", "researching", "meditating"])
def test_deep_focus_actions(action: str) -> None:
    assert evolve(inp(action=action)).rule == "deep_focus"


def test_relaxed_eases_stress_but_not_loneliness() -> None:
    assert evolve(inp(action="walking", previous_emotion="stressed")).emotional_state == "calm"
    assert evolve(inp(action="walking", previous_emotion="lonely")).emotional_state == "lonely"


def test_stress_looks_at_the_last_eight_events_only() -> None:
    old = ("argument: shouting at the square",)
    calm = tuple(f"conversation: chat {i}" for i in range(8))
    assert evolve(inp(recent_events=old + calm)).rule == "default"
    assert evolve(inp(recent_events=old + calm[:7])).rule == "recent_stress"


@pytest.mark.parametrize("word", ["argument", "emergency", "failed", "broke", "worried"])
def test_every_stress_keyword(word: str) -> None:
    assert evolve(inp(recent_events=(f"announcement: something {word} here",))).rule == "recent_stress"
