"""The stages a model is called for, and each stage's sampling settings (paper, Appendix A6)."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Stage(enum.StrEnum):
    ACTION = "action"
    PROBE_PLANNING = "probe_planning"
    CONVERSATION = "conversation"
    REFLECTION = "reflection"
    IMPORTANCE = "importance"
    INTENT = "intent"
    JUDGE = "judge"
    ANSWER = "answer"
    USER = "user"


@dataclass(frozen=True)
class StageSettings:
    temperature: float
    max_tokens: int | None = None
    """The answer's output-token cap; None: the stage's default cap (``STAGE_SETTINGS``), so a
    per-call ``StageSettings(0.1)`` never sends a request without one."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.temperature <= 2.0:
            raise ValueError(f"temperature must be in [0, 2], got {self.temperature}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"max_tokens must be positive, got {self.max_tokens}")


# Every stage has an output cap: uncapped, a small local model writes until its context is full
# (seen: 2,993 tokens in 86 s for one answer). The paper's caps where Appendix A6 gives one; where it
# says "default max tokens" (action, reflection) or gives no setting, a cap a few times the longest
# answer the stage's prompt asks for, so a well-behaved model never reaches it.
STAGE_SETTINGS: dict[Stage, StageSettings] = {
    # Appendix A6 ("LLM Configuration").
    Stage.ACTION: StageSettings(0.7, 256),  # paper: default; one JSON action choice
    Stage.PROBE_PLANNING: StageSettings(0.2, 200),
    Stage.CONVERSATION: StageSettings(0.8, 600),
    Stage.REFLECTION: StageSettings(0.5, 400),  # paper: default; a few sentences, or a JSON critique
    Stage.IMPORTANCE: StageSettings(0.1, 50),
    # Appendix A24: "0.1 for the judge and the IntentInferrer".
    Stage.INTENT: StageSettings(0.1, 400),  # a JSON intent frame with a short rationale
    Stage.JUDGE: StageSettings(0.1, 600),  # a JSON verdict; the factual judge lists every claim
    # Section 5.1: the agent backbone answers at 0.7. (Section 5.2's implicit-intent answer
    # strategies run at 0.1: pass settings=StageSettings(0.1) per call or a stage override.)
    Stage.ANSWER: StageSettings(0.7, 400),  # a few sentences for the asker
    # pi-Bench Section 4.1: the simulated user and its judges run "with temperature set to zero".
    Stage.USER: StageSettings(0.0, 300),  # one user message
}
