"""The simulated user's turn protocol (pi-Bench, Appendix B.2-B.3), pure over a ``SessionTracker``.

After each assistant reply, only intents still ``open`` are judged:

1. completion (priority): intents the reply (with the files read) already satisfies -> completed;
2. clarification, on the rest: intents a question of the reply targets -> inferred; the user
   answers all of them in one message (kind ``answer``);
3. otherwise the user provides ONE open intent, the first in task order (kind ``provide``).

The session ends (``done``, reason ``complete``) once every intent is terminal AND the assistant
has replied after the last user message: all settled by stage 1 -> done now; an answer or a
provision -> the assistant replies once more. A task without intents ends after the first reply.
After ``max_turns`` replies the session ends with reason ``max_turns``: intents inferred by that
last reply keep their status (the question was asked), nothing is provided, open ones stay open.

The user's words are the intents' own text, verbatim (pi-Bench's ``UserAgent.next_action``: the
answered intents joined by newlines, or the one provided intent).

A judge that answered nothing readable (after the retries of the judge itself) ends the session
with reason ``error``: its verdict is neither a YES nor a NO, so no status is set from it; the
failure is counted on the intent (``IntentResult.judge_failures``) and the turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from pydantic import BaseModel

from messages.episodes import EndReason, IntentResult, IntentStatus, TurnKind
from world.episodes.judging import (
    DeterministicIntentJudge,
    IntentJudge,
    Verdict,
    padded,
)
from world.scaffolding import has_scaffolding

__all__ = [
    "DeterministicIntentJudge",
    "IntentJudge",
    "SessionTracker",
    "TurnOutcome",
    "UserVoice",
    "VerbatimUserVoice",
    "Verdict",
    "assess_reply",
]


class UserVoice(Protocol):
    """Words the user's next message."""

    def answer(self, reply: str, intents: Sequence[str]) -> str:
        """The answer to the reply's targeted question(s): reveals every inferred intent."""
        ...

    def provide(self, reply: str, intent: str) -> str:
        """Reveals one intent the assistant neither met nor asked about."""
        ...


class VerbatimUserVoice:
    """pi-Bench's wording: the intents' text as written (``_build_targeted_followup_reply``,
    ``_build_first_unmet_reply``)."""

    def answer(self, reply: str, intents: Sequence[str]) -> str:
        return "\n".join(intents)

    def provide(self, reply: str, intent: str) -> str:
        return intent


class SessionTracker(BaseModel):
    """The mutable progress of one session; ``assess_reply`` updates it in place. Plain data, so
    an actor persists it with its state."""

    intents: list[IntentResult] = []
    turns: int = 0
    """Assistant replies assessed so far (the number of the last one)."""
    judge_failures: int = 0
    ended: EndReason | None = None

    @classmethod
    def for_intents(cls, hidden_intents: Sequence[str]) -> SessionTracker:
        return cls(
            intents=[
                IntentResult(index=i, content=text, status="open") for i, text in enumerate(hidden_intents)
            ]
        )

    def results(self) -> tuple[IntentResult, ...]:
        return tuple(self.intents)

    def open_intents(self) -> list[IntentResult]:
        return [i for i in self.intents if i.status == "open"]

    def replace_intent(self, row: IntentResult) -> None:
        """Put ``row`` where the intent with its index is."""
        for position, current in enumerate(self.intents):
            if current.index == row.index:
                self.intents[position] = row
                return
        raise KeyError(row.index)

    def counts(self) -> dict[IntentStatus, int]:
        out: dict[IntentStatus, int] = {"open": 0, "completed": 0, "inferred": 0, "provided": 0}
        for intent in self.intents:
            out[intent.status] += 1
        return out


@dataclass(frozen=True)
class TurnOutcome:
    completed: tuple[int, ...] = ()
    """Indices of the intents completed by this reply."""
    inferred: tuple[int, ...] = ()
    provided: int | None = None
    message: str | None = None
    """The user's next message; None when the session is done."""
    kind: TurnKind | None = None
    done: bool = False
    reason: EndReason | None = None
    judge_failures: int = 0
    changed: tuple[IntentResult, ...] = ()
    """The intents whose status this turn set (for ``IntentStatusChanged`` events)."""


def _settle(
    tracker: SessionTracker,
    rows: Sequence[IntentResult],
    verdicts: Sequence[Verdict],
    status: IntentStatus,
    *,
    turn: int,
    kind: str,
) -> tuple[list[IntentResult], int]:
    """Apply one stage's verdicts: YES rows get ``status``; failures are counted on their row."""
    settled: list[IntentResult] = []
    failures = 0
    for row, verdict in zip(rows, verdicts, strict=True):
        update: dict[str, object] = {"judge": kind}
        if verdict.failed:
            failures += 1
            update["judge_failures"] = row.judge_failures + 1
        if verdict.yes and not verdict.failed:
            update.update(status=status, turn=turn)
        new = row.model_copy(update=update)
        tracker.replace_intent(new)
        if verdict.yes:
            settled.append(new)
    return settled, failures


def _no_credit(reply: str, count: int) -> list[Verdict] | None:
    """A reply carrying chat-template or prompt scaffolding meets and asks about nothing, whatever
    words it echoes: NO for every item, with the marker as the reason. None for a real reply."""
    marker = has_scaffolding(reply)
    if marker is None:
        return None
    return [Verdict(yes=False, reason=f"scaffolding: {marker}")] * count


def _judge_error(
    tracker: SessionTracker,
    completed: Sequence[IntentResult],
    inferred: Sequence[IntentResult],
    failures: int,
) -> TurnOutcome:
    tracker.judge_failures += failures
    tracker.ended = "error"
    return TurnOutcome(
        completed=tuple(r.index for r in completed),
        inferred=tuple(r.index for r in inferred),
        done=True,
        reason="error",
        judge_failures=failures,
        changed=(*completed, *inferred),
    )


def assess_reply(
    tracker: SessionTracker,
    *,
    turn: int,
    reply: str,
    files: Mapping[str, str],
    judge: IntentJudge,
    voice: UserVoice,
    max_turns: int,
) -> TurnOutcome:
    """Judge assistant reply number ``turn`` and decide the user's next move (module docstring).

    Updates ``tracker`` in place. Raises ValueError for a turn already assessed or a session
    that has ended (a redelivered reply must be dropped by the caller, not judged twice).
    """
    if tracker.ended is not None:
        raise ValueError(f"the session has ended ({tracker.ended})")
    if turn <= tracker.turns:
        raise ValueError(f"turn {turn} was already assessed (last: {tracker.turns})")
    if max_turns < 1:
        raise ValueError("max_turns must be at least 1")
    tracker.turns = turn
    kind = judge.kind

    pending = tracker.open_intents()
    completed: list[IntentResult] = []
    failures = 0
    if pending:
        contents = [r.content for r in pending]
        verdicts = _no_credit(reply, len(pending)) or padded(
            judge.completion(reply, files, contents), len(pending), "completion judge"
        )
        completed, failures = _settle(tracker, pending, verdicts, "completed", turn=turn, kind=kind)
    if failures:
        return _judge_error(tracker, completed, (), failures)

    pending = tracker.open_intents()
    inferred: list[IntentResult] = []
    if pending:
        contents = [r.content for r in pending]
        verdicts = _no_credit(reply, len(pending)) or padded(
            judge.clarification(reply, contents), len(pending), "clarification judge"
        )
        inferred, more = _settle(tracker, pending, verdicts, "inferred", turn=turn, kind=kind)
        if more:
            return _judge_error(tracker, completed, inferred, more)

    base = TurnOutcome(
        completed=tuple(r.index for r in completed),
        inferred=tuple(r.index for r in inferred),
        judge_failures=failures,
        changed=(*completed, *inferred),
    )
    pending = tracker.open_intents()
    if not inferred and not pending:
        tracker.ended = "complete"
        return replace(base, done=True, reason="complete")
    if turn >= max_turns:
        tracker.ended = "max_turns"
        return replace(base, done=True, reason="max_turns")
    if inferred:
        return replace(base, message=voice.answer(reply, [r.content for r in inferred]), kind="answer")
    first = pending[0]
    provided = first.model_copy(update={"status": "provided", "turn": turn, "judge": kind})
    tracker.replace_intent(provided)
    return replace(
        base,
        provided=first.index,
        message=voice.provide(reply, first.content),
        kind="provide",
        changed=(*base.changed, provided),
    )
