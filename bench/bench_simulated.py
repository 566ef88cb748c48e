"""Simulated tools (toolgym.mocks.simulated) side by side with a mock-app call, in one run.

    .venv/bin/python bench/bench_simulated.py [--n 5000]

Prints the median and p99 of: a mock-app read (banking get_balance) through ToolSet.call, the
baseline; a deterministic simulated read (a ToolEyes tool, no return doc: a themed record) and
one with a documented return schema (T-Eval), both through ToolSet.call on a MockWorld; a
simulated create (a write that stores a record in the world's store). Then the time to load all
of ToolEyes' libraries (95 files, 568 records, 565 tools: read, meta-schema checked, tools
built) with the imports already done, the median of several loads. Times are wall-clock on a
shared machine: read the ratios, never assert on them in tests.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime

from toolgym import plugins
from toolgym.actions import Observation, ToolCall
from toolgym.mocks.simulated import app as simulated
from toolgym.mocks.simulated.docs import parse_docs
from toolgym.mocks.world import MockWorld

CLOCK = datetime(2024, 1, 1, tzinfo=UTC)
TEVAL_LIKE = [
    {
        "name": "AirbnbSearch",
        "tool_description": "Airbnb listings.",
        "api_list": [
            {
                "name": "get_property_details",
                "description": "Details of a property.",
                "required_parameters": [{"name": "propertyId", "type": "NUMBER", "description": "id"}],
                "optional_parameters": [],
                "return_data": [
                    {"name": "title", "description": "The title."},
                    {"name": "propertyType", "description": "The type."},
                    {"name": "personCapacity", "description": "The capacity."},
                    {"name": "rating", "description": "The rating."},
                    {"name": "latitude", "description": "The latitude."},
                    {"name": "longitude", "description": "The longitude."},
                ],
            }
        ],
    }
]
CREATE = [
    {
        "name": "create_event",
        "description": "Create an event.",
        "parameters": {
            "type": "object",
            "properties": {"title": {"type": "string"}, "date": {"type": "string"}},
            "required": ["title", "date"],
        },
    }
]


def timed(fn: Callable[[], Observation], n: int) -> list[float]:
    for _ in range(min(n, 200)):  # warm: pools, caches, statements
        fn()
    out = []
    for _ in range(n):
        start = time.perf_counter()
        obs = fn()
        out.append(time.perf_counter() - start)
        assert obs.error is None, obs.text
    return out


def row(name: str, samples: list[float], base: float | None) -> str:
    median = statistics.median(samples)
    p99 = sorted(samples)[int(len(samples) * 0.99) - 1]
    ratio = "base" if base is None else f"{median / base:.2f}×"
    return f"| {name} | {median * 1e6:.1f} µs | {p99 * 1e6:.1f} µs | {ratio} |"


def load_all() -> float:
    plugins.refresh()  # the library registry is read again, as in a fresh process
    simulated._bundled_app.cache_clear()
    start = time.perf_counter()
    libraries = [lib for lib in simulated.bundled_libraries() if lib.startswith("tooleyes/")]
    tools = sum(len(simulated.get_simulated_app(simulated.PREFIX + lib).prototypes) for lib in libraries)
    elapsed = time.perf_counter() - start
    assert (len(libraries), tools) == (95, 565)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--loads", type=int, default=7)
    n = parser.parse_args().n
    loads = parser.parse_args().loads

    bank = MockWorld(["banking"], clock=CLOCK)
    teval = MockWorld([simulated.simulated_app("bench-teval", parse_docs(TEVAL_LIKE, "teval"))], clock=CLOCK)
    calendar = MockWorld([simulated.simulated_app("bench-calendar", parse_docs(CREATE, "cal"))], clock=CLOCK)
    weather = MockWorld(["simulated:tooleyes/Weather/weatherapi"], clock=CLOCK)
    weather_tool = weather.tools.names[0]
    weather_args = {
        p: "London" for p in weather.tools.get(weather_tool).parameters_schema().get("required", [])
    }

    balance = ToolCall(name="get_balance", arguments={"account_id": "ACC-10001"})
    base = timed(lambda: bank.step(balance), n)
    print(f"{n} calls each, medians and p99s; ratios against the mock-app call of this run\n")
    print("| call | median | p99 | vs mock app |\n|---|---|---|---|")
    print(row("mock app: banking get_balance (read)", base, None))
    b = statistics.median(base)
    read = ToolCall(name=weather_tool, arguments=weather_args)
    print(
        row(
            f"simulated:deterministic ToolEyes {weather_tool} (read, themed record)",
            timed(lambda: weather.step(read), n),
            b,
        )
    )
    details = ToolCall(name="AirbnbSearch.get_property_details", arguments={"propertyId": 7})
    print(
        row(
            "simulated:deterministic T-Eval get_property_details (documented returns)",
            timed(lambda: teval.step(details), n),
            b,
        )
    )
    create = ToolCall(name="create_event", arguments={"title": "Dentist", "date": "2024-05-02"})
    print(
        row(
            "simulated:deterministic create_event (write: stores a record)",
            timed(lambda: calendar.step(create), n),
            b,
        )
    )
    times = sorted(load_all() for _ in range(loads))
    print(
        f"\nloading all ToolEyes libraries (95 files, 565 tools): median {statistics.median(times) * 1e3:.0f} ms, "
        f"min {times[0] * 1e3:.0f} ms over {loads} loads (imports done)"
    )


if __name__ == "__main__":
    main()
