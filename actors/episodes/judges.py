"""The model-backed judges of pi-Bench episodes, through the LLM gateway.

The judges send the paper's prompts (``world.episodes.judging``) at ``Stage.JUDGE`` and read the
answer strictly. An answer with an unreadable item, or a call that ended in ``LLMError``, is asked
again, fresh (not from the cache), after a backoff (pi-Bench's ``_request_intent_decisions``
retries the same way); only an answer read whole is taken, so the cache keeps that answer and a
rerun reads the same verdicts. Still unreadable after the last attempt, every item is
``Verdict(yes=False, failed=True)``: the protocol ends the session in ``error`` and the grader
leaves the task out of COMP, counted, never a pass nor a NO.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

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

RETRY_DELAYS = (0.5, 1.0, 2.0, 4.0)
"""Seconds before each further attempt (pi-Bench waits 1, 4, 16, ... s over 16 attempts)."""


class JudgeCaller:
    """Asks a judge prompt until every item is read, at most ``len(delays) + 1`` times."""

    def __init__(
        self,
        gateway: LLMGateway,
        actor: str,
        *,
        delays: Sequence[float] = RETRY_DELAYS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.gateway = gateway
        self.actor = actor
        self.delays = tuple(delays)
        self.sleep = sleep
        self.retries = 0
        """Further attempts made so far (all prompts)."""

    def ask(self, prompt: str, count: int, tag: DecisionTag) -> list[Verdict]:
        if count == 0:
            return []
        problems: list[str] = ["no answer"] * count
        for attempt in range(len(self.delays) + 1):
            if attempt:
                self.retries += 1
                self.sleep(self.delays[attempt - 1])
            try:
                answer = self.gateway.complete(
                    Stage.JUDGE, [{"role": "user", "content": prompt}], actor=self.actor, fresh=attempt > 0
                )
            except LLMError as exc:
                problems = [f"judge call failed: {exc.reason}"] * count
                continue
            verdicts = verdicts_from_answer(answer.text, count, tag)
            if not any(v.failed for v in verdicts):
                return verdicts
            problems = [
                v.reason if v.failed else "another item of the answer was unreadable" for v in verdicts
            ]
        attempts = f"after {len(self.delays) + 1} attempts"
        return [unreadable(f"{problem} ({attempts})") for problem in problems]


class _ModelJudge:
    """A judge that asks a model through a ``JudgeCaller``, on behalf of ``actor`` (whose usage it is)."""

    kind: Judgement = "llm"
    default_actor: ClassVar[str]

    def __init__(
        self, gateway: LLMGateway, *, actor: str | None = None, delays: Sequence[float] = RETRY_DELAYS
    ) -> None:
        self.gateway = gateway
        self.actor = self.default_actor if actor is None else actor
        self.caller = JudgeCaller(gateway, self.actor, delays=delays)


class LLMIntentJudge(_ModelJudge):
    """Stage 1 (completion) and stage 2 (clarification) of Appendix B.2 with the paper's prompts."""

    default_actor = "user"

    def completion(self, reply: str, files: Mapping[str, str], intents: Sequence[str]) -> list[Verdict]:
        return self.caller.ask(render_completion_prompt(reply, files, intents), len(intents), "decision")

    def clarification(self, reply: str, intents: Sequence[str]) -> list[Verdict]:
        return self.caller.ask(render_clarification_prompt(reply, intents), len(intents), "decision")


class LLMRubricJudge(_ModelJudge):
    """The checklist judge of Appendix C.5 with the paper's prompt."""

    default_actor = "grader"

    def judge(self, hidden_intents: Sequence[str], history: str, criteria: Sequence[str]) -> list[Verdict]:
        prompt = render_rubric_prompt(hidden_intents, history, criteria)
        return self.caller.ask(prompt, len(criteria), "score")
