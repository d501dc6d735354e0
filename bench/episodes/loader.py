"""Episodes on disk in pi-Bench's published layout, loaded and linted.

A persona directory (pi-Bench's ``data/<user_id>/``) holds ``episode.yaml``,
``tasks/<task_id>/task.yaml`` with the task's asset files beside it, and optionally
``tools.yaml``, ``profile.yaml``, ``skills/``, ``scripts/`` (rule scorers) and our ``seed.yaml``.

- Assets, as pi-Bench stages them (``BaseUserAgent._stage_task_workspace``): every file under
  ``tasks/<id>/`` except pi-Bench's blacklist (``task.yaml``, ``.history``, ``.result``,
  ``.eval_result``: ``repository.TASK_WORKSPACE_ASSET_BLACKLIST``), keyed by its posix path
  relative to the task directory (so ``tasks/<id>/data/x.csv`` is ``data/x.csv`` in the
  workspace), and every file of the persona's ``skills/`` under ``skills/``, for every task. Text
  files are ``assets``; a file that is not UTF-8 is a binary asset, carried byte for byte (base64).
- ``tools.yaml`` (``tool_names: [<app>__<api>, ...]`` or a bare list) decides which app tools the
  persona's assistant is offered, as pi-Bench's AppWorld MCP server does (``--tools-config-file``);
  without it every tool our apps serve is offered.
- ``profile.yaml`` is read and checked (its ``user_id`` is pi-Bench's sender id); pi-Bench puts it
  in no workspace and shows it to no agent, and neither do we.
- ``seed.yaml`` (ours, ``world.episodes.apps.seed``): the persona's app world.
- ``tools_evaluation_path`` is looked up, first match wins: as an absolute path; relative to the
  task directory; to the episode directory; to each ancestor of the episode directory (pi-Bench
  writes it relative to its repository root, e.g. ``data/<user>/scripts/x.py``); finally
  its file name inside the task directory.
- Tool names (``lint_episode``): a name is compared after a leading ``mcp_appworld_``,
  ``appworld_`` or ``mcp_`` is stripped (so ``amazon__place_order`` matches
  ``mcp_appworld_amazon__place_order``).

``load_episode`` raises the first error; ``lint_episode`` reports every error and warning. Errors
block loading, warnings do not: what the published data itself gets wrong (a scorer that looks for
a tool its task does not pass it, a record the world lacks) is a warning, so the data still runs.
"""

from __future__ import annotations

import ast
import base64
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import ValidationError

from world.episodes.apps.seed import WorldSeed
from world.episodes.tasks import (
    ROOT_FIELD,
    EpisodeFile,
    TaskFile,
    TaskFormatError,
    episode_problems,
    one_line,
    problems_of,
    task_problems,
    workspace_path,
)

EPISODE_FILE = "episode.yaml"
TASK_FILE = "task.yaml"
TASKS_DIR = "tasks"
TOOLS_FILE = "tools.yaml"
PROFILE_FILE = "profile.yaml"
SEED_FILE = "seed.yaml"
SKILLS_DIR = "skills"
_BLACKLIST = frozenset({TASK_FILE, ".history", ".result", ".eval_result"})
"""pi-Bench's ``TASK_WORKSPACE_ASSET_BLACKLIST``: top-level entries of a task never staged."""
_LEFTOVERS = frozenset({"__pycache__", ".DS_Store"})
_TOOL_PREFIXES = ("mcp_appworld_", "appworld_", "mcp_")
_APP_TOOL_PREFIX = "mcp_appworld_"
_TOOL_NAME = re.compile(r"(?:mcp_appworld_)?[a-z][a-z0-9]*(?:_[a-z0-9]+)*__[a-z][a-z0-9_]*")
"""A string naming an app tool (``splitwise__create_group``, prefixed or not); a bare prefix
such as ``mcp_appworld_`` (``removeprefix("mcp_appworld_")``) is not one."""

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
    binaries: dict[str, str] = field(default_factory=dict)
    """Workspace path -> base64 of a binary asset, copied byte for byte."""


@dataclass(frozen=True)
class LoadedEpisode:
    episode: EpisodeFile
    directory: Path
    tasks: tuple[LoadedTask, ...]
    """In episode order."""
    offered: tuple[str, ...] | None = None
    """The app tools ``tools.yaml`` offers, as written (None: no tools.yaml, every tool)."""
    seed: WorldSeed | None = None
    """The persona's app world (``seed.yaml``)."""
    profile: Mapping[str, Any] | None = None

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
    """Every problem of the episode in ``directory`` (errors and warnings), in file order.
    ``known_tools``: every tool name our registry serves (workspace, assistant and app tools)."""
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


def _asset_files(root: Path, *, blacklist: Collection[str] = ()) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if not path.is_file() or rel.parts[0] in blacklist or any(p in _LEFTOVERS for p in rel.parts):
            continue
        yield path


def _read_assets(
    root: Path, issues: _Issues, *, prefix: str = "", blacklist: Collection[str] = ()
) -> tuple[dict[str, str], dict[str, str]]:
    """The files under ``root`` as (text, binary) assets keyed ``prefix`` + relative path."""
    texts: dict[str, str] = {}
    binaries: dict[str, str] = {}
    for path in _asset_files(root, blacklist=blacklist):
        key = workspace_path(prefix + path.relative_to(root).as_posix())
        try:
            data = path.read_bytes()
        except OSError as exc:
            issues.error(path, "(asset)", f"cannot read: {exc.strerror}")
            continue
        try:
            texts[key] = data.decode("utf-8")
        except UnicodeDecodeError:
            binaries[key] = base64.b64encode(data).decode("ascii")
    return texts, binaries


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


def _string_constants(source: str) -> list[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _scorer_tool_names(source: str) -> list[str]:
    return sorted({text for text in _string_constants(source) if _TOOL_NAME.fullmatch(text)})


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
    available = {k for t in [*earlier, read] for k in (*t.loaded.assets, *t.loaded.binaries)}
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


@dataclass(frozen=True)
class _Persona:
    """What the persona directory gives every task's checks."""

    served: frozenset[str]
    """Bare names of every tool our registry serves."""
    offered: frozenset[str] | None
    """Bare names tools.yaml offers (None: no tools.yaml)."""
    seed: WorldSeed | None


def _app_form(name: str) -> bool:
    return "__" in bare_tool_name(name)


def _availability(name: str, persona: _Persona) -> str | None:
    """Why an app tool ``name`` can never be called in this episode, or None."""
    bare = bare_tool_name(name)
    if persona.offered is not None and bare not in persona.offered:
        return "the persona's tools.yaml does not offer it"
    if bare not in persona.served:
        return "not served by the built-in apps (--apps appworld serves AppWorld's APIs, if it has it)"
    return None


def _tool_checks(read: _TaskRead, persona: _Persona, issues: _Issues) -> None:
    where = _lifted_field(read.raw, "tools")
    listed = {bare_tool_name(e.name) for e in read.task.tools}
    for i, entry in enumerate(read.task.tools):
        field_name = f"{where}[{i}].{entry.name}"
        if not _app_form(entry.name):
            if bare_tool_name(entry.name) not in persona.served:
                issues.warning(read.file, field_name, f"unknown tool {entry.name!r}")
            continue
        why = _availability(entry.name, persona)
        if why is not None:
            issues.warning(read.file, field_name, f"{entry.name!r}: {why}")
        elif not entry.name.startswith(_APP_TOOL_PREFIX):
            issues.warning(
                read.file,
                field_name,
                f"pi-Bench matches recorded names exactly: calls are recorded as "
                f"{_APP_TOOL_PREFIX}{bare_tool_name(entry.name)!s}, never as {entry.name!r}",
            )
    scorer = read.loaded.rule_scorer
    path = read.loaded.rule_scorer_path
    if scorer is not None and path is not None:
        for name in _scorer_tool_names(scorer):
            why = _availability(name, persona)
            if why is not None:
                issues.warning(path, "score", f"the scorer looks for {name!r}: {why}")
            elif read.task.tools and bare_tool_name(name) not in listed:
                issues.warning(
                    path,
                    "score",
                    f"the scorer looks for {name!r}, which task {read.task.task_id}'s tools list does not"
                    " name: pi-Bench passes a scorer only the listed tools' calls, so it never sees one",
                )
    for app in read.task.extensions.app_state:
        apps = {n.split("__", 1)[0] for n in persona.served if "__" in n}
        if app not in apps:
            issues.warning(
                read.file, f"metadata.app_state.{app}", f"no app {app!r}; apps: {', '.join(sorted(apps))}"
            )
    _record_checks(read, persona, issues)


_EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")
_PHONE = re.compile(r"(?<![\d-])\d{10}(?![\d-])")
_ENTITY_ID = re.compile(
    r"\b(product|playlist|song|album|artist|order|note|project|group|expense)s?\s+"
    r"(?:(?:id\s*[:#]?|#)\s*(\d+)\b|(\d+)\b(?!\s+[a-z]))",
    re.I,
)
"""A record named by id in prose: ``product 1578``, ``playlist ID: 31``, ``order #7``; a number
followed by a word is a quantity (``order 2 drippers``), not an id."""
_ID_NAME = re.compile(r"^(?:TARGET_|EXPECTED_|GOLD_)?([A-Z]+)_IDS?$")
_ENTITIES = frozenset({"product", "song", "artist", "playlist", "album", "order", "note"})


def _id_entity(node: ast.expr) -> str | None:
    """``playlist`` for ``playlist_id``, ``x.playlist_id`` or ``x["playlist_id"]``."""
    name = None
    if isinstance(node, ast.Name):
        name = node.id
    elif isinstance(node, ast.Attribute):
        name = node.attr
    elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        name = node.slice.value if isinstance(node.slice.value, str) else None
    if name is None or not name.lower().endswith("_id"):
        return None
    return name.lower().removesuffix("_id")


def _int_constants(node: ast.expr) -> list[int]:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return [node.value]
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return [v for e in node.elts for v in _int_constants(e)]
    return []


def _scorer_ids(source: str) -> list[tuple[str, int]]:
    """``(entity, id)`` a scorer names: ``TARGET_PRODUCT_ID = 1578``, ``{"product_id": 1578}`` or
    ``playlist_id in [31, 33]`` / ``item["song_id"] == 54``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and type(node.value.value) is int
        ):
            for target in node.targets:
                m = _ID_NAME.match(target.id) if isinstance(target, ast.Name) else None
                if m:
                    found.append((m.group(1).lower(), node.value.value))
        if isinstance(node, ast.Compare):
            entity = _id_entity(node.left)
            if entity is not None:
                found += [(entity, v) for c in node.comparators for v in _int_constants(c)]
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if (
                    isinstance(key, ast.Constant)
                    and isinstance(key.value, str)
                    and key.value.endswith("_id")
                    and isinstance(value, ast.Constant)
                    and type(value.value) is int
                ):
                    found.append((key.value.removesuffix("_id"), value.value))
    return found


def _world_of(read: _TaskRead, persona: _Persona) -> dict[str, dict[str, Any]]:
    from world.episodes.apps.seed import seed_apps
    from world.episodes.apps.state import merge_app_data

    apps = seed_apps(persona.seed) if persona.seed is not None else {}
    for app, data in read.task.extensions.app_state.items():
        apps[app] = merge_app_data(apps.get(app, {}), data, app=app)
    return apps


def _record_checks(read: _TaskRead, persona: _Persona, issues: _Issues) -> None:
    """Name each person and record the task or its scorer refers to that the loaded world lacks."""
    apps = _world_of(read, persona)
    emails = {str(u.get("email", "")).lower() for data in apps.values() for u in data.get("users", [])}
    phones = {str(u.get("phone_number", "")) for u in apps.get("phone", {}).get("users", [])}
    ids: dict[str, set[int]] = {}
    for data in apps.values():
        for collection, rows in data.items():
            if isinstance(rows, list):
                entity = collection[:-1] if collection.endswith("s") else collection
                ids.setdefault(entity, set()).update(
                    r[f"{entity}_id"]
                    for r in rows
                    if isinstance(r, dict) and isinstance(r.get(f"{entity}_id"), int)
                )
    texts = [(read.file, "intent", _text_of(read.task))]
    if read.loaded.rule_scorer is not None and read.loaded.rule_scorer_path is not None:
        texts.append(
            (read.loaded.rule_scorer_path, "score", "\n".join(_string_constants(read.loaded.rule_scorer)))
        )
    missing: dict[tuple[Path, str, str], None] = {}
    for file, field_name, text in texts:
        for email in _EMAIL.findall(text):
            if email.lower() not in emails:
                missing[(file, field_name, f"no person with email {email} in the loaded world")] = None
        for phone in _PHONE.findall(text):
            if phone not in phones:
                missing[(file, field_name, f"no phone user with number {phone} in the loaded world")] = None
        for entity, marked, bare in _ENTITY_ID.findall(text):
            number = marked or bare
            if int(number) not in ids.get(entity.lower(), set()):
                missing[(file, field_name, f"no {entity.lower()} with id {number} in the loaded world")] = (
                    None
                )
    if read.loaded.rule_scorer is not None and read.loaded.rule_scorer_path is not None:
        for entity, number in _scorer_ids(read.loaded.rule_scorer):
            known = entity in ids or entity in _ENTITIES
            if known and number not in ids.get(entity, set()):
                message = f"no {entity} with id {number} in the loaded world"
                missing[(read.loaded.rule_scorer_path, "score", message)] = None
    for file, field_name, message in missing:
        issues.warning(file, field_name, message)


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


def _read_task(  # noqa: PLR0917
    episode: EpisodeFile,
    index: int,
    directory: Path,
    file: Path,
    issues: _Issues,
    skills: tuple[dict[str, str], dict[str, str]],
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
    if scorer_path is not None and scorer_path.resolve().is_relative_to(task_dir.resolve()):
        issues.warning(
            scorer_path,
            "(asset)",
            "the rule scorer lies in the task directory: pi-Bench stages it into the"
            " assistant's workspace with the other assets (keep scorers in the persona's scripts/)",
        )
    texts, binaries = _read_assets(task_dir, issues, blacklist=_BLACKLIST)
    if any(skills):
        # pi-Bench copies the persona's skills/ after the task's assets, replacing the directory.
        texts = {k: v for k, v in texts.items() if not k.startswith(f"{SKILLS_DIR}/")} | skills[0]
        binaries = {k: v for k, v in binaries.items() if not k.startswith(f"{SKILLS_DIR}/")} | skills[1]
    loaded = LoadedTask(
        task=task,
        directory=task_dir,
        assets=texts,
        rule_scorer=scorer,
        rule_scorer_path=scorer_path,
        depends_on=entry.depends_on,
        binaries=binaries,
    )
    return _TaskRead(task=task, raw=raw, file=file, loaded=loaded)


def _persona_file(path: Path, issues: _Issues, *, not_a_mapping: str | None = None) -> Any:
    """The document of an optional persona file, or ``_UNREADABLE`` when it is absent or cannot
    be read (the error recorded). With ``not_a_mapping``, a document that is not a mapping is
    that error."""
    if not path.is_file():
        return _UNREADABLE
    raw = _read_yaml(path, issues)
    if raw is not _UNREADABLE and not_a_mapping is not None and not isinstance(raw, Mapping):
        issues.error(path, ROOT_FIELD, not_a_mapping)
        return _UNREADABLE
    return raw


def _read_tools_file(directory: Path, issues: _Issues) -> tuple[str, ...] | None:
    """The app tools a persona's ``tools.yaml`` offers (None when there is none)."""
    path = directory / TOOLS_FILE
    raw = _persona_file(path, issues)
    if raw is _UNREADABLE:
        return None
    names = raw.get("tool_names") if isinstance(raw, Mapping) else raw
    if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
        issues.error(path, "tool_names", "expected a list of tool names (<app>__<api>)")
        return None
    out: list[str] = []
    for i, name in enumerate(names):
        if not _TOOL_NAME.fullmatch(name.strip()):
            issues.error(path, f"tool_names[{i}]", f"{name!r} is not an app tool name (<app>__<api>)")
        elif name.strip().startswith(_APP_TOOL_PREFIX):
            bare = name.strip().removeprefix(_APP_TOOL_PREFIX)
            issues.error(
                path,
                f"tool_names[{i}]",
                f"{name!r}: AppWorld's MCP server takes bare names ({bare!r}); the assistant sees"
                f" them as {_APP_TOOL_PREFIX}<app>__<api>",
            )
        elif name.strip() not in out:
            out.append(name.strip())
    return tuple(out)


def _read_seed(directory: Path, issues: _Issues) -> WorldSeed | None:
    path = directory / SEED_FILE
    raw = _persona_file(path, issues, not_a_mapping="expected a mapping with people and apps")
    if raw is _UNREADABLE:
        return None
    try:
        return WorldSeed.model_validate(dict(raw))
    except ValidationError as exc:
        for p in problems_of(exc, WorldSeed):
            issues.error(path, p.field, p.message)
        return None


def _read_profile(directory: Path, episode: EpisodeFile, issues: _Issues) -> Mapping[str, Any] | None:
    path = directory / PROFILE_FILE
    raw = _persona_file(path, issues, not_a_mapping="expected a mapping (user_id, role, ...)")
    if not isinstance(raw, Mapping):  # absent or unreadable (recorded)
        return None
    user = raw.get("user_id")
    if user is not None and str(user) != episode.user_id:
        issues.warning(
            path, "user_id", f"{user!r} differs from the episode's {episode.user_id!r} (pi-Bench's sender id)"
        )
    return raw


def _persona(offered: tuple[str, ...] | None, seed: WorldSeed | None, known: Collection[str]) -> _Persona:
    return _Persona(
        served=frozenset(bare_tool_name(n) for n in known),
        offered=None if offered is None else frozenset(bare_tool_name(n) for n in offered),
        seed=seed,
    )


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
    if directory.resolve().name != episode.user_id:
        issues.warning(
            episode_file,
            "user_id",
            f"pi-Bench reads persona {episode.user_id!r} from data/{episode.user_id}/ (and resolves"
            f" scorer paths from there): this directory is named {directory.resolve().name!r}",
        )
    offered = _read_tools_file(directory, issues)
    seed = _read_seed(directory, issues)
    profile = _read_profile(directory, episode, issues)
    skills_dir = directory / SKILLS_DIR
    skills = _read_assets(skills_dir, issues, prefix=f"{SKILLS_DIR}/") if skills_dir.is_dir() else ({}, {})
    persona = _persona(offered, seed, known_tools) if known_tools is not None else None
    if persona is not None and offered is not None:
        for i, name in enumerate(offered):
            if bare_tool_name(name) not in persona.served:
                issues.warning(
                    directory / TOOLS_FILE,
                    f"tool_names[{i}]",
                    f"{name!r} is not served by the built-in apps, so there a call to it is a failed call"
                    " (unknown_tool); --apps appworld serves AppWorld's APIs, if it has it",
                )

    reads: list[_TaskRead] = []
    previous_at: float | None = None
    for index, entry in enumerate(episode.tasks):
        file = directory / TASKS_DIR / entry.task_id / TASK_FILE
        read = _read_task(episode, index, directory, file, issues, skills)
        if read is None:
            continue
        _task_warnings(read, previous_at, issues)
        at = read.task.extensions.at_minutes
        previous_at = at if at is not None else previous_at
        _files_read_checks(read, reads, issues)
        if persona is not None:
            _tool_checks(read, persona, issues)
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
    loaded = LoadedEpisode(
        episode=episode,
        directory=directory,
        tasks=tuple(r.loaded for r in reads),
        offered=offered,
        seed=seed,
        profile=profile,
    )
    return loaded, issues


__all__ = [
    "EPISODE_FILE",
    "PROFILE_FILE",
    "SEED_FILE",
    "SKILLS_DIR",
    "TASKS_DIR",
    "TASK_FILE",
    "TOOLS_FILE",
    "LintIssue",
    "LoadedEpisode",
    "LoadedTask",
    "TaskFormatError",
    "bare_tool_name",
    "find_episodes",
    "lint_episode",
    "load_episode",
]
