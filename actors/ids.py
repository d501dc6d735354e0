"""Identifiers and wall-clock time for the runtime (the layers below take them as arguments)."""

from __future__ import annotations

import os
import socket
import time
import uuid


def new_id() -> str:
    """A fresh message or correlation id."""
    return uuid.uuid4().hex


def new_process_id() -> str:
    """A process id unique across machines: host, OS pid and a random suffix."""
    host = socket.gethostname().split(".")[0] or "host"
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in host)[:40]
    return f"{safe}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def wall_time() -> float:
    return time.time()
