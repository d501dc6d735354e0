"""The AURA pipeline on its LLM backend, for real through litellm, against a local
OpenAI-compatible stub: parsed, repaired, or fallen back visibly; never a crash."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from actors.aura import LLMBackend
from actors.llm import DiskCache, LLMGateway
from actors.llm._gateway import DEADLINE_GRACE
from messages.aura import AnswerData
from messages.probes import ProbeScene
from tests.conftest import aura_release_json
from tests.support.openai_stub import OpenAIStub, always, hang, http_error, json_reply, ok
from world.aura import RegistryProbes, answer_query, scene_view
from world.probes import agent_state_registry, scene_from_aura_v2

pytestmark = [
    pytest.mark.aura_release,  # every test asks about the release's cafe scene
    pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning"),
]

QUERY = "Where's Lin Wei?"
FRAME = {
    "literal_need": "Lin Wei's location",
    "implicit_needs": ["is Lin Wei free to chat?"],
    "gap": 0.6,
    "recommended_probes": ["get_agent_private_state", "web.search"],
    "alert": True,
    "confidence": 0.7,
    "rationale": "where-is usually means is-she-free",
}
CALL = {"action": "call", "tool": "agent.private_state", "args": {"agent_name": "Lin Wei"}, "reason": "free?"}
STOP = {"action": "stop", "tool": None, "args": {}, "reason": "enough"}


@pytest.fixture(scope="module")
def cafe() -> ProbeScene:
    data: dict[str, Any] = aura_release_json("implicit_intent_queries_v2_AB.json")
    return scene_from_aura_v2(data["scenes"]["A_cafe_morning"], scene_id="A")


def ask(
    stub: OpenAIStub, scene: ProbeScene, cache: Any = None, **config: Any
) -> tuple[AnswerData, LLMGateway]:
    settings: dict[str, Any] = {"timeout": 2.0, "max_retries": 1, **config}
    gateway = LLMGateway(stub.config(**settings), cache=cache)
    backend = LLMBackend(gateway)
    probes = RegistryProbes(agent_state_registry(), scene, "env:the user")
    answer = answer_query(
        QUERY, "the user", "aura_intent", scene_view(scene, "the user", QUERY), probes, backend
    )
    return answer.model_copy(update={"usage": backend.usage()}), gateway


def test_a_model_frame_is_whitelisted_and_drives_the_probes(stub: OpenAIStub, cafe: ProbeScene) -> None:
    stub.script(json_reply(FRAME), json_reply(CALL), json_reply(STOP), ok("She is at the cafe, serving."))
    answer, _ = ask(stub, cafe)
    assert answer.frame is not None and answer.frame.backend == "llm" and answer.frame.fallback is None
    assert answer.frame.recommended_probes == ("agent.private_state",)  # alias resolved, unknown dropped
    assert [s.tool for s in answer.trace] == ["agent.private_state"]
    assert answer.text.startswith("Heads-up: Lin Wei is busy")  # the heads-up opens the answer
    assert "She is at the cafe" in answer.text
    assert answer.usage.model_calls == 4 and not answer.usage.fallbacks
    assert stub.request_count == 4 and stub.requests[0]["temperature"] == 0.1  # the intent stage


def test_invalid_json_is_repaired_once(stub: OpenAIStub, cafe: ProbeScene) -> None:
    stub.script(ok("gap is high, probe her state"), json_reply(FRAME), json_reply(STOP), ok("At the cafe."))
    answer, _ = ask(stub, cafe)
    assert answer.frame is not None and answer.frame.backend == "llm" and answer.frame.gap == 0.6
    assert answer.usage.model_calls == 4 and not answer.usage.fallbacks


def test_failures_fall_back_visibly_and_still_answer(stub: OpenAIStub, cafe: ProbeScene) -> None:
    # 429 twice for the frame (retried once, then given up); every later call is refused (400).
    stub.script(http_error(429), http_error(429))
    answer, gateway = ask(stub, cafe)
    assert answer.frame is not None and answer.frame.backend == "heuristic"
    assert answer.frame.fallback == "rate_limited"
    assert answer.usage.fallbacks[0] == "intent: rate_limited"
    assert any(f.startswith("probe_planning:") for f in answer.usage.fallbacks)
    assert any(f.startswith("answer:") for f in answer.usage.fallbacks)
    assert gateway.usage.total().fallbacks == len(answer.usage.fallbacks)
    assert answer.usage.model_calls == gateway.usage.total().calls >= 2  # failed requests count too
    assert answer.text.startswith("Heads-up: Lin Wei is busy")  # the offline pipeline answered


def test_the_cache_makes_a_rerun_call_no_model(stub: OpenAIStub, cafe: ProbeScene, tmp_path: Path) -> None:
    # Once the private state the frame asked for is in the trace, no planner call is made to stop.
    stub.script(json_reply(FRAME), json_reply(CALL), ok("At the cafe."))
    first, _ = ask(stub, cafe, cache=DiskCache(tmp_path))
    calls = stub.request_count
    second, _ = ask(stub, cafe, cache=DiskCache(tmp_path))
    assert stub.request_count == calls == 3
    assert second.text == first.text and second.trace == first.trace
    assert second.usage.cache_hits == 3 and second.usage.model_calls == 0


# -- failing models (issue 13) ---------------------------------------------------------------


@pytest.mark.parametrize(
    "garbage",
    ["{not json, 'yes': YES ,,", '{"answer": "She is at the cafe."}', '{"literal_need": "x", "gap": 0.2}'],
    ids=["invalid-json", "any-json", "another-stage-schema"],
)
def test_an_answer_that_is_not_prose_is_never_the_answer(
    stub: OpenAIStub, cafe: ProbeScene, garbage: str
) -> None:
    # A good frame and plan; the answer stage says data, and again after its one repair call.
    stub.script(json_reply(FRAME), json_reply(STOP), ok(garbage), ok(garbage))
    answer, gateway = ask(stub, cafe)
    assert garbage not in answer.text and not answer.text.lstrip().startswith("{")
    assert "answer: invalid_text" in answer.usage.fallbacks
    assert answer.text == "Lin Wei is at Sunrise Cafe, serving customers."  # the offline answer
    assert answer.usage.model_calls == stub.request_count == gateway.usage.total().calls >= 4


@pytest.mark.parametrize("status", [429, 500])
def test_every_failed_request_is_counted(cafe: ProbeScene, status: int) -> None:
    with OpenAIStub(responder=always(http_error(status))) as stub:
        answer, gateway = ask(stub, cafe)
        made = stub.request_count
    reason = "rate_limited" if status == 429 else "http_error"
    assert answer.usage.fallbacks and all(f.endswith(f": {reason}") for f in answer.usage.fallbacks)
    assert answer.usage.model_calls == made == gateway.usage.total().calls >= 2 * len(answer.usage.fallbacks)


def test_a_model_that_never_answers_costs_the_question_one_stage_at_most(cafe: ProbeScene) -> None:
    with OpenAIStub(responder=always(hang())) as stub:
        started = time.monotonic()
        answer, _ = ask(stub, cafe, timeout=0.3, unit_budget=1.0)
        elapsed = time.monotonic() - started
        made = stub.request_count
    assert elapsed < 1.0 + 0.3 + DEADLINE_GRACE + 0.5
    stages = {f.split(":")[0] for f in answer.usage.fallbacks}
    assert stages >= {"intent", "probe_planning", "answer"}
    assert answer.usage.fallbacks[0] == "intent: timeout"
    assert all(f.endswith(": unavailable") for f in answer.usage.fallbacks[1:])  # nothing more sent
    assert answer.usage.model_calls == made


def test_the_question_budget_bounds_the_requests_of_all_its_stages(cafe: ProbeScene) -> None:
    """Garbage every time: each stage would repair and fall back; the question's budget of three
    requests stops the repairs and sends nothing for the stages after it."""
    with OpenAIStub(responder=always(ok("{not json"))) as stub:
        answer, _ = ask(stub, cafe, unit_calls=3)
        made = stub.request_count
    assert made == answer.usage.model_calls == 3
    assert answer.usage.fallbacks[0] == "intent: invalid_json"
    assert answer.usage.fallbacks[1:] and all(f.endswith(": budget") for f in answer.usage.fallbacks[1:])
