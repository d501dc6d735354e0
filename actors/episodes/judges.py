"""The model-backed judges and user voice of pi-Bench episodes, through the LLM gateway.

The judges send the paper's prompts (``world.episodes.judging``) at ``Stage.JUDGE`` and read the
answer strictly: an unreadable item, or a call that ended in ``LLMError``, is
``Verdict(yes=False, failed=True)`` (counted by the protocol and the grader, never a pass). The
user voice words the user's next message at ``Stage.USER``; when the model fails it falls back to
the template wording, recorded on the gateway (``record_fallback``), never silently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from actors.llm import LLMError, LLMGateway, Stage
from messages.episodes import Judgement
from world.episodes.judging import (
    DecisionTag,
    Verdict,
    render_clarification_prompt,
    render_completion_prompt,
    render_rubric_prompt,
    unreadable,
    verdicts_from_answer,
)
from world.episodes.protocol import TemplateUserVoice, UserVoice


def _ask(gateway: LLMGateway, prompt: str, actor: str, count: int, tag: DecisionTag) -> list[Verdict]:
    if count == 0:
        return []
    try:
        answer = gateway.complete(Stage.JUDGE, [{"role": "user", "content": prompt}], actor=actor)
    except LLMError as exc:
        return [unreadable(f"judge call failed: {exc.reason}")] * count
    return verdicts_from_answer(answer.text, count, tag)


class LLMIntentJudge:
    """Stage 1 (completion) and stage 2 (clarification) of Appendix B.2 with the paper's prompts."""

    kind: Judgement = "llm"

    def __init__(self, gateway: LLMGateway, *, actor: str = "user") -> None:
        self.gateway = gateway
        self.actor = actor

    def completion(self, reply: str, files: Mapping[str, str], intents: Sequence[str]) -> list[Verdict]:
        prompt = render_completion_prompt(reply, files, intents)
        return _ask(self.gateway, prompt, self.actor, len(intents), "decision")

    def clarification(self, reply: str, intents: Sequence[str]) -> list[Verdict]:
        prompt = render_clarification_prompt(reply, intents)
        return _ask(self.gateway, prompt, self.actor, len(intents), "decision")


class LLMRubricJudge:
    """The checklist judge of Appendix C.5 with the paper's prompt."""

    kind: Judgement = "llm"

    def __init__(self, gateway: LLMGateway, *, actor: str = "grader") -> None:
        self.gateway = gateway
        self.actor = actor

    def judge(self, hidden_intents: Sequence[str], history: str, criteria: Sequence[str]) -> list[Verdict]:
        prompt = render_rubric_prompt(hidden_intents, history, criteria)
        return _ask(self.gateway, prompt, self.actor, len(criteria), "score")


USER_SYSTEM = (
    "You play the user of a personal assistant in a multi-turn session. You write the user's next "
    "message, in the first person, plainly and briefly (one to three sentences). State every "
    "requirement you are given, with its concrete details (names, numbers, formats), and nothing "
    "else: do not invent further requirements, do not thank at length, and never mention that "
    "requirements were hidden. Output only the message text."
)


def _answer_prompt(reply: str, intents: Sequence[str]) -> str:
    listed = "\n".join(f"- {text}" for text in intents)
    return (
        f"The assistant just wrote:\n<assistant_message>\n{reply}\n</assistant_message>\n\n"
        "It asked about the following requirements of yours. Answer its question by stating them:\n"
        f"{listed}"
    )


def _provide_prompt(reply: str, intent: str) -> str:
    return (
        f"The assistant just wrote:\n<assistant_message>\n{reply}\n</assistant_message>\n\n"
        "It has not met, nor asked about, the following requirement of yours. Tell it, so the "
        f"work can go on:\n- {intent}"
    )


def _clean(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text


class LLMUserVoice:
    """Words the user's message with the model; the template's words when the model fails."""

    def __init__(
        self, gateway: LLMGateway, *, actor: str = "user", fallback: UserVoice | None = None
    ) -> None:
        self.gateway = gateway
        self.actor = actor
        self.fallback = fallback or TemplateUserVoice()

    def _say(self, prompt: str) -> str | None:
        messages = [{"role": "system", "content": USER_SYSTEM}, {"role": "user", "content": prompt}]
        try:
            text = _clean(self.gateway.complete(Stage.USER, messages, actor=self.actor).text)
        except LLMError as exc:
            self.gateway.record_fallback(Stage.USER, self.actor, exc.reason)
            return None
        if not text:
            self.gateway.record_fallback(Stage.USER, self.actor, "empty")
            return None
        return text

    def answer(self, reply: str, intents: Sequence[str]) -> str:
        said = self._say(_answer_prompt(reply, intents))
        return said if said is not None else self.fallback.answer(reply, intents)

    def provide(self, reply: str, intent: str) -> str:
        said = self._say(_provide_prompt(reply, intent))
        return said if said is not None else self.fallback.provide(reply, intent)
