"""Episodes on disk in pi-Bench's published layout, loaded and linted.

An episode directory holds ``episode.yaml`` and ``tasks/<task_id>/task.yaml`` with the task's
asset files beside it (pi-Bench's ``data/<user_id>/`` also holds a ``profile.yaml``, unused here).

- Assets: every file under ``tasks/<id>/`` except ``task.yaml``, the tools_evaluation file and
  pi-Bench's run leftovers (``.history``, ``.result``, ``.eval_result``, ``__pycache__``), keyed
  by its posix path relative to the task directory with a leading ``assets/`` or ``workspace/``
  component stripped. A file that is not UTF-8 becomes a one-line placeholder (and a warning).
- ``tools_evaluation_path`` is looked up, first match wins: as an absolute path; relative to the
  task directory; to the episode directory; to each ancestor of the episode directory (pi-Bench
  writes it relative to its repository root, e.g. ``data/<user>/tasks/<id>/eval.py``); finally
  its file name inside the task directory.
- Known tool names (``lint_episode``): an exact set of published names; a task's tool name
  matches when it equals one after a leading ``mcp_appworld_``, ``appworld_`` or ``mcp_`` is
  stripped from both (so ``amazon__place_order`` matches ``mcp_appworld_amazon__place_order``).

``load_episode`` raises the first error; ``lint_episode`` reports every error and warning. Errors
block loading, warnings do not.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from world.episodes.tasks import (
    ROOT_FIELD,
    EpisodeFile,
    TaskFile,
    TaskFormatError,
    episode_problems,
    one_line,
    task_problems,
    workspace_path,
)

EPISODE_FILE = "episode.yaml"
TASK_FILE = "task.yaml"
TASKS_DIR = "tasks"
_LEFTOVERS = frozenset({".history", ".result", ".eval_result", "__pycache__", ".DS_Store"})
_TOOL_PREFIXES = ("mcp_appworld_", "appworld_", "mcp_")
_APP_TOOL_PREFIX = "mcp_appworld_"
_TOOL_NAME = re.compile(r"mcp_\w+")

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class LintIssue:
    file: str
    field: str
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        tail = " (warning)" if self.severity == "warning" else ""
        return f"{self.file}: {self.field}: {self.message}{tail}"


@dataclass(frozen=True)
class LoadedTask:
    task: TaskFile
    directory: Path
    assets: dict[str, str]
    """Workspace path -> text, copied into the workspace when the task starts."""
    rule_scorer: str | None
    """The source of the tools_evaluation file."""
    rule_scorer_path: Path | None
    depends_on: tuple[str, ...]


@dataclass(frozen=True)
class LoadedEpisode:
    episode: EpisodeFile
    directory: Path
    tasks: tuple[LoadedTask, ...]
    """In episode order."""

    def task(self, task_id: str) -> LoadedTask:
        for t in self.tasks:
            if t.task.task_id == task_id:
                return t
        raise KeyError(task_id)


@dataclass
class _Issues:
    found: list[LintIssue] = field(default_factory=list)

    def error(self, file: Path | str, field: str, message: str) -> None:
        self.found.append(LintIssue(str(file), field, one_line(message), "error"))

    def warning(self, file: Path | str, field: str, message: str) -> None:
        self.found.append(LintIssue(str(file), field, one_line(message), "warning"))

    @property
    def errors(self) -> list[LintIssue]:
        return [i for i in self.found if i.severity == "error"]


# ---------------------------------------------------------------- public API


def load_episode(directory: Path) -> LoadedEpisode:
    """The episode in ``directory``; TaskFormatError ``<file>: <field>: <problem>`` for its first error."""
    loaded, issues = _inspect(Path(directory), known_tools=None)
    if loaded is None or issues.errors:
        first = issues.errors[0]
        raise TaskFormatError(first.file, first.field, first.message)
    return loaded


def lint_episode(directory: Path, known_tools: Collection[str]) -> list[LintIssue]:
    """Every problem of the episode in ``directory`` (errors and warnings), in file order."""
    _, issues = _inspect(Path(directory), known_tools=known_tools)
    return issues.found


def find_episodes(path: Path) -> list[Path]:
    """``path`` if it is an episode directory, else every episode directory below it (sorted)."""
    path = Path(path)
    if (path / EPISODE_FILE).is_file():
        return [path]
    if not path.is_dir():
        raise TaskFormatError(str(path), ROOT_FIELD, "no such directory")
    return sorted(p.parent for p in path.rglob(EPISODE_FILE) if p.is_file())


def bare_tool_name(name: str) -> str:
    """``name`` without its ``mcp_appworld_`` / ``appworld_`` / ``mcp_`` prefix."""
    for prefix in _TOOL_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


# ---------------------------------------------------------------- reading


_UNREADABLE = object()


def _read_yaml(path: Path, issues: _Issues) -> Any:
    """The document in ``path``, or ``_UNREADABLE`` (the error recorded)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        issues.error(path, ROOT_FIELD, "no such file")
        return _UNREADABLE
    except UnicodeDecodeError:
        issues.error(path, ROOT_FIELD, "not UTF-8 text")
        return _UNREADABLE
    except OSError as exc:
        issues.error(path, ROOT_FIELD, f"cannot read: {exc.strerror}")
        return _UNREADABLE
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        issues.error(path, ROOT_FIELD, f"not valid YAML: {_yaml_problem(exc)}")
        return _UNREADABLE


def _yaml_problem(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"line {mark.line + 1} column {mark.column + 1}: {exc.problem or exc.context}"
    return one_line(str(exc))


def _lifted_field(raw: Any, key: str) -> str:
    # Name the field where the author wrote it (pi-Bench keeps these under ``objectives``).
    objectives = raw.get("objectives") if isinstance(raw, Mapping) else None
    if isinstance(objectives, Mapping) and objectives.get(key) is not None:
        return f"objectives.{key}"
    return key


def _resolve_scorer(text: str, task_dir: Path, episode_dir: Path) -> Path | None:
    given = Path(text)
    if given.is_absolute():
        return given if given.is_file() else None
    candidates = [task_dir / given, episode_dir / given]
    candidates += [ancestor / given for ancestor in episode_dir.resolve().parents]
    candidates.append(task_dir / given.name)
    return next((c for c in candidates if c.is_file()), None)


def _asset_files(task_dir: Path, skip: set[Path]) -> Iterator[Path]:
    for path in sorted(task_dir.rglob("*")):
        rel = path.relative_to(task_dir)
        if not path.is_file() or any(part in _LEFTOVERS for part in rel.parts):
            continue
        if rel.as_posix() == TASK_FILE or path.resolve() in skip:
            continue
        yield path


def _read_assets(task_dir: Path, skip: set[Path], issues: _Issues) -> dict[str, str]:
    assets: dict[str, str] = {}
    for path in _asset_files(task_dir, skip):
        rel = path.relative_to(task_dir).as_posix()
        key = workspace_path(rel)
        try:
            data = path.read_bytes()
        except OSError as exc:
            issues.error(path, "(asset)", f"cannot read: {exc.strerror}")
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = f"[binary file {key}: {len(data)} bytes, not shown]\n"
            issues.warning(path, "(asset)", "not UTF-8 text: the workspace gets a one-line placeholder")
        if key in assets:
            issues.warning(path, "(asset)", f"workspace path {key!r} is given twice; this file wins")
        assets[key] = text
    return assets


def _scorer_problem(source: str) -> str | None:
    """Why ``source`` is not a usable rule scorer (parsed, never executed), or None."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return f"does not parse: line {exc.lineno}: {exc.msg}"
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "score":
            if not node.args.args and not node.args.posonlyargs and node.args.vararg is None:
                return "score() takes no argument; it is called as score(tools_history)"
            return None
    return "defines no top-level `def score(tools_history)`"


def _scorer_tool_names(source: str) -> list[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names = {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _TOOL_NAME.fullmatch(node.value)
    }
    return sorted(names)


# ---------------------------------------------------------------- checks


@dataclass
class _TaskRead:
    """What one task directory gave, for the checks that look across tasks."""

    task: TaskFile
    raw: Mapping[str, Any]
    file: Path
    loaded: LoadedTask


def _dependency_checks(episode: EpisodeFile, file: Path, issues: _Issues) -> None:
    order = {tid: i for i, tid in reversed(list(enumerate(episode.task_ids)))}
    seen: set[str] = set()
    for i, entry in enumerate(episode.tasks):
        where = f"tasks[{i}]"
        if entry.task_id in seen:
            issues.error(file, f"{where}.task_id", f"task {entry.task_id!r} is listed twice")
        seen.add(entry.task_id)
        for j, dep in enumerate(entry.depends_on):
            dep_field = f"{where}.depends_on[{j}]"
            if dep == entry.task_id:
                issues.error(file, dep_field, f"task {dep!r} depends on itself")
            elif dep not in order:
                issues.error(file, dep_field, f"unknown task {dep!r} (not listed in this episode)")
            elif order[dep] > i:
                issues.error(file, dep_field, f"{dep!r} comes later; a task depends only on earlier tasks")
            if dep in entry.depends_on[:j]:
                issues.warning(file, dep_field, f"{dep!r} is listed twice")
    cycle = _find_cycle({e.task_id: [d for d in e.depends_on if d in order] for e in episode.tasks})
    if cycle:
        issues.error(file, "tasks", "dependency cycle " + " -> ".join(cycle))


def _find_cycle(graph: Mapping[str, Sequence[str]]) -> list[str] | None:
    """One dependency cycle as ``[a, b, a]``, or None (depth-first, in episode order)."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        for nxt in graph.get(node, ()):
            if nxt in path:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in done:
                found = visit(nxt, [*path, nxt])
                if found:
                    return found
        done.add(node)
        return None

    for start in graph:
        if start not in done:
            found = visit(start, [start])
            if found:
                return found
    return None


def _text_of(task: TaskFile) -> str:
    parts = [task.description, str(task.intent.initial_input), *task.hidden_intents]
    parts += [c.criterion for c in task.checklist]
    return "\n".join(parts)


def _files_read_checks(read: _TaskRead, earlier: Sequence[_TaskRead], issues: _Issues) -> None:
    available = {k for t in [*earlier, read] for k in t.loaded.assets}
    texts = "\n".join(_text_of(t.task) for t in [*earlier, read])
    where = _lifted_field(read.raw, "files_read")
    for i, path in enumerate(read.task.files_read):
        key = workspace_path(path)
        if key in available:
            continue
        name = key.rsplit("/", 1)[-1]
        if key in texts or (name and name in texts):
            continue  # an output the agent is asked to write
        issues.warning(
            read.file,
            f"{where}[{i}]",
            f"{path!r} is no asset of this or an earlier task and is named in no request, hidden intent,"
            " checklist item or description: the judges would read a file nobody writes",
        )


def _tool_checks(read: _TaskRead, known_tools: Collection[str], issues: _Issues) -> None:
    bare = {bare_tool_name(n): n for n in known_tools}
    where = _lifted_field(read.raw, "tools")
    for i, entry in enumerate(read.task.tools):
        if bare_tool_name(entry.name) in bare:
            continue
        close = difflib.get_close_matches(bare_tool_name(entry.name), list(bare), n=1, cutoff=0.6)
        hint = f" (did you mean {bare[close[0]]!r}?)" if close else ""
        issues.error(read.file, f"{where}[{i}].{entry.name}", f"unknown tool {entry.name!r}{hint}")
    scorer = read.loaded.rule_scorer
    if scorer is not None and read.loaded.rule_scorer_path is not None:
        for name in _scorer_tool_names(scorer):
            if bare_tool_name(name) not in bare:
                issues.warning(
                    read.loaded.rule_scorer_path, "score", f"the scorer looks for unknown tool {name!r}"
                )
    apps = {bare_tool_name(n).split("__", 1)[0] for n in known_tools if n.startswith(_APP_TOOL_PREFIX)}
    for app in read.task.extensions.app_state:
        if apps and app not in apps:
            known = ", ".join(sorted(apps))
            issues.warning(read.file, f"metadata.app_state.{app}", f"no app {app!r}; apps: {known}")


def _task_warnings(read: _TaskRead, previous_at: float | None, issues: _Issues) -> None:
    task, file = read.task, read.file
    if not task.intent.hidden_intent:
        issues.warning(file, "intent.hidden_intent", "no hidden intents: PROC is undefined for this task")
    if not task.is_environment and task.extensions.trigger_source is not None:
        issues.warning(file, "metadata.trigger_source", "set on a user-triggered task (trigger.type is user)")
    if not task.is_environment and isinstance(task.intent.initial_input, dict):
        issues.warning(file, "intent.initial_input", "a JSON payload under a user trigger (env trigger?)")
    at = task.extensions.at_minutes
    if at is not None and previous_at is not None and at < previous_at:
        issues.warning(file, "metadata.at_minutes", f"{at:g} is before the previous task's {previous_at:g}")


def _read_task(
    episode: EpisodeFile, index: int, directory: Path, file: Path, issues: _Issues
) -> _TaskRead | None:
    entry = episode.tasks[index]
    task_dir = directory / TASKS_DIR / entry.task_id
    if not (task_dir / TASK_FILE).is_file():
        issues.error(
            directory / EPISODE_FILE,
            f"tasks[{index}].task_id",
            f"no {TASKS_DIR}/{entry.task_id}/{TASK_FILE} for listed task {entry.task_id!r}",
        )
        return None
    raw = _read_yaml(file, issues)
    if raw is _UNREADABLE:
        return None
    task, problems = task_problems(raw)
    for p in problems:
        issues.error(file, p.field, p.message)
    if task is None:
        return None
    if task.task_id != entry.task_id:
        issues.error(file, "task_id", f"{task.task_id!r} is not its directory name {entry.task_id!r}")
    if task.user_id != episode.user_id:
        issues.error(file, "user_id", f"{task.user_id!r} differs from the episode's {episode.user_id!r}")
    scorer_path: Path | None = None
    scorer: str | None = None
    if task.tools_evaluation_path is not None:
        where = _lifted_field(raw, "tools_evaluation_path")
        scorer_path = _resolve_scorer(task.tools_evaluation_path, task_dir, directory)
        if scorer_path is None:
            issues.error(file, where, f"no file {task.tools_evaluation_path!r} (nor above the task)")
        else:
            try:
                scorer = scorer_path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                issues.error(file, where, f"cannot read {scorer_path}: {exc}")
            else:
                problem = _scorer_problem(scorer)
                if problem is not None:
                    issues.error(file, where, f"{scorer_path.name} {problem}")
    skip = {scorer_path.resolve()} if scorer_path is not None else set()
    loaded = LoadedTask(
        task=task,
        directory=task_dir,
        assets=_read_assets(task_dir, skip, issues),
        rule_scorer=scorer,
        rule_scorer_path=scorer_path,
        depends_on=entry.depends_on,
    )
    return _TaskRead(task=task, raw=raw, file=file, loaded=loaded)


def _inspect(directory: Path, known_tools: Collection[str] | None) -> tuple[LoadedEpisode | None, _Issues]:
    issues = _Issues()
    episode_file = directory / EPISODE_FILE
    if not directory.is_dir():
        issues.error(directory, ROOT_FIELD, "no such directory")
        return None, issues
    raw = _read_yaml(episode_file, issues)
    if raw is _UNREADABLE:
        return None, issues
    episode, problems = episode_problems(raw)
    for p in problems:
        issues.error(episode_file, p.field, p.message)
    if episode is None:
        return None, issues
    _dependency_checks(episode, episode_file, issues)

    reads: list[_TaskRead] = []
    previous_at: float | None = None
    for index, entry in enumerate(episode.tasks):
        file = directory / TASKS_DIR / entry.task_id / TASK_FILE
        read = _read_task(episode, index, directory, file, issues)
        if read is None:
            continue
        _task_warnings(read, previous_at, issues)
        at = read.task.extensions.at_minutes
        previous_at = at if at is not None else previous_at
        _files_read_checks(read, reads, issues)
        if known_tools is not None:
            _tool_checks(read, known_tools, issues)
        reads.append(read)

    tasks_dir = directory / TASKS_DIR
    if tasks_dir.is_dir():
        listed = set(episode.task_ids)
        for extra in sorted(p for p in tasks_dir.iterdir() if p.is_dir() and (p / TASK_FILE).is_file()):
            if extra.name not in listed:
                message = f"task directory {extra.name!r} is not listed in {EPISODE_FILE}"
                issues.warning(extra / TASK_FILE, "task_id", message)

    if issues.errors:
        return None, issues
    return LoadedEpisode(episode=episode, directory=directory, tasks=tuple(r.loaded for r in reads)), issues


__all__ = [
    "EPISODE_FILE",
    "TASKS_DIR",
    "TASK_FILE",
    "LintIssue",
    "LoadedEpisode",
    "LoadedTask",
    "TaskFormatError",
    "bare_tool_name",
    "find_episodes",
    "lint_episode",
    "load_episode",
]
