"""Registry of message models by (stable name, schema version), with upcasters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from messages._base import Message
from messages._errors import (
    MissingUpcasterError,
    RegistrationError,
    UnknownMessageTypeError,
    UnsupportedVersionError,
)

M = TypeVar("M", bound=type[Message])
Payload = dict[str, Any]
Upcaster = Callable[[Payload], Payload]


class MessageRegistry:
    """Maps stable message names to their current model and upcasters from older versions.

    The name is never the Python class path: classes can move without breaking the wire.
    """

    def __init__(self) -> None:
        self._models: dict[str, type[Message]] = {}
        self._upcasters: dict[tuple[str, int], Upcaster] = {}

    def register(self, name: str, version: int) -> Callable[[M], M]:
        """Class decorator registering a model as the current ``version`` of ``name``."""
        if not name or name != name.strip():
            raise RegistrationError(f"message name {name!r} must be a non-empty stripped string")
        if version < 1:
            raise RegistrationError(f"schema version of {name!r} must be >= 1, got {version}")

        def decorate(cls: M) -> M:
            if not issubclass(cls, Message):
                raise RegistrationError(f"{cls.__qualname__} must subclass messages.Message")
            existing = self._models.get(name)
            if existing is not None and existing is not cls:
                raise RegistrationError(
                    f"message name {name!r} is already registered to {existing.__qualname__}"
                )
            cls.message_type = name
            cls.schema_version = version
            self._models[name] = cls
            return cls

        return decorate

    def upcaster(self, name: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
        """Decorator registering a function that turns a ``from_version`` payload into the next."""

        def decorate(fn: Upcaster) -> Upcaster:
            key = (name, from_version)
            if key in self._upcasters:
                raise RegistrationError(f"upcaster for {name!r} v{from_version} already registered")
            self._upcasters[key] = fn
            return fn

        return decorate

    def model(self, name: str) -> type[Message]:
        try:
            return self._models[name]
        except KeyError:
            raise UnknownMessageTypeError(f"unknown message type {name!r}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._models

    def models(self) -> dict[str, type[Message]]:
        """Every registered model by name, sorted by name."""
        return dict(sorted(self._models.items()))

    def upcast(self, name: str, version: int, payload: Payload) -> tuple[type[Message], Payload]:
        """Bring a payload of ``version`` up to the registered model's version."""
        model = self.model(name)
        current = model.schema_version
        if version > current:
            raise UnsupportedVersionError(f"{name!r} v{version} is newer than the registered v{current}")
        while version < current:
            step = self._upcasters.get((name, version))
            if step is None:
                raise MissingUpcasterError(f"no upcaster for {name!r} from v{version} to v{current}")
            payload = step(dict(payload))
            version += 1
        return model, payload


REGISTRY = MessageRegistry()
"""The process-wide default registry that the ``message`` decorator fills."""


def message(name: str, version: int) -> Callable[[M], M]:
    """Register a model in the default registry: ``@message("town.tick", 1)``."""
    return REGISTRY.register(name, version)


def upcaster(name: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
    """Register an upcaster in the default registry."""
    return REGISTRY.upcaster(name, from_version)
