"""Containers and the process backend, measured side by side in one run.

    python bench/bench_containers.py [--quick] [--out FILE.json]

1. Start-to-healthy: a mock server and a tool server (Calculator), as a Docker container and as
   a sandboxed process, each over a unix socket (no network) and over TCP on 127.0.0.1; and a
   restart after the server was killed.
2. Per-call overhead of one client with keep-alive: Calculator through RemoteToolSet and a mock
   API (banking get_balance) through RemoteMockWorld, via container, via process backend and
   in-process (ToolSet.call / MockWorld.step), in interleaved rounds so load drifts hit all alike.
3. N concurrent mock sessions on one mock-server container: sessions spread over 16 client
   threads, each call a read or a write (transfer) of its own session; calls/s, latency, and the
   container's memory per session.

Needs dockerd and the images (`toolgym lab build`); everything talks to unix sockets or
127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolgym.actions import ToolCall
from toolgym.envs.lab import Lab
from toolgym.files import FileStore
from toolgym.mocks.service import MockServiceClient
from toolgym.mocks.world import MockWorld
from toolgym.tools import ToolContext, ToolSet
from toolgym.toolservers.gta.calculator import calculator
from toolgym.toolservers.hosting.base import ServerHost, ServerSpec, mock_server_spec, tool_server_spec
from toolgym.toolservers.hosting.container import ContainerHost
from toolgym.toolservers.hosting.process import ProcessHost

CALC = ToolCall(name="Calculator", arguments={"expression": "(290 // 5) * 3"})
READ = ToolCall(name="get_balance", arguments={"account_id": "ACC-10001"})
WRITE = {"from_account_id": "ACC-10001", "to_account_id": "ACC-10002", "amount": 1.0}


def summarize(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": statistics.median(ordered) * 1000,
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
        "n": len(ordered),
    }


# ---- 1. start-to-healthy ----------------------------------------------------------------------------
def start_times(backends: dict[str, ServerHost], repeats: int) -> dict[str, dict[str, float]]:
    specs: dict[str, Callable[[], ServerSpec]] = {
        "mock server, unix socket": lambda: mock_server_spec(network=False),
        "mock server, TCP 127.0.0.1": lambda: mock_server_spec(network=True),
        "tool server (Calculator), unix socket": lambda: tool_server_spec(tools=["Calculator"]),
    }
    out: dict[str, dict[str, list[float]]] = {}
    for _ in range(repeats):  # interleaved: each round starts every kind once
        for spec_name, make in specs.items():
            for backend_name, backend in backends.items():
                handle = backend.start(make())
                figures = out.setdefault(f"{spec_name} | {backend_name}", {"start": [], "restart": []})
                figures["start"].append(handle.started_s)
                if spec_name.startswith("mock server, unix"):
                    backend.kill(handle)
                    started = time.monotonic()
                    backend.restart(handle)
                    figures["restart"].append(time.monotonic() - started)
                backend.stop(handle)
    return {
        key: {f"{what}_s": statistics.median(values) for what, values in d.items() if values}
        for key, d in out.items()
    }


# ---- 2. per-call overhead ---------------------------------------------------------------------------
def per_call(labs: dict[str, Lab], n: int, rounds: int) -> dict[str, dict[str, float]]:
    ctx = ToolContext(files=FileStore())
    local_tools = ToolSet([calculator])
    local_world = MockWorld(["banking"])
    paths: dict[str, Callable[[], Any]] = {
        "Calculator | in-process (ToolSet.call)": lambda: local_tools.call(CALC, ctx),
        "get_balance | in-process (MockWorld.step)": lambda: local_world.step(READ),
    }
    for name, lab in labs.items():
        tools = lab.toolset(["Calculator"])
        world = lab.world(["banking"])
        paths[f"Calculator | {name}"] = functools.partial(tools.call, CALC, ctx)
        paths[f"get_balance | {name}"] = functools.partial(world.step, READ)
    for fn in paths.values():  # warm connections and caches
        for _ in range(50):
            fn()
    samples: dict[str, list[float]] = {k: [] for k in paths}
    for _ in range(rounds):
        for label, fn in paths.items():
            for _ in range(n):
                start = time.perf_counter()
                obs = fn()
                samples[label].append(time.perf_counter() - start)
                assert obs.error is None, obs.text
    local_world.close()
    return {label: summarize(s) for label, s in samples.items()}


# ---- 3. concurrent sessions -------------------------------------------------------------------------
def concurrent_sessions(
    backend: ContainerHost, counts: list[int], calls_per_session: int, threads: int = 16
) -> list[dict[str, float]]:
    handle = backend.start(mock_server_spec(network=False, max_sessions=max(counts) + 8))
    container = backend.container(handle)

    def memory_mb() -> float:
        stats = container.stats(stream=False)["memory_stats"]
        return float(stats.get("usage", 0) - stats.get("stats", {}).get("cache", 0)) / 2**20

    rows = []
    try:
        for count in counts:
            base_mb = memory_mb()
            clients = [
                MockServiceClient(handle.url, token=handle.token, uds=handle.uds) for _ in range(threads)
            ]
            worlds = [clients[i % threads].world(["banking"], seed=i % 4) for i in range(count)]
            held_mb = memory_mb()
            latencies: list[list[float]] = [[] for _ in range(threads)]
            errors: list[str] = []

            def work(
                k: int,
                latencies: list[list[float]] = latencies,
                worlds: list[Any] = worlds,
                errors: list[str] = errors,
            ) -> None:
                mine = worlds[k::threads]
                for i in range(calls_per_session):
                    for w in mine:
                        start = time.perf_counter()
                        if i % 4 == 3:
                            result = w.call("transfer", **WRITE)
                        else:
                            result = w.call("get_balance", account_id="ACC-10001")
                        latencies[k].append(time.perf_counter() - start)
                        if result["status"] != "success":
                            errors.append(str(result))

            pool = [threading.Thread(target=work, args=(k,)) for k in range(min(threads, count))]
            started = time.perf_counter()
            for t in pool:
                t.start()
            for t in pool:
                t.join()
            elapsed = time.perf_counter() - started
            assert not errors, errors[:3]
            flat = [x for per in latencies for x in per]
            rows.append(
                {
                    "sessions": count,
                    "calls": len(flat),
                    "calls_per_s": len(flat) / elapsed,
                    **summarize(flat),
                    "memory_per_session_kb": (held_mb - base_mb) * 1024 / count,
                }
            )
            for w in worlds:
                w.close()
            for c in clients:
                c.close()
    finally:
        backend.stop(handle)
    return rows


def report(results: dict[str, Any]) -> None:
    print("\n## Start to healthy (median)\n")
    print("| server | backend | start | restart after kill |")
    print("|---|---|---|---|")
    for key, d in results["start"].items():
        spec, backend = key.split(" | ")
        restart = f"{d['restart_s']:.2f} s" if "restart_s" in d else "-"
        print(f"| {spec} | {backend} | {d['start_s']:.2f} s | {restart} |")
    print("\n## Per call, one client, keep-alive\n")
    print("| call | path | median | p99 | vs in-process |")
    print("|---|---|---|---|---|")
    calls = results["per_call"]
    for label, d in calls.items():
        tool, path = label.split(" | ")
        base = next(v for k, v in calls.items() if k.startswith(tool) and "in-process" in k)["median_ms"]
        ratio = "base" if "in-process" in path else f"{d['median_ms'] / base:.0f}×"
        print(f"| {tool} | {path} | {d['median_ms'] * 1000:.0f} µs | {d['p99_ms'] * 1000:.0f} µs | {ratio} |")
    print("\n## Concurrent mock sessions on one mock-server container (16 client threads)\n")
    print("| sessions | calls | calls/s | median | p99 | memory per session |")
    print("|---|---|---|---|---|---|")
    for row in results["sessions"]:
        print(
            f"| {row['sessions']} | {row['calls']} | {row['calls_per_s']:.0f} | {row['median_ms']:.2f} ms"
            f" | {row['p99_ms']:.2f} ms | {row['memory_per_session_kb']:.0f} KiB |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    parser.add_argument("--out", type=Path, help="write the figures as JSON")
    args = parser.parse_args()
    repeats, n, rounds = (1, 100, 2) if args.quick else (5, 500, 4)
    counts = [1, 16, 64] if args.quick else [1, 16, 64, 256]
    containers = ContainerHost(build=True)
    processes = ProcessHost()
    results: dict[str, Any] = {"isolation": processes.isolation}
    print(f"process backend isolation: {processes.isolation}", file=sys.stderr)
    results["start"] = start_times({"docker": containers, "process": processes}, repeats)
    with (
        Lab.start(containers, tools=["Calculator"], network=False) as docker_uds,
        Lab.start(containers, tools=["Calculator"], network=True) as docker_tcp,
        Lab.start(processes, tools=["Calculator"], network=False) as process_uds,
        Lab.start(processes, tools=["Calculator"], network=True) as process_tcp,
    ):
        iso = processes.isolation
        labs = {
            "container, unix socket": docker_uds,
            "container, TCP 127.0.0.1": docker_tcp,
            f"process ({iso}), unix socket": process_uds,
            f"process ({iso}), TCP 127.0.0.1": process_tcp,
        }
        results["per_call"] = per_call(labs, n, rounds)
    results["sessions"] = concurrent_sessions(containers, counts, calls_per_session=20 if args.quick else 40)
    report(results)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
