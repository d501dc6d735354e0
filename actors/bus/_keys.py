"""Redis key layout of one namespace (a town or an episode).

Every key of a namespace carries the same hash tag ``{NAMESPACE}``, so multi-key commands and
Lua scripts work on Redis Cluster (all keys of a namespace hash to one slot).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NAMESPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$")
_ADDRESS = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:\-]{0,199}$")

INBOX_GROUP = "inbox"
"""Consumer group of every inbox stream: the processes hosting an address compete in it."""

DEFAULT_PREFIX = "auratown"


class InvalidNameError(ValueError):
    """A namespace, address or topic name that cannot be used as part of a key."""


def check_namespace(namespace: str) -> str:
    if not _NAMESPACE.match(namespace):
        raise InvalidNameError(
            f"invalid namespace {namespace!r}: use letters, digits and _ . : - (at most 128)"
        )
    return namespace


def check_address(address: str, what: str = "address") -> str:
    if not _ADDRESS.match(address):
        raise InvalidNameError(f"invalid {what} {address!r}: use letters, digits and _ . : - (at most 200)")
    return address


@dataclass(frozen=True)
class KeyLayout:
    namespace: str
    prefix: str = DEFAULT_PREFIX

    def __post_init__(self) -> None:
        check_namespace(self.namespace)

    @property
    def base(self) -> str:
        return f"{self.prefix}:{{{self.namespace}}}"

    def inbox(self, address: str) -> str:
        return f"{self.base}:inbox:{check_address(address)}"

    def topic(self, name: str) -> str:
        return f"{self.base}:topic:{check_address(name, 'topic')}"

    @property
    def dead_letters(self) -> str:
        """The runtime's dead-letter stream: written only by the runtime (operator) Redis user."""
        return f"{self.base}:dlq"

    def agent_dead_letters(self, identity: str) -> str:
        """An attached agent's own dead-letter stream (its ACL keeps it out of ``dead_letters``)."""
        return f"{self.base}:dlq:{check_identity(identity)}"

    @property
    def dead_letter_secret(self) -> str:
        """The key of the secret that signs the runtime's dead letters (no agent may read it)."""
        return f"{self.base}:secret:dlq"

    def state(self, address: str) -> str:
        return f"{self.base}:state:{check_address(address)}"

    def seen(self, address: str) -> str:
        """Recently processed message ids of an idempotent actor."""
        return f"{self.base}:seen:{check_address(address)}"

    @property
    def presence(self) -> str:
        return f"{self.base}:presence"

    def alive(self, process_id: str) -> str:
        return f"{self.base}:alive:{process_id}"

    def kv(self, name: str) -> str:
        """A free key of the namespace, for actors' own data (snapshots, counters)."""
        return f"{self.base}:kv:{name}"

    def owns(self, key: str) -> bool:
        return key.startswith(self.base + ":")

    def address_of_inbox(self, stream: str) -> str:
        head = f"{self.base}:inbox:"
        if not stream.startswith(head):
            raise InvalidNameError(f"{stream!r} is not an inbox of namespace {self.namespace!r}")
        return stream[len(head) :]


REPLY_PREFIX = "_reply."


def reply_address(process_id: str) -> str:
    """The address whose inbox receives the answers to a process's asks."""
    return f"{REPLY_PREFIX}{process_id}"


def control_address(process_id: str) -> str:
    """A process's own control inbox, used to wake its reader."""
    return f"_ctl.{process_id}"


_IDENTITY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_]{0,63}$")


def check_identity(identity: str) -> str:
    """An attached agent's identity (its Redis ACL user): letters, digits and ``_`` only, so
    that the ACL's key patterns of one identity (``_reply.IDENT.*``) never match another's."""
    if not _IDENTITY.match(identity):
        raise InvalidNameError(
            f"invalid identity {identity!r}: use letters, digits and _ (at most 64, not starting with _)"
        )
    return identity


def identity_process_id(identity: str, process_id: str) -> str:
    """The process id an attached agent's bus must use under its ACL: ``IDENT.<unique>``, so its
    reply streams (``_reply.IDENT.…``), control inbox and liveness key fall under its own patterns."""
    return f"{check_identity(identity)}.{process_id}"


IDENTITY_BOUND_PREFIXES = ("registry:",)
"""Addresses ``PREFIX + IDENT`` served for one identity only (the identity-bound probe registry)."""


def bound_identity(address: str) -> str | None:
    """The identity an address is bound to (``registry:IDENT``), or None for any other address."""
    for prefix in IDENTITY_BOUND_PREFIXES:
        if address.startswith(prefix):
            return address[len(prefix) :]
    return None


def reply_to_problem(receiver: str, reply_to: str) -> str | None:
    """Why ``receiver`` must not answer at ``reply_to`` (None if it may).

    A reply goes only to a reply stream (``_reply.…``), never to an actor's inbox (whose writer
    would otherwise get the receiver's rights); at an identity-bound address (``registry:IDENT``),
    only to a reply stream of that identity's own processes (``_reply.IDENT.…``).
    """
    if not reply_to.startswith(REPLY_PREFIX) or not _ADDRESS.match(reply_to):
        return f"reply_to {reply_to[:200]!r} is not a reply stream ({REPLY_PREFIX}...)"
    identity = bound_identity(receiver)
    if identity is not None and not reply_to.startswith(f"{REPLY_PREFIX}{identity}."):
        return f"reply_to {reply_to[:200]!r} is not a reply stream of identity {identity!r} ({receiver})"
    return None
