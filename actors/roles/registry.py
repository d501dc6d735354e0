"""``registry``: the probe registry actor. Stateless, so any number may serve the address.

It runs the pure registries of ``world.probes``: the policy is checked before anything else,
so a denied call reads nothing (not even the live town) and runs nothing. Every call, refused
or not, is published as an ``AuditRecord`` on ``registry.audit`` in the same commit as the
reply: an audit is never lost while its answer went out, nor sent for an answer that did not.

A call without an inline scene reads the live town: ``world`` answers ``GetProbeScene``; a tool
that reads memories gets them from the asker's own actor (``agent.<slug>``, ``GetMindState``).
"""

from __future__ import annotations

from collections.abc import Mapping

import structlog

from actors.bus import AskTimeoutError, RemoteError
from actors.runtime import Actor, Context, on
from messages.probes import (
    REGISTRY_NAMES,
    GetProbeScene,
    ListTools,
    ProbeCall,
    ProbeOutcome,
    ProbePolicy,
    ProbeResult,
    ProbeScene,
    ProbeSceneData,
    RegistryName,
    ToolList,
)
from messages.town import GetMindState, MindStateData, Rejected
from world import AgentMindState
from world.probes import PreparedCall, ProbeRegistry, memory_facts, perspective, registry

log = structlog.get_logger("auratown.registry")

REGISTRY = "registry"
AUDIT_TOPIC = "registry.audit"
WORLD = "world"


class RegistryActor(Actor):
    def __init__(
        self,
        policies: Mapping[RegistryName, ProbePolicy] | None = None,
        *,
        registries: Mapping[RegistryName, ProbeRegistry] | None = None,
        timeout: float = 10.0,
    ) -> None:
        """``policies``: each registry's own policy (default: allow all); a call may only narrow
        it. ``registries``: registries to serve instead of the standard ones (tests, custom
        tools). ``timeout``: seconds to wait for the world or an agent when reading the live town."""
        policies = policies or {}
        self.registries: dict[RegistryName, ProbeRegistry] = {
            name: registry(name, policies.get(name)) for name in REGISTRY_NAMES
        }
        self.registries.update(registries or {})
        self.timeout = timeout

    @on(ListTools)
    def list_tools(self, ctx: Context, msg: ListTools) -> ToolList:
        return self.registries[msg.registry].tool_list(msg.policy)

    @on(ProbeCall)
    def call(self, ctx: Context, msg: ProbeCall) -> ProbeResult:
        reg = self.registries[msg.registry]
        caller = msg.caller or ctx.envelope.sender
        prepared = reg.prepare(caller, msg.tool, msg.args, asker=msg.asker, policy=msg.policy)
        if isinstance(prepared, ProbeOutcome):
            outcome = prepared  # refused: unknown, denied or invalid; nothing was read or run
        elif msg.scene is not None:
            outcome = reg.execute(prepared, msg.scene)
        else:
            outcome = self._live(ctx, reg, prepared)
        ctx.publish(AUDIT_TOPIC, outcome.audit)
        log.info(
            "probe",
            caller=caller,
            tool=outcome.tool,
            status=outcome.status,
            disclosure=outcome.disclosure,
            chars=outcome.audit.result_chars,
        )
        return ProbeResult.of(outcome)

    def _live(self, ctx: Context, reg: ProbeRegistry, prepared: PreparedCall) -> ProbeOutcome:
        try:
            reply = ctx.ask(WORLD, GetProbeScene(include_private=True), timeout=self.timeout)
        except (AskTimeoutError, RemoteError) as exc:
            return reg.refuse(prepared, "unavailable", f"the town did not answer: {type(exc).__name__}")
        if not isinstance(reply, ProbeSceneData):
            why = reply.reason if isinstance(reply, Rejected) else f"answered {reply.message_type}"
            return reg.refuse(prepared, "unavailable", f"the town refused the scene: {why}")
        scene = reply.scene
        if prepared.spec.needs_memories:
            with_memories = self._with_memories(ctx, scene, prepared)
            if isinstance(with_memories, str):
                return reg.refuse(prepared, "unavailable", with_memories)
            scene = with_memories
        return reg.execute(prepared, scene)

    def _with_memories(self, ctx: Context, scene: ProbeScene, prepared: PreparedCall) -> ProbeScene | str:
        """The scene plus the asker's memories, read from its own actor; or why they could not be
        read (never an empty memory passed off as the agent's)."""
        asker = perspective(scene, prepared.caller, prepared.asker).asker
        slug = None if asker is None else scene.agents[asker].slug
        if asker is None or slug is None or asker in scene.memories:
            return scene  # no asker: the tool itself reports that it needs one
        try:
            reply = ctx.ask(f"agent.{slug}", GetMindState(), timeout=self.timeout)
        except (AskTimeoutError, RemoteError) as exc:
            return f"agent.{slug} did not hand over its memories: {type(exc).__name__}"
        if not isinstance(reply, MindStateData):
            return f"agent.{slug} answered {reply.message_type}, not its mind state"
        mind = AgentMindState.model_validate_json(reply.data)
        memories = {**scene.memories, asker: [memory_facts(i) for i in mind.memory.items]}
        return scene.model_copy(update={"memories": memories})
