"""The environment agent's I/O side: the model-backed backend and the bus probe client."""

from actors.aura._backends import BackendFactory, make_backend_factory
from actors.aura._bus_probes import BusProbes
from actors.aura._llm_backend import LLMBackend

__all__ = ["BackendFactory", "BusProbes", "LLMBackend", "make_backend_factory"]
