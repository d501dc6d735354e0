"""The assistant actor on a real bus (memory and Redis), its model path for real through litellm
against a local OpenAI-compatible stub, and a stand-in episode registry serving EpisodeTools."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest
from pydantic import BaseModel

from actors.bus import Bus
from actors.episodes.assistant import AssistantActor, AssistantState, ConsolidatedHook
from actors.llm import GatewayConfig, LLMGateway
from actors.runtime import Actor, Context, Host, HostConfig, StatefulActor, on
from messages.aura import UsageSummary
from messages.episodes import AssistantReply, EndSession, UserTurn
from messages.probes import ListTools, ProbeCall, ProbeResult, ToolList
from tests.conftest import wait_until
from tests.support.openai_stub import OpenAIStub, http_error, json_reply, ok
from world.aura import budget_for_gap
from world.episodes.apps import EnvState, EpisodeTools, new_state

pytestmark = pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning")

EP = "ep1"
MODEL = "openai/stub-model"


class StandInState(BaseModel):
    env: EnvState = EnvState()


class StandInRegistry(StatefulActor[StandInState]):
    """``registry.<ep>`` for these tests: EpisodeTools over one state (the lead's actor does more)."""

    state_model = StandInState

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files
        self.tools = EpisodeTools()
        super().__init__()

    def initial_state(self) -> StandInState:
        return StandInState(env=new_state().model_copy(update={"files": self.files}))

    @on(ListTools)
    def list_tools(self, ctx: Context, msg: ListTools) -> ToolList:
        return self.tools.tool_list(msg.policy)

    @on(ProbeCall)
    def call(self, ctx: Context, msg: ProbeCall) -> ProbeResult:
        outcome, self.state.env = self.tools.call(self.state.env, msg.caller, msg.tool, msg.args)
        return ProbeResult.of(outcome)


@dataclass
class Inbox(Actor):
    """``user.<ep>``: collects the assistant's replies."""

    replies: list[AssistantReply] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @on(AssistantReply)
    def reply(self, ctx: Context, msg: AssistantReply) -> None:
        with self.lock:
            self.replies.append(msg)


@dataclass
class Setup:
    bus: Bus
    registry: StandInRegistry
    inbox: Inbox
    gateway: LLMGateway

    def turn(self, text: str, *, task: str = "t1", turn: int = 1, kind: str = "request") -> AssistantReply:
        self.bus.tell(
            f"assistant.{EP}",
            UserTurn(
                episode_id=EP,
                task_id=task,
                user_id="u1",
                turn=turn,
                kind=kind,  # type: ignore[arg-type]
                text=text,
                reply_to=f"user.{EP}",
                tools=f"registry.{EP}",
            ),
        )
        count = len(self.inbox.replies)
        wait_until(lambda: len(self.inbox.replies) > count, timeout=20, what="the assistant's reply")
        return self.inbox.replies[-1]


@contextmanager
def hosted(
    bus: Bus,
    stub: OpenAIStub,
    *,
    intent_step: bool = False,
    files: dict[str, str] | None = None,
    on_consolidated: ConsolidatedHook | None = None,
) -> Iterator[Setup]:
    config = GatewayConfig(model=MODEL, api_base=stub.url, api_key="sk-stub", timeout=5.0, max_retries=0)
    gateway = LLMGateway(config)
    registry = StandInRegistry(files or {})
    inbox = Inbox()
    assistant = AssistantActor(
        MODEL,
        intent_step=intent_step,
        gateway_factory=lambda _: gateway,
        max_steps=4,
        on_consolidated=on_consolidated,
    )
    host = Host(bus, HostConfig(block_ms=50), name="assistant-test")
    host.spawn(lambda: registry, f"registry.{EP}")
    host.spawn(lambda: inbox, f"user.{EP}")
    host.spawn(lambda: assistant, f"assistant.{EP}")
    host.start()
    try:
        yield Setup(bus, registry, inbox, gateway)
    finally:
        host.stop(drain_timeout=5)


def step(action: str, args: dict[str, object] | None = None, reply: str = "") -> dict[str, object]:
    return {"thought": f"next: {action}", "action": action, "args": args or {}, "reply": reply}


def test_the_react_loop_calls_tools_through_the_registry_and_replies(bus: Bus, stub: OpenAIStub) -> None:
    stub.script(
        json_reply(step("read_file", {"path": "notes/brief.md"})),
        json_reply(step("write_file", {"path": "outputs/plan.md", "content": "# Plan\n- metric units\n"})),
        json_reply(step("reply", reply="I wrote outputs/plan.md using metric units.")),
    )
    with hosted(bus, stub, files={"notes/brief.md": "Use metric units."}) as s:
        reply = s.turn("Write the hiking plan")
        env = s.registry.state.env
    assert reply.backend == f"llm:{MODEL}" and reply.text == "I wrote outputs/plan.md using metric units."
    assert [r.tool_name for r in reply.tool_records] == ["read_file", "write_file"]
    assert reply.tool_records[0].result["response"]["content"] == "Use metric units."
    assert env.files["outputs/plan.md"] == "# Plan\n- metric units\n"  # the registry's state changed
    assert reply.usage.model_calls == 3 and not reply.usage.fallbacks
    assert "Observation from read_file (ok)" in stub.requests[1]["messages"][-1]["content"]
    assert stub.requests[0]["temperature"] == 0.7  # Stage.ANSWER


def test_a_model_failure_falls_back_to_the_offline_policy_visibly(bus: Bus, stub: OpenAIStub) -> None:
    stub.script(http_error(400, "bad request"))
    with hosted(bus, stub) as s:
        reply = s.turn("Write a packing list for the ski trip")
        files = dict(s.registry.state.env.files)
    assert reply.backend == f"offline (fallback from llm:{MODEL})"
    assert reply.usage.fallbacks == ("answer: http_error",) and reply.usage.model_calls == 1
    assert s.gateway.usage.total().fallbacks == 1
    assert "outputs/packing-list-ski-trip.md" in files  # the offline policy did the work


def test_the_intent_step_asks_the_model_for_a_frame_and_keeps_only_real_tools(
    bus: Bus, stub: OpenAIStub
) -> None:
    frame = {
        "literal_need": "a budget summary",
        "implicit_needs": ["the format the user prefers"],
        "gap": 0.7,
        "recommended_probes": ["grep", "web.search"],
        "rationale": "format unstated",
    }
    stub.script(json_reply(frame), json_reply(step("reply", reply="What format should the summary use?")))
    with hosted(bus, stub, intent_step=True) as s:
        reply = s.turn("Summarise my budget")
    assert reply.frame is not None and reply.frame.backend == "llm"
    assert reply.frame.recommended_probes == ("grep",)  # web.search is not a tool of the registry
    assert stub.requests[0]["temperature"] == 0.1  # Stage.INTENT
    system = stub.requests[1]["messages"][0]["content"]
    assert f"at most {budget_for_gap(0.7)} call(s)" in system


def test_a_failed_frame_falls_back_to_the_heuristic(bus: Bus, stub: OpenAIStub) -> None:
    stub.script(http_error(400), json_reply(step("reply", reply="Done.")))
    with hosted(bus, stub, intent_step=True) as s:
        reply = s.turn("Write a report on the garden")
    assert (
        reply.frame is not None
        and reply.frame.backend == "heuristic"
        and reply.frame.fallback == "http_error"
    )
    assert reply.usage.fallbacks == ("intent: http_error",) and reply.text == "Done."


def test_memory_is_consolidated_by_the_model_and_used_in_the_next_session(bus: Bus, stub: OpenAIStub) -> None:
    notes = {"notes": [{"kind": "preference", "text": "Reports go in the reports/ folder."}]}
    stub.script(
        json_reply(step("reply", reply="Which folder?")),
        json_reply(notes),  # the consolidation at EndSession
        json_reply(step("reply", reply="Filed in reports/.")),
    )
    with hosted(bus, stub) as s:
        s.turn("Write the March report")
        bus.tell(f"assistant.{EP}", EndSession(episode_id=EP, task_id="t1", user_id="u1"))
        reply = s.turn("Write the April report", task="t2")
        stored = bus.load_state(f"assistant.{EP}")  # what the runtime persisted with the last ack
    assert reply.text == "Filed in reports/."
    system = stub.requests[2]["messages"][0]["content"]
    assert "(preference) Reports go in the reports/ folder." in system
    assert stored is not None
    state = AssistantState.model_validate_json(stored)
    assert [n.text for n in state.memories["u1"].notes] == ["Reports go in the reports/ folder."]
    assert list(state.transcripts) == ["t2"]  # t1 was consolidated and dropped


# -- failing models (issue 13) ---------------------------------------------------------------


def test_a_reply_that_is_data_is_never_sent_and_falls_back(bus: Bus, stub: OpenAIStub) -> None:
    stub.script(json_reply(step("reply", reply="{not json, 'yes': YES ,,")))
    with hosted(bus, stub) as s:
        reply = s.turn("Write a packing list for the ski trip")
    assert "{not json" not in reply.text
    assert reply.backend == f"offline (fallback from llm:{MODEL})"
    assert reply.usage.fallbacks == ("answer: invalid_text",) and reply.usage.model_calls == 1


def test_the_reflection_and_its_fallback_are_reported_with_every_call(bus: Bus, stub: OpenAIStub) -> None:
    reflected: list[tuple[str, UsageSummary]] = []
    stub.script(
        json_reply(step("reply", reply="Which folder?")),
        ok("{not json, 'yes': YES ,,"),  # the reflection's answer, then its repair's: both unreadable
        ok("still not json"),
    )
    with hosted(bus, stub, on_consolidated=lambda task, usage: reflected.append((task, usage))) as s:
        s.turn("Write the March report")
        bus.tell(f"assistant.{EP}", EndSession(episode_id=EP, task_id="t1", user_id="u1"))
        wait_until(lambda: reflected, timeout=20, what="the reflection's report")
    ((task, usage),) = reflected
    assert task == "t1" and usage.fallbacks == ("reflection: invalid_json",)
    assert usage.model_calls == 2 == stub.request_count - 1  # the turn's call, then the reflection's two
