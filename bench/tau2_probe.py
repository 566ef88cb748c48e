"""The tau2-bench half of bench/bench_tau2.py. It runs in tau2's own venv (Python >= 3.12) and
imports nothing from toolgym; it prints one JSON object of timings (microseconds) to stdout.

    <tau2 venv>/bin/python bench/tau2_probe.py --scales 1 10 100 --n 2000

Measured: the gym step (`tau2.gym.AgentGymEnv`, solo mode on the mock domain, the one that
allows it without an LLM user; a read tool call per step), the bare tool call (airline
`get_user_details` through the toolkit, and through `Environment.get_response` with its sync),
a write call (`send_certificate`), the state hash (`Environment.get_db_hash`) after a write, and
the environment build (the airline DB validated and wrapped) at 1x, 10x and 100x the airline data.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any


def timings(fn: Callable[[], object], n: int, setup: Callable[[], object] | None = None) -> dict[str, float]:
    out = []
    for _ in range(n):
        if setup is not None:
            setup()
        t0 = time.perf_counter_ns()
        fn()
        out.append((time.perf_counter_ns() - t0) / 1000)
    out.sort()
    return {
        "median_us": statistics.median(out),
        "p99_us": out[min(len(out) - 1, int(0.99 * len(out)))],
        "n": n,
    }


def scaled_airline(raw: dict[str, Any], scale: int) -> dict[str, Any]:
    """The airline DB with every user, reservation and flight copied `scale` times (renamed keys)."""
    if scale == 1:
        return raw
    out = copy.deepcopy(raw)
    for c in range(1, scale):
        for uid, user in raw["users"].items():
            u = copy.deepcopy(user)
            u["user_id"] = f"{uid}_{c}"
            u["reservations"] = [f"{r}_{c}" for r in user.get("reservations", [])]
            out["users"][u["user_id"]] = u
        for rid, res in raw["reservations"].items():
            r = copy.deepcopy(res)
            r["reservation_id"], r["user_id"] = f"{rid}_{c}", f"{res['user_id']}_{c}"
            out["reservations"][r["reservation_id"]] = r
        for fno, flight in raw["flights"].items():
            f = copy.deepcopy(flight)
            f["flight_number"] = f"{fno}_{c}"
            out["flights"][f["flight_number"]] = f
    return out


def gym_step(n: int) -> dict[str, Any]:
    from tau2.gym import AgentGymEnv

    env = AgentGymEnv(domain="mock", task_id="create_task_1", solo_mode=True, max_steps=10 * n + 100)
    t0 = time.perf_counter_ns()
    env.reset()
    reset_us = (time.perf_counter_ns() - t0) / 1000
    action = json.dumps({"name": "get_users", "arguments": {}})
    return {
        "reset": {"median_us": reset_us, "p99_us": reset_us, "n": 1},
        "step_read": timings(lambda: env.step(action), n),
    }


def airline(scales: list[int], n: int) -> dict[str, Any]:
    from tau2.data_model.message import ToolCall
    from tau2.domains.airline.data_model import FlightDB
    from tau2.domains.airline.environment import AIRLINE_DB_PATH, get_environment

    results: dict[str, Any] = {}
    t0 = time.perf_counter_ns()
    get_environment()
    results["build_from_disk_1x"] = (time.perf_counter_ns() - t0) / 1000
    with open(AIRLINE_DB_PATH) as fh:
        raw = json.load(fh)
    user_id = next(iter(raw["users"]))
    for scale in scales:
        data = scaled_airline(raw, scale)
        least = 1 if scale >= 100 else 3  # one build of the 100x DB takes tens of seconds
        reps = max(least, n // (20 * scale))
        build = timings(lambda data=data: get_environment(db=FlightDB.model_validate(data)), reps)  # type: ignore[misc]
        env = get_environment(db=FlightDB.model_validate(data))
        row: dict[str, Any] = {
            "rows": len(data["users"]) + len(data["reservations"]) + len(data["flights"]),
            "build": build,
        }
        if scale == scales[0]:
            row.update(bare_calls(env, user_id, n))
        write = ToolCall(
            id="2",
            name="send_certificate",
            arguments={"user_id": user_id, "amount": 1},
            requestor="assistant",
        )
        row["write_then_hash"] = timings(
            lambda env=env: env.get_db_hash(),  # type: ignore[misc]
            max(least, n // (10 * scale)),
            setup=lambda env=env, write=write: env.get_response(write),  # type: ignore[misc]
        )
        results[f"{scale}x"] = row
    return results


def bare_calls(env: Any, user_id: str, n: int) -> dict[str, dict[str, float]]:
    """A read of the airline toolkit three ways: the method, `use_tool`, `get_response`."""
    from tau2.data_model.message import ToolCall

    call = ToolCall(id="1", name="get_user_details", arguments={"user_id": user_id}, requestor="assistant")
    return {
        "bare_call": timings(lambda: env.tools.get_user_details(user_id), n),
        "use_tool": timings(lambda: env.use_tool("get_user_details", user_id=user_id), n),
        "get_response": timings(lambda: env.get_response(call), n),
    }


def serve_bare_calls() -> None:
    """The bare calls again and again, as bench_tau2 asks, so that its rounds alternate tau2's and
    toolgym's calls (a machine whose speed drifts would otherwise favour whichever side ran in its
    faster minutes): each line `bare N` on stdin is answered with one JSON line of timings."""
    from tau2.domains.airline.environment import AIRLINE_DB_PATH, get_environment

    env = get_environment()
    with open(AIRLINE_DB_PATH) as fh:
        user_id = next(iter(json.load(fh)["users"]))
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        print(json.dumps(bare_calls(env, user_id, int(line.split()[1]))), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--serve-bare", action="store_true", help="answer `bare N` lines on stdin")
    args = parser.parse_args()
    from loguru import logger

    logger.remove()  # tau2 logs every step at INFO to stderr
    if args.serve_bare:
        serve_bare_calls()
        return 0
    out: dict[str, Any] = {"python": sys.version.split()[0]}
    try:
        out["gym"] = gym_step(max(50, args.n // 10))
    except Exception as exc:  # report, and keep the other figures
        out["gym_error"] = f"{type(exc).__name__}: {exc}"
    out["airline"] = airline(args.scales, args.n)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
