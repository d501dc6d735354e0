"""A ``ProbeClient`` that asks the ``registry`` actor over the bus."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from actors.bus import AskTimeoutError, RemoteError
from actors.runtime import Context
from messages.probes import ListTools, ProbeCall, ProbeResult, ProbeScene, RegistryName, ToolList
from world.aura import ProbeReply, ToolInfo, allowed_tools, reply_of


class ProbeUnavailableError(RuntimeError):
    """The registry did not answer in time. Raised, not recorded as an "unavailable" probe: the
    process holding the call may have died, and the handler's retry asks again (a live registry
    answers), so a crash never silently changes an answer."""


@dataclass(eq=False)
class BusProbes:
    """A ``ProbeClient`` whose registry is the actor at ``address``, asked from ``ctx``."""

    ctx: Context
    _: KW_ONLY
    registry: RegistryName
    caller: str
    asker: str | None
    scene: ProbeScene | None
    address: str = "registry"
    timeout: float = 10.0
    _tools: list[ToolInfo] | None = field(default=None, init=False, repr=False)

    def tools(self) -> list[ToolInfo]:
        if self._tools is None:
            listed = self.ctx.ask(
                self.address, ListTools(registry=self.registry), expect=ToolList, timeout=self.timeout
            )
            self._tools = allowed_tools(listed)
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
