"""The one scaffolding detector (world.scaffolding) and the judges that give such text no credit."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.suite.datasets import read_v2
from bench.suite.judges import FactualClaimJudge, FactualScore, ImplicitIntentJudge, JudgeScore
from tests.conftest import AURA_RELEASE, aura_release_json
from world.episodes.judging import DeterministicIntentJudge
from world.episodes.protocol import SessionTracker, VerbatimUserVoice, assess_reply
from world.scaffolding import has_scaffolding

ROOT = Path(__file__).resolve().parents[2]
SYSTEM = "You are AURA, the town's assistant. Answer the resident's question about the other residents."

# What small models were seen to answer (issue 19) and the markers of the common chat templates.
SCAFFOLDED = {
    "llama2": "[INST] <<SYS>>\nYou are a helpful assistant.\n<</SYS>>\nWhere is Lin Wei? [/INST]",
    "llama2 eos": "Lin Wei is at Sunrise Cafe.</s>",
    "mistral": "[SYSTEM_PROMPT]Answer briefly[/SYSTEM_PROMPT] Lin Wei is at the cafe.",
    "chatml": "<|im_start|>assistant\nLin Wei is at the cafe.<|im_end|>",
    "llama3": "<|start_header_id|>assistant<|end_header_id|>\n\nLin Wei is at the cafe.<|eot_id|>",
    "phi": "<|assistant|>Lin Wei is at the cafe.<|end|>",
    "gemma": "<start_of_turn>model\nLin Wei is at the cafe.<end_of_turn>",
    "deepseek": "\uff5cbegin\u2581of\u2581sentence\uff5c".join(["<", ">"]) + "Lin Wei is at the cafe.",
    "our prompt's tags": "Lin Wei is at the cafe.\n</assistant_message>\n<assistant_message>",
    "alpaca": "### Instruction:\nWhere is Lin Wei?\n\n### Response:\nAt the cafe.",
    "markdown role header": "Lin Wei is at the cafe.\n### Assistant: anything else?",
    "vicuna": "USER: Where is Lin Wei?\nASSISTANT: At the cafe.",
    "anthropic legacy": "\n\nHuman: Where is Lin Wei?\n\nAssistant: At the cafe.",
    "system prompt echoed": SYSTEM + " Lin Wei is at the cafe.",
}

CLEAN = [
    "Lin Wei is behind the counter at the Sunrise Cafe.",
    "[heads-up] You may also be wondering whether Lin Wei is free: she is busy serving customers.",
    "The user asked about the assistant: the answer is that Lin Wei is at the cafe.",
    "Use <b>bold</b> and a list:\n- first\n- second",
    "I'd say: user feedback matters, so ask Zhang Hao at 10:15 AM.",
    "## Summary\nLin Wei is at work.",
    "You are welcome to join Lin Wei at the cafe; she said the town's assistant helped her.",
]


@pytest.mark.parametrize("name", list(SCAFFOLDED))
def test_markers_of_every_chat_template_are_found(name: str) -> None:
    assert has_scaffolding(SCAFFOLDED[name], SYSTEM) is not None


@pytest.mark.parametrize("text", CLEAN)
def test_normal_answers_carry_none(text: str) -> None:
    assert has_scaffolding(text, SYSTEM) is None


def test_the_marker_is_named() -> None:
    assert has_scaffolding("ok <|eot_id|>") == "<|eot_id|>"
    assert has_scaffolding("x\n### Assistant: y") == "### Assistant:"
    assert has_scaffolding(SYSTEM, SYSTEM) == "echoed prompt"
    assert has_scaffolding(SYSTEM) is None  # without the prompt, an echo cannot be told


def test_a_fact_quoted_from_further_down_the_prompt_is_no_echo() -> None:
    prompt = (
        SYSTEM
        + " Facts: Lin Wei is behind the counter at the Sunrise Cafe serving lunch to the regulars today."
    )
    answer = "Lin Wei is behind the counter at the Sunrise Cafe serving lunch to the regulars today."
    assert has_scaffolding(answer, prompt) is None


# -- no false positives on our own answers ---------------------------------------------------------


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


@pytest.mark.aura_release
def test_no_answer_of_the_released_runs_is_taken_for_scaffolding() -> None:
    data = aura_release_json("rq_intent_v2_multiseed_AB.json")
    answers = [
        cell[key]
        for conditions in data["per_seed"].values()
        for cells in conditions.values()
        for cell in cells
        for key in ("answer", "rationale")
        if isinstance(cell.get(key), str)
    ]
    assert len(answers) > 100
    assert [a for a in answers if has_scaffolding(a)] == []


def test_no_string_of_the_test_fixtures_or_datasets_is_taken_for_scaffolding() -> None:
    found = []
    for path in [*sorted((ROOT / "bench/suite/data").rglob("*.json"))]:
        found += [(path.name, s) for s in _strings(json.loads(path.read_text())) if has_scaffolding(s)]
    for path in sorted((ROOT / "tests/fixtures").rglob("*")):
        if path.suffix in {".yaml", ".md", ".json"}:
            found += [(path.name, line) for line in path.read_text().splitlines() if has_scaffolding(line)]
    assert found == []


def test_no_scripted_model_answer_in_the_tests_is_taken_for_scaffolding() -> None:
    """Every string literal the tests script as a model's answer (``ok(...)``, ``json_reply``...)
    outside the tests that feed scaffolding on purpose."""
    on_purpose = {"test_scaffolding.py", "test_llm_small_models.py"}
    found = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if path.name in on_purpose:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") in {
                "ok",
                "garbage",
                "slow",
                "script",
            }:
                for arg in node.args:
                    if (
                        isinstance(arg, ast.Constant)
                        and isinstance(arg.value, str)
                        and has_scaffolding(arg.value)
                    ):
                        found.append((path.name, arg.value))
    assert found == []


# -- the judges give it no credit ------------------------------------------------------------------


@pytest.mark.aura_release
def test_the_implicit_judge_gives_a_template_echo_zero_with_the_reason() -> None:
    queries, scenes = read_v2(AURA_RELEASE / "implicit_intent_queries_v2_AB.json")
    query = queries[103]
    judge = ImplicitIntentJudge()
    answer = "No, Chen Mei is at the Sunrise Cafe right now."
    honest = judge.judge(query, scenes[query.scene], answer)
    echo = judge.judge(query, scenes[query.scene], f"[INST] <<SYS>> {answer} [/INST]")
    assert isinstance(honest, JudgeScore) and isinstance(echo, JudgeScore)
    assert honest.literal_score == 1.0
    assert (echo.literal_score, echo.implicit_score, echo.rationale) == (0.0, 0.0, "scaffolding: [INST]")


def test_the_factual_judge_gives_a_template_echo_no_credit() -> None:
    judge = FactualClaimJudge()
    assert isinstance(
        honest := judge.judge({"time": "10:15 AM"}, "The class starts at 10:15 AM."), FactualScore
    )
    assert honest.correct == 1
    echo = judge.judge({"time": "10:15 AM"}, "<|im_start|>assistant The class starts at 10:15 AM.")
    assert isinstance(echo, FactualScore) and (echo.fa, echo.correct) == (0.0, 0)


def test_an_episode_reply_carrying_scaffolding_meets_no_intent() -> None:
    intents = ["save the summary as notes.md"]
    reply = "I saved the summary as notes.md.</assistant_message>"
    judge = DeterministicIntentJudge()
    assert judge.completion(reply.replace("</assistant_message>", ""), {}, intents)[0].yes
    tracker = SessionTracker.for_intents(intents)
    outcome = assess_reply(
        tracker, turn=1, reply=reply, files={}, judge=judge, voice=VerbatimUserVoice(), max_turns=3
    )
    assert outcome.completed == () and outcome.inferred == ()
    assert [r.status for r in tracker.results()] != ["completed"]
