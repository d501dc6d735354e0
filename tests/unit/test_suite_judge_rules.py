"""The deterministic implicit judge's rules on a hand-written scene and hand-written answers: value matching
that works on unseen values (own words, stems, state families, negation), whom a clause is about, partial
versus full credit, contradictions, refusals, beliefs, goals, group and whole-town queries; and the
agreement tool's fitting and exit codes on a small hand-written release."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.suite import judge_agreement
from bench.suite.datasets import ImplicitQuery, ImplicitScene, Subcategory
from bench.suite.judges import (
    Agreement,
    ImplicitIntentJudge,
    JudgeParams,
    JudgeScore,
    contradicts,
    value_surfaced,
)

# name: (location, action) and (availability, emotional_state, unspoken_goal)
PUBLIC = {
    "Ada Park": ("Harbour Bakery", "boxing bread rolls"),
    "Bruno Silva": ("Net Loft", "reading notes aloud"),
    "Cleo Tan": ("Sea Wall", "sketching the boats"),
    "Dev Rao": ("Net Loft", "repairing the ferry engine"),
}
PRIVATE = {
    "Ada Park": ("in_a_hurry", "weary", "baking a surprise cake for her sister"),
    "Bruno Silva": ("engaged", "excited", "winning a seat on the harbour council"),
    "Cleo Tan": ("open_to_chat", "homesick", "finding a buyer for her old dinghy"),
    "Dev Rao": ("concentrating", "irritated", "getting the ferry running before dawn"),
}
SCENE = ImplicitScene(
    summary="Net Loft, 6:40 PM. Present: Bruno Silva, Dev Rao. Ada Park is at the Harbour Bakery.",
    public_state={name: {"location": where, "action": doing} for name, (where, doing) in PUBLIC.items()},
    private_state={
        name: {"availability": free, "emotional_state": mood, "unspoken_goal": goal}
        for name, (free, mood, goal) in PRIVATE.items()
    },
    beliefs_about_others={
        "Ada Park": {"Bruno Silva": {"availability": "available", "emotional_state": "calm"}},
        "Cleo Tan": {"Dev Rao": {"availability": "busy", "emotional_state": "unknown"}},
    },
)


def query(
    text: str,
    need: str,
    subcategory: Subcategory,
    implicit: tuple[str, ...],
    *,
    subject: str | None = None,
    target: str | None = None,
    literal: tuple[str, ...] = ("agent_action",),
) -> ImplicitQuery:
    return ImplicitQuery(
        id=1,
        scene="harbour",
        subcategory=subcategory,
        query=text,
        agent_subject=subject,
        target=target,
        literal_requires=literal,
        implicit_requires=implicit,
        implicit_need=need,
    )


GRAB_ADA = query(
    "Can I grab Ada Park for a minute?",
    "Does she have time to stop and talk right now?",
    "availability",
    ("availability",),
    subject="Ada Park",
    literal=("agent_location",),
)
ASK_DEV = query(
    "Should I ask Dev Rao about the ferry timetable now?",
    "Is this a bad moment to interrupt his work?",
    "appropriateness",
    ("availability", "emotional_state"),
    subject="Dev Rao",
)
CLEO_MOOD = query(
    "Is Cleo Tan homesick?",
    "Would she welcome some company?",
    "mood",
    ("emotional_state",),
    subject="Cleo Tan",
)
AT_THE_LOFT = query(
    "Who is at the Net Loft?",
    "Is anyone there free for a chat?",
    "availability",
    ("availability",),
    literal=("nearby_agents",),
)
BRUNO_GOAL = query(
    "What is Bruno Silva up to?",
    "What is he privately working towards?",
    "latent_goal",
    ("unspoken_goal",),
    subject="Bruno Silva",
)
SURPRISE = query(
    "Is anyone in town planning a surprise?",
    "Are there private plans to know about first?",
    "latent_goal",
    ("unspoken_goal",),
    literal=("all_agents_action",),
)
ADA_THINKS = query(
    "Does Ada Park think Bruno Silva is free?",
    "What is Ada Park's belief about Bruno Silva's availability, not the truth?",
    "second_order",
    ("beliefs_about_others.Bruno Silva.availability",),
    subject="Ada Park",
    target="Bruno Silva",
)
CLEO_THINKS = query(
    "Does Cleo Tan think Dev Rao can be interrupted?",
    "What is Cleo Tan's belief about Dev Rao's availability?",
    "second_order",
    ("beliefs_about_others.Dev Rao.availability",),
    subject="Cleo Tan",
    target="Dev Rao",
)
CLEO_COMPARES = query(
    "From Cleo Tan's view, is Dev Rao busy?",
    "Does Cleo Tan's picture match what Dev Rao is really doing?",
    "second_order",
    ("beliefs_about_others.Dev Rao.availability",),
    subject="Cleo Tan",
    target="Dev Rao",
)


def implicit(q: ImplicitQuery, answer: str, params: JudgeParams | None = None) -> float:
    result = ImplicitIntentJudge(params).judge(q, SCENE, answer)
    assert isinstance(result, JudgeScore), result
    return result.implicit_score


def test_unseen_values_match_by_their_own_words_stems_and_state_families() -> None:
    # Own words and stems.
    assert value_surfaced("She is in a hurry to close up.", "in_a_hurry", "availability")
    assert value_surfaced("He is deep in concentration.", "concentrating", "availability")
    assert value_surfaced("She seems homesick tonight.", "homesick", "emotional_state")
    # A synonym from the value's state family; a value in no family matches only its own words.
    assert value_surfaced("She is rushed off her feet.", "in_a_hurry", "availability")
    assert value_surfaced("He is busy with the engine.", "concentrating", "availability")
    assert value_surfaced("She looks exhausted.", "weary", "emotional_state")
    assert not value_surfaced("She looks sad.", "homesick", "emotional_state")
    assert not value_surfaced("She looks cheerful.", "weary", "emotional_state")
    # The field picks the families: "focused" is an availability for one field and a mood for the other.
    assert value_surfaced("He is focused.", "engaged", "availability")
    assert not value_surfaced("He is focused.", "excited", "emotional_state")
    # Negation: denied values do not count; denying one availability family affirms the other.
    assert not value_surfaced("He isn't excited at all.", "excited", "emotional_state")
    assert value_surfaced("She is not busy, happy to chat.", "open_to_chat", "availability")
    assert not value_surfaced("She is not available.", "open_to_chat", "availability")
    assert contradicts("She is not available.", "open_to_chat", "availability")
    assert not contradicts("She is free now, though busy later.", "open_to_chat", "availability")
    # Sharing a prefix is not being the value: "thoughts" is not "thoughtful", "availability" not "available".
    assert not value_surfaced("No word on her thoughts.", "thoughtful", "emotional_state")
    assert not value_surfaced("Her availability is a mystery.", "available", "availability")


def test_the_state_alone_is_partial_and_speaking_to_the_need_is_full() -> None:
    assert implicit(GRAB_ADA, "Ada Park is at the Harbour Bakery.") == 0.0
    assert implicit(GRAB_ADA, "Ada Park is at the Harbour Bakery, in a hurry.") == 0.6
    assert (
        implicit(GRAB_ADA, "Ada Park is at the bakery, in a hurry: she has no time to stop and talk.") == 1.0
    )
    # What she is visibly doing bears on whether she is free: partial, not nothing.
    assert implicit(GRAB_ADA, "Ada Park is boxing bread rolls at the bakery.") == 0.6
    # Another private state of hers, volunteered, is partial too.
    assert implicit(GRAB_ADA, "Ada Park is at the bakery and looks weary.") == 0.6
    # The partial credit is a constant of the judge (fitted on the paper's cells).
    assert implicit(GRAB_ADA, "Ada Park is in a hurry.", JudgeParams(partial=0.5)) == 0.5


def test_a_value_said_of_someone_else_does_not_count() -> None:
    wrong_agent = "Ada Park is at the Harbour Bakery. Cleo Tan is in a hurry, and she has no time to talk."
    assert implicit(GRAB_ADA, wrong_agent) == 0.0
    # A pronoun after a name is about that person; a name inside the value ("her sister") is its object.
    assert implicit(GRAB_ADA, "Cleo Tan is sketching. Ada Park is at the bakery; she is in a hurry.") == 0.6


def test_a_guess_at_the_askers_intent_states_nothing() -> None:
    guess = (
        "You may also be wondering: the user wants to know if Ada Park is in a hurry.\n\nAda Park is here."
    )
    assert implicit(GRAB_ADA, guess) == 0.0


def test_a_verdict_grounded_in_one_state_settles_a_combined_judgement() -> None:
    # ASK_DEV needs availability and mood; the answer gives his availability, a verdict, and the need's words.
    verdict = (
        "Dev Rao is concentrating on the engine, so it is best to wait: a bad moment to interrupt his work."
    )
    assert implicit(ASK_DEV, verdict) == 1.0
    assert implicit(ASK_DEV, "Dev Rao is concentrating on the engine.") == 0.6
    assert implicit(ASK_DEV, "Dev Rao is repairing the ferry engine, best to wait.") == 0.6  # public only


def test_a_contradicted_state_caps_a_group_answer() -> None:
    # At the Net Loft: Bruno Silva is engaged, Dev Rao concentrating. Half the agents right is enough ...
    right = "Bruno Silva is busy rehearsing and Dev Rao is concentrating, so neither is free for a chat."
    assert implicit(AT_THE_LOFT, right) == 1.0
    # ... but saying the opposite of the truth for one of them is not full credit.
    wrong = "Bruno Silva is busy rehearsing, but Dev Rao is free for a chat."
    assert implicit(AT_THE_LOFT, wrong) == 0.6


def test_refusals_score_nothing_unless_they_volunteer_state() -> None:
    echo = "The scene does not provide any information, so I cannot determine whether Cleo Tan is homesick."
    assert implicit(CLEO_MOOD, echo) == 0.0
    volunteered = "I cannot determine whether Cleo Tan is homesick, but she is open to a chat."
    assert implicit(CLEO_MOOD, volunteered) == 0.6


def test_the_belief_is_the_answer_and_its_synonyms_are_not_the_truth() -> None:
    assert implicit(ADA_THINKS, "Ada Park thinks Bruno Silva is free for a chat.") == 1.0
    assert implicit(ADA_THINKS, "Bruno Silva is engaged in his council speech.") == 0.0  # the truth only
    assert implicit(ADA_THINKS, "Ada Park thinks he is free, but he is engaged.") == 0.6  # hedged
    # Cleo Tan believes Dev Rao is busy; the truth (concentrating) is of the same family: no penalty.
    assert implicit(CLEO_THINKS, "Cleo Tan thinks Dev Rao is busy, deep in concentration.") == 1.0
    # A need that asks whether the belief matches the facts wants the facts set against it.
    assert implicit(CLEO_COMPARES, "Cleo Tan thinks Dev Rao is busy.") == 0.0
    matched = "Cleo Tan thinks he is busy, and he is indeed repairing the ferry engine."
    assert implicit(CLEO_COMPARES, matched) == 1.0


def test_a_goal_counts_by_its_private_words_only() -> None:
    assert implicit(BRUNO_GOAL, "Bruno Silva is reading notes aloud.") == 0.0
    assert implicit(BRUNO_GOAL, "He hopes to win a seat on the harbour council.") == 1.0
    # A latent goal is its own answer: no need words are required.
    assert implicit(BRUNO_GOAL, "Bruno Silva wants a seat on the council.") == 1.0
    # "surprise" is in the query: it does not surface Ada Park's goal; "cake" and "sister" do.
    assert implicit(SURPRISE, "There may be a surprise somewhere.") == 0.0
    # A whole-town question is about everyone, not only the people at the Net Loft: one of four is partial,
    # half of them full.
    assert implicit(SURPRISE, "Ada Park is baking a cake for her sister.") == 0.6
    both = "Ada Park is baking a cake for her sister, and Dev Rao wants the ferry running before dawn."
    assert implicit(SURPRISE, both) == 1.0


def test_agreement_bands_both_raters() -> None:
    agr = Agreement.of([(0.6, 0.6), (0.4, 0.6), (0.2, 0.6), (1.0, 1.0), (0.0, 0.0)])
    assert agr.exact == pytest.approx(4 / 5) and agr.binary == pytest.approx(4 / 5)
    assert agr.confusion[(0.5, 0.5)] == 2 and agr.confusion[(0.0, 0.5)] == 1


# -- the agreement tool on a small hand-written release -----------------------------------------------


def _release(tmp_path: Path, scores: dict[str, list[float]]) -> tuple[Path, Path]:
    """A two-query release in the paper's formats: seeds -> conditions -> cells with the paper's scores."""
    scene = {
        "summary": "Harbour Bakery.",
        "public_state": dict(SCENE.public_state),
        "private_state": dict(SCENE.private_state),
        "beliefs_about_others": dict(SCENE.beliefs_about_others),
    }
    rows = [
        dict(GRAB_ADA.__dict__, id=1, literal_requires=list(GRAB_ADA.literal_requires)),
        dict(BRUNO_GOAL.__dict__, id=2, literal_requires=list(BRUNO_GOAL.literal_requires)),
    ]
    for row in rows:
        row["implicit_requires"] = list(row["implicit_requires"])
    queries = {"scenes": {"harbour": scene}, "queries": rows}
    answers = {
        1: ("Ada Park is in a hurry: she has no time to stop and talk.", "Ada Park is at the bakery."),
        2: ("He hopes to win a seat on the harbour council.", "He is reading notes aloud."),
    }
    per_seed: dict[str, dict[str, list[dict[str, object]]]] = {}
    for seed, paper in scores.items():
        cells = []
        for qid, (good, bare) in answers.items():
            for answer, score in ((good, paper[0]), (bare, paper[1])):
                cells.append(
                    {"query_id": qid, "answer": answer, "implicit_score": score, "literal_score": 1.0}
                )
        per_seed[seed] = {"tom": cells}
    q_path, r_path = tmp_path / "queries.json", tmp_path / "results.json"
    q_path.write_text(json.dumps(queries))
    r_path.write_text(json.dumps({"per_seed": per_seed}))
    return r_path, q_path


def test_the_tool_fits_on_one_seed_and_reports_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results, queries = _release(tmp_path, {"1": [1.0, 0.0], "2": [1.0, 0.0]})
    report = judge_agreement.held_out_report(results, queries, "1")
    assert report.params.partial == 0.6  # no partial cell to fit on: the default
    assert report.held_out.name == "held-out 2" and report.held_out.implicit.binary == 1.0
    assert report.held_out.means["tom"] == (0.5, 0.5) and report.held_out.passed
    assert (
        judge_agreement.main(["--results", str(results), "--queries", str(queries), "--fit-seed", "1"]) == 0
    )
    out = capsys.readouterr().out
    assert "PASS  binary agreement >= 0.88: 1.000" in out and "held-out: PASS" in out
    # A held-out seed whose judge disagrees fails the targets: exit status 1.
    results, queries = _release(tmp_path, {"1": [1.0, 0.0], "2": [0.0, 1.0]})
    assert (
        judge_agreement.main(["--results", str(results), "--queries", str(queries), "--fit-seed", "1"]) == 1
    )
    assert "FAIL  binary agreement" in capsys.readouterr().out


def test_the_partial_credit_is_the_papers_partial_mean_on_its_grid() -> None:
    cells = [
        judge_agreement.Cell("42", "tom", GRAB_ADA, SCENE, "x", score, 1.0)
        for score in (0.4, 0.6, 0.6, 0.6, 1.0, 0.0)
    ]
    assert judge_agreement.fit_partial(cells) == 0.6  # mean of 0.4, 0.6, 0.6, 0.6 = 0.55 -> 0.6


def test_missing_data_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = judge_agreement.main(
        ["--results", str(tmp_path / "r.json"), "--queries", str(tmp_path / "q.json")]
    )
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "github.com/innovation64/AURA" in err and "r.json" in err
