"""Summarise the probe trace, decide the heads-up, and compose the offline answer."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from messages.aura import IntentFrame, ProbeStep
from world.aura._query import mentioned_agents, unknown_people
from world.aura._types import AnswerRequest, SceneView

FREE = frozenset({"available", "free", "open_to_chat", "open", "idle", "relaxed"})
LOW_MOODS = frozenset(
    {
        "stressed",
        "anxious",
        "upset",
        "sad",
        "angry",
        "frustrated",
        "tired",
        "exhausted",
        "worried",
        "irritated",
    }
)
_PRIVATE_KEYS = ("availability", "emotional_state", "unspoken_goal")


def walk(value: Any) -> Iterator[dict[str, Any]]:
    """Every dict inside a probe result, depth first (results nest rows in lists)."""
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from walk(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from walk(v)


def private_facts(trace: Sequence[ProbeStep], subject: str | None) -> dict[str, str]:
    """The subject's private fields found in the trace's private-state results."""
    facts: dict[str, str] = {}
    for step in trace:
        if step.status != "ok" or step.result is None or "belief" in step.tool:
            continue
        for d in walk(step.result):
            who = d.get("name") or d.get("agent")
            if subject is not None and who is not None and str(who) != subject:
                continue
            for key in _PRIVATE_KEYS:
                if isinstance(d.get(key), str) and key not in facts:
                    facts[key] = d[key]
    return facts


_BELIEF_KEYS = ("availability", "emotional_state", "location", "action")


def belief_facts(trace: Sequence[ProbeStep]) -> dict[str, str]:
    for step in trace:
        if step.status == "ok" and step.result is not None and "belief" in step.tool:
            for d in walk(step.result):
                found = {k: d[k] for k in _BELIEF_KEYS if isinstance(d.get(k), str)}
                if found:
                    return found
    return {}


def summarise(trace: Sequence[ProbeStep]) -> str:
    """One line per probe, compact enough to stand in for the trace in the Reason prompt."""
    lines = []
    for s in trace:
        args = ", ".join(f"{k}={v}" for k, v in s.args.items())
        if s.status == "ok" and s.result is not None:
            body = "; ".join(f"{k}: {_short(v)}" for k, v in s.result.items())
        else:
            body = f"{s.status}: {s.error or ''}".strip()
        lines.append(f"{s.tool}({args}) -> {body}")
    return "\n".join(lines)


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_PHRASES = {"do_not_disturb": "not to be disturbed", "open_to_chat": "open to a chat"}


def _words(value: str) -> str:
    return _PHRASES.get(value, value.replace("_", " "))


def heads_up(frame: IntentFrame | None, trace: Sequence[ProbeStep]) -> str | None:
    """The alert the answer opens with: only when the frame asks for one and a probe confirmed a
    reason (the subject is not free, is in a low mood, is absorbed in a goal, or is misjudged)."""
    if frame is None or not frame.alert or frame.subject is None:
        return None
    subject = frame.target or frame.subject
    facts = private_facts(trace, subject)
    believed = belief_facts(trace)
    availability = facts.get("availability")
    mood = facts.get("emotional_state")
    if believed and availability and believed.get("availability") not in (None, availability):
        return (
            f"Heads-up: the belief about {subject} is out of date: believed "
            f"{_words(believed['availability'])}, actually {_words(availability)}."
        )
    if availability and availability.lower() not in FREE:
        extra = f" and seems {_words(mood)}" if mood else ""
        return (
            f"Heads-up: {subject} is {_words(availability)} right now{extra}; "
            "maybe not the moment to interrupt."
        )
    if mood and mood.lower() in LOW_MOODS:
        return f"Heads-up: {subject} seems {_words(mood)} right now."
    return None


def _agent(view: SceneView, name: str, trace: Sequence[ProbeStep] = ()) -> str | None:
    """Where ``name`` is and what they do: from the scene, else from a probe's public result."""
    found: tuple[str, str] | None = None
    for a in view.agents:
        if a.name == name:
            found = (a.location, a.action)
    if found is None:
        for step in trace:
            if step.status == "ok" and step.result is not None and "belief" not in step.tool:
                for d in walk(step.result):
                    if d.get("name") == name and isinstance(d.get("location"), str):
                        found = (d["location"], str(d.get("action") or ""))
                        break
            if found:
                break
    if found is None:
        return None
    location, action = found
    return f"{name} is at {location}, {action}." if action else f"{name} is at {location}."


def compose_answer(request: AnswerRequest) -> str:
    """The offline Reason + Interact stages: the literal answer from the scene and the probes, the
    implicit one from the private facts probed, the heads-up first."""
    view, frame, trace = request.view, request.frame, request.trace
    parts: list[str] = []
    if request.alert:
        parts.append(request.alert)
    subject = frame.subject if frame else None
    if subject is None:
        named = mentioned_agents(request.query, view)
        subject = named[0] if named else None
    strangers = unknown_people(request.query, view) if subject is None else ()
    if not request.packed_scene:
        parts.append("I cannot see the town from here, so I cannot say for sure.")
    elif strangers:
        known = view.known or tuple(a.name for a in view.agents)
        parts.append(
            f"There is no one called {' or '.join(strangers)} in this town. "
            f"The people here are {', '.join(known)}."
        )
        return " ".join(p for p in parts if p)
    elif frame is not None and subject is None and is_group(frame):
        parts.append(_group_answer(view, frame, trace))
    elif subject is not None:
        parts.append(_agent(view, subject, trace) or f"I do not see {subject} from here.")
        facts = private_facts(trace, subject)
        if facts.get("availability") and not request.alert:
            parts.append(f"{subject} is {_words(facts['availability'])} right now.")
        if facts.get("emotional_state") and not request.alert:
            parts.append(f"{subject} seems {_words(facts['emotional_state'])}.")
        if facts.get("unspoken_goal"):
            parts.append(f"On {subject}'s mind: {facts['unspoken_goal']}.")
        if frame is not None and frame.target is None:
            parts.append(need_verdict(frame.reading, subject, facts))
        believed = belief_facts(trace)
        missing = [s.error for s in trace if "belief" in s.tool and s.status == "not_found" and s.error]
        if missing:
            parts.append(missing[0].rstrip(".") + ".")
        target = frame.target if frame else None
        if believed and target is not None:
            parts.append(_belief_sentence(subject, target, believed, trace))
        elif believed and not request.alert:
            parts.append(
                "Believed: "
                + ", ".join(f"{k.replace('_', ' ')} {_words(v)}" for k, v in believed.items())
                + "."
            )
    else:
        parts.append(_factual(request))
    grouped = frame is not None and subject is None and is_group(frame)
    if request.summary and subject is None and not grouped:
        parts.append("Observed: " + request.summary.replace("\n", "; "))
    return " ".join(p for p in parts if p)


def _belief_sentence(believer: str, target: str, believed: dict[str, str], trace: Sequence[ProbeStep]) -> str:
    """What the believer holds, and only that: the believer's view is the answer, the target's
    real state is not read (the second-order rule)."""
    states = [
        _words(believed[k])
        for k in ("availability", "emotional_state")
        if believed.get(k, "unknown") != "unknown"
    ]
    place = believed.get("location")
    doing = believed.get("action")
    where = f"at {place}" + (f", {doing}" if doing else "") if place else (doing or "")
    held = ", ".join(x for x in (where, " and ".join(states)) if x) or "unknown"
    when = _observed(trace)
    return f"{believer} thinks {target} is {held}{when}; that is {believer}'s view, which may be out of date."


def _observed(trace: Sequence[ProbeStep]) -> str:
    for step in trace:
        if step.status == "ok" and step.result is not None and "belief" in step.tool:
            for d in walk(step.result):
                if isinstance(d.get("observed_time"), str):
                    return f" (as last seen at {d['observed_time']})"
    return ""


def is_group(frame: IntentFrame) -> bool:
    """A frame about the people at a place or in town, rather than one person or a fact."""
    return frame.subject is None and bool(frame.subjects or frame.place or frame.reading)


def _free_or_not(facts: dict[str, str]) -> str:
    availability = facts.get("availability")
    if not availability:
        return ""
    return "free to talk" if availability.lower() in FREE else "not free to talk right now"


def need_verdict(reading: str | None, subject: str, facts: dict[str, str]) -> str:
    """The implicit need answered in so many words, from the private facts probed: what the
    literal question was really asking (is now a good time, are they free, how are they)."""
    availability = facts.get("availability", "")
    mood = facts.get("emotional_state", "")
    free = availability.lower() in FREE
    low = mood.lower() in LOW_MOODS
    if not availability and not mood:
        return ""
    if reading == "appropriateness":
        if free and not low:
            return f"So now looks like a good time to approach {subject}."
        return f"So now is probably not a good time to approach or interrupt {subject}; better wait a little."
    if reading == "mood" and mood:
        return f"So {subject} is feeling {_words(mood)} at the moment."
    if reading == "latent_goal":
        return ""
    if availability:
        if free:
            return f"So yes, {subject} is free to talk right now."
        return f"So {subject} is not free to talk right now."
    return ""


def group_members(frame: IntentFrame, view: SceneView, trace: Sequence[ProbeStep]) -> tuple[str, ...]:
    """The people a group frame concerns: those it names, else those a probe found at its place
    (never the asker)."""
    if frame.subjects:
        return frame.subjects
    found: list[str] = []
    for step in trace:
        if step.status != "ok" or step.result is None or "belief" in step.tool:
            continue
        for d in walk(step.result):
            name = d.get("name")
            mine = isinstance(name, str) and name != view.asker and name not in found
            if mine and (frame.place is None or d.get("location") == frame.place):
                found.append(str(name))
    return tuple(found)


def _group_answer(view: SceneView, frame: IntentFrame, trace: Sequence[ProbeStep]) -> str:
    """Who is there and, for each person probed, what the group question was really after."""
    members = group_members(frame, view, trace)
    where = f"At {frame.place}" if frame.place else "Around town"
    if not members:
        return f"{where}: nobody I can see right now."
    lines = []
    for name in members:
        seen = _agent(view, name, trace)
        facts = private_facts(trace, name)
        bits = []
        if facts.get("availability"):
            bits.append(_words(facts["availability"]))
        if facts.get("emotional_state"):
            bits.append(f"seems {_words(facts['emotional_state'])}")
        if facts.get("unspoken_goal"):
            bits.append(f"has on their mind: {facts['unspoken_goal']}")
        verdict = _free_or_not(facts)
        if verdict:
            bits.insert(0, verdict)
        state = f" ({'; '.join(bits)})" if bits else ""
        lines.append((seen.rstrip(".") if seen else name) + state)
    return f"{where}: " + "; ".join(lines) + "."


def _factual(request: AnswerRequest) -> str:
    view = request.view
    q = request.query.lower()
    if any(w in q for w in ("time", "day", "date")):
        return f"It is {view.time} on day {view.day}."
    if "where am i" in q or "my location" in q:
        return f"You are at {view.asker_location or 'an unknown place'}."
    if any(w in q for w in ("nearby", "near me", "who is here", "around")):
        return "With you: " + (", ".join(view.nearby) if view.nearby else "nobody") + "."
    if any(w in q for w in ("remember", "earlier", "did i", "recall")) and view.memories:
        return "You recall: " + "; ".join(view.memories[:3]) + "."
    return f"At {view.time}, you are at {view.asker_location or 'an unknown place'}."
