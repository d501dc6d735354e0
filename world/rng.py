"""Seeded randomness derived from the town's seed: no global random state, no order dependence.

Each use draws from a generator keyed by (seed, purpose, ...), so an agent's draw does not depend
on how many draws other agents made first, in this process or another.
"""

from __future__ import annotations

import hashlib
import random


def derive_rng(seed: int, *parts: object) -> random.Random:
    return random.Random("|".join([str(seed), *map(str, parts)]))


def stable_int(seed: int, *parts: object) -> int:
    """A 64-bit integer fixed by the seed and the parts (cheaper than a generator for one draw)."""
    key = "|".join([str(seed), *map(str, parts)]).encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")
