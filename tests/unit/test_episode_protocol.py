"""The simulated user's turn protocol (pi-Bench Appendix B), its deterministic judges, the paper's
prompts and the strict reading of judge answers."""

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
    verdicts_from_answer,
)
from world.episodes.protocol import SessionTracker, TemplateUserVoice, TurnOutcome, assess_reply
from world.episodes.scoring import task_proc
from world.episodes.text import anchors, key_terms, questions, stem

SAVE = 'Save the summary as "weekly_report.md" in the outputs folder'
BUDGET = "Keep the budget under 250 dollars"
REVIEW = "Send the draft to Priya for review"

JUDGE = DeterministicIntentJudge()
VOICE = TemplateUserVoice()


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
    assert first.message is not None and "250 dollars" in first.message  # the answer reveals the intent
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
    assert second.message == "One more thing: Send the draft to Priya for review."
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
    assert outcome.message == (
        "To answer your question: Keep the budget under 250 dollars. Send the draft to Priya for review."
    )
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


class BrokenJudge:
    """Answers nothing readable for the first intent and too few verdicts for the rest."""

    kind: Judgement = "llm"

    def completion(self, reply: str, files: Mapping[str, str], intents: Sequence[str]) -> list[Verdict]:
        return [Verdict(yes=False, failed=True, reason="no <c1>")]

    def clarification(self, reply: str, intents: Sequence[str]) -> list[Verdict]:
        return [Verdict(yes=False, failed=True, reason="no <c1>")] * len(intents)


def test_unreadable_verdicts_never_pass_and_are_counted() -> None:
    tracker = SessionTracker.for_intents([BUDGET, REVIEW])
    outcome = assess_reply(
        tracker, turn=1, reply="x", files={}, judge=BrokenJudge(), voice=VOICE, max_turns=5
    )
    # Stage 1: one failure given, one padded in; stage 2: two failures.
    assert outcome.judge_failures == 4 and tracker.judge_failures == 4
    assert [r.judge_failures for r in tracker.results()] == [2, 2]
    assert statuses(tracker) == ["provided", "open"]
    assert all(r.judge == "llm" for r in tracker.results())


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


def session() -> SessionEnded:
    return SessionEnded(
        episode_id="ep",
        task_id="t1",
        reason="complete",
        turns=(
            TurnRecord(turn=1, role="user", kind="request", text="Order 2 boxes of green tea"),
            TurnRecord(turn=1, role="assistant", kind="offline", text="I will look at the shop."),
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
