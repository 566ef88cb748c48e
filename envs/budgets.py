"""Episode budgets: tokens, wall time and cost an episode may spend before it is stopped.

    env = ToolEnv(tools, tasks, budget=Budget(tokens=20_000, seconds=120, cost=0.05,
                                              price=Price(prompt=2.5, completion=10.0)))
    env.charge(prompt_tokens=812, completion_tokens=64, seconds=1.9)   # a model turn, before step

The env adds each step's own wall time; the runner charges each model turn from the agent's
usage (`usage`: prompt and completion tokens, seconds in requests). After a step that leaves the
episode over a budget, the episode ends `truncated`, scored on what it did, with the budget named
in `info["budget"]`, `scores["budget_stop"]` and the trace's end record. Token and cost budgets
repeat at temperature 0; a wall-time budget depends on the machine (it is not reproducible).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from toolgym.jsonl import read_json_file

BUDGET_KINDS = ("tokens", "cost", "seconds")  # checked in this order: the first one over is named


class Price(BaseModel):
    """What a model's tokens cost, in USD per million tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt: float = Field(ge=0)
    completion: float = Field(ge=0)

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        """ "PROMPT,COMPLETION" (the command line's `--price 2.5,10`) as the two prices."""
        if isinstance(value, str):
            parts = value.split(",")
            if len(parts) != 2:
                raise ValueError(f"a price is PROMPT,COMPLETION in USD per million tokens, not {value!r}")
            return {"prompt": parts[0].strip(), "completion": parts[1].strip()}
        return value


class PriceTableError(ValueError):
    """A price table that cannot be read, or that does not price the run's model."""


def load_price_table(path: Path) -> dict[str, Price]:
    """A price table: a JSON object of model name -> "PROMPT,COMPLETION" or {"prompt": P,
    "completion": C}, USD per million tokens (the user's own figures: prices change)."""
    data = read_json_file(path, "price table", PriceTableError)
    if not isinstance(data, dict) or not data:
        raise PriceTableError(
            f"price table {path}: a JSON object of model name -> price, not {type(data).__name__}"
        )
    table: dict[str, Price] = {}
    for model, price in data.items():
        try:
            table[str(model)] = Price.model_validate(price)
        except ValidationError as exc:
            reason = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
            raise PriceTableError(f"price table {path}: {model}: {reason}") from None
    return table


def price_of(table: dict[str, Price], model: str) -> Price:
    """The model's price in the table: its exact name, else the longest name it ends with (a
    server's `org/model` under the table's `model`)."""
    if model in table:
        return table[model]
    found = sorted((name for name in table if model.endswith(f"/{name}")), key=len)
    if found:
        return table[found[-1]]
    raise PriceTableError(
        f"the price table has no price for model {model!r}; it prices: {', '.join(sorted(table))}"
    )


class Budget(BaseModel):
    """What one episode may spend; None: no limit of that kind."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tokens: int | None = Field(default=None, ge=1, description="prompt + completion tokens")
    seconds: float | None = Field(default=None, gt=0, description="wall time: model turns and steps")
    cost: float | None = Field(default=None, gt=0, description="USD, from `price`")
    price: Price | None = Field(default=None, description="the episode's model's price (needed for cost)")

    @model_validator(mode="after")
    def _cost_needs_a_price(self) -> Budget:
        if self.cost is not None and self.price is None:
            raise ValueError(
                "a cost budget needs the model's price (prompt and completion, USD per 1M tokens)"
            )
        return self


@dataclass
class Spent:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class BudgetMeter:
    """One episode's spending against its budget."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.spent = Spent()

    def charge(self, *, prompt_tokens: int = 0, completion_tokens: int = 0, seconds: float = 0.0) -> None:
        if prompt_tokens < 0 or completion_tokens < 0 or seconds < 0:
            raise ValueError("a charge is never negative")
        self.spent.prompt_tokens += prompt_tokens
        self.spent.completion_tokens += completion_tokens
        self.spent.seconds += seconds

    @property
    def cost(self) -> float:
        price = self.budget.price
        if price is None:
            return 0.0
        return (
            self.spent.prompt_tokens * price.prompt + self.spent.completion_tokens * price.completion
        ) / 1e6

    def over(self) -> str | None:
        """The first budget spent past its limit ("tokens", "cost", "seconds"), else None."""
        spent = {"tokens": float(self.spent.tokens), "cost": self.cost, "seconds": self.spent.seconds}
        for kind in BUDGET_KINDS:
            limit = getattr(self.budget, kind)
            if limit is not None and spent[kind] > limit:
                return kind
        return None

    def record(self) -> dict[str, Any]:
        """What was spent, as the trace keeps it (seconds are wall time: not reproducible)."""
        return {
            "prompt_tokens": self.spent.prompt_tokens,
            "completion_tokens": self.spent.completion_tokens,
            "cost": round(self.cost, 8),
        }
