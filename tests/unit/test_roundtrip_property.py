"""Property: every registered message round-trips through the codec unchanged."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import tests.support.messages  # noqa: F401  (registers the test models too)
from messages import REGISTRY, Envelope, Message, decode, encode

MODELS = sorted(REGISTRY.models().items())

texts = st.text(max_size=40)
opt_text = st.none() | texts
times = st.floats(min_value=0, max_value=4e9, allow_nan=False)


# msgpack carries 64-bit integers; a larger one is an EncodeError (tested in test_codec).
st.register_type_strategy(int, st.integers(min_value=-(2**63), max_value=2**63 - 1))
# NaN is not JSON and never equals itself: free-form JSON fields (probe args and results) carry
# numbers, not NaN. Typed float fields bound themselves (ge/le), so NaN is rejected there anyway.
st.register_type_strategy(float, st.floats(allow_nan=False))


def payloads(model: type[Message]) -> st.SearchStrategy[Message]:
    def build(kwargs: dict[str, Any]) -> Message | None:
        try:
            return model(**kwargs)
        except ValidationError:
            return None

    fields = {name: st.from_type(f.annotation) for name, f in model.model_fields.items()}  # type: ignore[arg-type]
    return st.fixed_dictionaries({}, optional=fields).map(build).filter(lambda m: m is not None)  # type: ignore[return-value]


@pytest.mark.parametrize(("name", "model"), MODELS, ids=[n for n, _ in MODELS])
# 25 examples per message type: the nested episode models make each example costly, and the
# suite's ten minutes are shared; every type still meets every field, including the optional.
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data())
def test_every_registered_message_round_trips(name: str, model: type[Message], data: st.DataObject) -> None:
    payload = data.draw(payloads(model))
    assume(payload is not None)
    env = Envelope(
        id=data.draw(st.text(min_size=1, max_size=32)),
        sender=data.draw(texts),
        recipient=data.draw(st.text(min_size=1, max_size=32)),
        namespace=data.draw(st.text(min_size=1, max_size=32)),
        wall_time=data.draw(times),
        payload=payload,
        correlation_id=data.draw(opt_text),
        reply_to=data.draw(opt_text),
        causation_id=data.draw(opt_text),
        sim_time=data.draw(st.none() | times),
        attempt=data.draw(st.integers(min_value=1, max_value=1000)),
        deadline=data.draw(st.none() | times),
        trace=data.draw(st.dictionaries(texts, texts, max_size=3)),
    )
    back = decode(encode(env))
    assert back == env
    assert back.type == name
    assert type(back.payload) is model


def test_the_registry_is_not_empty() -> None:
    assert {"sys.ping", "sys.pong", "sys.error"} <= set(REGISTRY.models())
