"""Asks to an episode registry (``registry.<unit>``) over the bus: its tool list and its calls.

Blocking, bounded by the ask timeout: the MCP server runs them in worker threads. Every call is a
``ProbeCall(registry="episode")`` named after the caller, so the registry's policy, its audit on
``registry.audit`` and its authoritative history apply to MCP calls as to any other.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from actors.bus import AskTimeoutError, Bus, RemoteError
from actors.mcp._tools import ServedTools, served_tools
from messages.probes import ListTools, ProbeCall, ProbeResult, ToolList


class RegistryUnavailable(RuntimeError):
    """The registry did not list its tools (no answer in time, or a refusal)."""


@dataclass(frozen=True)
class Unanswered:
    """A call the registry did not answer: nothing is known to have run."""

    status: str
    error: str


class RegistryClient:
    def __init__(self, bus: Bus, *, caller: str, timeout: float = 30.0) -> None:
        self.bus = bus
        self.caller = caller
        self.timeout = timeout
        self._listings: dict[str, ServedTools] = {}
        self._lock = threading.Lock()

    def tools(self, address: str) -> ServedTools:
        """The tools ``address`` offers (asked once: a registry's tools never change)."""
        with self._lock:
            known = self._listings.get(address)
        if known is not None:
            return known
        try:
            reply = self.bus.ask(
                address, ListTools(registry="episode"), timeout=self.timeout, sender=self.caller
            )
        except AskTimeoutError:
            raise RegistryUnavailable(f"{address} did not list its tools within {self.timeout:g}s") from None
        except RemoteError as exc:
            raise RegistryUnavailable(f"{address} could not list its tools: {exc}") from None
        if not isinstance(reply, ToolList):
            why = getattr(reply, "reason", reply.message_type)
            raise RegistryUnavailable(f"{address} answered the tool list with {why}")
        listing = served_tools(reply)
        with self._lock:
            self._listings[address] = listing
        return listing

    def cached(self, address: str) -> ServedTools | None:
        with self._lock:
            return self._listings.get(address)

    def call(self, address: str, tool: str, args: dict[str, Any]) -> ProbeResult | Unanswered:
        request = ProbeCall(registry="episode", tool=tool, args=args, caller=self.caller)
        try:
            reply = self.bus.ask(address, request, timeout=self.timeout, sender=self.caller)
        except AskTimeoutError:
            return Unanswered("unavailable", f"{address} did not answer within {self.timeout:g}s")
        except RemoteError as exc:
            return Unanswered("unavailable", f"{address} failed the call: {exc}")
        if not isinstance(reply, ProbeResult):
            why = getattr(reply, "reason", reply.message_type)
            return Unanswered("unavailable", f"{address} refused the call: {why}")
        return reply
