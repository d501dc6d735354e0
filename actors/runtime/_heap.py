"""Start-up heap handling for long-running hosts."""

from __future__ import annotations

import gc


def freeze_heap() -> int:
    """Exempt everything allocated so far from the cyclic garbage collector; returns how many
    objects that was.

    A host that has spawned a town holds a large heap that lives as long as the process: the town
    definition, the actors, their loaded state. Each full collection walked all of it again, and
    at 2000 agents collections took a tenth of a tick (``bench/town.py``). Objects freed later
    are still freed by reference counting; only reference cycles among them would be kept, and
    start-up leaves none that matter. Call it once, after spawning, from a process's entry
    point (``auratown daemon`` does): it is process-wide.
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
