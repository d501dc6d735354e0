"""``registry``: the probe registry actor. Stateless, so any number may serve the address.

It runs the pure registries of ``world.probes``: the policy is checked before anything else,
so a denied call reads nothing (not even the live town) and runs nothing. Every call, refused
or not, is published as an ``AuditRecord`` on ``registry.audit`` in the same commit as the
reply: an audit is never lost while its answer went out, nor sent for an answer that did not.

A call without an inline scene reads the live town: ``world`` answers ``GetProbeScene``; a tool
that reads memories gets them from the asker's own actor (``agent.<slug>``, ``GetMindState``).

Identity binding. The town's own ``registry`` trusts the ``caller`` its callers declare (env and
the town agents run on the operator's side). An attached agent calls ``registry:IDENT`` instead:
an inbox only IDENT's Redis ACL user may write to (``auratown acl``), served by a registry
actor bound to IDENT. There the policy is IDENT's (``PolicyTable``, ``auratown daemon
--policy-file``; public tools only without one), the declared ``caller`` is ignored, no point of
view is taken from it, an ``asker`` must be granted (``act_as``), and every audit records IDENT.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

import structlog

from actors.bus import AskTimeoutError, RemoteError
from actors.bus._keys import check_identity
from actors.runtime import Actor, Context, on
from messages.probes import (
    PUBLIC_ONLY,
    REGISTRY_NAMES,
    GetProbeScene,
    IdentityPolicy,
    ListTools,
    PolicyTable,
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

if TYPE_CHECKING:
    from actors.runtime import Host

log = structlog.get_logger("auratown.registry")

REGISTRY = "registry"
AUDIT_TOPIC = "registry.audit"
WORLD = "world"
IDENTITY_REGISTRY_PREFIX = "registry:"
"""``registry:IDENT``: the registry address of one attached identity (``:`` never occurs in an
episode registry's ``registry.<key>``, so no ACL pattern of one matches the other)."""
_NOBODY = ""
"""The caller an identity's call runs as: a name no agent has, so no point of view is taken from it."""


def identity_registry_address(identity: str) -> str:
    return IDENTITY_REGISTRY_PREFIX + check_identity(identity)


def identity_probe_policies(policy: IdentityPolicy) -> dict[RegistryName, ProbePolicy]:
    """Each town registry's policy for an identity: its globs, and every private tool denied
    (by all its names) unless the policy grants private tools."""
    out: dict[RegistryName, ProbePolicy] = {}
    for name in REGISTRY_NAMES:
        specs = [] if policy.private else registry(name).specs()
        private = tuple(n for spec in specs if spec.private for n in spec.names)
        out[name] = ProbePolicy(allow=policy.allow, deny=(*policy.deny, *private))
    return out


def _may_act_as(policy: IdentityPolicy, *names: str | None) -> bool:
    return any(fnmatchcase(n.casefold(), p.casefold()) for p in policy.act_as for n in names if n is not None)


class RegistryActor(Actor):
    def __init__(
        self,
        policies: Mapping[RegistryName, ProbePolicy] | None = None,
        *,
        registries: Mapping[RegistryName, ProbeRegistry] | None = None,
        timeout: float = 10.0,
        identity: str | None = None,
        identity_policy: IdentityPolicy | None = None,
    ) -> None:
        """``policies``: each registry's own policy (default: allow all); a call may only narrow
        it. ``registries``: registries to serve instead of the standard ones (tests, custom
        tools). ``timeout``: seconds to wait for the world or an agent when reading the live town.
        ``identity``: bind this actor to one attached identity (see ``for_identity``)."""
        self.identity = None if identity is None else check_identity(identity)
        self.identity_policy = identity_policy or PUBLIC_ONLY
        if self.identity is not None:
            if policies is not None:
                raise ValueError("an identity's registry takes its policy from identity_policy")
            policies = identity_probe_policies(self.identity_policy)
        policies = policies or {}
        self.registries: dict[RegistryName, ProbeRegistry] = {
            name: registry(name, policies.get(name)) for name in REGISTRY_NAMES
        }
        for name, reg in (registries or {}).items():
            # An identity's policy holds for custom registries too; otherwise they keep their own.
            self.registries[name] = reg.with_policy(policies[name]) if self.identity is not None else reg
        self.timeout = timeout

    @classmethod
    def for_identity(
        cls, identity: str, policy: IdentityPolicy | None = None, *, timeout: float = 10.0
    ) -> RegistryActor:
        """The registry of ``registry:IDENT``: every call is IDENT's, under IDENT's policy
        (public tools only when ``policy`` is None)."""
        return cls(identity=identity, identity_policy=policy, timeout=timeout)

    @on(ListTools)
    def list_tools(self, ctx: Context, msg: ListTools) -> ToolList:
        return self.registries[msg.registry].tool_list(msg.policy)

    @on(ProbeCall)
    def call(self, ctx: Context, msg: ProbeCall) -> ProbeResult:
        reg = self.registries[msg.registry]
        caller = (msg.caller or ctx.envelope.sender) if self.identity is None else _NOBODY
        prepared = reg.prepare(caller, msg.tool, msg.args, asker=msg.asker, policy=msg.policy)
        if isinstance(prepared, ProbeOutcome):
            outcome = prepared  # refused: unknown, denied or invalid; nothing was read or run
        elif self.identity is not None and msg.asker and not _may_act_as(self.identity_policy, msg.asker):
            outcome = self._not_as(reg, prepared, msg.asker)
        elif msg.scene is not None:
            outcome = reg.execute(prepared, msg.scene)  # the caller's own scene: nothing live is read
        else:
            outcome = self._live(ctx, reg, prepared)
        if self.identity is not None:
            outcome = self._stamped(outcome, self.identity)
            caller = self.identity
        ctx.publish(AUDIT_TOPIC, outcome.audit)
        log.info(
            "probe",
            caller=caller,
            identity=self.identity,
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
        if self.identity is not None and prepared.asker:
            view = perspective(scene, prepared.caller, prepared.asker).asker
            slug = None if view is None else scene.agents[view].slug
            if view is not None and not _may_act_as(self.identity_policy, view, slug):
                return self._not_as(reg, prepared, view)
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

    def _not_as(self, reg: ProbeRegistry, prepared: PreparedCall, asker: str) -> ProbeOutcome:
        why = f"identity {self.identity!r} may not take {asker!r}'s point of view (its policy's act_as)"
        return reg.refuse(prepared, "denied", why)

    @staticmethod
    def _stamped(outcome: ProbeOutcome, identity: str) -> ProbeOutcome:
        audit = outcome.audit.model_copy(update={"caller": identity, "identity": identity})
        return outcome.model_copy(update={"audit": audit})


def spawn_identity_registries(host: Host, table: PolicyTable, identities: Iterable[str] = ()) -> list[str]:
    """Host ``registry:IDENT`` for every identity of ``table`` and of ``identities`` (the latter
    under the table's default policy unless it lists them); returns the addresses."""
    spawned = []
    for identity in sorted({*table.identities, *identities}):
        policy = table.policy_for(identity)
        address = identity_registry_address(identity)
        host.spawn(_identity_factory(identity, policy), address, pooled=RegistryActor.pooled)
        spawned.append(address)
    return spawned


def _identity_factory(identity: str, policy: IdentityPolicy) -> Callable[[], RegistryActor]:
    return lambda: RegistryActor.for_identity(identity, policy)
