"""The environment agent's I/O side: the model-backed backend and the bus probe client."""

from actors.aura._backends import BackendFactory, make_backend_factory
from actors.aura._bus_probes import BusProbes
from actors.aura._embedding import EmbeddingReader, EmbeddingUnavailableError, reader_from_setting
from actors.aura._llm_backend import LLMBackend

__all__ = [
    "BackendFactory",
    "BusProbes",
    "EmbeddingReader",
    "EmbeddingUnavailableError",
    "LLMBackend",
    "make_backend_factory",
    "reader_from_setting",
]
