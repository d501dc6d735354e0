"""Reconciling the town after Redis lost writes (issue 13): the clock adopting the world's
position, and an agent that lived past the world forgetting what it formed since."""

from __future__ import annotations

import pytest

from actors.town import embedded_town
from actors.town.agent import forget_from
from actors.town.clock import ClockState, adopt, record_repair
from world import Town, perceptions


def test_a_clock_behind_or_ahead_of_the_world_takes_its_position_and_owes_the_right_steps() -> None:
    ahead = ClockState(completed=11, next_tick=13, awaiting=12, paused=True, steps_pending=3)
    what = adopt(ahead, 4)
    assert what is not None and "completed 4" in what
    # Ticks 5..12 were sent and are lost with the awaited one: owed again, besides the 3 to come.
    assert (ahead.completed, ahead.next_tick, ahead.awaiting, ahead.steps_pending) == (4, 5, None, 11)
    behind = ClockState(completed=2, next_tick=3, awaiting=None, paused=True, steps_pending=5)
    assert adopt(behind, 6) is not None
    assert (behind.next_tick, behind.steps_pending) == (7, 1)  # 3..6 are done already
    running = ClockState(completed=9, next_tick=11, awaiting=10, paused=False)
    assert adopt(running, 3) is not None and running.steps_pending == 0  # a running clock owes none
    agreeing = ClockState(completed=4, next_tick=6, awaiting=5)
    assert adopt(agreeing, 4) is None  # nothing to repair


def test_repairs_are_counted_and_the_log_is_bounded() -> None:
    state = ClockState()
    for i in range(50):
        record_repair(state, f"repair {i}")
    assert state.repairs == 50 and len(state.repair_log) == 20 and state.repair_log[-1] == "repair 49"


@pytest.mark.parametrize("back_to", [0, 6, 33, 34, 51])
def test_an_agent_ahead_of_the_world_forgets_exactly_what_it_formed_since(back_to: int) -> None:
    """Across reflections and a day's first tick (34 ticks a day): what it keeps is what an agent
    that never went past that tick has."""
    behind, ahead = Town(embedded_town(), seed=3), Town(embedded_town(), seed=3)
    behind.step(back_to)
    ahead.step(60)
    again = perceptions(behind.definition, behind.state)  # the world runs tick 6 again
    for slug, mind in ahead.mind_states.items():
        rolled = forget_from(mind, again[slug])
        expected = behind.mind_states[slug]
        assert rolled.memory == expected.memory, slug
        assert (rolled.last_tick, rolled.last_decision, rolled.plan_day) == (
            back_to - 1,
            None,
            expected.plan_day,
        )
        assert mind.last_tick == 59  # the original is left alone
