"""ToolEnv.step latency and protocol parse cost, side by side with the bare function call.

    python bench/bench_step.py [--n 5000]

Prints median, p99 and steps/s for: a bare Python call of the tool function (the floor), the same
call through ToolSet (validation + observation), and a full env.step with a pre-parsed action and
with raw ReAct text; for a trivial tool and for Calculator. Then the parse cost of each protocol.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from collections.abc import Callable
from typing import Any

from toolgym.actions import FinalAnswer, ToolCall
from toolgym.envs.tool_env import ToolEnv
from toolgym.files import FileStore
from toolgym.protocols import get_protocol
from toolgym.tasks import Task
from toolgym.tools import ToolContext, ToolSet, tool
from toolgym.toolservers.gta.calculator import calculator as calculator_tool


@tool(category="logic")
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


def measure(fn: Callable[[], Any], n: int) -> tuple[float, float, float]:
    samples = []
    for _ in range(n):
        start = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - start)
    samples.sort()
    median_us = statistics.median(samples) / 1000
    p99_us = samples[min(len(samples) - 1, int(len(samples) * 0.99))] / 1000
    per_s = 1e9 / (sum(samples) / len(samples))
    return median_us, p99_us, per_s


def row(label: str, figures: tuple[float, float, float], base: float | None = None) -> None:
    median_us, p99_us, per_s = figures
    ratio = f"{median_us / base:6.1f}x" if base else "   base"
    print(f"  {label:<38} median {median_us:8.1f} µs   p99 {p99_us:8.1f} µs   {per_s:10.0f}/s   {ratio}")


def bench_tool(name: str, arguments: dict[str, Any], bare: Callable[[], Any], n: int) -> None:
    toolset = ToolSet([echo, calculator_tool])
    task = Task(id="bench", query="bench", tools=[name], max_steps=n * 4 + 10)
    env = ToolEnv(toolset, [task], max_steps=n * 4 + 10)
    env.reset(seed=0)
    ctx = ToolContext(files=FileStore())
    call = ToolCall(name=name, arguments=arguments)
    react = get_protocol("react").format_action(call)
    print(f"{name}:")
    base = measure(bare, n)
    row("bare function call", base)
    row("ToolSet.call (validate, observation)", measure(lambda: toolset.call(call, ctx), n), base[0])
    row("env.step(ToolCall)", measure(lambda: env.step(call), n), base[0])
    row("env.step(raw ReAct text)", measure(lambda: env.step(react), n), base[0])
    env.close()


def bench_mock(n: int) -> None:
    """env.step on a mock app: parse-free action, real SQLite call, state diff and hash per step."""
    from toolgym.mocks.world import MockWorld

    read = ToolCall(name="get_balance", arguments={"account_id": "ACC-10001"})
    there = ToolCall(
        name="transfer",
        arguments={"from_account_id": "ACC-10001", "to_account_id": "ACC-10002", "amount": 1.0},
    )
    back = ToolCall(
        name="transfer",
        arguments={"from_account_id": "ACC-10002", "to_account_id": "ACC-10001", "amount": 1.0},
    )
    task = Task(id="bench-bank", query="bench", apps=["banking"], max_steps=n * 8 + 10)
    env = ToolEnv(tasks=[task], max_steps=n * 8 + 10)
    env.reset(seed=0)
    world = MockWorld(["banking"])
    print("mock app (banking):")
    base = measure(lambda: world.call("get_balance", account_id="ACC-10001"), n)
    row("bare API call (Tool.invoke)", base)
    row("env.step(read) + diff + hash", measure(lambda: env.step(read), n), base[0])
    writes = itertools.cycle([there, back])  # money goes back and forth: balances stay put
    row("env.step(write) + diff + hash", measure(lambda: env.step(next(writes)), n), base[0])
    row("env.reset (O(changes) rollback)", measure(lambda: env.reset(seed=0), max(n // 10, 10)), base[0])
    world.close()
    env.close()


def bench_parse(n: int) -> None:
    print("protocol parse cost (one tool call):")
    call = ToolCall(name="Calculator", arguments={"expression": "290 / 5"}, call_id="call_0")
    answer = FinalAnswer(text="58")
    for name in ("react", "json", "openai"):
        protocol = get_protocol(name)
        raw_call, raw_answer = protocol.format_action(call), protocol.format_action(answer)
        row(f"{name}: tool call", measure(lambda p=protocol, r=raw_call: p.parse(r), n))  # type: ignore[misc]
        row(f"{name}: final answer", measure(lambda p=protocol, r=raw_answer: p.parse(r), n))  # type: ignore[misc]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=5000)
    args = parser.parse_args()
    bench_tool("echo", {"text": "hello"}, lambda: echo.fn(text="hello"), args.n)
    bench_tool(
        "Calculator", {"expression": "290 / 5"}, lambda: calculator_tool.fn(expression="290 / 5"), args.n
    )
    bench_mock(args.n)
    bench_parse(args.n)


if __name__ == "__main__":
    main()
