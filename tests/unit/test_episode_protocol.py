"""The simulated user's turn protocol (pi-Bench Appendix B), its verbatim voice, its deterministic
judges, the paper's prompts, the strict reading of judge answers and the rubric's traces."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from messages.episodes import Judgement, SessionEnded, ToolRecord, ToolSelection, TurnRecord
from world.episodes.judging import (
    CLARIFICATION_PROMPT,
    COMPLETION_PROMPT,
    RUBRIC_PROMPT,
    DeterministicIntentJudge,
    DeterministicRubricJudge,
    Verdict,
    parse_decisions,
    render_clarification_prompt,
    render_completion_prompt,
    render_history,
    render_rubric_prompt,
    render_turn_trace,
    verdicts_from_answer,
)
from world.episodes.protocol import SessionTracker, TurnOutcome, VerbatimUserVoice, assess_reply
from world.episodes.scoring import task_proc
from world.episodes.text import anchors, questions
from world.text import key_terms, stem

SAVE = 'Save the summary as "weekly_report.md" in the outputs folder'
BUDGET = "Keep the budget under 250 dollars"
REVIEW = "Send the draft to Priya for review"

JUDGE = DeterministicIntentJudge()
VOICE = VerbatimUserVoice()


def step(
    tracker: SessionTracker,
    turn: int,
    reply: str,
    files: Mapping[str, str] | None = None,
    max_turns: int = 12,
) -> TurnOutcome:
    return assess_reply(
        tracker, turn=turn, reply=reply, files=files or {}, judge=JUDGE, voice=VOICE, max_turns=max_turns
    )


def statuses(tracker: SessionTracker) -> list[str]:
    return [r.status for r in tracker.results()]


# ---------------------------------------------------------------- the protocol


def test_a_session_produces_each_terminal_status_and_ends_after_the_last_reply() -> None:
    tracker = SessionTracker.for_intents([SAVE, BUDGET, REVIEW])

    first = assess_reply(
        tracker,
        turn=1,
        reply='I saved the summary to "weekly_report.md" in the outputs folder. '
        "What budget limit in dollars should I keep to?",
        files={},
        judge=JUDGE,
        voice=VOICE,
        max_turns=12,
    )
    assert first.completed == (0,) and first.inferred == (1,) and first.provided is None
    assert first.kind == "answer" and not first.done
    assert first.message == BUDGET  # the answer is the inferred intent's own text
    assert [r.index for r in first.changed] == [0, 1]
    assert statuses(tracker) == ["completed", "inferred", "open"]

    second = assess_reply(
        tracker,
        turn=2,
        reply="Noted: I will keep the budget under 250 dollars.",
        files={},
        judge=JUDGE,
        voice=VOICE,
        max_turns=12,
    )
    assert second.kind == "provide" and second.provided == 2 and not second.done
    assert second.message == REVIEW  # the provided intent, as written
    assert statuses(tracker) == ["completed", "inferred", "provided"]

    # Every intent is terminal, but the user spoke last: the session ends only after this reply.
    third = assess_reply(
        tracker, turn=3, reply="Sent the draft to Priya.", files={}, judge=JUDGE, voice=VOICE, max_turns=12
    )
    assert third.done and third.reason == "complete" and third.message is None and third.changed == ()
    rows = tracker.results()
    assert [r.turn for r in rows] == [1, 1, 2]
    assert all(r.judge == "deterministic" for r in rows)
    assert task_proc(rows) == pytest.approx(2 / 3)


def test_completion_has_priority_over_a_question_about_the_same_intent() -> None:
    tracker = SessionTracker.for_intents([BUDGET])
    outcome = step(
        tracker, 1, "I kept the budget under 250 dollars. Should the budget stay under 250 dollars?"
    )
    assert statuses(tracker) == ["completed"]
    assert outcome.done and outcome.reason == "complete"


def test_asking_about_an_intent_is_not_completing_it() -> None:
    tracker = SessionTracker.for_intents([BUDGET])
    outcome = step(tracker, 1, "Here is a plan. What budget in dollars should I keep it under, maybe 250?")
    assert statuses(tracker) == ["inferred"]
    assert outcome.kind == "answer" and not outcome.done


def test_generic_questions_never_infer_an_intent() -> None:
    tracker = SessionTracker.for_intents([BUDGET, REVIEW])
    outcome = step(tracker, 1, "Done. Anything else? Do you want to add more? Any other preferences?")
    assert statuses(tracker) == ["provided", "open"]  # the first open intent, and only one
    assert outcome.kind == "provide" and outcome.provided == 0


def test_a_question_must_hit_two_key_terms() -> None:
    tracker = SessionTracker.for_intents([REVIEW])
    step(tracker, 1, "Who should review it?")  # one term of four: broad overlap is not enough
    assert statuses(tracker) == ["provided"]
    tracker = SessionTracker.for_intents([REVIEW])
    step(tracker, 1, "Should I send the draft to someone for review?")
    assert statuses(tracker) == ["inferred"]


def test_files_read_count_as_evidence_of_completion() -> None:
    tracker = SessionTracker.for_intents([SAVE])
    reply = "The summary is ready."
    outcome = step(
        tracker, 1, reply, files={"outputs/weekly_report.md": "# Weekly summary\nsaved to outputs folder"}
    )
    assert statuses(tracker) == ["completed"] and outcome.done


def test_an_anchor_missing_from_the_evidence_blocks_completion() -> None:
    tracker = SessionTracker.for_intents([BUDGET])
    step(tracker, 1, "I kept the budget under 300 dollars.")  # every term, the wrong number
    assert statuses(tracker) == ["provided"]


def test_several_inferred_intents_are_answered_in_one_message() -> None:
    tracker = SessionTracker.for_intents([BUDGET, REVIEW])
    outcome = step(
        tracker, 1, "What dollar budget should I keep? Should I send the draft to someone for review?"
    )
    assert statuses(tracker) == ["inferred", "inferred"]
    assert outcome.kind == "answer"
    assert outcome.message == f"{BUDGET}\n{REVIEW}"  # in task order, one per line
    final = step(tracker, 2, "Thanks, doing both.")
    assert final.done and final.reason == "complete"


def test_a_task_without_intents_ends_after_the_first_reply() -> None:
    tracker = SessionTracker.for_intents([])
    outcome = step(tracker, 1, "Done.")
    assert outcome.done and outcome.reason == "complete" and outcome.message is None
    assert task_proc(tracker.results()) is None


def test_max_turns_ends_the_session_with_open_intents_left_open() -> None:
    tracker = SessionTracker.for_intents([SAVE, BUDGET, REVIEW])
    first = step(tracker, 1, "Working on it.", max_turns=2)
    assert first.kind == "provide" and not first.done
    last = step(tracker, 2, "Still working on it.", max_turns=2)
    assert last.done and last.reason == "max_turns" and last.message is None
    assert statuses(tracker) == ["provided", "open", "open"]  # nothing provided without a message
    assert task_proc(tracker.results()) == 0.0
    with pytest.raises(ValueError, match="ended"):
        step(tracker, 3, "late reply")


def test_a_turn_is_assessed_once() -> None:
    tracker = SessionTracker.for_intents([BUDGET, REVIEW])
    step(tracker, 1, "Working on it.")
    with pytest.raises(ValueError, match="already assessed"):
        step(tracker, 1, "Working on it.")
    assert statuses(tracker) == ["provided", "open"]


class ScriptedJudge:
    """Answers each stage from a script: per intent text, YES, NO or None (unreadable); an intent
    the script leaves out gets no verdict at all (too few verdicts)."""

    kind: Judgement = "llm"

    def __init__(
        self, completion: Mapping[str, bool | None], clarification: Mapping[str, bool | None] | None = None
    ) -> None:
        self.script = {"completion": completion, "clarification": clarification or {}}
        self.asked: list[tuple[str, list[str]]] = []

    def _answer(self, stage: str, intents: Sequence[str]) -> list[Verdict]:
        self.asked.append((stage, list(intents)))
        out = []
        for intent in intents:
            if intent not in self.script[stage]:
                break
            decision = self.script[stage][intent]
            out.append(
                Verdict(yes=False, failed=True, reason="no <c1>")
                if decision is None
                else Verdict(yes=decision)
            )
        return out

    def completion(self, reply: str, files: Mapping[str, str], intents: Sequence[str]) -> list[Verdict]:
        return self._answer("completion", intents)

    def clarification(self, reply: str, intents: Sequence[str]) -> list[Verdict]:
        return self._answer("clarification", intents)


def judged(tracker: SessionTracker, judge: ScriptedJudge, turn: int = 1) -> TurnOutcome:
    return assess_reply(tracker, turn=turn, reply="x", files={}, judge=judge, voice=VOICE, max_turns=5)


def test_an_unreadable_completion_verdict_ends_the_session_in_error() -> None:
    tracker = SessionTracker.for_intents([SAVE, BUDGET, REVIEW])
    judge = ScriptedJudge({SAVE: True, BUDGET: None})  # REVIEW: no verdict at all (padded)
    outcome = judged(tracker, judge)
    assert outcome.done and outcome.reason == "error" and tracker.ended == "error"
    assert outcome.message is None and outcome.kind is None and outcome.provided is None
    # The readable YES stands; the failed verdicts set no status: nothing provided, nothing inferred.
    assert statuses(tracker) == ["completed", "open", "open"]
    assert outcome.completed == (0,) and outcome.inferred == () and [r.index for r in outcome.changed] == [0]
    assert outcome.judge_failures == 2 and tracker.judge_failures == 2
    assert [r.judge_failures for r in tracker.results()] == [0, 1, 1]
    assert all(r.judge == "llm" for r in tracker.results())
    assert [stage for stage, _ in judge.asked] == ["completion"]  # no clarification after a failure
    with pytest.raises(ValueError, match=r"ended \(error\)"):
        judged(tracker, judge, turn=2)


def test_an_unreadable_clarification_verdict_ends_the_session_in_error() -> None:
    tracker = SessionTracker.for_intents([SAVE, BUDGET, REVIEW])
    judge = ScriptedJudge(
        {SAVE: False, BUDGET: False, REVIEW: False}, {SAVE: True, BUDGET: None, REVIEW: False}
    )
    outcome = judged(tracker, judge)
    assert outcome.done and outcome.reason == "error" and outcome.message is None
    assert statuses(tracker) == ["inferred", "open", "open"]  # no intent is provided
    assert outcome.inferred == (0,) and outcome.provided is None
    assert [r.index for r in outcome.changed] == [0]
    assert outcome.judge_failures == 1 and [r.judge_failures for r in tracker.results()] == [0, 1, 0]
    assert [r.turn for r in tracker.results()] == [1, 0, 0]


def test_a_readable_judge_never_ends_the_session_in_error() -> None:
    tracker = SessionTracker.for_intents([SAVE, BUDGET])
    judge = ScriptedJudge({SAVE: False, BUDGET: False}, {SAVE: False, BUDGET: False})
    outcome = judged(tracker, judge)
    assert not outcome.done and outcome.kind == "provide" and outcome.message == SAVE
    assert tracker.ended is None and tracker.judge_failures == 0


def test_the_verbatim_voice_speaks_the_intents_own_words() -> None:
    voice = VerbatimUserVoice()
    multi = "Keep it short.\n  Use bullet points.  "
    assert voice.provide("any reply", multi) == multi  # as written, blanks and all
    assert (
        voice.answer("What budget? Who reviews?", [BUDGET, REVIEW, multi]) == f"{BUDGET}\n{REVIEW}\n{multi}"
    )
    assert voice.answer("Which one?", [BUDGET]) == BUDGET


def test_the_tracker_survives_a_round_trip_through_json() -> None:
    tracker = SessionTracker.for_intents([BUDGET, REVIEW])
    step(tracker, 1, "What dollar budget should I keep?")
    again = SessionTracker.model_validate_json(tracker.model_dump_json())
    assert again == tracker
    outcome = step(again, 2, "Done.")
    assert outcome.provided == 1


def test_a_verdict_cannot_be_failed_and_yes() -> None:
    with pytest.raises(ValueError):
        Verdict(yes=True, failed=True)


# ---------------------------------------------------------------- terms


def test_stemming_reads_inflections_alike() -> None:
    assert {stem(w) for w in ("save", "saves", "saved", "saving")} == {"sav"}
    assert stem("planned") == stem("plan") and stem("boxes") == stem("box") and stem("copied") == "copy"
    assert stem("address") == "address" and stem("status") == "status"
    assert key_terms("The orders and THE ordering of files!") == ("order", "fil")


def test_anchors_are_numbers_and_quoted_strings() -> None:
    marks = anchors("Spend $1,250.50 on 05 items named \"Q3  Plan\" and 'alpha' but not the user's 'x")
    assert marks.numbers == frozenset({"1250.5", "5"})
    assert marks.quoted == ("q3 plan", "alpha")
    assert questions("Done. Is 3 OK?\nWhat about the deadline? Fine. (Or **Friday?**)") == [
        "Is 3 OK?",
        "What about the deadline?",
        "(Or **Friday?**)",
    ]


# ---------------------------------------------------------------- the paper's prompts


def test_the_prompts_are_the_papers() -> None:
    assert COMPLETION_PROMPT.startswith("## Assistant Response\n<assistant_message>\n{assistant_message}")
    assert (
        "2. Be strict and objective. The assistant must precisely and\nexplicitly hit the hidden intent."
        in (COMPLETION_PROMPT)
    )
    assert (
        "4. Generic prompts such as \u201canything else?\u201d or \u201cdo you want to add\n"
        "more?\u201d must be NO." in CLARIFICATION_PROMPT
    )
    assert (
        "## Hidden Intents Still Not Provided\nJudge only the hidden intents listed here."
        in CLARIFICATION_PROMPT
    )
    assert "## Objective\nYou are a strict evaluator." in RUBRIC_PROMPT
    assert RUBRIC_PROMPT.endswith("<score>\nYES or NO\n</score>\n</c1>\n")


def test_a_rendered_completion_prompt_lists_every_intent_and_its_output_block() -> None:
    prompt = render_completion_prompt(
        "Reply with {braces} and {files_context_xml}", {"b.md": "two", "a.md": "one"}, [BUDGET, REVIEW]
    )
    assert "Reply with {braces} and {files_context_xml}" in prompt  # filled text is left as it is
    assert (
        '<files_read>\n<file path="a.md">\none\n</file>\n<file path="b.md">\ntwo\n</file>\n</files_read>'
        in prompt
    )
    assert f"<c2>\n<content>\n{REVIEW}\n</content>\n<status>\nopen\n</status>\n</c2>" in prompt
    assert f"<c2>\n<content>\n{REVIEW}\n</content>\n<decision>\nYES or NO\n</decision>\n</c2>" in prompt
    assert "{hidden_intent_content}" not in prompt and "{status_hidden_intents_xml}" not in prompt
    assert prompt.count("<decision>") == 2


def test_rendered_clarification_and_rubric_prompts_fill_every_placeholder() -> None:
    clar = render_clarification_prompt("What budget?", [BUDGET])
    assert "<assistant_message>\nWhat budget?\n</assistant_message>" in clar and "{" not in clar
    rubric = render_rubric_prompt([BUDGET], "<turn>hi</turn>", ["File exists", "Budget is 250"])
    assert "<history>\n<turn>hi</turn>\n</history>" in rubric
    assert "c1. File exists\nc2. Budget is 250" in rubric
    assert (
        "<c2>\n<criteria_text>\nBudget is 250\n</criteria_text>\n<score>\nYES or NO\n</score>\n</c2>"
        in rubric
    )
    assert f'<intent index="1">\n{BUDGET}\n</intent>' in rubric and "{" not in rubric


# ---------------------------------------------------------------- strict parsing


def block(n: int, decision: str, tag: str = "decision") -> str:
    return f"<c{n}>\n<content>\nx\n</content>\n<{tag}>\n{decision}\n</{tag}>\n</c{n}>\n"


def test_decisions_are_read_strictly() -> None:
    answer = (
        "```xml\n" + block(1, "YES") + block(2, " no. ") + block(3, "YES or NO") + block(5, "MAYBE") + "```"
    )
    assert parse_decisions(answer, 5) == [True, False, None, None, None]  # c4 missing, c5 not YES/NO
    assert parse_decisions(block(1, "YES") + block(1, "NO"), 1) == [None]  # answered twice, differently
    assert parse_decisions(block(1, "YES") + block(1, "YES"), 1) == [True]
    assert parse_decisions(block(1, "YES"), 1, "score") == [None]  # the rubric reads <score>
    assert parse_decisions(block(1, "YES", "score"), 1, "score") == [True]
    assert parse_decisions("<c1><decision>YES</decision>", 1) == [None]  # block never closed
    verdicts = verdicts_from_answer(block(1, "YES") + "garbage", 2)
    assert verdicts[0] == Verdict(yes=True, reason="judge: YES")
    assert verdicts[1].failed and not verdicts[1].yes


# ---------------------------------------------------------------- the rubric's trace


def session(*later: TurnRecord) -> SessionEnded:
    """A session whose first turn orders tea, with the ``later`` turns after it."""
    return SessionEnded(
        episode_id="ep",
        task_id="t1",
        reason="complete",
        turns=(
            TurnRecord(turn=1, role="user", kind="request", text="Order 2 boxes of green tea"),
            TurnRecord(turn=1, role="assistant", kind="offline", text="I will look at the shop."),
            *later,
        ),
    )


def test_the_rendered_history_holds_turns_files_and_only_selected_evidence() -> None:
    history = [
        ToolRecord(tool_name="read_file", call={"path": "a.md"}, result={"response": {"content": "secret"}}),
        ToolRecord(
            tool_name="mcp_appworld_amazon__show_order",
            call={"order_id": 901, "note": "x"},
            result={
                "response": {"order_id": 901, "order_items": [{"product_id": 1578, "ordered_quantity": 2}]}
            },
        ),
    ]
    selection = ToolSelection(
        tool_name="mcp_appworld_amazon__show_order", call=("order_id",), result=("order_items.product_id",)
    )
    text = render_history(session(), {"notes.md": "tea notes"}, history, [selection])
    assert '<turn n="1" role="user" kind="request">\nOrder 2 boxes of green tea\n</turn>' in text
    assert '<file path="notes.md">\ntea notes\n</file>' in text
    assert '"order_items.product_id": [1578]' in text and '"order_id": 901' in text
    assert "secret" not in text and '"note"' not in text


def test_the_deterministic_rubric_judge_does_not_take_the_users_words_as_evidence() -> None:
    text = render_history(session(), {}, [], [])
    judge = DeterministicRubricJudge()
    verdicts = judge.judge([], text, ["Ordered 2 boxes of green tea", "Looked at the shop", "Nothing"])
    assert [v.yes for v in verdicts] == [False, True, False]
    assert "nothing to check" in verdicts[2].reason


def test_a_turns_trace_holds_the_conversation_so_far_and_that_turns_extracts() -> None:
    ended = session(
        TurnRecord(turn=2, role="user", kind="provide", text="Two boxes, please."),
        TurnRecord(turn=2, role="assistant", kind="offline", text="Ordered two boxes."),
    )
    show = "mcp_appworld_amazon__show_order"
    history = [
        ToolRecord(tool_name=show, call={"order_id": 17}, result={"response": {"order_id": 17}}, turn=1),
        ToolRecord(tool_name=show, call={"order_id": 18}, result={"response": {"order_id": 18}}, turn=1),
        ToolRecord(tool_name="amazon__show_order", call={"order_id": 19}, result={}, turn=1),
        ToolRecord(tool_name=show, call={"order_id": 20}, result={}, status="unknown_tool", turn=2),
    ]
    selection = ToolSelection(tool_name=show, call=("order_id",))
    first = render_turn_trace(ended, 1, {"notes.md": "tea notes"}, history, [selection])
    assert first == (
        '<turn n="1" role="user" kind="request">\nOrder 2 boxes of green tea\n</turn>\n'
        '<turn n="1" role="assistant" kind="offline">\nI will look at the shop.\n</turn>\n'
        '<files_read>\n<file path="notes.md">\ntea notes\n</file>\n</files_read>\n'
        "<tool_trace_extracts>\n"
        f'{{"call": {{"order_id": 18}}, "result": {{}}, "tool_name": "{show}"}}\n'
        "</tool_trace_extracts>"
    )  # the last call of exactly that name in the turn; an unprefixed record is another name
    second = render_turn_trace(ended, 2, {}, history, [selection])
    assert "Order 2 boxes of green tea" in second and "Ordered two boxes." in second
    assert "<tool_trace_extracts>" not in second  # turn 2's only call never ran
    assert "<files_read>" not in second
