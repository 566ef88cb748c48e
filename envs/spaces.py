"""Gymnasium spaces for text agents."""

from __future__ import annotations

import string
from typing import Any

from gymnasium.spaces import Text

# What `sample()` draws from; `contains` accepts any Unicode text.
_SAMPLE_CHARSET = string.ascii_letters + string.digits + string.punctuation + " \n"


class AnyText(Text):
    """A Text space that contains any `str` up to `max_length` characters (model output and tool
    observations are arbitrary Unicode). Being a `Text` subclass keeps gymnasium's vector-env
    batching working."""

    def __init__(self, max_length: int, *, seed: int | None = None) -> None:
        super().__init__(max_length=max_length, min_length=0, charset=_SAMPLE_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"AnyText({self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AnyText) and other.max_length == self.max_length

    def __hash__(self) -> int:
        return hash(("AnyText", self.max_length))
