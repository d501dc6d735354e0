"""``registry.<episode>``: the probe registry of one episode, serving its workspace and app tools.

Unlike the town's registries it is stateful: it owns the episode's app state (workspace files,
simulated apps, outbox, schedule), a snapshot of that state taken when each session starts, and
the authoritative tool history the graders read. The runtime persists all of it (in Redis, on
the redis bus) with the acknowledgement of each call, so a restarted process resumes with the
state every acknowledged call left; a redelivered call is recognised by its id and not rerun.

Every call, refused or not, is audited on ``registry.audit`` like the town's registries.

The apps are our built-in ones, or AppWorld's own (``apps``: ``actors.appworld.AppWorldApps``):
then app calls go to the AppWorld process, the state keeps AppWorld's tables as they are after
each call, and AppWorld is loaded with this registry's world whenever it holds another. When the
AppWorld process dies during a call, it is restarted, the session's snapshot is put back and the
interruption is counted (``StateDiffData.backend_restarts``), so the runner runs the session again.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING

import structlog
from pydantic import BaseModel

from actors.appworld._errors import AppWorldUnavailable
from actors.roles.registry import AUDIT_TOPIC
from actors.runtime import Context, StatefulActor, on
from messages.episodes import (
    FilesData,
    GetStateDiff,
    GetToolHistory,
    ReadFiles,
    RegistryAck,
    RestoreSnapshot,
    SeedWorkspace,
    StateDiffData,
    ToolHistory,
    ToolRecord,
    TurnStarted,
)
from messages.probes import (
    JsonObject,
    ListTools,
    ProbeCall,
    ProbeOutcome,
    ProbePolicy,
    ProbeResult,
    ToolList,
    plain_json,
)
from messages.town import Rejected
from world.episodes.apps import EnvState, EpisodeTools, merge_app_state, new_state, state_diff
from world.episodes.apps.seed import WorldSeed, seed_apps
from world.episodes.assistant import record_of
from world.probes.registry import make_outcome

if TYPE_CHECKING:
    from actors.appworld import AppWorldApps

log = structlog.get_logger("auratown.episode.registry")


class EpisodeRegistryState(BaseModel):
    env: EnvState = EnvState()
    snapshots: dict[str, EnvState] = {}
    history: list[ToolRecord] = []
    seeded: bool = False
    turn: int = 0
    """The turn of the current session that calls answer (``TurnStarted``)."""
    revision: int = 0
    """Counts changes of ``env.apps`` (an AppWorld backend holds the world of one revision)."""
    backend_restarts: dict[str, int] = {}
    """Session -> times the app backend died during it since its snapshot was last put back."""


def _plain_args(args: object) -> JsonObject:
    try:
        return plain_json(dict(args)) if isinstance(args, dict) else {}  # type: ignore[return-value]
    except ValueError:
        return {}


class EpisodeRegistryActor(StatefulActor[EpisodeRegistryState]):
    state_model = EpisodeRegistryState

    def __init__(
        self,
        policy: ProbePolicy | None = None,
        *,
        seed: WorldSeed | None = None,
        offered: Iterable[str] | None = None,
        apps: AppWorldApps | None = None,
    ):
        """``seed``: the persona's app world; ``offered``: the app tools its tools.yaml offers;
        ``apps``: AppWorld's apps (None: the built-in ones)."""
        self.apps = apps
        if apps is not None and offered is None:
            offered = apps.default_offered()
        self.tools = EpisodeTools(policy, offered=offered, app_tools=apps.tools if apps else None)
        self.world_seed = seed
        # Who holds AppWorld's world: a new instance (a restarted process) never matches an old one.
        self.owner = uuid.uuid4().hex
        super().__init__()

    def initial_state(self) -> EpisodeRegistryState:
        seed = self.world_seed
        if self.apps is not None:
            start = None if seed is None else seed.start_time
            env = new_state(start_time=start).model_copy(
                update={"apps": self.apps.seed(seed, (self.owner, 0))}
            )
            return EpisodeRegistryState(env=env)
        if seed is None:
            return EpisodeRegistryState(env=new_state())
        return EpisodeRegistryState(env=new_state(seed_apps(seed), start_time=seed.start_time))

    def _changed_apps(self) -> None:
        self.state.revision += 1

    @on(ListTools)
    def list_tools(self, ctx: Context, msg: ListTools) -> ToolList:
        return self.tools.tool_list(msg.policy)

    @on(ProbeCall)
    def call(self, ctx: Context, msg: ProbeCall) -> ProbeResult | Rejected:
        if msg.registry != "episode":
            return Rejected(reason=f"{ctx.address} serves the episode registry, not {msg.registry!r}")
        caller = msg.caller or ctx.envelope.sender
        if self.apps is None:
            outcome, env = self.tools.call(self.state.env, caller, msg.tool, msg.args, policy=msg.policy)
        else:
            try:
                outcome, env = self._call_appworld(caller, msg)
            except AppWorldUnavailable as exc:
                return self._backend_died(ctx, caller, msg, exc)
        result = ProbeResult.of(outcome)
        self.state.env = env
        record = record_of(result, task_id=env.task_id, seq=len(self.state.history))
        self.state.history.append(record.model_copy(update={"turn": self.state.turn}))
        ctx.publish(AUDIT_TOPIC, outcome.audit)
        log.info("tool", caller=caller, tool=outcome.tool, status=outcome.status, task=env.task_id)
        return result

    def _call_appworld(self, caller: str, msg: ProbeCall) -> tuple[ProbeOutcome, EnvState]:
        apps = self.apps
        assert apps is not None
        with apps.lock:
            apps.sync((self.owner, self.state.revision), self.state.env)
            apps.take_changed()
            outcome, env = self.tools.call(self.state.env, caller, msg.tool, msg.args, policy=msg.policy)
            if apps.take_changed():
                self._changed_apps()
                apps.committed((self.owner, self.state.revision))
        return outcome, env

    def _backend_died(self, ctx: Context, caller: str, msg: ProbeCall, exc: Exception) -> ProbeResult:
        """AppWorld died during the call: restart it, put the session's snapshot back, count it."""
        apps = self.apps
        assert apps is not None
        task = self.state.env.task_id
        log.warning("the AppWorld service died during a call", tool=msg.tool, task=task, error=str(exc))
        restarted = "restarted"
        try:
            apps.restart()
        except AppWorldUnavailable as again:
            restarted = f"could not be restarted ({again})"
        snap = self.state.snapshots.get(task)
        if snap is not None:
            self.state.env = snap
            self._changed_apps()
        self.state.backend_restarts[task] = self.state.backend_restarts.get(task, 0) + 1
        outcome = make_outcome(
            "episode",
            caller,
            msg.tool,
            msg.tool,
            _plain_args(msg.args),
            status="unavailable",
            error=f"the AppWorld service died during this call and was {restarted}; "
            "the session will be run again from its snapshot"[:500],
        )
        ctx.publish(AUDIT_TOPIC, outcome.audit)
        result = ProbeResult.of(outcome)
        record = record_of(result, task_id=task, seq=len(self.state.history))
        self.state.history.append(record.model_copy(update={"turn": self.state.turn}))
        return result

    def _merge_task_apps(self, msg: SeedWorkspace) -> EnvState:
        env = self.state.env
        apps = self.apps
        if apps is None:
            return merge_app_state(env, msg.app_state)
        if not msg.app_state:
            # In the shared world other units may have changed it since: the session starts from now.
            return env.model_copy(update={"apps": apps.current()}) if apps.shared_world else env
        with apps.lock:
            tables = apps.merge(dict(msg.app_state), (self.owner, self.state.revision), env)
            self._changed_apps()
            apps.committed((self.owner, self.state.revision))
        return env.model_copy(update={"apps": tables})

    @on(SeedWorkspace)
    def seed(self, ctx: Context, msg: SeedWorkspace) -> RegistryAck:
        env = self._merge_task_apps(msg)
        # An asset replaces what the workspace had at its path, text or binary.
        files = {p: t for p, t in env.files.items() if p not in msg.binaries}
        files.update(msg.files)
        binaries = {p: b for p, b in env.binaries.items() if p not in msg.files}
        binaries.update(msg.binaries)
        delivered = set(msg.delivered)
        scheduled = [
            {**item, "status": "delivered", "delivered_in": msg.task_id}
            if item.get("id") in delivered
            else item
            for item in env.scheduled
        ]
        env = env.model_copy(
            update={
                "files": files,
                "binaries": binaries,
                "task_id": msg.task_id,
                "clock": msg.sim_time,
                "scheduled": scheduled,
            }
        )
        self.state.env = env
        self.state.turn = 0
        self.state.snapshots[msg.task_id] = env
        self.state.seeded = True
        return RegistryAck(label=msg.task_id, files=len(files), records=len(self.state.history))

    @on(TurnStarted)
    def turn_started(self, ctx: Context, msg: TurnStarted) -> None:
        if msg.task_id == self.state.env.task_id:
            self.state.turn = msg.turn

    @on(RestoreSnapshot)
    def restore(self, ctx: Context, msg: RestoreSnapshot) -> RegistryAck | Rejected:
        snap = self.state.snapshots.get(msg.label)
        if snap is None:
            return Rejected(
                reason=f"no snapshot {msg.label!r}; taken: {', '.join(self.state.snapshots) or 'none'}"
            )
        self.state.env = snap
        self.state.turn = 0
        self._changed_apps()
        self.state.backend_restarts.pop(msg.label, None)
        # Calls made after the snapshot belong to the session being redone: they are forgotten with it.
        self.state.history = [r for r in self.state.history if r.task_id != msg.label]
        return RegistryAck(label=msg.label, files=len(snap.files), records=len(self.state.history))

    @on(GetStateDiff)
    def diff(self, ctx: Context, msg: GetStateDiff) -> StateDiffData | Rejected:
        env = self.state.env
        state = env.model_dump(mode="json", exclude={"files", "binaries"})
        if not msg.since:
            return StateDiffData(since="", state=state)
        snap = self.state.snapshots.get(msg.since)
        if snap is None:
            return Rejected(reason=f"no snapshot {msg.since!r}")
        return StateDiffData(
            since=msg.since,
            changes=tuple(state_diff(snap, env)),
            state=state,
            backend_restarts=self.state.backend_restarts.get(msg.since, 0),
        )

    @on(ReadFiles)
    def read_files(self, ctx: Context, msg: ReadFiles) -> FilesData:
        files = self.state.env.files
        binaries = self.state.env.binaries
        found = {p: files[p] for p in msg.paths if p in files}
        # A judge reads text: a binary file is named, not shown.
        found.update(
            {
                p: f"[binary file {p}: {len(base64.b64decode(binaries[p]))} bytes]"
                for p in msg.paths
                if p in binaries
            }
        )
        return FilesData(files=found, missing=tuple(p for p in msg.paths if p not in found))

    @on(GetToolHistory)
    def history(self, ctx: Context, msg: GetToolHistory) -> ToolHistory:
        records = self.state.history
        if msg.task_id is not None:
            records = [r for r in records if r.task_id == msg.task_id]
        return ToolHistory(records=tuple(records))
