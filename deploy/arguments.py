"""Argument types shared by the command line's parsers: a bad number is a one-line argparse error."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T", int, float)


def number(
    convert: Callable[[str], T], what: str, ok: Callable[[T], bool] | None = None, bound: str = ""
) -> Callable[[str], T]:
    """An argparse type: ``convert`` the text, then require ``ok`` (NaN fails any comparison)."""

    def parse(text: str) -> T:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if ok is not None and not ok(value):
            raise argparse.ArgumentTypeError(f"expected {bound}, got {text}")
        return value

    return parse


whole = number(int, "a whole number")
positive_int = number(int, "a whole number", lambda v: v >= 1, "a number >= 1")
non_negative_int = number(int, "a whole number", lambda v: v >= 0, "a number >= 0")
positive_seconds = number(
    float, "a number of seconds", lambda v: v > 0 and not math.isinf(v), "a positive number of seconds"
)
non_negative_float = number(float, "a number", lambda v: v >= 0, "a number >= 0")


def listen_address(text: str) -> tuple[str, int]:
    """An argparse type for ``HOST:PORT``, ``:PORT``, ``PORT`` or ``[V6]:PORT``."""
    from deploy.web.server import parse_address  # stdlib only, but keep start-up minimal

    try:
        return parse_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
