"""Explore (Algorithm 1): a bounded loop where a planner calls one tool per step or stops."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from messages.aura import IntentFrame, ProbeStep
from world.aura._answer import group_members, is_group, walk
from world.aura._intent import tools_for_roles
from world.aura._query import mentioned_agents, mentioned_location
from world.aura._types import Backend, PlanDecision, PlanRequest, ProbeClient, SceneView, ToolInfo

DEFAULT_LIMIT = 5


def fill_args(tool: ToolInfo, query: str, view: SceneView, subject: str | None = None) -> dict[str, Any]:
    """Arguments for ``tool`` read off the query: the agents and place it names, by parameter role."""
    props: dict[str, Any] = tool.parameters.get("properties", {})
    agents = mentioned_agents(query, view)
    subject = subject or (agents[0] if agents else None)
    other = next((a for a in agents if a != subject), None)
    args: dict[str, Any] = {}
    for name in props:
        key = name.lower()
        if "believer" in key or key in ("observer", "holder"):
            value: Any = subject
        elif "target" in key or key == "about":
            value = other or subject
        elif key in ("agent", "name", "who", "agent_name", "subject", "person"):
            value = subject
        elif "location" in key or key == "place":
            value = mentioned_location(query, view.locations) or view.asker_location
        elif key in ("limit", "n", "k", "count"):
            value = DEFAULT_LIMIT
        else:
            continue
        if value is not None:
            args[name] = value
    return args


def _called(trace: Sequence[ProbeStep]) -> set[tuple[str, str]]:
    return {(s.tool, repr(sorted(s.args.items()))) for s in trace}


def next_candidate(request: PlanRequest, candidates: Sequence[str]) -> PlanDecision:
    """The deterministic planner: the next candidate tool not yet called (with its arguments);
    stop when none is left, or when the trace already holds what the frame asked for."""
    by_name = {t.name: t for t in request.tools}
    done = _called(request.trace)
    subject = request.frame.subject if request.frame else None
    if request.frame is not None and subject is None and is_group(request.frame):
        return _next_for_group(request, candidates)
    if _need_met(request):
        return PlanDecision("stop", reason="the private state already answers the implicit need")
    for name in candidates:
        tool = by_name.get(name)
        if tool is None:
            continue
        # In a second-order question the state probed is the target's; the belief is the believer's.
        target = request.frame.target if request.frame else None
        who = target if target and "belief" not in name else subject
        args = fill_args(tool, request.query, request.view, who)
        required = tool.parameters.get("required", [])
        if any(r not in args for r in required):
            continue  # cannot fill it from the query: calling it would only fail
        if (name, repr(sorted(args.items()))) in done:
            continue
        return PlanDecision("call", name, args, reason=f"{name} is the next tool the plan names")
    return PlanDecision("stop", reason="no candidate tool left")


def _next_for_group(request: PlanRequest, candidates: Sequence[str]) -> PlanDecision:
    """A group question is answered person by person: each recommended tool once per member."""
    by_name = {t.name: t for t in request.tools}
    done = _called(request.trace)
    for name in candidates:
        tool = by_name.get(name)
        if tool is None:
            continue
        required = tool.parameters.get("required", [])
        people: Sequence[str | None] = (
            group_members(request.frame, request.view, request.trace)
            if required and request.frame
            else (None,)
        )
        for who in people:
            args = fill_args(tool, request.query, request.view, who)
            if any(r not in args for r in required) or (name, repr(sorted(args.items()))) in done:
                continue
            return PlanDecision("call", name, args, reason=f"{name} for {who or 'the place'}")
    return PlanDecision("stop", reason="every member of the group probed")


def _need_met(request: PlanRequest) -> bool:
    """Availability/mood/goal needs are met once the subject's private state is in the trace;
    the belief tool and the plan stay useful only while the frame asks for them explicitly."""
    frame = request.frame
    if frame is None or frame.subject is None:
        return False
    if not any(a.name == frame.subject for a in request.view.agents) and not _located(request, frame.subject):
        return False  # the literal answer (where they are) is still missing
    wanted = set(frame.recommended_probes)
    got = {s.tool for s in request.trace if s.status == "ok"}
    private = next((t for t in wanted if "private" in t), None)
    belief = next((t for t in wanted if "belief" in t), None)
    if belief is not None:
        return belief in got and (private is None or private in got)
    return private is not None and private in got


def _located(request: PlanRequest, name: str) -> bool:
    return any(
        d.get("name") == name and d.get("location")
        for step in request.trace
        if step.status == "ok" and step.result is not None and "belief" not in step.tool
        for d in walk(step.result)
    )


def literal_candidates(query: str, view: SceneView, tools: Sequence[ToolInfo]) -> tuple[str, ...]:
    """What a planner without an IntentFrame reaches for: the tool of the literal question only."""
    agents = mentioned_agents(query, view)
    q = query.lower()
    roles: list[str] = []
    if agents:
        if any(w in q for w in ("think", "believe", "know")) and len(agents) > 1:
            roles.append("belief")
        if any(w in q for w in ("feel", "mood", "how is", "how's")):
            roles.append("private")
        if any(w in q for w in ("plan", "schedule", "later", "tonight", "tomorrow", "working on", "up to")):
            roles.append("plan")
        roles.append("subject_location")
    else:
        for words, role in (
            (("time", "day", "date"), "time"),
            (("where am i", "my location"), "location"),
            (("nearby", "near me", "here", "around"), "nearby"),
            (("happened", "news", "event", "going on"), "events"),
            (("remember", "earlier", "did i", "recall", "morning"), "memory"),
            (("my plan", "schedule", "next", "supposed"), "own_plan"),
            (("open", "hours", "place", "tell me about"), "place"),
            (("everyone", "everybody", "who is where"), "summary"),
        ):
            if any(w in q for w in words):
                roles.append(role)
    return tools_for_roles(roles, tools)


def explore(  # noqa: PLR0917 - Algorithm 1's inputs
    query: str,
    view: SceneView,
    probes: ProbeClient,
    backend: Backend,
    budget: int,
    frame: IntentFrame | None,
    tools: Sequence[ToolInfo],
) -> list[ProbeStep]:
    """Algorithm 1: up to ``budget`` steps; each step the planner calls a tool or stops."""
    trace: list[ProbeStep] = []
    for step in range(1, budget + 1):
        request = PlanRequest(query, view, tuple(tools), tuple(trace), budget - step + 1, frame)
        if frame is not None and step > 1 and _need_met(request):
            break  # the frame's need is in the trace: no planner call (a model's would only say stop)
        decision = backend.plan_step(request)
        if decision.action == "stop" or decision.tool is None:
            break
        trace.append(execute(probes, step, decision))
    return trace


def execute(probes: ProbeClient, step: int, decision: PlanDecision) -> ProbeStep:
    assert decision.tool is not None
    reply = probes.call(decision.tool, decision.args)
    return ProbeStep(
        step=step,
        tool=reply.tool or decision.tool,
        args=decision.args,
        status=reply.status,
        result=reply.result,
        error=reply.error,
        disclosure=reply.disclosure,
        reason=decision.reason,
    )
