"""A procedural town of N agents and M locations, for scale tests and benchmarks.

Locations sit on a lattice of 6x6 blocks (a 3x3 place in each), a quarter of them or more homes
of up to four agents; every agent works at one of the workplaces near its home and follows a
schedule built from its workplace's type. The same (agents, locations, seed) gives the same town.
"""

from __future__ import annotations

import math
from typing import Any

from world.definition import TownDefinition
from world.rng import derive_rng

BLOCK = 6
AGENTS_PER_HOME = 4

_WORK: dict[str, tuple[str, str]] = {
    # type: (morning action, afternoon action)
    "cafe": ("serving breakfast customers", "serving coffee"),
    "bakery": ("baking bread", "selling pastries"),
    "shop": ("stocking shelves", "selling groceries"),
    "library": ("researching in the archive", "working at the desk"),
    "school": ("teaching a class", "grading papers"),
    "pharmacy": ("filling prescriptions", "handling deliveries"),
    "gallery": ("hanging a new exhibition", "working at the front desk"),
    "townhall": ("working on permits", "attending a council meeting"),
    "teahouse": ("brewing tea", "serving tea"),
}
_OPEN = ("park", "square")
_GIVEN = (
    "Ada",
    "Bo",
    "Cai",
    "Dana",
    "Eli",
    "Fang",
    "Gus",
    "Hui",
    "Ines",
    "Jun",
    "Kai",
    "Lena",
    "Min",
    "Noor",
)
_FAMILY = ("Zhou", "Okafor", "Silva", "Kim", "Novak", "Haddad", "Ito", "Moreau", "Park", "Singh", "Lund")
_INTERESTS = (
    "music",
    "gardening",
    "chess",
    "poetry",
    "cooking",
    "cycling",
    "history",
    "film",
    "football",
    "astronomy",
    "knitting",
    "photography",
)


def generate_town(n_agents: int, n_locations: int | None = None, seed: int = 0) -> TownDefinition:
    if n_agents < 1:
        raise ValueError("a town needs at least one agent")
    n_homes = math.ceil(n_agents / AGENTS_PER_HOME)
    m = n_locations if n_locations is not None else max(20, n_homes * 2)
    if m < n_homes + 2:
        raise ValueError(f"{n_agents} agents need at least {n_homes + 2} locations ({n_homes} homes)")
    rng = derive_rng(seed, "generate", n_agents, m)
    side = math.ceil(math.sqrt(m))
    blocks = [(bx, by) for by in range(side) for bx in range(side)]
    rng.shuffle(blocks)
    blocks = blocks[:m]

    n_open = max(1, (m - n_homes) // 3)
    kinds = ["home"] * n_homes + list(_OPEN) * (n_open // 2 + 1)
    kinds = kinds[: n_homes + n_open]
    work_types = list(_WORK)
    while len(kinds) < m:
        kinds.append(work_types[(len(kinds) - n_homes - n_open) % len(work_types)])

    locations: list[dict[str, Any]] = []
    by_kind: dict[str, list[int]] = {}
    for i, ((bx, by), kind) in enumerate(zip(blocks, kinds, strict=True)):
        is_open = kind in _OPEN
        locations.append(
            {
                "name": f"{kind.capitalize()} {i + 1}",
                "type": kind,
                "x": bx * BLOCK + 1,
                "y": by * BLOCK + 1,
                "width": 4 if is_open else 3,
                "height": 4 if is_open else 3,
                "capacity": 40 if is_open else (AGENTS_PER_HOME if kind == "home" else 12),
                "owner": None,
                "description": f"A generated {kind}.",
            }
        )
        group = "home" if kind == "home" else ("open" if is_open else "work")
        by_kind.setdefault(group, []).append(i)

    def near(home: int, group: str) -> int:
        hx, hy = blocks[home]
        sample = rng.sample(by_kind[group], min(8, len(by_kind[group])))
        return min(sample, key=lambda j: (abs(blocks[j][0] - hx) + abs(blocks[j][1] - hy), j))

    agents = []
    for a in range(n_agents):
        home = by_kind["home"][a // AGENTS_PER_HOME]
        work = near(home, "work") if "work" in by_kind else home
        park = near(home, "open")
        home_name, work_name, park_name = (locations[j]["name"] for j in (home, work, park))
        kind = locations[work]["type"]
        morning, afternoon = _WORK.get(kind, ("working", "working"))
        name = f"{rng.choice(_GIVEN)} {rng.choice(_FAMILY)} {a + 1}"
        if locations[home]["owner"] is None:
            locations[home]["owner"] = name
        agents.append(
            {
                "name": name,
                "age": rng.randint(18, 80),
                "occupation": kind,
                "personality": rng.choice(("warm", "quiet", "curious", "practical", "wry")),
                "home": home_name,
                "workplaces": [work_name],
                "unspoken_goal": f"finding more time for {rng.choice(_INTERESTS)}",
                "interests": rng.sample(_INTERESTS, 3),
                "schedule": [
                    {"start": "06:00", "location": home_name, "action": "waking up"},
                    {"start": "08:00", "location": work_name, "action": morning},
                    {
                        "start": "12:00",
                        "location": park_name,
                        "action": "eating lunch outside",
                        "alternatives": [{"location": work_name, "action": "eating lunch at work"}],
                    },
                    {"start": "13:30", "location": work_name, "action": afternoon},
                    {
                        "start": "17:30",
                        "location": park_name,
                        "action": "walking in the park",
                        "alternatives": [{"location": home_name, "action": "reading at home"}],
                    },
                    {"start": "19:30", "location": home_name, "action": "cooking dinner"},
                    {"start": "22:00", "location": home_name, "action": "sleeping"},
                ],
            }
        )
    return TownDefinition.model_validate(
        {
            "name": f"Generated town ({n_agents} agents, {m} locations, seed {seed})",
            "width": side * BLOCK,
            "height": side * BLOCK,
            "locations": locations,
            "agents": agents,
        }
    )
