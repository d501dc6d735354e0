"""Golden fixtures: committed bytes keep decoding, and encoding stays byte-stable."""

from __future__ import annotations

import pytest

from messages import decode, encode
from tests.golden.cases import CASES, HERE


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_bytes_decode_to_the_expected_envelope(name: str) -> None:
    data = (HERE / name).read_bytes()
    assert decode(data) == CASES[name]


@pytest.mark.parametrize("name", sorted(CASES))
def test_encoding_is_byte_stable(name: str) -> None:
    assert encode(CASES[name]) == (HERE / name).read_bytes()


def test_every_system_message_has_a_golden_fixture() -> None:
    covered = {decode((HERE / n).read_bytes()).type for n in CASES}
    assert {"sys.ping", "sys.pong", "sys.error"} <= covered
