"""``auratown run --mind llm``: the town's minds ask a model through litellm for real (a local
OpenAI-compatible stub), the day completes whatever the model answers, and the closing figures
count exactly what the model answered and what fell back, by stage, reason and agent."""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from tests.conftest import auratown
from tests.support.openai_stub import (
    OpenAIStub,
    Reply,
    always,
    garbage,
    json_reply,
    rate_limited,
    server_error,
)

STUB_ENV = {"OPENAI_API_KEY": "sk-stub"}

# Two neighbours who take tea together all day: they talk every few ticks, and after ten
# observations each reflects, so every stage of the minds is asked within a dozen ticks.
TEA_TOWN = {
    "name": "Tea",
    "width": 12,
    "height": 12,
    "locations": [
        {"name": "Tea House", "type": "cafe", "x": 0, "y": 0, "width": 3, "height": 3, "capacity": 8},
        {"name": "Square", "type": "square", "x": 0, "y": 4, "width": 7, "height": 3, "capacity": 40},
    ],
    "agents": [
        {
            "name": name,
            "age": age,
            "home": "Tea House",
            "interests": interests,
            "schedule": [{"start": "06:00", "location": "Tea House", "action": "having tea"}],
        }
        for name, age, interests in (("Ann Lee", 30, ["tea", "birds"]), ("Ben Hu", 41, ["birds"]))
    ],
}

_SCHEDULED = re.compile(r"^Your schedule says: (?P<action>.+) at (?P<place>[^.]+)\.$", re.MULTILINE)


def _stage(request: dict[str, Any]) -> str:
    text = " ".join(str(m.get("content", "")) for m in request.get("messages", []))
    if "You write short, natural dialogue" in text:
        return "conversation"
    if "Decide what you do next" in text:
        return "action"
    if "likely poignancy" in text:
        return "importance"
    if "high-level insight" in text:
        return "reflection"
    raise AssertionError(f"a request of no mind stage: {text[:200]}")


class TownModel:
    """Answers by stage: Ann's action validly, Ben's with a place the town lacks, importance with
    garbage, reflections with HTTP 500 and conversations with 429. Counts the questions asked
    (a retry or a repair of a question is not another question)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: set[str] = set()
        self.questions: Counter[tuple[str, str]] = Counter()

    def __call__(self, request: dict[str, Any]) -> Reply:
        messages = request.get("messages", [])
        stage = _stage(request)
        who = "Ben" if "You are Ben Hu" in str(messages[0].get("content")) else "Ann"
        key = json.dumps(messages, sort_keys=True)
        with self._lock:
            repair = str(messages[-1].get("content", "")).startswith("Your previous answer")
            if key not in self._seen and not repair:
                self.questions[(stage, who)] += 1
            self._seen.add(key)
        if stage == "action":
            scheduled = _SCHEDULED.search(str(messages[-1]["content"]))
            assert scheduled is not None
            place = "Moon Base" if who == "Ben" else scheduled["place"]
            return json_reply({"location": place, "action": "sipping green tea", "reason": "it is tea time"})
        return {"importance": garbage(), "reflection": server_error(), "conversation": rate_limited()}[stage]

    def asked(self, stage: str, who: str | None = None) -> int:
        with self._lock:
            return sum(n for (s, w), n in self.questions.items() if s == stage and who in (None, w))


def _run_json(stub: OpenAIStub, *extra: str, ticks: int) -> dict[str, Any]:
    """``auratown run --json`` with the minds on the stub's model."""
    model = ("--mind", "llm", "--model", "openai/stub-model", "--api-base", stub.url)
    result = auratown("run", "--ticks", str(ticks), "--json", *model, *extra, env_extra=STUB_ENV, timeout=300)
    assert result.returncode == 0, result.stderr
    out: dict[str, Any] = json.loads(result.stdout)
    assert out["ticks"] == ticks and len(out["digests"]) == ticks  # the run completed
    return out


def test_the_run_counts_what_the_model_answered_and_what_fell_back(tmp_path: Path) -> None:
    town = tmp_path / "tea.json"
    town.write_text(json.dumps(TEA_TOWN))
    model = TownModel()
    with OpenAIStub(responder=model) as stub:
        out = _run_json(stub, "--town", str(town), "--decision-timeout", "10", ticks=12)
        requests = stub.request_count
    minds = out["minds"]
    stages = minds["by_stage"]
    for stage in ("action", "importance", "reflection", "conversation"):
        assert model.asked(stage) > 0, f"the run never asked the model for {stage}"

    assert stages["action"] == {
        "answered": model.asked("action", "Ann"),
        "fallbacks": model.asked("action", "Ben"),
    }
    assert stages["importance"] == {"answered": 0, "fallbacks": model.asked("importance")}
    assert stages["reflection"] == {"answered": 0, "fallbacks": model.asked("reflection")}
    assert stages["conversation"] == {"answered": 0, "fallbacks": model.asked("conversation")}
    assert minds["by_reason"] == {
        reason: n
        for reason, n in {
            "invalid_location": model.asked("action", "Ben"),
            "invalid_json": model.asked("importance"),
            "http_error": model.asked("reflection"),
            "rate_limited": model.asked("conversation"),
        }.items()
    }
    assert minds["total"] == {
        "answered": model.asked("action", "Ann"),
        "fallbacks": sum(model.questions.values()) - model.asked("action", "Ann"),
    }
    # Per agent: its own questions (conversations are the world's, counted by stage only).
    for name, who in (("Ann Lee", "Ann"), ("Ben Hu", "Ben")):
        own = sum(model.asked(s, who) for s in ("action", "importance", "reflection"))
        answered = model.asked("action", "Ann") if who == "Ann" else 0
        assert minds["by_agent"][name] == {"answered": answered, "fallbacks": own - answered}
    assert minds["requests"] == requests and minds["model"] == "openai/stub-model"
    assert minds["retries"] > 0 and minds["repairs"] > 0  # 500 and 429 retried, garbage repaired
    # What Ann's model chose is what she does.
    ann = next(a for a in out["final"]["agents"] if a["name"] == "Ann Lee")
    assert ann["action"] == "sipping green tea"


def test_a_model_that_always_fails_still_lets_the_day_run_every_decision_counted() -> None:
    with OpenAIStub(responder=always(server_error())) as stub:
        out = _run_json(stub, "--decision-timeout", "1", ticks=3)
    minds = out["minds"]
    assert minds["total"]["answered"] == 0
    assert minds["by_stage"]["action"]["fallbacks"] >= 5  # each of the five agents' first decision
    assert sum(minds["by_reason"].values()) == minds["total"]["fallbacks"]
    assert set(minds["by_reason"]) <= {"http_error", "deadline", "busy"}


def test_the_schedule_mind_prints_no_model_figures() -> None:
    result = auratown("run", "--ticks", "2", "--json")
    assert result.returncode == 0, result.stderr
    assert "minds" not in json.loads(result.stdout)
    text = auratown("run", "--ticks", "2")
    assert text.returncode == 0 and "minds:" not in text.stdout
