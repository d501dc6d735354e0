"""The environment agent's pipeline for every condition of the paper, over any backend.

Sense, Scene and Memory (the ``SceneView``) are computed once by the caller and are the same for
every condition; the conditions differ only in what they do before answering. No condition but
the two diagnostics ever receives the gold labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from messages.aura import DIAGNOSTIC_CONDITIONS, AnswerData, GoldLabels, IntentFrame, ProbeStep, UsageSummary
from world.aura._answer import compose_answer, heads_up, summarise
from world.aura._explore import execute, explore, fill_args, literal_candidates, next_candidate
from world.aura._intent import (
    SocialReader,
    budget_for_gap,
    infer_intent,
    infer_intent_heuristic,
    tools_for_roles,
    whitelist,
)
from world.aura._types import (
    AnswerRequest,
    Backend,
    Critique,
    PlanDecision,
    PlanRequest,
    ProbeClient,
    SceneView,
    ToolInfo,
)

HIGH_GAP = 0.6
REFLEXION_ROUNDS = 2


class UnknownConditionError(ValueError):
    pass


class OfflineBackend:
    """Deterministic rules for every judgement call: the heuristic IntentInferrer, a planner that
    walks the recommended tools, template answers. Runs with no model at all."""

    name = "offline"

    def __init__(self, reader: SocialReader | None = None) -> None:
        self.reader = reader
        """What decides a query's social reading: None for the cue reader (no dependency), or an
        embedding reader (``actors.aura.EmbeddingReader``)."""

    def infer_intent(self, query: str, view: SceneView, tools: Sequence[ToolInfo]) -> IntentFrame:
        return infer_intent(query, view, tools, self.reader)

    def plan_step(self, request: PlanRequest) -> PlanDecision:
        if request.frame is not None:
            candidates = request.frame.recommended_probes
        else:
            candidates = literal_candidates(request.query, request.view, request.tools)
        return next_candidate(request, candidates)

    def plan_calls(
        self, query: str, view: SceneView, tools: Sequence[ToolInfo], budget: int
    ) -> list[PlanDecision]:
        by_name = {t.name: t for t in tools}
        plan = []
        for name in literal_candidates(query, view, tools)[:budget]:
            plan.append(
                PlanDecision("call", name, fill_args(by_name[name], query, view), reason="planned step")
            )
        return plan

    def answer(self, request: AnswerRequest) -> str:
        return compose_answer(request)

    def critique(self, request: AnswerRequest, answer: str) -> Critique:
        failed = [s.tool for s in request.trace if s.status != "ok"]
        if "I do not see" in answer or failed:
            return Critique(False, f"unanswered: probe {', '.join(failed) or 'the subject'} again")
        return Critique(True)

    def usage(self) -> UsageSummary:
        return UsageSummary()


def answer_query(  # noqa: PLR0917 - the pipeline's inputs, each needed
    query: str,
    asker: str,
    condition: str,
    view: SceneView,
    probes: ProbeClient,
    backend: Backend,
    *,
    explore_max_steps: int = 3,
    gold: GoldLabels | None = None,
) -> AnswerData:
    tools = tuple(probes.tools())
    if condition not in _RUNNERS:
        raise UnknownConditionError(
            f"unknown condition {condition!r}: choose from {', '.join(sorted(_RUNNERS))}"
        )
    if condition not in DIAGNOSTIC_CONDITIONS:
        gold = None  # never visible to a deployable condition, whatever the caller passed
    run = _RUNNERS[condition]
    frame, budget, trace, packed, diagnostics = run(
        _Inputs(query, view, probes, backend, tools, explore_max_steps, gold)
    )
    summary = summarise(trace)
    alert = heads_up(frame, trace)
    if condition == "aura_intent" and alert is None and frame is not None and frame.gap >= HIGH_GAP:
        alert = heads_up(frame.model_copy(update={"alert": True}), trace)
    request = AnswerRequest(query, view, frame, tuple(trace), summary, alert, packed_scene=packed)
    text = backend.answer(request)
    if condition == "reflexion":
        for _ in range(REFLEXION_ROUNDS):
            verdict = backend.critique(request, text)
            if verdict.ok:
                break
            more = explore(query, view, probes, backend, explore_max_steps, None, tools)
            trace = _renumber([*trace, *more])
            request = AnswerRequest(
                query, view, None, tuple(trace), summarise(trace), None, note=verdict.note
            )
            text = backend.answer(request)
        summary = request.summary
    return AnswerData(
        text=text,
        query=query,
        asker=asker,
        condition=condition,
        frame=frame,
        budget=budget,
        trace=tuple(trace),
        summary=summary,
        alerts=(alert,) if alert else (),
        usage=backend.usage(),
        backend=backend.name,
        diagnostics=diagnostics,
        scene_time=view.time,
    )


@dataclass(frozen=True)
class _Inputs:
    query: str
    view: SceneView
    probes: ProbeClient
    backend: Backend
    tools: tuple[ToolInfo, ...]
    max_steps: int
    gold: GoldLabels | None


_Run = tuple[IntentFrame | None, int, list[ProbeStep], bool, tuple[str, ...]]


def _renumber(trace: list[ProbeStep]) -> list[ProbeStep]:
    return [s.model_copy(update={"step": i}) for i, s in enumerate(trace, 1)]


def _frame(i: _Inputs) -> IntentFrame:
    frame = whitelist(i.backend.infer_intent(i.query, i.view, i.tools), i.tools)
    if frame.subject is None and not frame.subjects and frame.place is None:
        # A model's frame names no group: the query's structure may (its people, probed one by one).
        parsed = infer_intent_heuristic(i.query, i.view, i.tools)
        if parsed.subjects or parsed.place is not None:
            update = {
                "subjects": parsed.subjects,
                "place": parsed.place,
                "reading": frame.reading or parsed.reading,
            }
            frame = frame.model_copy(update=update)
    return frame


def _vanilla(i: _Inputs) -> _Run:
    return None, 0, [], False, ()


def _static(i: _Inputs) -> _Run:
    return None, 0, [], True, ()


def _react(i: _Inputs) -> _Run:
    return (
        None,
        i.max_steps,
        explore(i.query, i.view, i.probes, i.backend, i.max_steps, None, i.tools),
        True,
        (),
    )


def _plan_and_solve(i: _Inputs) -> _Run:
    plan = i.backend.plan_calls(i.query, i.view, i.tools, i.max_steps)[: i.max_steps]
    trace = [execute(i.probes, n, d) for n, d in enumerate(plan, 1) if d.action == "call" and d.tool]
    return None, i.max_steps, _renumber(trace), True, ()


def _fixed_probe(i: _Inputs) -> _Run:
    trace: list[ProbeStep] = []
    for tool in i.tools:
        args = fill_args(tool, i.query, i.view)
        if all(r in args for r in tool.parameters.get("required", [])):
            trace.append(
                execute(i.probes, len(trace) + 1, PlanDecision("call", tool.name, args, "every tool"))
            )
    return None, len(i.tools), trace, True, ()


def _aura_no_probe(i: _Inputs) -> _Run:
    return _frame(i), 0, [], True, ()


def _aura_loop(i: _Inputs) -> _Run:
    frame = _frame(i)
    budget = budget_for_gap(frame.gap, i.max_steps)
    return frame, budget, explore(i.query, i.view, i.probes, i.backend, budget, frame, i.tools), True, ()


def _aura_gap_routed(i: _Inputs) -> _Run:
    frame = _frame(i)
    budget = budget_for_gap(frame.gap, i.max_steps)
    by_name = {t.name: t for t in i.tools}
    trace: list[ProbeStep] = []
    for name in frame.recommended_probes[:budget]:
        args = fill_args(by_name[name], i.query, i.view, frame.subject)
        trace.append(execute(i.probes, len(trace) + 1, PlanDecision("call", name, args, "recommended probe")))
    return frame, budget, trace, True, ()


def _fixed_private(i: _Inputs) -> _Run:
    frame = _frame(i).model_copy(update={"alert": True})
    trace: list[ProbeStep] = []
    names = tools_for_roles(("private",), i.tools)
    if names and frame.subject is not None:
        tool = next(t for t in i.tools if t.name == names[0])
        args = fill_args(tool, i.query, i.view, frame.subject)
        trace.append(
            execute(i.probes, 1, PlanDecision("call", tool.name, args, "unconditional private probe"))
        )
    return frame, len(trace), trace, True, ("diagnostic: reads the subject's private state unconditionally",)


def _oracle_intent(i: _Inputs) -> _Run:
    base = infer_intent_heuristic(i.query, i.view, i.tools)  # for the subject only
    gold = i.gold or GoldLabels()
    frame = whitelist(
        IntentFrame(
            literal_need=base.literal_need,
            implicit_needs=(gold.implicit_need,) if gold.implicit_need else (),
            gap=0.9,
            recommended_probes=gold.required_tools,
            alert=True,
            confidence=1.0,
            rationale="oracle: the gold implicit need and gold tools",
            subject=base.subject,
            subjects=base.subjects,
            place=base.place,
            target=base.target,
            backend="oracle",
        ),
        i.tools,
    )
    budget = budget_for_gap(frame.gap, i.max_steps)
    trace = explore(i.query, i.view, i.probes, OfflineBackend(), budget, frame, i.tools)
    return frame, budget, trace, True, ("diagnostic: read the gold labels (implicit_need, required_tools)",)


_RUNNERS = {
    "vanilla": _vanilla,
    "static_context": _static,
    "literal": _static,
    "react": _react,
    "reflexion": _react,
    "plan_and_solve": _plan_and_solve,
    "fixed_probe": _fixed_probe,
    "aura_no_probe": _aura_no_probe,
    "aura_full": _aura_loop,
    "aura_gap_routed": _aura_gap_routed,
    "aura_intent": _aura_loop,
    "fixed_private": _fixed_private,
    "oracle_intent": _oracle_intent,
}
