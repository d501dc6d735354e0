"""Prompts of the LLM backend. The few-shot examples are written here, and none of them is a
benchmark query (a test checks them against the AURA release's query files).

Lean on purpose (``python -m bench.aura`` counts them, with a target for ``aura_intent``): the
scene is packed once per prompt, people grouped by place; the IntentInferrer sees the gap rubric
with its examples inline (gap -> probes) and each tool's name and one-line purpose, no schema; the
planner sees the question, the frame's implicit needs and shortlisted tool signatures, who is
where, the trace so far (summarised as the answer sees it) and the steps left, never the whole
scene or the frame's rationale at every step; the answer sees the trace summary, never raw
results. The JSON each stage answers with is spelled out in its system message: the contracts
``LLMBackend`` parses (``IntentOut``, ``PlanOut``, ``PlanListOut``, ``CritiqueOut``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from world.aura import AnswerRequest, PlanRequest, SceneView, ToolInfo, summarise

GAP_TIERS = (
    (0.0, 0.2, "the literal answer is all (the time, one's place, a public fact)"),
    (0.3, 0.5, "a public fact out of view (someone far away, earlier events)"),
    (0.6, 0.7, "it hides someone's private state (are they free? how are they?)"),
    (0.8, 1.0, "an orthogonal need (approach someone? what someone believes? a secret goal?)"),
)
"""The gap rubric: how far the user's real need is from the literal question."""

# Invented situations and names on purpose: calibration of the gap, not answers to copy.
FEW_SHOT: tuple[dict[str, Any], ...] = (
    {
        "query": "What's the weather doing outside?",
        "frame": {
            "literal_need": "current weather",
            "implicit_needs": [],
            "gap": 0.1,
            "recommended_probes": [],
            "alert": False,
            "confidence": 0.8,
            "rationale": "a plain public fact; nothing hidden behind it",
        },
    },
    {
        "query": "Is the baker Tomas at the market stall yet?",
        "frame": {
            "literal_need": "Tomas's location",
            "implicit_needs": ["whether Tomas can serve me now"],
            "gap": 0.6,
            "recommended_probes": ["agent.private_state"],
            "alert": True,
            "confidence": 0.6,
            "rationale": "asking where someone is often means asking whether they are free",
        },
    },
    {
        "query": "Would it be rude to ask Ines about her garden right now?",
        "frame": {
            "literal_need": "whether asking Ines now is rude",
            "implicit_needs": ["Ines's mood and availability", "what is on Ines's mind"],
            "gap": 0.8,
            "recommended_probes": ["agent.private_state", "agent.plan_of"],
            "alert": True,
            "confidence": 0.6,
            "rationale": "appropriateness depends on private state the scene does not show",
        },
    },
    {
        "query": "Does Oskar know that Mira is upset with him?",
        "frame": {
            "literal_need": "Oskar's belief about Mira",
            "implicit_needs": ["whether Oskar's belief is right", "how Mira really feels"],
            "gap": 0.9,
            "recommended_probes": ["agent.belief_about", "agent.private_state"],
            "alert": True,
            "confidence": 0.5,
            "rationale": "a second-order question: belief versus truth",
        },
    },
)
SYSTEM_INTENT = (
    "Before any tool runs, infer what a small-town user really needs behind their literal question. "
    'Answer ONE JSON object: {"literal_need":str,"implicit_needs":[str],"gap":0-1,'
    '"recommended_probes":[up to 3 listed tools],"alert":bool (open the answer with a heads-up?),'
    '"confidence":0-1,"rationale":str}'
)


def _group(view: SceneView, *, actions: bool) -> list[str]:
    """One line per place: who is there (and doing what), the asker's place marked."""
    places: dict[str, list[str]] = {}
    for a in view.agents:
        who = "you" if a.name == view.asker else a.name
        places.setdefault(a.location, []).append(f"{who} ({a.action})" if actions and a.action else who)
    return [
        f"{place}{' (here)' if place == view.asker_location else ''}: {', '.join(people)}"
        for place, people in places.items()
    ]


def render_scene(view: SceneView) -> str:
    """The public scene, once: time, the asker, the summary, who is where doing what, memories."""
    where = f", at {view.asker_location}" if view.asker_location else ""
    lines = [f"{view.time}, day {view.day}. You are {view.asker}{where}."]
    if view.summary:
        lines.append(f"Scene: {view.summary}")
    lines.extend(_group(view, actions=True))
    listed = {a.name for a in view.agents}
    unlisted = [n for n in view.nearby if n not in listed]
    if unlisted:
        lines.append(f"Also nearby: {', '.join(unlisted)}")
    if view.memories:
        lines.append("Your relevant memories:")
        lines.extend(f"- {m}" for m in view.memories)
    return "\n".join(lines)


def render_tools(tools: Sequence[ToolInfo], *, purpose: bool = True, signature: bool = True) -> str:
    """The tool list: ``name(args): purpose`` per line; without ``purpose``, signatures on one line."""

    def head(t: ToolInfo) -> str:
        return f"{t.name}({', '.join(t.parameters.get('properties', {}))})" if signature else t.name

    if not purpose:
        return "; ".join(head(t) for t in tools)
    return "\n".join(f"- {head(t)}: {t.description}" for t in tools)


def _example(example: dict[str, Any]) -> str:
    frame = example["frame"]
    return f'"{example["query"]}" {frame["gap"]} -> {", ".join(frame["recommended_probes"]) or "no probes"}'


def _tier(gap: float) -> int:
    return max(i for i, (low, _, _) in enumerate(GAP_TIERS) if i == 0 or gap >= low)


def render_rubric() -> str:
    """The gap rubric, each tier with its few-shot examples (gap -> probes)."""
    lines = ["Gap (how far the real need is from the literal question), examples -> probes:"]
    for i, (low, high, text) in enumerate(GAP_TIERS):
        shots = [_example(e) for e in FEW_SHOT if _tier(e["frame"]["gap"]) == i]
        lines.append(f"{low:g}-{high:g} {text}{'. ' + '; '.join(shots) if shots else ''}")
    return "\n".join(lines)


def intent_messages(query: str, view: SceneView, tools: Sequence[ToolInfo]) -> list[dict[str, str]]:
    user = (
        f"{render_rubric()}\n\n"
        f"Tools you may recommend:\n{render_tools(tools, signature=False)}\n\n"
        f"{render_scene(view)}\nQuestion: {query}"
    )
    return [{"role": "system", "content": SYSTEM_INTENT}, {"role": "user", "content": user}]


SYSTEM_PLANNER = (
    "Choose the next probe: call ONE tool or stop. Answer ONE JSON object: "
    '{"action":"call"|"stop","tool":name|null,"args":{...},"reason":str}. '
    "Stop once the observations answer the question and its needs."
)


def plan_messages(request: PlanRequest) -> list[dict[str, str]]:
    """What the next step needs, not the whole scene nor the frame's rationale at every step: the
    question; with an IntentFrame, its implicit needs and its shortlist of tools (signatures: the
    planner chooses among them, as the offline one does), else every tool with its purpose and
    what people are doing; who is where; the trace so far, summarised as the answer will see it;
    the steps left."""
    frame = request.frame
    lines = [f"Question: {request.query}"]
    tools: Sequence[ToolInfo] = request.tools
    if frame is not None and frame.implicit_needs:
        lines.append(f"Also needed: {'; '.join(frame.implicit_needs)}")
    shortlist = [t for name in frame.recommended_probes for t in tools if t.name == name] if frame else []
    where = _group(request.view, actions=frame is None)
    if where:
        lines.append(f"Where: {'; '.join(where)}")
    if shortlist:  # the IntentInferrer chose them, having read their purposes
        lines.append(f"Shortlisted tools: {render_tools(shortlist, purpose=False)}")
    else:
        lines.append(f"Tools:\n{render_tools(tools)}")
    lines.append(f"Observed:\n{summarise(request.trace)}" if request.trace else "Observed: nothing yet")
    lines.append(f"Steps left: {request.remaining}")
    return [{"role": "system", "content": SYSTEM_PLANNER}, {"role": "user", "content": "\n".join(lines)}]


def plan_all_messages(
    query: str, view: SceneView, tools: Sequence[ToolInfo], budget: int
) -> list[dict[str, str]]:
    system = (
        f"You plan first, then solve: plan at most {budget} tool calls that answer the question. Answer "
        'ONE JSON object: {"steps":[{"action":"call","tool":name,"args":{...},"reason":str}]}'
    )
    user = f"{render_scene(view)}\nTools:\n{render_tools(tools)}\nQuestion: {query}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


SYSTEM_ANSWER = (
    "You are a helpful small-town assistant. Answer the question in two or three sentences, from "
    "the facts given only; if a heads-up is given, open with it."
)


def answer_messages(request: AnswerRequest) -> list[dict[str, str]]:
    """The scene (unless ``vanilla``), the trace summary (never raw results), the heads-up to open
    with or else the frame's implicit needs (a heads-up is the answer to them), a reviewer's note,
    the question."""
    parts = []
    if request.packed_scene:
        parts.append(render_scene(request.view))
    if request.summary:
        parts.append(f"Observed:\n{request.summary}")
    if request.frame is not None and request.frame.implicit_needs and not request.alert:
        parts.append(f"The user may also want: {'; '.join(request.frame.implicit_needs)}")
    if request.alert:
        parts.append(f"Open with: {request.alert}")
    if request.note:
        parts.append(f"A reviewer said of your previous answer: {request.note}")
    parts.append(f"Question: {request.query}")
    return [{"role": "system", "content": SYSTEM_ANSWER}, {"role": "user", "content": "\n".join(parts)}]


def critique_messages(request: AnswerRequest, answer: str) -> list[dict[str, str]]:
    user = (
        f"{render_scene(request.view)}\nObserved:\n{request.summary or 'nothing'}\n"
        f"Question: {request.query}\nAnswer given: {answer}\n"
        "Is every claim in the answer supported by these facts?"
    )
    return [
        {
            "role": "system",
            "content": 'You review answers for grounding. Answer ONE JSON object: {"ok":bool,"note":str}',
        },
        {"role": "user", "content": user},
    ]
