"""Content-addressed response cache: the same request gets the same answer without a model call.

A key is the sha256 of everything that shapes the answer (model, endpoint, sampling settings,
seed, messages and, for structured calls, the schema), so a rerun with the same inputs is
reproducible and free, and changing any of them misses the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from actors.llm._stages import StageSettings

if TYPE_CHECKING:
    from actors.bus import Transport

CACHE_VERSION = 1
"""Part of every key: bump it when the entry format changes so old entries are ignored."""


class ResponseCache(Protocol):
    def get(self, key: str) -> dict[str, Any] | None: ...

    def put(self, key: str, entry: dict[str, Any]) -> None: ...


def cache_key(
    *,
    model: str,
    api_base: str | None,
    settings: StageSettings,
    seed: int | None,
    messages: list[dict[str, str]],
    schema: tuple[str, dict[str, Any]] | None = None,
) -> str:
    payload = {
        "v": CACHE_VERSION,
        "model": model,
        "api_base": api_base,
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
        "seed": seed,
        "messages": messages,
        "schema": None if schema is None else {"name": schema[0], "json_schema": schema[1]},
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _decode(raw: bytes | str) -> dict[str, Any] | None:
    try:
        entry = json.loads(raw)
    except ValueError:
        return None  # a torn or foreign value is a miss, never an error
    return entry if isinstance(entry, dict) else None


class DiskCache:
    """One JSON file per entry under ``directory`` (fanned out by the key's first two digits).

    Writes go to a temporary file renamed into place, so a reader (or another process writing
    the same key) never sees half an entry.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            raw = self._path(key).read_bytes()
        except OSError:
            return None
        return _decode(raw)

    def put(self, key: str, entry: dict[str, Any]) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:8]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(json.dumps(entry, sort_keys=True).encode())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


class TransportCache:
    """Entries as plain keys of the bus transport (Redis or memory), inside the namespace's hash
    tag, so every process of a town shares one cache."""

    def __init__(self, transport: Transport, namespace: str, *, ttl_ms: int | None = None) -> None:
        from actors.bus import KeyLayout  # the bus pulls in pydantic; keep `import actors.llm` light

        self.transport = transport
        self.keys = KeyLayout(namespace)
        self.ttl_ms = ttl_ms

    def key(self, key: str) -> str:
        return self.keys.kv(f"llm-cache:{key}")

    def get(self, key: str) -> dict[str, Any] | None:
        raw = self.transport.get(self.key(key))
        return None if raw is None else _decode(raw)

    def put(self, key: str, entry: dict[str, Any]) -> None:
        self.transport.set(self.key(key), json.dumps(entry, sort_keys=True).encode(), ttl_ms=self.ttl_ms)
