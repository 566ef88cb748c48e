"""What the templates share: money as people write it, and amounts a person would type."""

from __future__ import annotations

import random

import pytest

from toolgym.authoring.generate import Skip
from toolgym.authoring.templates.common import money, plain, round_amount
from toolgym.tasks import alias_found


def test_money_reads_as_the_plain_alias() -> None:
    assert money(1234.5) == "1,234.50" and plain(1234.5) == "1234.50"
    assert alias_found(f"you have ${money(1234.5)} left", plain(1234.5))


def test_round_amounts_and_an_empty_range() -> None:
    rng = random.Random(0)
    amounts = {round_amount(rng, 10, 100, 5) for _ in range(50)}
    assert amounts <= set(range(10, 101, 5)) and len(amounts) > 5
    with pytest.raises(Skip):
        round_amount(rng, 50, 20)
