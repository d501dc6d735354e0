"""``registry.<episode>``: the probe registry of one episode, serving its workspace and app tools.

Unlike the town's registries it is stateful: it owns the episode's app state (workspace files,
simulated apps, outbox, schedule), a snapshot of that state taken when each session starts, and
the authoritative tool history the graders read. The runtime persists all of it (in Redis, on
the redis bus) with the acknowledgement of each call, so a restarted process resumes with the
state every acknowledged call left; a redelivered call is recognised by its id and not rerun.

Every call, refused or not, is audited on ``registry.audit`` like the town's registries.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable

import structlog
from pydantic import BaseModel

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
from messages.probes import ListTools, ProbeCall, ProbePolicy, ProbeResult, ToolList
from messages.town import Rejected
from world.episodes.apps import EnvState, EpisodeTools, merge_app_state, new_state, state_diff
from world.episodes.apps.seed import WorldSeed, seed_apps
from world.episodes.assistant import record_of

log = structlog.get_logger("auratown.episode.registry")


class EpisodeRegistryState(BaseModel):
    env: EnvState = EnvState()
    snapshots: dict[str, EnvState] = {}
    history: list[ToolRecord] = []
    seeded: bool = False
    turn: int = 0
    """The turn of the current session that calls answer (``TurnStarted``)."""


class EpisodeRegistryActor(StatefulActor[EpisodeRegistryState]):
    state_model = EpisodeRegistryState

    def __init__(
        self,
        policy: ProbePolicy | None = None,
        *,
        seed: WorldSeed | None = None,
        offered: Iterable[str] | None = None,
    ):
        """``seed``: the persona's app world; ``offered``: the app tools its tools.yaml offers."""
        self.tools = EpisodeTools(policy, offered=offered)
        self.world_seed = seed
        super().__init__()

    def initial_state(self) -> EpisodeRegistryState:
        seed = self.world_seed
        if seed is None:
            return EpisodeRegistryState(env=new_state())
        return EpisodeRegistryState(env=new_state(seed_apps(seed), start_time=seed.start_time))

    @on(ListTools)
    def list_tools(self, ctx: Context, msg: ListTools) -> ToolList:
        return self.tools.tool_list(msg.policy)

    @on(ProbeCall)
    def call(self, ctx: Context, msg: ProbeCall) -> ProbeResult | Rejected:
        if msg.registry != "episode":
            return Rejected(reason=f"{ctx.address} serves the episode registry, not {msg.registry!r}")
        caller = msg.caller or ctx.envelope.sender
        outcome, env = self.tools.call(self.state.env, caller, msg.tool, msg.args, policy=msg.policy)
        result = ProbeResult.of(outcome)
        self.state.env = env
        record = record_of(result, task_id=env.task_id, seq=len(self.state.history))
        self.state.history.append(record.model_copy(update={"turn": self.state.turn}))
        ctx.publish(AUDIT_TOPIC, outcome.audit)
        log.info("tool", caller=caller, tool=outcome.tool, status=outcome.status, task=env.task_id)
        return result

    @on(SeedWorkspace)
    def seed(self, ctx: Context, msg: SeedWorkspace) -> RegistryAck:
        env = merge_app_state(self.state.env, msg.app_state)
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
        return StateDiffData(since=msg.since, changes=tuple(state_diff(snap, env)), state=state)

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
