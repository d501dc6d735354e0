"""Runs a task's rule scorer (``tools_evaluation_path``, pi-Bench Appendix C.6) in a child process.

The scorer is third-party code: it runs in a separate interpreter (``python -I``: no user site,
no environment variables of Python's, no current directory on the path) in an empty temporary
directory, with the source and the tool histories as JSON on stdin and one answer per history as
JSON on the last line of stdout. Whatever it prints itself goes to stderr. One child serves every
history of a session (pi-Bench calls ``score`` once for its key set, ``score([])``, and once per
turn). A crash of one call, or an answer that is not ``{text: 0 | 1}``, is a ``RuleRun`` with no
scores and a one-line reason for that history; a scorer that does not load, or a timeout, fails
them all. Never a score.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from world.episodes.grading import RuleRun, checked_scores

_CHILD = r"""
import json, sys
real_stdout = sys.stdout
sys.stdout = sys.stderr  # the scorer's own prints must not corrupt the answer
job = json.load(sys.stdin)
namespace = {"__name__": "rule_scorer", "__file__": job["filename"]}
exec(compile(job["source"], job["filename"], "exec"), namespace)
score = namespace.get("score")
if not callable(score):
    raise SystemExit("the scorer defines no score(tools_history) function")
answers = []
for history in job["histories"]:
    try:
        scores = score(history)
    except Exception as exc:
        answers.append({"problem": f"crashed: {type(exc).__name__}: {exc}"})
        continue
    if isinstance(scores, dict) and not all(isinstance(k, str) for k in scores):
        answers.append({"problem": "score() returned a non-text key"})
        continue
    try:
        answers.append({"scores": json.loads(json.dumps(scores, allow_nan=False))})
    except (TypeError, ValueError) as exc:
        answers.append({"problem": f"score() returned data that is not JSON ({exc})"})
real_stdout.write("\n" + json.dumps(answers) + "\n")
real_stdout.flush()
"""
"""The child: keys are checked before JSON would turn them into text, and a value JSON cannot
carry is a problem reported, not a crash."""


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def run_rule_scorer(
    source: str,
    histories: Sequence[Sequence[Mapping[str, Any]]],
    *,
    timeout: float = 10.0,
    filename: str = "evaluate.py",
) -> list[RuleRun]:
    """``score(history)`` of ``source`` for each history, in one child interpreter within
    ``timeout`` seconds (for all of them)."""
    if not histories:
        return []
    job = json.dumps(
        {"source": source, "filename": filename, "histories": [[dict(r) for r in h] for h in histories]}
    )

    def every(reason: str) -> list[RuleRun]:
        return [RuleRun(None, reason) for _ in histories]

    with tempfile.TemporaryDirectory(prefix="rule-scorer-") as workdir:
        try:
            done = subprocess.run(
                [sys.executable, "-I", "-c", _CHILD],
                input=job,
                capture_output=True,
                text=True,
                timeout=timeout,
                cwd=workdir,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return every(f"timed out after {timeout:g} s")
        except OSError as exc:
            return every(f"could not start the scorer: {exc}")
    if done.returncode != 0:
        reason = _last_line(done.stderr)[:300] or f"exit status {done.returncode}"
        return every(f"crashed: {reason}")
    try:
        answers = json.loads(_last_line(done.stdout) or "null")
    except ValueError:
        return every("the scorer's answer is not JSON")
    if not isinstance(answers, list) or len(answers) != len(histories):
        return every("the scorer gave no answer")
    out = []
    for answer in answers:
        if not isinstance(answer, dict) or ("scores" not in answer and "problem" not in answer):
            out.append(RuleRun(None, "the scorer gave no answer"))
        elif "problem" in answer:
            out.append(RuleRun(None, str(answer["problem"])[:300]))
        else:
            scores, problem = checked_scores(answer["scores"])
            out.append(RuleRun(scores, problem))
    return out
