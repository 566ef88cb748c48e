"""The AgentLego wire protocol (agentlego-server 0.2.0), so `RemoteTool.from_server(url)` and
GTA's pipeline use this server unchanged.

    GET  /openapi.json   the spec, shaped as agentlego-server writes it (one POST path per tool)
    POST /{Tool}         form-urlencoded body for text-only tools, multipart/form-data when a
                         parameter is an image or a file (`format: image;binary`)

Answers: 200 with the JSON value (images as base64 PNG, several outputs as an array), 400
`{"detail": "..."}` when the tool fails, 422 FastAPI-style `{"detail": [{"loc", "msg", "type"}]}`
for missing or ill-typed fields, 408 on timeout, 503 when overloaded. AgentLego knows text, int,
float, bool, image and file; list and object parameters travel as JSON text, and list or object
results come back as JSON text (as AgentLego's client turns them into strings anyway).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

from fastapi import APIRouter, Request
from PIL import Image as PILImage
from PIL import UnidentifiedImageError
from pydantic import BaseModel, ConfigDict, Json, ValidationError, create_model
from starlette.datastructures import UploadFile
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from toolgym.canonical import canonical_json
from toolgym.errors import ErrorKind
from toolgym.files import FileHandle
from toolgym.http import BodyError
from toolgym.tools import BaseTool, ParamSpec, ParamType, ReturnSpec

from .http import json_bytes, json_response, parse_json, read_body
from .runtime import ToolEntry, ToolRuntime

_FORM_TYPES: dict[ParamType, Any] = {
    "text": str,
    "int": int,
    "float": float,
    "bool": bool,
    "list": Json[list[Any]],
    "object": Json[dict[str, Any]],
}
_SCHEMA_TYPES: dict[ParamType, str] = {
    "text": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "list": "string",
    "object": "string",
}


def path_name(name: str) -> str:
    return name.replace(" ", "_")


def _title(name: str) -> str:
    # FastAPI's field titles, which agentlego-server's spec carries
    return name.replace("_", " ").title()


def _input_schema(p: ParamSpec) -> dict[str, Any]:
    if p.type in ("image", "file"):
        schema: dict[str, Any] = {"type": "string", "format": f"{p.type};binary", "title": _title(p.name)}
    else:
        schema = {"type": _SCHEMA_TYPES[p.type], "title": _title(p.name)}
    if p.description:
        schema["description"] = p.description
    if p.optional and p.default is not None:
        schema["default"] = p.default
    return schema


def _output_schema(r: ReturnSpec) -> dict[str, Any]:
    if r.type == "image":
        schema: dict[str, Any] = {"type": "string", "format": "image/png;base64"}
    elif r.type == "file":
        schema = {"type": "string", "format": "file;base64"}
    else:
        schema = {"type": _SCHEMA_TYPES[r.type]}
    if r.description:
        schema["description"] = r.description
    return schema


def has_files(t: BaseTool) -> bool:
    return bool(t.file_params)


def operation(t: BaseTool) -> dict[str, Any]:
    name = path_name(t.name)
    op: dict[str, Any] = {"summary": t.description, "operationId": name}
    if t.params:
        media = "multipart/form-data" if has_files(t) else "application/x-www-form-urlencoded"
        op["requestBody"] = {
            "content": {media: {"schema": {"$ref": f"#/components/schemas/Body_{name}"}}},
            "required": True,
        }
    if not t.returns:
        ok_schema: dict[str, Any] = {}
    elif len(t.returns) == 1:
        ok_schema = {**_output_schema(t.returns[0]), "title": f"Response {name}"}
    else:
        items = [_output_schema(r) for r in t.returns]
        ok_schema = {
            "prefixItems": items,
            "type": "array",
            "maxItems": len(items),
            "minItems": len(items),
            "title": f"Response {name}",
        }
    op["responses"] = {
        "200": {"description": "Successful Response", "content": {"application/json": {"schema": ok_schema}}},
        "422": {
            "description": "Validation Error",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/HTTPValidationError"}}},
        },
    }
    return op


def build_spec(tools: list[BaseTool], title: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document agentlego-server 0.2.0 would publish for these tools."""
    schemas: dict[str, Any] = {}
    paths: dict[str, Any] = {}
    for t in tools:
        name = path_name(t.name)
        paths[f"/{name}"] = {"post": operation(t)}
        if t.params:
            schemas[f"Body_{name}"] = {
                "properties": {p.name: _input_schema(p) for p in t.params},
                "type": "object",
                "required": [p.name for p in t.params if not p.optional],
                "title": f"Body_{name}",
            }
    schemas["HTTPValidationError"] = {
        "properties": {
            "detail": {
                "items": {"$ref": "#/components/schemas/ValidationError"},
                "type": "array",
                "title": "Detail",
            }
        },
        "type": "object",
        "title": "HTTPValidationError",
    }
    schemas["ValidationError"] = {
        "properties": {
            "loc": {
                "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                "type": "array",
                "title": "Location",
            },
            "msg": {"type": "string", "title": "Message"},
            "type": {"type": "string", "title": "Error Type"},
        },
        "type": "object",
        "required": ["loc", "msg", "type"],
        "title": "ValidationError",
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": "0.1.0"},
        "paths": paths,
        "components": {"schemas": dict(sorted(schemas.items()))},
    }


def _form_model(t: BaseTool) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for p in t.params:
        if p.type in ("image", "file"):
            continue
        annotation = _FORM_TYPES[p.type]
        fields[p.name] = (annotation | None, p.default) if p.optional else (annotation, ...)
    return create_model(f"Body_{path_name(t.name)}", __config__=ConfigDict(extra="ignore"), **fields)


def _echoable(value: Any) -> Any:
    """An invalid input as the error may echo it: as it came when JSON can hold it, else its repr
    (a form field's `Json[...]` parse gives NaN for "NaN", which strict JSON cannot write)."""
    try:
        json_bytes(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


def _body_error(error: Any) -> dict[str, Any]:
    """A field's validation error as FastAPI words it, under `body`."""
    return {
        "type": error["type"],
        "loc": ["body", *error["loc"]],
        "msg": error["msg"],
        "input": _echoable(error.get("input")),
    }


def _detail(errors: list[dict[str, Any]]) -> Response:
    return json_response({"detail": errors}, 422)


def _sniff_media_type(data: bytes, fallback: str | None) -> str:
    try:
        with PILImage.open(io.BytesIO(data)) as img:
            mime = img.get_format_mimetype()
    except (UnidentifiedImageError, OSError, ValueError):
        mime = None
    return mime or fallback or "application/octet-stream"


def _png_base64(runtime: ToolRuntime, handle: FileHandle) -> str:
    stored = runtime.files.get(handle)
    data = stored.read_bytes()
    if handle.media_type != "image/png":  # the wire format promises PNG
        with PILImage.open(io.BytesIO(data)) as img:
            buf = io.BytesIO()
            img.save(buf, format="PNG")
            data = buf.getvalue()
    return base64.b64encode(data).decode("ascii")


def _wire_value(runtime: ToolRuntime, spec: ReturnSpec | None, value: Any) -> Any:
    if spec is not None and spec.type in ("image", "file") and isinstance(value, Mapping):
        handle = FileHandle.model_validate(value)
        if spec.type == "image":
            return _png_base64(runtime, handle)
        return base64.b64encode(runtime.files.get(handle).read_bytes()).decode("ascii")
    if isinstance(value, (dict, list)):
        return canonical_json(value)
    return value


def encode_result(runtime: ToolRuntime, t: BaseTool, content: Any, text: str) -> Any:
    """A tool result in AgentLego's wire form."""
    if not t.returns:
        return text if content is not None else None
    if len(t.returns) == 1:
        return _wire_value(runtime, t.returns[0], content)
    if isinstance(content, list) and len(content) == len(t.returns):
        return [_wire_value(runtime, r, v) for r, v in zip(t.returns, content, strict=True)]
    return text


def agentlego_router(runtime: ToolRuntime, title: str) -> APIRouter:
    """GET /openapi.json and GET / (a redirect to it)."""
    router = APIRouter()
    tools = [e.tool for e in runtime.entries.values()]
    spec_bytes = json_bytes(build_spec(tools, title))

    @router.get("/openapi.json", include_in_schema=False)
    async def openapi() -> Response:
        return Response(spec_bytes, media_type="application/json")

    @router.get("/", include_in_schema=False)
    async def root() -> Response:
        return RedirectResponse(url="/openapi.json")

    return router


def agentlego_routes(runtime: ToolRuntime) -> list[Route]:
    """POST /{Tool} for every tool: plain Starlette routes with exact paths (no catch-all that
    could shadow /mcp or /v1, and no FastAPI parameter resolution on the hot path)."""
    routes = []
    for entry in runtime.entries.values():
        model = _form_model(entry.tool)

        async def call(
            request: Request, entry: ToolEntry = entry, model: type[BaseModel] = model
        ) -> Response:
            return await _call(runtime, entry, model, request)

        routes.append(Route(f"/{path_name(entry.tool.name)}", call, methods=["POST"]))
    return routes


async def _call(runtime: ToolRuntime, entry: ToolEntry, model: type[BaseModel], request: Request) -> Response:
    t = entry.tool
    limit = entry.config.max_request_bytes
    content_type = request.headers.get("content-type", "")
    raw: dict[str, Any] = {}
    uploads: dict[str, tuple[bytes, str | None, str | None]] = {}
    if content_type.startswith("multipart/form-data"):
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            return json_response({"detail": f"request larger than {limit} bytes"}, 413)
        form = await request.form(max_files=16, max_fields=256, max_part_size=limit)
        try:
            for key, value in form.multi_items():
                if isinstance(value, UploadFile):
                    uploads[key] = (await value.read(), value.filename, value.content_type)
                else:
                    raw[key] = value
        finally:
            await form.close()
    else:
        body = await read_body(request, limit)
        if body is None:
            return json_response({"detail": f"request larger than {limit} bytes"}, 413)
        if content_type.startswith("application/json"):
            try:
                parsed = parse_json(body) if body else {}
            except BodyError as exc:
                return _detail([{"type": "json_invalid", "loc": ["body"], "msg": str(exc)}])
            if not isinstance(parsed, dict):
                return _detail(
                    [{"type": "model_attributes_type", "loc": ["body"], "msg": "Input should be an object"}]
                )
            raw = parsed
        else:
            try:
                raw = dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
            except UnicodeDecodeError:
                return _detail([{"type": "string_unicode", "loc": ["body"], "msg": "body is not UTF-8"}])
    errors: list[dict[str, Any]] = []
    arguments: dict[str, Any] = {}
    try:
        validated = model.model_validate(raw)
        arguments.update({k: v for k, v in validated.model_dump().items() if k in raw or v is not None})
    except ValidationError as exc:
        errors.extend(_body_error(e) for e in exc.errors(include_url=False))
    for pname, kind in t.file_params.items():
        upload = uploads.get(pname)
        if upload is None:
            if raw.get(pname) not in (None, ""):  # a handle of a file already on this server
                arguments[pname] = raw[pname]
            elif not next(p for p in t.params if p.name == pname).optional:
                errors.append(
                    {"type": "missing", "loc": ["body", pname], "msg": "Field required", "input": None}
                )
            continue
        data, filename, declared_type = upload
        media_type = _sniff_media_type(data, declared_type) if kind == "image" else (declared_type or None)
        handle = await runtime.store(data, name=filename or None, media_type=media_type)
        arguments[pname] = handle.ref
    if errors:
        return _detail(errors)
    outcome = await runtime.call(t.name, arguments)
    obs = outcome.observation
    if obs.error is None:
        if obs.files:  # reading and base64-encoding images: off the event loop
            value = await runtime.in_thread(encode_result, runtime, t, obs.content, obs.text)
        else:
            value = encode_result(runtime, t, obs.content, obs.text)
        return Response(json_bytes(value), media_type="application/json")
    message = obs.error.message
    if obs.error.kind is ErrorKind.ARGUMENT_ERROR:
        return _detail([{"type": "value_error", "loc": ["body"], "msg": message}])
    return json_response({"detail": message}, outcome.status)
