"""Episode budgets (toolgym.envs.budgets): tokens, cost and wall time stop an episode, named."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from toolgym.actions import ToolCall
from toolgym.cli import app
from toolgym.envs.budgets import Budget, BudgetMeter, Price, PriceTableError, load_price_table, price_of
from toolgym.envs.demo import default_task_paths, resolve_task_set
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.reports.report import collect_report_data, render_report
from toolgym.running.config import BudgetOptions, LLMOptions, RunConfig
from toolgym.running.plan import episode_budget
from toolgym.running.trials import RunSummary, load_task_index
from toolgym.tasks import Task
from toolgym.trace import read_trace

MTU = resolve_task_set("mtu")
BALANCE = ToolCall(name="get_account_balance", arguments={"account_number": "123456"})


def test_a_cost_budget_needs_a_price_and_prices_read_from_text() -> None:
    with pytest.raises(ValidationError, match="needs the model's price"):
        Budget(cost=0.1)
    assert Price.model_validate("2.5, 10") == Price(prompt=2.5, completion=10.0)
    with pytest.raises(ValidationError, match="PROMPT,COMPLETION"):
        Price.model_validate("2.5")
    meter = BudgetMeter(Budget(cost=0.001, price=Price(prompt=2.0, completion=8.0)))
    meter.charge(prompt_tokens=300, completion_tokens=50)
    assert meter.cost == pytest.approx((300 * 2.0 + 50 * 8.0) / 1e6) and meter.over() is None
    meter.charge(prompt_tokens=200)
    assert meter.over() == "cost"
    with pytest.raises(ValueError, match="never negative"):
        meter.charge(seconds=-1.0)


def test_an_episode_over_its_token_budget_ends_truncated_with_the_budget_named() -> None:
    task = MTU["mtu-balance-002"]
    env = ToolEnv(tasks=MTU, budget=Budget(tokens=100))
    env.reset(options={"task": task.id})
    env.charge(prompt_tokens=60, completion_tokens=30)
    _, _, terminated, truncated, info = env.step(BALANCE)
    assert not terminated and not truncated  # 90 of 100
    env.charge(prompt_tokens=20)
    _, reward, terminated, truncated, info = env.step(BALANCE)
    assert truncated and not terminated and info["budget"] == "tokens"
    assert info["scores"]["budget_stop"] == 1.0 and reward == 0.0  # scored on what it did: no answer


def test_without_a_budget_charges_change_nothing() -> None:
    env = ToolEnv(tasks=MTU)
    env.reset(options={"task": "mtu-balance-002"})
    env.charge(prompt_tokens=10**9)
    _, _, terminated, truncated, info = env.step(BALANCE)
    assert not terminated
    assert not truncated and "budget" not in info and env.meter is None


@dataclass
class _Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0


@dataclass
class SpendingAgent:
    """Calls the balance tool forever; each turn 'spends' 40 prompt + 10 completion tokens."""

    name: str = "spender"
    usage: _Usage = field(default_factory=_Usage)

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        self.usage = _Usage()

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        self.usage.prompt_tokens += 40
        self.usage.completion_tokens += 10
        return BALANCE


def test_the_runner_charges_each_turn_of_the_agents_usage(tmp_path: Path) -> None:
    env = ToolEnv(tasks=MTU, budget=Budget(tokens=120), max_steps=10)
    result = run_episode(env, SpendingAgent(), MTU["mtu-balance-002"], trace_dir=tmp_path)
    assert result.steps == 3 and result.scores["budget_stop"] == 1.0  # 50, 100, 150 > 120
    end = read_trace(result.trace_path).end  # type: ignore[arg-type]
    assert end is not None and end.status == "truncated" and end.budget == "tokens"


def test_run_takes_budgets_and_records_them(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["run", "--tasks", "mtu", "--task-id", "mtu-transfer-011", "--budget-seconds", "0.000001"]
    result = CliRunner().invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "budget stops: 1 of them" in result.output
    assert RunSummary.load(out).settings["budget"] == {"seconds": 0.000001}
    page = render_report(collect_report_data(out, load_task_index(default_task_paths())))
    assert "budget stops (episodes past a token, cost or time budget)" in page
    [trace] = out.rglob("*.jsonl")
    end = json.loads(trace.read_text(encoding="utf-8").splitlines()[-1])
    assert end["budget"] == "seconds" and end["status"] == "truncated" and end["steps"] == 1
    scored = CliRunner().invoke(app, ["eval", str(out), "--suite", "mtu"])  # eval counts them apart
    assert scored.exit_code == 0 and "budget_stops 1" in scored.output
    payload = json.loads((out / "eval.fixed.json").read_text(encoding="utf-8"))
    assert payload["results"]["mtu"]["counts"]["budget_stops"] == 1
    assert "stopped by a budget" in payload["results"]["mtu"]["notes"][0]
    bad = CliRunner().invoke(app, [*args[:-2], "--budget-cost", "0.1", "--out", str(tmp_path / "bad")])
    assert bad.exit_code == 2 and "price" in bad.output
    plain = CliRunner().invoke(app, [*args[:-2], "--out", str(tmp_path / "plain")])
    assert plain.exit_code == 0
    [trace] = (tmp_path / "plain").rglob("*.jsonl")
    assert "budget" not in json.loads(trace.read_text(encoding="utf-8").splitlines()[-1])
    priced = ["--budget-cost", "0.1", "--price", "2.5,10", "--out", str(tmp_path / "priced")]
    assert CliRunner().invoke(app, [*args[:-2], *priced]).exit_code == 0
    assert RunSummary.load(tmp_path / "priced").settings["budget"]["price"] == {
        "prompt": 2.5,
        "completion": 10.0,
    }


def test_a_price_table_prices_the_runs_model(tmp_path: Path) -> None:
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"gpt-x": "2.5,10", "small": {"prompt": 0.1, "completion": 0.4}}))
    prices = load_price_table(table)
    assert price_of(prices, "gpt-x") == Price(prompt=2.5, completion=10.0)
    assert price_of(prices, "org/small") == Price(prompt=0.1, completion=0.4)  # a server's org/model
    with pytest.raises(PriceTableError, match="no price for model 'other'; it prices: gpt-x, small"):
        price_of(prices, "other")
    llm = RunConfig(
        agent="llm", llm=LLMOptions(model="org/small"), budget=BudgetOptions(cost=0.1, price_table=table)
    )
    budget = episode_budget(llm)
    assert budget is not None and budget.price == Price(prompt=0.1, completion=0.4) and budget.cost == 0.1
    # `--price` wins over the table
    given = llm.budget.model_copy(update={"price": Price(prompt=1, completion=1)})
    assert episode_budget(llm.model_copy(update={"budget": given})).price == Price(prompt=1, completion=1)  # type: ignore[union-attr]
    for bad, said in (
        ("[]", "a JSON object"),
        ("{", "not JSON"),
        ('{"m": "1"}', "m: a price is PROMPT,COMPLETION"),
    ):
        table.write_text(bad)
        with pytest.raises(PriceTableError, match=said):
            load_price_table(table)


def test_run_refuses_a_price_table_that_cannot_price_its_model(tmp_path: Path) -> None:
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"gpt-x": "2.5,10"}))
    args = ["run", "--tasks", "mtu", "--task-id", "mtu-transfer-011", "--out", str(tmp_path / "r")]
    result = CliRunner().invoke(app, [*args, "--budget-cost", "0.1", "--price-table", str(table)])
    assert result.exit_code == 2 and "--price-table" in result.output and "names none" in result.output
    assert not (tmp_path / "r").exists()
