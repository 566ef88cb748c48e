"""What the templates of several apps share: money as people write it, and amounts to ask for."""

from __future__ import annotations

import random

from toolgym.authoring.generate import Skip


def money(value: float) -> str:
    """1234.5 -> "1,234.50" (an answer alias "1234.50" matches it: numbers compare as numbers)."""
    return f"{value:,.2f}"


def plain(value: float) -> str:
    """1234.5 -> "1234.50": the alias of an amount in an answer spec."""
    return f"{value:.2f}"


def round_amount(rng: random.Random, low: int, high: int, step: int = 5) -> int:
    """A whole amount a person would type: low..high in steps of `step` (Skip when high < low)."""
    if high < low:
        raise Skip(f"no amount between {low} and {high}")
    return rng.randrange(low, high + 1, step)
