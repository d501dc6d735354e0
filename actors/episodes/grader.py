"""``grader``: scores finished sessions. Stateless, so any number may serve the address.

Rubric items are judged per criterion (deterministic or LLM judge) per turn and over the whole
session, the task's rule scorer runs in one child process on every history both readings need
(pi-Bench's per turn, ours whole), and state checks read the app-state diff;
``world.episodes.grading`` combines them. A scorer that
crashes or answers garbage and a judge that answers nothing readable are grader errors on the
grade, never a score.
"""

from __future__ import annotations

from typing import Any

import structlog

from actors.episodes._gateways import actor_usage, fallback_reasons, usage_summary
from actors.episodes.judges import LLMRubricJudge
from actors.episodes.rule_scorer import run_rule_scorer
from actors.llm import GatewayPool
from actors.runtime import Actor, Context, on
from messages.episodes import GradeSession, SessionGrade
from world.episodes.grading import RuleRun, RuleRunner, grade_session
from world.episodes.judging import DeterministicRubricJudge, RubricJudge

log = structlog.get_logger("auratown.episode.grader")

GRADER = "grader"


class GraderActor(Actor):
    def __init__(
        self,
        gateways: GatewayPool | None = None,
        *,
        rule_runner: RuleRunner | None = None,
        scorer_timeout: float = 20.0,
    ) -> None:
        self.gateways = gateways or GatewayPool()
        self.scorer_timeout = scorer_timeout
        self.rule_runner = rule_runner or self._run_scorer

    def _run_scorer(self, source: str, histories: list[list[dict[str, Any]]]) -> list[RuleRun]:
        return run_rule_scorer(source, histories, timeout=self.scorer_timeout)

    @on(GradeSession)
    def grade(self, ctx: Context, msg: GradeSession) -> SessionGrade:
        rubric: RubricJudge = DeterministicRubricJudge()
        gateway = None
        if msg.judge == "llm" and msg.model:
            gateway = self.gateways.get(msg.model)
            rubric = LLMRubricJudge(gateway, actor=ctx.address)
        before = actor_usage(gateway, ctx.address)
        known = len(fallback_reasons(gateway, ctx.address))
        grade = grade_session(
            msg.spec,
            msg.session,
            list(msg.history),
            msg.diff,
            dict(msg.files),
            rubric=rubric,
            rule_runner=self.rule_runner,
        )
        if gateway is not None:
            spent = usage_summary(
                before, actor_usage(gateway, ctx.address), fallback_reasons(gateway, ctx.address)[known:]
            )
            grade = grade.model_copy(update={"usage": spent})
        log.info(
            "session graded",
            task=msg.spec.task_id,
            comp=grade.comp,
            comp_faithful=grade.comp_faithful,
            errors=len(grade.grader_errors),
        )
        return grade
