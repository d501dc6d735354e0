"""Dead-lettering: what can never be handled goes to the dead-letter stream, with its reason.

A delivery is kept from its actor when it cannot be decoded (the decoder's reason) or when it was
delivered more often than the bus allows without being acknowledged (``max_attempts``: its
handler keeps killing the process, say). Whatever the host or another middleware rejects later
(a handler's last failure, a ``PermanentError``, effects that cannot be encoded) is written here
too: ``Bus.dead_letter`` acknowledges the entry in the same step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actors.bus import Delivery
from actors.runtime._middleware import Middleware, Rejected

if TYPE_CHECKING:
    from actors.runtime._host import Host


class DeadLetters(Middleware):
    def before_dispatch_message(self, host: Host, delivery: Delivery) -> None:
        if delivery.error is not None:
            raise Rejected(delivery.error.reason, delivery.error.detail)
        if delivery.attempt > host.bus.max_attempts:
            raise Rejected("max_attempts", f"delivered {delivery.attempt} times without being acknowledged")

    def reject_message(self, host: Host, delivery: Delivery, reason: str, detail: str) -> None:
        host.bus.dead_letter(delivery, reason, detail)
