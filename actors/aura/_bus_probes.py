"""A ``ProbeClient`` that asks the ``registry`` actor over the bus."""

from __future__ import annotations

from typing import Any

from actors.bus import AskTimeoutError, RemoteError
from actors.runtime import Context
from messages.probes import ListTools, ProbeCall, ProbeResult, ProbeScene, RegistryName, ToolList
from world.aura import ProbeReply, ToolInfo, tool_infos
from world.aura._scene import reply_of


class ProbeUnavailableError(RuntimeError):
    """The registry did not answer in time. Raised, not recorded as an "unavailable" probe: the
    process holding the call may have died, and the handler's retry asks again (a live registry
    answers), so a crash never silently changes an answer."""


class BusProbes:
    def __init__(
        self,
        ctx: Context,
        *,
        registry: RegistryName,
        caller: str,
        asker: str | None,
        scene: ProbeScene | None,
        address: str = "registry",
        timeout: float = 10.0,
    ) -> None:
        self.ctx = ctx
        self.registry = registry
        self.caller = caller
        self.asker = asker
        self.scene = scene
        self.address = address
        self.timeout = timeout
        self._tools: list[ToolInfo] | None = None

    def tools(self) -> list[ToolInfo]:
        """The tools the registry's policy allows (the planner never sees a denied one)."""
        if self._tools is None:
            reply = self.ctx.ask(self.address, ListTools(registry=self.registry), timeout=self.timeout)
            if not isinstance(reply, ToolList):
                raise TypeError(f"{self.address} answered ListTools with {type(reply).__name__}")
            allowed = set(reply.allowed)
            self._tools = tool_infos([s for s in reply.specs if s.name in allowed])
        return self._tools

    def call(self, tool: str, args: dict[str, Any]) -> ProbeReply:
        msg = ProbeCall(
            tool=tool,
            args=args,
            caller=self.caller,
            registry=self.registry,
            scene=self.scene,
            asker=self.asker,
        )
        try:
            reply = self.ctx.ask(self.address, msg, timeout=self.timeout)
        except AskTimeoutError as exc:
            raise ProbeUnavailableError(f"{self.address} did not answer {tool} in {self.timeout:g}s") from exc
        except RemoteError as exc:  # the registry answered with an error: part of the trace
            return ProbeReply(tool, "unavailable", None, f"{type(exc).__name__}: {exc}")
        if not isinstance(reply, ProbeResult):
            return ProbeReply(tool, "unavailable", None, f"unexpected reply {type(reply).__name__}")
        return reply_of(reply)
