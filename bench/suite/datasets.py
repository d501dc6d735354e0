"""The benchmark's query sets: the AURA release's files, read unchanged from a directory, and the
project's own sets bundled in ``bench/suite/data`` (same formats, written for AURATown).

Loading only reads files. ``probe_scene`` turns an implicit-intent scene into the state the probe
registry serves; ``paired_snapshot`` captures a live town once at a tick so that every condition
of a factual or privacy query is asked against the same frozen, read-only scene.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from actors.settings import load_settings
from messages.probes import ProbeScene
from world.definition import TownDefinition
from world.probes import SceneError, scene_from_aura_v2, scene_from_town
from world.town import Town

SuiteName = Literal[
    "factual", "privacy", "implicit-v1", "implicit-v2", "phrasing", "phrasing-dev", "phrasing-test"
]
SUITE_NAMES: tuple[SuiteName, ...] = get_args(SuiteName)

Subcategory = Literal["availability", "mood", "appropriateness", "latent_goal", "second_order"]
SUBCATEGORIES: tuple[Subcategory, ...] = get_args(Subcategory)
AURA_RELEASE = load_settings().aura_data
"""The AURA paper's released data (external, never copied in): the settings' ``aura_data``,
``$AURATOWN_AURA_DATA``, else ``../shared/data/aura`` beside the checkout."""

FACTUAL_CATEGORIES = ("spatial", "social", "temporal", "memory", "planning")

RELEASE_TOOLS = frozenset(
    {
        "get_time",
        "get_location",
        "get_nearby_agents",
        "get_all_agents",
        "get_recent_memories",
        "get_recent_events",
        "get_agent_plan",
        "get_location_info",
        "get_agent_private_state",
        "get_agent_belief_about",
    }
)
"""The tool names the release's gold fields use (SOURCE.md); the probe registries accept them."""

BELIEF_PREFIX = "beliefs_about_others."

# The release's file names, first match wins (the full upstream v2 file, or the A/B copy).
RELEASE_FILES: dict[SuiteName, tuple[str, ...]] = {
    "factual": ("chat_queries.json",),
    "privacy": ("privacy_distractor_queries.json",),
    "implicit-v1": ("implicit_intent_queries.json",),
    "implicit-v2": ("implicit_intent_queries_v2_AB.json", "implicit_intent_queries_v2.json"),
    "phrasing": (),
    "phrasing-dev": (),
    "phrasing-test": (),
}
# Our bundled sets; both implicit suites read the one v2-format file (v1 is v2's single-scene case).
BUNDLED_FILES: dict[SuiteName, str] = {
    "factual": "factual_queries.json",
    "privacy": "privacy_queries.json",
    "implicit-v1": "implicit_queries.json",
    "implicit-v2": "implicit_queries.json",
    "phrasing": "phrasing_queries.json",
    "phrasing-dev": "phrasing_queries.json",
    "phrasing-test": "phrasing_queries.json",
}
PHRASING_SPLITS: dict[SuiteName, str] = {"phrasing-dev": "dev", "phrasing-test": "test"}
"""The phrasing-robustness set is split once, by scene, into halves named in its ``splits`` field:
tune on dev, report test."""
V1_SCENE = "A_cafe_morning"
"""The v1 file has no snapshot: its 25 queries are v2's scene A verbatim (v2's description)."""


class SuiteError(ValueError):
    """A suite that cannot be loaded or used, with a one-line reason."""


class SuiteFileError(SuiteError):
    """The suite's file is missing or unreadable."""


class SuiteFormatError(SuiteError):
    """The suite's file is not in the expected format."""


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


_R = TypeVar("_R", bound=_Record)


class FactualQuery(_Record):
    id: int
    category: str
    query: str
    requires: tuple[str, ...] = ()


class PrivacyQuery(FactualQuery):
    allowed_tools: tuple[str, ...] = ()
    forbidden_tools: tuple[str, ...] = ()


class ImplicitQuery(_Record):
    id: int
    scene: str
    subcategory: Subcategory
    agent_subject: str | None = None
    target: str | None = None
    query: str
    literal_requires: tuple[str, ...] = ()
    implicit_requires: tuple[str, ...] = ()
    implicit_need: str = ""
    gold_required_tools: tuple[str, ...] = ()
    forbidden_tools: tuple[str, ...] = ()


Scalar = str | int | float | bool | None


class ImplicitScene(_Record):
    """A scene of the release's v2 layout: what everyone is visibly doing, their private state, and
    what each believes of the others. The one scene type of the release's files (the suites, the
    judges and the latency benchmark all read it)."""

    id: str = ""
    summary: str
    public_state: dict[str, dict[str, str]]
    private_state: dict[str, dict[str, str]]
    beliefs_about_others: dict[str, dict[str, dict[str, Scalar]]] = {}
    """believer -> target -> what the believer last took to be true (may be stale)."""

    def as_v2(self) -> dict[str, Any]:
        """The scene in the release's v2 layout (what ``scene_from_aura_v2`` reads)."""
        return self.model_dump(mode="json", exclude={"id"})

    def stale_beliefs(self) -> list[tuple[str, str, str]]:
        """(believer, target, field) where a belief differs from the target's present state."""
        out: list[tuple[str, str, str]] = []
        for believer, about in sorted(self.beliefs_about_others.items()):
            for target, belief in sorted(about.items()):
                truth = {**self.public_state.get(target, {}), **self.private_state.get(target, {})}
                for field in ("availability", "emotional_state", "location", "action"):
                    held = belief.get(field)
                    if held not in (None, "unknown") and field in truth and held != truth[field]:
                        out.append((believer, target, field))
        return out


Query = FactualQuery | PrivacyQuery | ImplicitQuery


class ReleasedCell(_Record):
    """One cell of the paper's released implicit-intent v2 multi-seed results
    (``rq_intent_v2_multiseed*.json``): a model's answer to one query under one condition and seed,
    scored by the paper's judge."""

    seed: str
    condition: str
    query_id: int
    answer: str = ""
    implicit_score: float | None = None
    literal_score: float | None = None
    probes: int = 0
    tools_called: tuple[str, ...] = ()
    forbidden_violations: tuple[str, ...] = ()
    latency: float = 0.0
    gap: float | str | None = None
    """The inferred gap; ``None`` without an IntentFrame, ``"oracle"`` for the oracle condition."""
    scene: str = ""
    subcategory: str = ""

    @field_validator("answer", mode="before")
    @classmethod
    def _no_answer_is_empty(cls, value: Any) -> Any:
        return "" if value is None else value

    def judged(self) -> tuple[float, float]:
        """(literal, implicit): the paper's judge's scores of this cell."""
        if self.literal_score is None or self.implicit_score is None:
            raise SuiteFormatError(
                f"cell of query {self.query_id} ({self.condition}, seed {self.seed}) has no judge scores"
            )
        return self.literal_score, self.implicit_score


class Suite(_Record):
    name: SuiteName
    queries: tuple[Query, ...]
    scenes: dict[str, ImplicitScene] = {}
    source: Path
    bundled: bool
    version: str = ""

    def factual(self) -> tuple[FactualQuery, ...]:
        """The queries of a factual or privacy suite (a privacy query is a factual one)."""
        return tuple(self._of(FactualQuery))

    def privacy(self) -> tuple[PrivacyQuery, ...]:
        return tuple(self._of(PrivacyQuery))

    def implicit(self) -> tuple[ImplicitQuery, ...]:
        return tuple(self._of(ImplicitQuery))

    def _of(self, kind: type[_R]) -> list[_R]:
        out: list[_R] = [q for q in self.queries if isinstance(q, kind)]
        if len(out) != len(self.queries):
            raise SuiteError(f"suite {self.name} does not hold {kind.__name__} records")
        return out


# ---------------------------------------------------------------- loading


def bundled_dir() -> Path:
    """``bench/suite/data`` (shipped as package data), found next to this module so that it works
    whether or not ``bench.suite`` has an ``__init__``."""
    return Path(__file__).resolve().parent / "data"


def suite_file(name: SuiteName, data_dir: str | Path | None) -> Path:
    """Where ``name`` is read from: the bundled set (``None``), the file itself if ``data_dir`` is a
    file, or the release's file name inside the directory."""
    if name not in SUITE_NAMES:
        raise SuiteError(f"no suite {name!r}: choose from {', '.join(SUITE_NAMES)}")
    if data_dir is None:
        return bundled_dir() / BUNDLED_FILES[name]
    d = Path(data_dir)
    if d.is_file():
        return d
    if not RELEASE_FILES[name]:
        return bundled_dir() / BUNDLED_FILES[name]  # our own set: the release has no such file
    if not d.is_dir():
        raise SuiteFileError(f"no data directory {d}")
    for candidate in RELEASE_FILES[name]:
        if (d / candidate).is_file():
            return d / candidate
    raise SuiteFileError(f"no {' or '.join(RELEASE_FILES[name])} in {d}")


def load_suite(name: SuiteName, data_dir: str | Path | None = None) -> Suite:
    """The suite ``name`` from the release's files in ``data_dir``, or our bundled set (``None``).

    Raises ``SuiteFileError`` (missing, unreadable) or ``SuiteFormatError`` (not JSON, wrong
    layout, inconsistent gold fields), each with a one-line message naming the file.
    """
    path = suite_file(name, data_dir)
    data = _read_json(path)
    bundled = path.parent == bundled_dir()
    version = str(data.get("version", ""))
    if name in ("factual", "privacy"):
        record: type[FactualQuery] = FactualQuery if name == "factual" else PrivacyQuery
        queries: tuple[Query, ...] = tuple(_records(path, data, record))
        _check_factual(path, name, queries)
        return Suite(name=name, queries=queries, source=path, bundled=bundled, version=version)

    scenes = _scenes(path, data)
    raw = _query_list(path, data)
    if name == "implicit-v1" and "scenes" not in data:
        raw, scenes = _adapt_v1(path, raw)
    implicit = _records(path, {"queries": raw}, ImplicitQuery)
    _check_implicit(path, implicit, scenes)
    if name in PHRASING_SPLITS:
        scenes, implicit = _split(path, data, PHRASING_SPLITS[name], scenes, implicit)
    return Suite(
        name=name, queries=tuple(implicit), scenes=scenes, source=path, bundled=bundled, version=version
    )


def read_v2(path: str | Path) -> tuple[dict[int, ImplicitQuery], dict[str, ImplicitScene]]:
    """The queries (by id) and scenes (by id) of an implicit-intent v2 file (or of the release's
    directory holding one): what the judges and their agreement check read."""
    suite = load_suite("implicit-v2", path)
    return {q.id: q for q in suite.implicit()}, dict(suite.scenes)


def released_cells(path: str | Path) -> list[ReleasedCell]:
    """Every cell of a released multi-seed results file (``per_seed``: seed -> condition -> cells),
    in file order. Raises ``SuiteFileError`` or ``SuiteFormatError`` naming the file."""
    path = Path(path)
    per_seed = _read_json(path).get("per_seed")
    if not isinstance(per_seed, dict):
        raise SuiteFormatError(f"{path}: expected a 'per_seed' object of seed -> condition -> cells")
    out: list[ReleasedCell] = []
    for seed, by_condition in per_seed.items():
        for condition, records in by_condition.items():
            for i, record in enumerate(records):
                try:
                    out.append(ReleasedCell.model_validate({**record, "seed": seed, "condition": condition}))
                except (ValidationError, TypeError) as exc:
                    why = _first_error(exc) if isinstance(exc, ValidationError) else "not an object"
                    raise SuiteFormatError(f"{path}: seed {seed}, {condition}, cell #{i}: {why}") from None
    return out


def _split(
    path: Path,
    data: Mapping[str, Any],
    half: str,
    scenes: dict[str, ImplicitScene],
    queries: list[ImplicitQuery],
) -> tuple[dict[str, ImplicitScene], list[ImplicitQuery]]:
    splits = data.get("splits")
    if not isinstance(splits, dict) or not isinstance(splits.get(half), list):
        raise SuiteFormatError(f"{path}: no splits.{half} list of scene ids")
    chosen = [str(s) for s in splits[half]]
    unknown = [s for s in chosen if s not in scenes]
    if unknown:
        raise SuiteFormatError(f"{path}: splits.{half} names unknown scenes {', '.join(unknown)}")
    return {s: scenes[s] for s in chosen}, [q for q in queries if q.scene in chosen]


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SuiteFileError(f"no suite file {path}") from None
    except OSError as exc:
        raise SuiteFileError(f"cannot read {path}: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SuiteFormatError(f"{path} is not valid JSON: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise SuiteFormatError(f"{path}: expected a JSON object with 'queries', not {type(data).__name__}")
    return data


def _query_list(path: Path, data: Mapping[str, Any]) -> list[Any]:
    raw = data.get("queries")
    if not isinstance(raw, list) or not raw:
        raise SuiteFormatError(f"{path}: expected a non-empty 'queries' list")
    return raw


def _records(path: Path, data: Mapping[str, Any], record: type[_R]) -> list[_R]:
    out = []
    for i, item in enumerate(_query_list(path, data)):
        try:
            out.append(record.model_validate(item))
        except ValidationError as exc:
            raise SuiteFormatError(f"{path}: query #{i}: {_first_error(exc)}") from None
    ids = [getattr(q, "id", None) for q in out]
    dupes = sorted({i for i in ids if ids.count(i) > 1}, key=str)
    if dupes:
        raise SuiteFormatError(f"{path}: duplicate query ids {dupes}")
    return out


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "record"
    more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {err['msg']}{more}"


def _scenes(path: Path, data: Mapping[str, Any]) -> dict[str, ImplicitScene]:
    raw = data.get("scenes", {})
    if not isinstance(raw, dict):
        raise SuiteFormatError(f"{path}: 'scenes' is an object of scene id -> scene")
    scenes = {}
    for sid, scene in raw.items():
        if not isinstance(scene, dict):
            raise SuiteFormatError(f"{path}: scene {sid} is not an object")
        try:
            scenes[sid] = ImplicitScene.model_validate({**scene, "id": sid})
        except ValidationError as exc:
            raise SuiteFormatError(f"{path}: scene {sid}: {_first_error(exc)}") from None
    return scenes


def _adapt_v1(path: Path, raw: list[Any]) -> tuple[list[Any], dict[str, ImplicitScene]]:
    """v1 queries carry no scene and no gold tools: they are v2's scene A, so both come from the v2
    file next to it when it is there (matched by id and text); otherwise the gold tools follow the
    v2 rules (belief questions need the belief tool and must not read the target's private state)."""
    v2_path = next(
        (path.parent / f for f in RELEASE_FILES["implicit-v2"] if (path.parent / f).is_file()), None
    )
    scenes: dict[str, ImplicitScene] = {}
    v2_by_id: dict[Any, Mapping[str, Any]] = {}
    if v2_path is not None:
        v2 = _read_json(v2_path)
        all_scenes = _scenes(v2_path, v2)
        if V1_SCENE in all_scenes:
            scenes = {V1_SCENE: all_scenes[V1_SCENE]}
        v2_by_id = {q.get("id"): q for q in _query_list(v2_path, v2) if isinstance(q, dict)}
    adapted = []
    for item in raw:
        if not isinstance(item, dict):
            adapted.append(item)  # rejected by the record validation with its position
            continue
        twin = v2_by_id.get(item.get("id"))
        if twin is not None and twin.get("query") == item.get("query") and twin.get("scene") == V1_SCENE:
            gold, forbidden = twin.get("gold_required_tools", []), twin.get("forbidden_tools", [])
        else:
            gold, forbidden = derived_gold_tools(item)
        adapted.append({"scene": V1_SCENE, "gold_required_tools": gold, "forbidden_tools": forbidden, **item})
    return adapted, scenes


def derived_gold_tools(item: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(gold_required_tools, forbidden_tools) for a query without them, by the v2 file's rules."""
    implicit = [str(r) for r in item.get("implicit_requires", [])]
    literal = [str(r) for r in item.get("literal_requires", [])]
    if any(r.startswith(BELIEF_PREFIX) for r in implicit):
        return ["get_agent_belief_about"], ["get_agent_private_state"]
    lead = []
    if item.get("agent_subject") is None:
        lead = ["get_all_agents"] if "all_agents_action" in literal else ["get_nearby_agents"]
    return [*lead, "get_agent_private_state"], []


def _check_factual(path: Path, name: SuiteName, queries: Sequence[Query]) -> None:
    for q in queries:
        if not q.query.strip():
            raise SuiteFormatError(f"{path}: query {q.id} has empty text")
        if name == "factual" and isinstance(q, FactualQuery) and q.category not in FACTUAL_CATEGORIES:
            raise SuiteFormatError(f"{path}: query {q.id} has unknown category {q.category!r}")
        if isinstance(q, PrivacyQuery):
            _check_tools(path, q.id, (*q.allowed_tools, *q.forbidden_tools))
            both = sorted(set(q.allowed_tools) & set(q.forbidden_tools))
            if both:
                raise SuiteFormatError(f"{path}: query {q.id} both allows and forbids {both}")


def _check_tools(path: Path, qid: int, tools: Sequence[str]) -> None:
    unknown = sorted(set(tools) - RELEASE_TOOLS)
    if unknown:
        raise SuiteFormatError(f"{path}: query {qid} names unknown tools {unknown}")


def _check_implicit(
    path: Path, queries: Sequence[ImplicitQuery], scenes: Mapping[str, ImplicitScene]
) -> None:
    """Gold fields that point into the scene: the scene exists, its agents exist, and a
    second-order query's belief path names its own target."""
    for q in queries:
        _check_tools(path, q.id, (*q.gold_required_tools, *q.forbidden_tools))
        belief_paths = [r for r in q.implicit_requires if r.startswith(BELIEF_PREFIX)]
        if q.subcategory == "second_order":
            if q.agent_subject is None or q.target is None:
                raise SuiteFormatError(f"{path}: second-order query {q.id} needs agent_subject and target")
            if not belief_paths or any(p.split(".")[1] != q.target for p in belief_paths):
                raise SuiteFormatError(
                    f"{path}: query {q.id}: implicit_requires must be beliefs about {q.target}"
                )
        if not scenes:
            continue
        scene = scenes.get(q.scene)
        if scene is None:
            raise SuiteFormatError(f"{path}: query {q.id} names unknown scene {q.scene!r}")
        for who in (q.agent_subject, q.target):
            if who is not None and who not in scene.public_state:
                raise SuiteFormatError(f"{path}: query {q.id}: {who!r} is not in scene {q.scene}")
        if belief_paths and q.agent_subject is not None and q.target is not None:
            held = scene.beliefs_about_others.get(q.agent_subject, {})
            if q.target not in held:
                raise SuiteFormatError(
                    f"{path}: query {q.id}: {q.agent_subject} holds no belief about {q.target} in {q.scene}"
                )


# ---------------------------------------------------------------- scenes and snapshots


def probe_scene(
    suite: Suite,
    scene_id: str,
    *,
    asker: str | None = None,
    definition: TownDefinition | None = None,
) -> ProbeScene:
    """The implicit-intent scene ``scene_id`` as the state the probe registry serves."""
    scene = suite.scenes.get(scene_id)
    if scene is None:
        known = ", ".join(sorted(suite.scenes)) or "none"
        raise SuiteError(f"suite {suite.name} has no scene {scene_id!r} (scenes: {known})")
    try:
        return scene_from_aura_v2(scene.as_v2(), scene_id=scene_id, asker=asker, definition=definition)
    except SceneError as exc:
        raise SuiteError(f"{suite.source}: {exc}") from None


class PairedSnapshot(_Record):
    """One capture of a live town, replayed read-only to every condition of a query position."""

    seed: int
    tick: int
    world_digest: str
    scene: ProbeScene

    @property
    def digest(self) -> str:
        return scene_digest(self.scene)


def scene_digest(scene: ProbeScene) -> str:
    """sha256 of the scene's canonical JSON: equal scenes, equal digests."""
    canonical = json.dumps(scene.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def paired_snapshots(
    definition: TownDefinition, seed: int, ticks: Sequence[int], *, asker: str | None = None
) -> list[PairedSnapshot]:
    """One town (scheduled minds, no model), stepped once through ``ticks`` (ascending, >= 0),
    captured at each: the snapshot for each query position."""
    if any(t < 0 for t in ticks) or list(ticks) != sorted(ticks):
        raise SuiteError(f"snapshot ticks must be ascending and non-negative, not {list(ticks)}")
    town = Town(definition, seed)
    out = []
    for tick in ticks:
        town.step(tick - town.tick)
        try:
            scene = scene_from_town(definition, town.state, town.mind_states, asker=asker)
        except SceneError as exc:
            raise SuiteError(str(exc)) from None
        out.append(PairedSnapshot(seed=seed, tick=tick, world_digest=town.digest(), scene=scene))
    return out


def paired_snapshot(
    definition: TownDefinition, seed: int, tick: int, *, asker: str | None = None
) -> PairedSnapshot:
    """The town ``definition`` with ``seed`` stepped to ``tick`` and captured once."""
    return paired_snapshots(definition, seed, [tick], asker=asker)[0]
