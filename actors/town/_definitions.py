"""Reading town definition files: the project's embedded town, or a file (ours or the AURA map)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from world import TownDefinition, TownDefinitionError, parse_town

EMBEDDED_TOWN = "auratown.json"


def embedded_town() -> TownDefinition:
    """AURATown as this project defines it (``world/towns/auratown.json``)."""
    text = resources.files("world").joinpath("towns", EMBEDDED_TOWN).read_text(encoding="utf-8")
    return parse_town(json.loads(text))


def load_town(path: str | Path | None) -> TownDefinition:
    """A town from a JSON file; a map without agents (the AURA release's ``town_map.json``) gets
    the embedded town's agents, whose homes and workplaces must exist on that map."""
    if path is None:
        return embedded_town()
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TownDefinitionError(f"cannot read town file {p}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise TownDefinitionError(f"town file {p} is not valid JSON: {exc}") from None
    agents = None if isinstance(data, dict) and "agents" in data else embedded_town().agents
    return parse_town(data, agents=agents)
