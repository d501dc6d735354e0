"""Judges of pi-Bench (Appendices B.2 and C.5): their prompts, the strict parse of their answers,
and the deterministic judges used offline.

The three prompts are the paper's, verbatim (``COMPLETION_PROMPT``, ``CLARIFICATION_PROMPT``,
``RUBRIC_PROMPT``). ``render_*`` fill their placeholders with XML blocks and repeat the example
``<c1>`` block of the output format once per judged item (``<c1>``, ``<c2>``, ...).
``parse_decisions`` reads the answer strictly: an item whose block is missing, or whose decision
is anything but YES or NO, or that is answered twice differently, is unreadable (None), which a
judge turns into ``Verdict(yes=False, failed=True)``: never a pass.

Deterministic rule (terms and anchors as defined in ``world.episodes.text``):

- completion: an intent is satisfied iff every anchor of the intent (numbers, quoted strings)
  appears in the reply's statements plus the files read (paths and contents), and at least 60%
  of its key terms do.
  The reply's questions are left out: asking about a requirement is not meeting it (that is
  stage 2's inferred);
- clarification: an intent is targeted iff some question of the reply (a sentence ending in
  ``?``) contains at least 50% of the intent's key terms, and at least 2 of them. Generic
  questions ("anything else?") carry no key terms and never pass; an intent with fewer than two
  key terms cannot be inferred;
- rubric: a criterion passes iff its anchors and at least 60% of its key terms appear in what the
  assistant said, wrote and did in the rendered history (the user's own turns are not evidence).

An item with no key terms and no anchors is never satisfied (nothing to check is not a pass).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from messages.episodes import Judgement, SessionEnded, ToolRecord, ToolSelection
from world.episodes.scoring import select_evidence, select_turn_evidence
from world.episodes.text import Haystack, coverage, questions, statements
from world.text import key_terms

COMPLETION_SHARE = 0.6
CLARIFICATION_SHARE = 0.5
CLARIFICATION_MIN_TERMS = 2
RUBRIC_SHARE = 0.6


@dataclass(frozen=True)
class Verdict:
    yes: bool
    failed: bool = False
    """The judge gave no readable answer for this item; ``yes`` is then False."""
    reason: str = ""

    def __post_init__(self) -> None:
        if self.failed and self.yes:
            raise ValueError("a failed verdict is never a YES")


def unreadable(reason: str) -> Verdict:
    return Verdict(yes=False, failed=True, reason=reason)


class IntentJudge(Protocol):
    """The user's two judges (Appendix B.2), one verdict per intent, in the order given."""

    kind: Judgement

    def completion(self, reply: str, files: Mapping[str, str], intents: Sequence[str]) -> list[Verdict]: ...

    def clarification(self, reply: str, intents: Sequence[str]) -> list[Verdict]: ...


class RubricJudge(Protocol):
    """The checklist judge (Appendix C.5), one verdict per criterion, in the order given."""

    kind: Judgement

    def judge(
        self, hidden_intents: Sequence[str], history: str, criteria: Sequence[str]
    ) -> list[Verdict]: ...


# ---------------------------------------------------------------- the paper's prompts

_INTENT_DECISION_FORMAT = """## Output Format
Output only XML blocks in the following shape.
<c1>
<content>
{hidden_intent_content}
</content>
<decision>
YES or NO
</decision>
</c1>
"""
"""The output format both stages of Appendix B.2 end with, word for word."""

COMPLETION_PROMPT = (
    """## Assistant Response
<assistant_message>
{assistant_message}
</assistant_message>

## Files Read Context
Use these file contents as additional context for judging intent
satisfaction.
{files_context_xml}

## Hidden Intent Status Snapshot
Judge only the hidden intents listed here.
{status_hidden_intents_xml}

## Objective
Decide whether the assistant response, together with the files-read
context above, already reflects each listed hidden intent.

## Evaluation Policy
1. Judge from the assistant response and the files-read context
above.
2. Be strict and objective. The assistant must precisely and
explicitly hit the hidden intent.
3. A hidden intent is satisfied only if the assistant provides
specific, detailed explanations or concrete actions in the response.
Vague or generic answers do not count.
4. Fully trust the assistant's wording and the files-read context,
but strictly evaluate the level of detail provided.
5. Do not call tools or check factual accuracy beyond the provided
context.
6. YES means the response and context precisely address the hidden
intent with specific details.
7. NO means the response and context do not precisely hit the intent,
or lack specific details.

"""
    + _INTENT_DECISION_FORMAT
)
"""Appendix B.2, "Prompt - Completion Checking" (stage 1)."""

CLARIFICATION_PROMPT = (
    """## Assistant Response
<assistant_message>
{assistant_message}
</assistant_message>

## Hidden Intents Still Not Provided
Judge only the hidden intents listed here.
{status_hidden_intents_xml}

## Objective
Decide whether the assistant response contains a clear follow-up
question that is specifically about each listed hidden intent.

## Evaluation Policy
1. Judge from the assistant response. Consider all follow-up
questions, requests, and action suggestions inside it, not only the
last sentence.
2. YES means the assistant explicitly asks about that hidden intent,
asks a very close confirmation question about it, or proposes concrete
next steps that directly correspond to it.
3. NO means the question is missing, vague, generic, or does not
clearly target that hidden intent.
4. Generic prompts such as \u201canything else?\u201d or \u201cdo you want to add
more?\u201d must be NO.
5. A question must clearly get the point. Broad topic overlap is not
enough.

"""
    + _INTENT_DECISION_FORMAT
)
"""Appendix B.2, "Prompt - Clarification Checking" (stage 2)."""

RUBRIC_PROMPT = """## Full Hidden Intent
These are all hidden intents for the current task.
{hidden_intents_xml}

## Interaction History
<history>
{history}
</history>

## Checklist Criteria
{criteria_list}

## Objective
You are a strict evaluator.
For each checklist criterion, decide whether the interaction history
clearly satisfies it.

## Scoring Rules
1. Use only evidence from the interaction history.
2. Score YES only when the criterion is clearly satisfied.
3. Score NO when evidence is missing, ambiguous, or contradicted.
4. Do not guess.

## Output Format
Output only XML blocks in the following shape. Keep each criterion
text exactly the same as given. Each score must be YES or NO.
<c1>
<criteria_text>
{criteria_text}
</criteria_text>
<score>
YES or NO
</score>
</c1>
"""
"""Appendix C.5, "Prompt - Checklist-based Rubric Evaluation"."""

_EXAMPLE_BLOCK = re.compile(r"<c1>\n.*?</c1>\n", re.S)


def _fill(template: str, values: Mapping[str, str], blocks: Sequence[str]) -> str:
    # One pass over the template's own placeholders (not str.format, not chained replaces): the
    # texts filled in may hold braces, even a placeholder's name, and must stay as they are.
    match = _EXAMPLE_BLOCK.search(template)
    assert match is not None
    head, tail = template[: match.start()], template[match.end() :]
    head = re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), head)
    return head + "".join(blocks) + tail


def _output_blocks(items: Sequence[str], text_tag: str, decision_tag: str) -> list[str]:
    return [
        f"<c{n}>\n<{text_tag}>\n{item}\n</{text_tag}>\n"
        f"<{decision_tag}>\nYES or NO\n</{decision_tag}>\n</c{n}>\n"
        for n, item in enumerate(items, start=1)
    ]


def files_context_xml(files: Mapping[str, str]) -> str:
    if not files:
        return "<files_read>\n</files_read>"
    body = "".join(f'<file path="{path}">\n{text}\n</file>\n' for path, text in sorted(files.items()))
    return f"<files_read>\n{body}</files_read>"


def status_hidden_intents_xml(intents: Sequence[str], status: str = "open") -> str:
    body = "".join(
        f"<c{n}>\n<content>\n{text}\n</content>\n<status>\n{status}\n</status>\n</c{n}>\n"
        for n, text in enumerate(intents, start=1)
    )
    return f"<hidden_intents>\n{body}</hidden_intents>"


def hidden_intents_xml(intents: Sequence[str]) -> str:
    body = "".join(f'<intent index="{n}">\n{text}\n</intent>\n' for n, text in enumerate(intents, start=1))
    return f"<hidden_intents>\n{body}</hidden_intents>"


def criteria_list(criteria: Sequence[str]) -> str:
    return "\n".join(f"c{n}. {text}" for n, text in enumerate(criteria, start=1))


def render_completion_prompt(reply: str, files: Mapping[str, str], intents: Sequence[str]) -> str:
    values = {
        "assistant_message": reply,
        "files_context_xml": files_context_xml(files),
        "status_hidden_intents_xml": status_hidden_intents_xml(intents),
    }
    return _fill(COMPLETION_PROMPT, values, _output_blocks(intents, "content", "decision"))


def render_clarification_prompt(reply: str, intents: Sequence[str]) -> str:
    values = {"assistant_message": reply, "status_hidden_intents_xml": status_hidden_intents_xml(intents)}
    return _fill(CLARIFICATION_PROMPT, values, _output_blocks(intents, "content", "decision"))


def render_rubric_prompt(hidden_intents: Sequence[str], history: str, criteria: Sequence[str]) -> str:
    values = {
        "hidden_intents_xml": hidden_intents_xml(hidden_intents),
        "history": history,
        "criteria_list": criteria_list(criteria),
    }
    return _fill(RUBRIC_PROMPT, values, _output_blocks(criteria, "criteria_text", "score"))


# ---------------------------------------------------------------- strict parsing

DecisionTag = Literal["decision", "score"]


def parse_decisions(answer: str, count: int, tag: DecisionTag = "decision") -> list[bool | None]:
    """Item n's YES (True) or NO (False) from its ``<cn>`` block; None when unreadable."""
    out: list[bool | None] = []
    for n in range(1, count + 1):
        found: set[bool] = set()
        readable = True
        blocks = re.findall(rf"<c{n}>(.*?)</c{n}>", answer, re.S | re.I)
        for block in blocks:
            values = re.findall(rf"<{tag}>(.*?)</{tag}>", block, re.S | re.I)
            if len(values) != 1:
                readable = False
                continue
            word = values[0].strip().strip(".").strip().upper()
            if word not in ("YES", "NO"):
                readable = False
                continue
            found.add(word == "YES")
        out.append(found.pop() if blocks and readable and len(found) == 1 else None)
    return out


def verdicts_from_answer(answer: str, count: int, tag: DecisionTag = "decision") -> list[Verdict]:
    return [
        unreadable(f"no readable <{tag}> for c{n}")
        if d is None
        else Verdict(yes=d, reason="judge: YES" if d else "judge: NO")
        for n, d in enumerate(parse_decisions(answer, count, tag), start=1)
    ]


def padded(verdicts: Sequence[Verdict], count: int, who: str) -> list[Verdict]:
    """Exactly ``count`` verdicts: missing ones are failures, extra ones are dropped."""
    out = list(verdicts[:count])
    out += [unreadable(f"{who} gave no verdict")] * (count - len(out))
    return out


# ---------------------------------------------------------------- deterministic judges


def _share_needed(total: int, share: float) -> int:
    return math.ceil(total * share - 1e-9)


def satisfied(requirement: str, haystack: Haystack, share: float) -> Verdict:
    """The anchors-and-terms rule shared by completion and rubric checks."""
    cov = coverage(requirement, haystack)
    if cov.terms_total == 0 and cov.anchors_total == 0:
        return Verdict(yes=False, reason="nothing to check: no key terms and no anchors")
    yes = cov.all_anchors and cov.terms_found >= _share_needed(cov.terms_total, share)
    return Verdict(yes=yes, reason=cov.describe())


def targeted(intent: str, asked: Sequence[str]) -> Verdict:
    terms = key_terms(intent)
    needed = max(CLARIFICATION_MIN_TERMS, _share_needed(len(terms), CLARIFICATION_SHARE))
    best = 0
    for question in asked:
        hits = len(set(terms) & set(key_terms(question)))
        best = max(best, hits)
        if hits >= needed:
            return Verdict(yes=True, reason=f"asked: {question!r} ({hits}/{len(terms)} terms)")
    return Verdict(yes=False, reason=f"best question {best}/{len(terms)} terms, {needed} needed")


class DeterministicIntentJudge:
    kind: Judgement = "deterministic"

    def completion(self, reply: str, files: Mapping[str, str], intents: Sequence[str]) -> list[Verdict]:
        # A file's path is evidence too: a deliverable saved under the name the user wanted.
        haystack = Haystack.of([statements(reply), *(f"{path}\n{text}" for path, text in files.items())])
        return [satisfied(intent, haystack, COMPLETION_SHARE) for intent in intents]

    def clarification(self, reply: str, intents: Sequence[str]) -> list[Verdict]:
        asked = questions(reply)
        return [targeted(intent, asked) for intent in intents]


_USER_TURN = re.compile(r'<turn [^>]*role="user"[^>]*>.*?</turn>\n?', re.S)


class DeterministicRubricJudge:
    kind: Judgement = "deterministic"

    def judge(self, hidden_intents: Sequence[str], history: str, criteria: Sequence[str]) -> list[Verdict]:
        haystack = Haystack.of([_USER_TURN.sub("", history)])
        return [satisfied(criterion, haystack, RUBRIC_SHARE) for criterion in criteria]


# ---------------------------------------------------------------- the rubric's trace


def render_history(
    session: SessionEnded,
    files: Mapping[str, str],
    evidence: Sequence[ToolRecord],
    selections: Sequence[ToolSelection],
) -> str:
    """The trace the rubric judge reads (Appendix C.5): every turn, the files read at the end of
    the session, and only the tool calls and fields the task selected (corrected reading)."""
    parts: list[str] = []
    for turn in session.turns:
        kind = f' kind="{turn.kind}"' if turn.kind else ""
        parts.append(f'<turn n="{turn.turn}" role="{turn.role}"{kind}>\n{turn.text}\n</turn>')
    if files:
        parts.append(files_context_xml(files))
    selected = select_evidence(evidence, selections, "corrected")
    if selected:
        lines = "\n".join(json.dumps(item, sort_keys=True, ensure_ascii=False) for item in selected)
        parts.append(f"<tool_evidence>\n{lines}\n</tool_evidence>")
    return "\n".join(parts)


def render_turn_trace(
    session: SessionEnded,
    turn: int,
    files: Mapping[str, str],
    evidence: Sequence[ToolRecord],
    selections: Sequence[ToolSelection],
) -> str:
    """The trace pi-Bench's checklist judge reads for one turn (``TraceHistoryBuilder.build``
    renders each turn's file alone): the conversation up to and including ``turn`` (nanobot's
    context of that turn), the files read at the end, and the selected fields of the last call of
    each task tool made in that turn."""
    parts: list[str] = []
    for record in session.turns:
        if record.turn <= turn:
            kind = f' kind="{record.kind}"' if record.kind else ""
            parts.append(f'<turn n="{record.turn}" role="{record.role}"{kind}>\n{record.text}\n</turn>')
    if files:
        parts.append(files_context_xml(files))
    selected = select_turn_evidence(evidence, turn, selections)
    if selected:
        lines = "\n".join(json.dumps(item, sort_keys=True, ensure_ascii=False) for item in selected)
        parts.append(f"<tool_trace_extracts>\n{lines}\n</tool_trace_extracts>")
    return "\n".join(parts)
