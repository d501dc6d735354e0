"""The town's public lines (``auratown run``/``state``): where someone is and where they are heading
never read as one another (issue 17: "walking to Community Garden @ AURA Academy")."""

from __future__ import annotations

import pytest

from deploy.town_commands import _agent_line, _brief
from messages.town import AgentView


def agent(action: str, location: str | None, target: str | None) -> AgentView:
    return AgentView(
        slug="wang-jun", name="Wang Jun", x=0, y=0, location=location, action=action, target=target, nearby=()
    )


@pytest.mark.parametrize(
    ("view", "brief", "where"),
    [
        (
            agent("walking to Community Garden", "AURA Academy", "Community Garden"),
            "Wang: walking to Community Garden, now passing AURA Academy",
            "passing AURA Academy",
        ),
        (
            agent("walking to Community Garden", None, "Community Garden"),
            "Wang: walking to Community Garden",
            "on the way to Community Garden",
        ),
        (agent("reading", "Town Library", "Town Library"), "Wang: reading at Town Library", "Town Library"),
        (
            agent("tending the Community Garden", "Community Garden", "Community Garden"),
            "Wang: tending the Community Garden",
            "Community Garden",
        ),
    ],
)
def test_a_line_says_where_someone_is_and_where_they_are_heading(
    view: AgentView, brief: str, where: str
) -> None:
    assert _brief(view) == brief
    assert _agent_line(view).split(None, 2)[2].startswith(where)
    assert " @ " not in _brief(view)
