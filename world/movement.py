"""Movement on the grid: Manhattan steps, at most ``SPEED`` cells per tick, x first then y."""

from __future__ import annotations

import math

from world.definition import Location
from world.rng import stable_int

SPEED = 3


def spot(seed: int, slug: str, loc: Location) -> tuple[int, int]:
    """The cell inside ``loc`` this agent goes to: fixed per (seed, agent, location)."""
    i = stable_int(seed, "spot", slug, loc.name) % (loc.width * loc.height)
    return loc.x + i % loc.width, loc.y + i // loc.width


def distance(a: tuple[int, int], b: tuple[int, int]) -> int:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


def travel_ticks(a: tuple[int, int], b: tuple[int, int], speed: int = SPEED) -> int:
    return math.ceil(distance(a, b) / speed)


def step_towards(pos: tuple[int, int], goal: tuple[int, int], speed: int = SPEED) -> tuple[int, int]:
    x, y = pos
    budget = speed
    dx = max(-budget, min(budget, goal[0] - x))
    x += dx
    budget -= abs(dx)
    dy = max(-budget, min(budget, goal[1] - y))
    return x, y + dy
