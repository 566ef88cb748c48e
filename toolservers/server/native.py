"""The native JSON API, under /v1.

    GET  /v1/health                 liveness (public)
    GET  /v1/ready                  200 once every eager tool is loaded, else 503 (public)
    GET  /v1/version                server, API and tool versions (public)
    GET  /v1/tools                  every tool: JSON Schema of parameters and returns, limits, device
    GET  /v1/tools/{name}           one tool
    POST /v1/tools/{name}/call      {"arguments": {...}, "seed": 0, "clock": "...", "task_id": "..."}
    PUT  /v1/files/{sha256}         upload raw bytes (Content-Type; ?name=); the hash is checked
    POST /v1/files                  upload a multipart "file"
    GET  /v1/files/{sha256}         download (HEAD: does the server have it?)
    GET  /v1/metrics                per tool: calls, errors by kind, latency percentiles, queue, batches

A call answers `{"ok": true, "type": "tool_result", "text", "content", "files", "error": null,
"latency_ms"}` or `{"ok": false, "error": {"kind", "message"}, ...}` with a status that matches
the kind: 400 tool_error, 404 unknown_tool, 408 timeout (also a request body that arrives too
slowly), 409 missing files (re-upload, retry), 413 too large, 422 argument_error (also any body
that is not strict JSON: see `toolgym.http.parse_json`), 503 infra_error (overloaded, a tool that
failed to load). File arguments are handles (`file:<sha256>`) of files uploaded before, or the
exact names they were uploaded under.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from toolgym.http import BodyError
from toolgym.tools import DEFAULT_CLOCK
from toolgym.toolservers.mcp_sdk import mcp_problem

from .http import error_body, json_response, parse_json, read_body
from .runtime import ToolRuntime

API_VERSION = "1"


def toolgym_version() -> str:
    try:
        return version("toolgym")
    except PackageNotFoundError:  # running from a source tree
        return "0+unknown"


def _parse_call(body: bytes) -> tuple[dict[str, Any], int, datetime, str | None] | str:
    """The call envelope's parts, or a message saying what is wrong with it."""
    try:
        data = parse_json(body) if body else {}
    except BodyError as exc:
        return str(exc)
    if not isinstance(data, dict):
        return "request body must be a JSON object"
    unknown = sorted(set(data) - {"arguments", "seed", "clock", "task_id"})
    if unknown:
        return f"unknown fields in the call: {unknown}"
    arguments = data.get("arguments", {})
    if not isinstance(arguments, dict):
        return f"arguments must be a JSON object, got {type(arguments).__name__}"
    seed = data.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        return "seed must be an integer"
    clock = DEFAULT_CLOCK
    if data.get("clock") is not None:
        try:
            clock = datetime.fromisoformat(str(data["clock"]))
        except ValueError:
            return f"clock must be an ISO 8601 time, got {data['clock']!r}"
        if clock.tzinfo is None:
            return "clock must carry a time zone"
    task_id = data.get("task_id")
    if task_id is not None and not isinstance(task_id, str):
        return "task_id must be a string"
    return arguments, seed, clock, task_id


def native_router(runtime: ToolRuntime) -> APIRouter:
    router = APIRouter(prefix="/v1")
    max_upload = max((e.config.max_request_bytes for e in runtime.entries.values()), default=1 << 20)

    @router.get("/health")
    async def health() -> Response:
        return json_response({"status": "ok"})

    @router.get("/ready")
    async def ready() -> Response:
        state = runtime.readiness()
        return json_response(state, 200 if state["ready"] else 503)

    @router.get("/version")
    async def version_info() -> Response:
        return json_response(
            {
                "server": "toolgym",
                "version": toolgym_version(),
                "api_version": API_VERSION,
                "faces": runtime_faces(runtime),
                "tools": {n: e.tool.version for n, e in runtime.entries.items()},
            }
        )

    @router.get("/tools")
    async def list_tools() -> Response:
        return json_response({"tools": runtime.describe()})

    @router.get("/tools/{name}")
    async def get_tool(name: str) -> Response:
        entry = runtime.entries.get(name)
        if entry is None:
            return json_response(error_body("unknown_tool", f"unknown tool {name!r}"), 404)
        return json_response(entry.describe())

    @router.put("/files/{sha256}")
    async def put_file(sha256: str, request: Request, name: str | None = None) -> Response:
        body = await read_body(request, max_upload)
        if body is None:
            return json_response(error_body("argument_error", f"file larger than {max_upload} bytes"), 413)
        actual = hashlib.sha256(body).hexdigest()
        if actual != sha256.lower():
            return json_response(
                error_body("argument_error", f"content hashes to {actual}, not {sha256}"), 400
            )
        media_type = request.headers.get("content-type") or None
        handle = await runtime.store(body, name=name or None, media_type=media_type)
        return json_response(handle.model_dump(mode="json"), 201)

    @router.post("/files")
    async def post_file(request: Request) -> Response:
        if not request.headers.get("content-type", "").startswith("multipart/form-data"):
            return json_response(
                error_body("argument_error", "send a multipart/form-data body with a 'file' part"), 415
            )
        form = await request.form(max_files=1, max_fields=4, max_part_size=max_upload)
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            return json_response(error_body("argument_error", "no 'file' part in the upload"), 422)
        data = await upload.read()
        await form.close()
        handle = await runtime.store(data, name=upload.filename or None, media_type=upload.content_type)
        return json_response(handle.model_dump(mode="json"), 201)

    @router.api_route("/files/{sha256}", methods=["GET", "HEAD"])
    async def get_file(sha256: str) -> Response:
        ref = "file:" + sha256.lower()
        if len(sha256) != 64 or ref not in runtime.files:
            return json_response(error_body("argument_error", f"no file {sha256}"), 404)
        stored = runtime.files.resolve(ref)
        return FileResponse(stored.path, media_type=stored.handle.media_type)

    @router.get("/metrics")
    async def metrics() -> Response:
        return json_response({"tools": runtime.metrics()})

    return router


def call_route(runtime: ToolRuntime) -> Route:
    """POST /v1/tools/{name}/call as a plain Starlette route: the hot path skips FastAPI's
    parameter resolution (about a fifth of a Calculator call's server time)."""

    async def call_tool(request: Request) -> Response:
        name = request.path_params["name"]
        entry = runtime.entries.get(name)
        limit = entry.config.max_request_bytes if entry is not None else 1 << 20
        body = await read_body(request, limit)
        if body is None:
            return json_response(
                error_body("argument_error", f"{name}: request larger than {limit} bytes"), 413
            )
        parsed = _parse_call(body)
        if isinstance(parsed, str):
            return json_response(error_body("argument_error", f"{name}: {parsed}"), 422)
        arguments, seed, clock, task_id = parsed
        outcome = await runtime.call(name, arguments, seed=seed, clock=clock, task_id=task_id)
        payload = outcome.observation.model_dump(mode="json")
        payload["ok"] = outcome.observation.error is None
        payload["latency_ms"] = round(outcome.latency_s * 1000, 4)
        if outcome.missing_files:
            payload["missing_files"] = list(outcome.missing_files)
        return json_response(payload, outcome.status)

    return Route("/v1/tools/{name}/call", call_tool, methods=["POST"])


def runtime_faces(runtime: ToolRuntime) -> list[str]:
    faces = ["native"]
    if runtime.config.agentlego:
        faces.append("agentlego")
    if runtime.config.mcp and mcp_problem() is None:  # without the SDK, /mcp only says why
        faces.append("mcp")
    return faces
