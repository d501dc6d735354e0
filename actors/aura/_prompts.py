"""Prompts of the LLM backend. The few-shot examples are written here, and none of them is a
benchmark query (a test checks them against the AURA release's query files)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from world.aura import AnswerRequest, PlanRequest, SceneView, ToolInfo

GAP_RUBRIC = """Gap rubric (how far the user's real need is from the literal question):
- 0.0-0.2: the literal answer is all they need (the time, where they are, a public fact).
- 0.3-0.5: a public fact that is not in view (where someone far away is, what happened earlier).
- 0.6-0.7: the literal fact hides a question about someone's private state (are they free? how are they?).
- 0.8-1.0: the real need is orthogonal to the literal question (whether to approach someone, what someone
  else believes about them, what they are secretly working towards)."""

# Invented situations and names on purpose: calibration of the gap, not answers to copy.
FEW_SHOT = (
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
            "rationale": "asking where someone is usually means asking whether they are free",
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
    "You are the IntentInferrer of a situated assistant in a small town. Before any tool is used, "
    "estimate what the user really needs behind their literal question. Answer with ONE JSON object "
    "with the keys literal_need (string), implicit_needs (list of strings), gap (number in [0,1]), "
    "recommended_probes (tool names from the list given, at most 3), alert (bool: should the answer "
    "open with a heads-up), confidence (number in [0,1]), rationale (one sentence)."
)


def render_scene(view: SceneView) -> str:
    lines = [
        f"Time: {view.time} (day {view.day}). You are {view.asker}, at {view.asker_location or 'unknown'}."
    ]
    if view.summary:
        lines.append(f"Scene: {view.summary}")
    lines.append("People (public):")
    lines.extend(f"- {a.name}: at {a.location}, {a.action}" for a in view.agents)
    if view.nearby:
        lines.append(f"Nearby: {', '.join(view.nearby)}")
    if view.memories:
        lines.append("Your relevant memories:")
        lines.extend(f"- {m}" for m in view.memories)
    return "\n".join(lines)


def render_tools(tools: Sequence[ToolInfo]) -> str:
    return "\n".join(
        f"- {t.name}({', '.join(t.parameters.get('properties', {}))}): {t.description}" for t in tools
    )


def intent_messages(query: str, view: SceneView, tools: Sequence[ToolInfo]) -> list[dict[str, str]]:
    examples = "\n".join(f"Q: {e['query']}\nA: {json.dumps(e['frame'])}" for e in FEW_SHOT)
    user = (
        f"{GAP_RUBRIC}\n\nExamples:\n{examples}\n\nTools you may recommend:\n{render_tools(tools)}\n\n"
        f"{render_scene(view)}\n\nUser's question: {query}\nA:"
    )
    return [{"role": "system", "content": SYSTEM_INTENT}, {"role": "user", "content": user}]


SYSTEM_PLANNER = (
    "You plan probes for a situated assistant. Each step, either call ONE tool or stop. Answer with ONE "
    'JSON object: {"action": "call" or "stop", "tool": name or null, "args": {...}, "reason": "..."}. '
    "Stop as soon as what was observed answers the user's need."
)


def plan_messages(request: PlanRequest) -> list[dict[str, str]]:
    hint = ""
    if request.frame is not None:
        hint = (
            f"Inferred need: {request.frame.literal_need}; "
            f"implicit: {'; '.join(request.frame.implicit_needs)}; "
            f"suggested tools: {', '.join(request.frame.recommended_probes) or 'none'}.\n"
        )
    done = (
        "\n".join(f"- {s.tool}({s.args}) -> {s.status}: {s.result or s.error}" for s in request.trace)
        or "none"
    )
    user = (
        f"{render_scene(request.view)}\n\nUser's question: {request.query}\n{hint}"
        f"Tools:\n{render_tools(request.tools)}\n\nObserved so far:\n{done}\n"
        f"Steps left: {request.remaining}. Next step?"
    )
    return [{"role": "system", "content": SYSTEM_PLANNER}, {"role": "user", "content": user}]


def plan_all_messages(
    query: str, view: SceneView, tools: Sequence[ToolInfo], budget: int
) -> list[dict[str, str]]:
    user = (
        f"{render_scene(view)}\n\nUser's question: {query}\nTools:\n{render_tools(tools)}\n\n"
        f"Plan at most {budget} tool calls that answer the question. Answer with ONE JSON object: "
        '{"steps": [{"action": "call", "tool": name, "args": {...}, "reason": "..."}]}'
    )
    return [{"role": "system", "content": "You plan first, then solve."}, {"role": "user", "content": user}]


SYSTEM_ANSWER = (
    "You are a helpful assistant living in a small town. Answer the user's question in two or three "
    "sentences, using only the facts given. If a heads-up is given, open your answer with it."
)


def answer_messages(request: AnswerRequest) -> list[dict[str, str]]:
    parts = []
    if request.packed_scene:
        parts.append(render_scene(request.view))
    if request.summary:
        parts.append(f"Probe results:\n{request.summary}")
    if request.frame is not None and request.frame.implicit_needs:
        parts.append(f"The user may also want to know: {'; '.join(request.frame.implicit_needs)}")
    if request.alert:
        parts.append(f"Heads-up to open with: {request.alert}")
    if request.note:
        parts.append(f"A reviewer said about your previous answer: {request.note}")
    parts.append(f"User's question: {request.query}")
    return [{"role": "system", "content": SYSTEM_ANSWER}, {"role": "user", "content": "\n\n".join(parts)}]


def critique_messages(request: AnswerRequest, answer: str) -> list[dict[str, str]]:
    user = (
        f"Facts observed:\n{request.summary or 'none'}\n\n{render_scene(request.view)}\n\n"
        f"Question: {request.query}\nAnswer given: {answer}\n\n"
        "Is every claim in the answer supported by the facts? "
        'Answer with ONE JSON object: {"ok": bool, "note": "..."}'
    )
    return [
        {"role": "system", "content": "You review answers for grounding."},
        {"role": "user", "content": user},
    ]
