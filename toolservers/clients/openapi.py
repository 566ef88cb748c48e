"""Tools from an OpenAPI 3 spec, and from an AgentLego server (whose spec is OpenAPI with
AgentLego's conventions: `image;binary` inputs, `image/png;base64` outputs).

    tools = openapi_tools("http://127.0.0.1:9000/openapi.json")      # or a dict or a file path
    tools = agentlego_tools("http://127.0.0.1:16180")                 # agentlego-server or ours

Each operation becomes a SchemaTool named by its operationId. Path, query and header parameters
and the request body's properties (JSON, form-urlencoded or multipart) become the tool's
parameters; binary properties become file parameters (the episode's file is uploaded with the
request). Base64 outputs and binary answers become files in the episode's store. Failures:
no answer, 401/403/429 and 5xx raise InfraError; 408/504 ToolTimeout; 422 ArgumentError; other
4xx ToolError (the API refused what the agent asked).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urljoin

import httpx

from toolgym.errors import InfraError, ToolError
from toolgym.files import StoredFile
from toolgym.mocks.simulated.docs import OPENAPI_METHODS, RefError, operation_name, resolve_refs
from toolgym.tools import SCHEMA_PARAM_TYPES, ReturnSpec, SchemaTool, ToolContext, ToolSet

from ._common import bearer, error_for_status, store_bytes, transport_error

METHODS = OPENAPI_METHODS


class SpecError(ValueError):
    """The spec cannot be turned into tools (a reference that does not resolve, a shape not supported)."""


def _resolve(spec: Mapping[str, Any], node: Any) -> Any:
    """`node` with local `$ref`s (`#/...`) replaced by what they point at (one resolver for served
    and simulated OpenAPI tools: toolgym.mocks.simulated.docs)."""
    try:
        return resolve_refs(spec, node)
    except RefError as exc:
        raise SpecError(str(exc)) from None


_tool_name = operation_name


def _file_kind(schema: Mapping[str, Any]) -> str | None:
    fmt = str(schema.get("format", ""))
    if schema.get("type", "string") != "string":
        return None
    if "binary" in fmt or schema.get("contentMediaType") or schema.get("contentEncoding") == "base64":
        return "image" if "image" in fmt or "image" in str(schema.get("contentMediaType", "")) else "file"
    return None


def _param_schema(schema: Mapping[str, Any], description: str | None) -> dict[str, Any]:
    kind = _file_kind(schema)
    if kind is not None:
        out: dict[str, Any] = {"type": "string", "format": kind}
    else:
        out = {k: v for k, v in schema.items() if k != "title"}
        if out.get("format") not in (None, "date", "date-time"):
            del out["format"]  # wire formats (AgentLego's "image;binary", ...) mean nothing to an agent
    if description or schema.get("description"):
        out["description"] = description or schema["description"]
    return out


def _return_specs(schema: Mapping[str, Any] | None) -> list[ReturnSpec]:
    if schema is None:
        return [ReturnSpec(type="text")]
    if schema.get("type") == "array" and isinstance(schema.get("prefixItems"), list):
        return [spec for item in schema["prefixItems"] for spec in _return_specs(item)]
    fmt = str(schema.get("format", ""))
    description = schema.get("description")
    if "base64" in fmt or "binary" in fmt:
        return [ReturnSpec(type="image" if "image" in fmt else "file", description=description)]
    kind = schema.get("type")
    ptype = SCHEMA_PARAM_TYPES.get(kind, "text") if isinstance(kind, str) else "text"
    return [ReturnSpec(type=ptype, description=description)]


@dataclass
class _Operation:
    method: str
    path: str
    path_params: list[str] = field(default_factory=list)
    query_params: list[str] = field(default_factory=list)
    header_params: list[str] = field(default_factory=list)
    body_params: list[str] = field(default_factory=list)
    body_media: str | None = None
    body_whole: bool = False  # the body is one parameter named "body" (not an object)
    output_schema: dict[str, Any] | None = None


class OpenAPIToolSet(ToolSet):
    """The operations of an OpenAPI spec as tools, calling `base_url` over one keep-alive client."""

    def __init__(
        self,
        spec: Mapping[str, Any],
        base_url: str,
        *,
        headers: Mapping[str, str] | None = None,
        operations: Iterable[str] | None = None,
        timeout_s: float = 60.0,
        backend: str = "openapi",
        client: httpx.Client | None = None,
    ) -> None:
        super().__init__()
        self.base_url = base_url.rstrip("/") + "/"
        self.backend = backend
        self._http = client or httpx.Client(
            headers=dict(headers or {}), timeout=httpx.Timeout(timeout_s, connect=5.0)
        )
        wanted = set(operations) if operations is not None else None
        for path, item in (spec.get("paths") or {}).items():
            item = _resolve(spec, item)
            shared = list(item.get("parameters", []))
            for method in METHODS:
                op = item.get(method)
                if not isinstance(op, Mapping):
                    continue
                name = _tool_name(op, method, path)
                if wanted is not None and name not in wanted:
                    continue
                self.add(self._build(name, method, path, op, shared))
        if wanted is not None:
            missing = sorted(wanted - set(self.names))
            if missing:
                raise SpecError(f"no operations named {missing} in the spec")

    def _build(
        self, name: str, method: str, path: str, op: Mapping[str, Any], shared: list[Any]
    ) -> SchemaTool:
        info = _Operation(method=method, path=path)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for p in [*shared, *op.get("parameters", [])]:
            where, pname = p.get("in"), p.get("name")
            if where not in ("path", "query", "header") or not isinstance(pname, str):
                continue  # cookies are not supported
            {"path": info.path_params, "query": info.query_params, "header": info.header_params}[
                where
            ].append(pname)
            properties[pname] = _param_schema(p.get("schema") or {"type": "string"}, p.get("description"))
            if p.get("required") or where == "path":
                required.append(pname)
        body = op.get("requestBody")
        if isinstance(body, Mapping):
            content = body.get("content") or {}
            for media in ("application/json", "multipart/form-data", "application/x-www-form-urlencoded"):
                if media in content:
                    info.body_media = media
                    schema = (content[media] or {}).get("schema") or {}
                    if schema.get("allOf"):
                        schema = schema["allOf"][0]
                    if schema.get("type", "object") == "object" and isinstance(
                        schema.get("properties"), Mapping
                    ):
                        for pname, pschema in schema["properties"].items():
                            properties[pname] = _param_schema(pschema, None)
                            info.body_params.append(pname)
                        required.extend(r for r in schema.get("required", []) if r in schema["properties"])
                    else:
                        info.body_whole = True
                        info.body_params.append("body")
                        properties["body"] = _param_schema(schema, body.get("description"))
                        if body.get("required"):
                            required.append("body")
                    break
            else:
                raise SpecError(f"{name}: no supported request body type in {sorted(content)}")
        ok = next(
            (
                op.get("responses", {}).get(c)
                for c in ("200", "201", "default")
                if c in op.get("responses", {})
            ),
            None,
        )
        returns = [ReturnSpec(type="text")]
        if isinstance(ok, Mapping):
            json_content = (ok.get("content") or {}).get("application/json")
            if isinstance(json_content, Mapping) and "schema" in json_content:
                info.output_schema = json_content["schema"]
                if json_content["schema"]:
                    returns = _return_specs(json_content["schema"])
        schema = {
            "type": "object",
            "properties": properties,
            "required": sorted(set(required), key=required.index),
        }
        description = str(op.get("description") or op.get("summary") or "")

        def run(arguments: dict[str, Any], ctx: ToolContext) -> Any:
            return self._call(name, info, returns, arguments, ctx)

        return SchemaTool(name, schema, run, description=description, returns=returns, backend=self.backend)

    def _call(
        self,
        name: str,
        op: _Operation,
        returns: list[ReturnSpec],
        arguments: dict[str, Any],
        ctx: ToolContext,
    ) -> Any:
        path = op.path
        for pname in op.path_params:
            path = path.replace(f"{{{pname}}}", quote(str(arguments.get(pname, "")), safe=""))
        url = urljoin(self.base_url, path.lstrip("/"))
        query = {k: _wire_text(arguments[k]) for k in op.query_params if k in arguments}
        headers = {k: _wire_text(arguments[k]) for k in op.header_params if k in arguments}
        request: dict[str, Any] = {}
        body = {k: arguments[k] for k in op.body_params if k in arguments}
        if op.body_media == "application/json":
            request["json"] = body.get("body") if op.body_whole else _jsonable(body)
        elif op.body_media == "application/x-www-form-urlencoded":
            request["data"] = {k: _wire_text(v) for k, v in body.items()}
        elif op.body_media == "multipart/form-data":
            files: dict[str, tuple[str, bytes, str]] = {}
            data: dict[str, str] = {}
            for k, v in body.items():
                if isinstance(v, StoredFile):
                    files[k] = (v.handle.name or k, v.read_bytes(), v.handle.media_type)
                else:
                    data[k] = _wire_text(v)
            request["files"] = files
            request["data"] = data
        try:
            response = self._http.request(op.method.upper(), url, params=query, headers=headers, **request)
        except httpx.HTTPError as exc:
            transport_error(f"{name} at {url}", exc)
        if not response.is_success:
            raise error_for_status(
                name, response.status_code, _error_message(response), _error_data(response)
            )
        return self._decode(name, returns, response, ctx)

    def _decode(
        self, name: str, returns: list[ReturnSpec], response: httpx.Response, ctx: ToolContext
    ) -> Any:
        media = response.headers.get("content-type", "").split(";")[0].strip()
        if media == "application/json" or media.endswith("+json"):
            try:
                value = response.json()
            except ValueError:
                raise InfraError(f"{name}: the answer says JSON but is not") from None
            if len(returns) > 1 and isinstance(value, list) and len(value) == len(returns):
                return [self._output(name, r, v, ctx) for r, v in zip(returns, value, strict=True)]
            return self._output(name, returns[0] if len(returns) == 1 else None, value, ctx)
        if media.startswith(("image/", "audio/", "video/")) or media == "application/octet-stream":
            return store_bytes(ctx, response.content, name=None, media_type=media)
        return response.text

    def _output(self, name: str, spec: ReturnSpec | None, value: Any, ctx: ToolContext) -> Any:
        if spec is not None and spec.type in ("image", "file") and isinstance(value, str):
            try:
                data = base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                raise ToolError(f"{name}: output is not base64") from None
            media = "image/png" if spec.type == "image" else "application/octet-stream"
            return store_bytes(ctx, data, name=None, media_type=media)
        return value

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> OpenAPIToolSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _jsonable(value: Any) -> Any:
    if isinstance(value, StoredFile):
        return base64.b64encode(value.read_bytes()).decode("ascii")
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def _wire_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def _error_message(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:500]
    if isinstance(data, Mapping) and "detail" in data:
        detail = data["detail"]
        if isinstance(detail, list):  # FastAPI's validation errors
            return "; ".join(
                f"{'.'.join(str(p) for p in d.get('loc', [])[1:]) or 'body'}: {d.get('msg')}"
                for d in detail
                if isinstance(d, Mapping)
            )
        return str(detail)[:500]
    if isinstance(data, Mapping) and isinstance(data.get("error"), Mapping):
        return str(data["error"].get("message", ""))[:500]
    return json.dumps(data)[:500]


def _error_data(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def load_spec(
    source: str | Path | Mapping[str, Any],
    *,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = 30.0,
) -> dict[str, Any]:
    """A spec from a dict, a JSON file, or an http(s) URL."""
    text = "the spec" if isinstance(source, Mapping) else str(source)
    if isinstance(source, Mapping):
        data: Any = dict(source)
    elif text.startswith(("http://", "https://")):
        try:
            response = httpx.get(text, headers=dict(headers or {}), timeout=timeout_s)
        except httpx.HTTPError as exc:
            transport_error(f"fetching {text}", exc)
        if response.status_code != 200:
            raise InfraError(f"fetching {text}: HTTP {response.status_code}")
        try:
            data = response.json()
        except ValueError:
            raise SpecError(f"{text} is not JSON") from None
    else:
        data = json.loads(Path(text).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not str(data.get("openapi", "")).startswith("3"):
        raise SpecError(f"{text} is not an OpenAPI 3 document")
    return data


def openapi_tools(
    source: str | Path | Mapping[str, Any],
    *,
    base_url: str | None = None,
    token: str | None = None,
    headers: Mapping[str, str] | None = None,
    operations: Iterable[str] | None = None,
    timeout_s: float = 60.0,
) -> OpenAPIToolSet:
    """Tools from an OpenAPI 3 spec. The API's address: `base_url`, else the spec's first
    `servers` entry (relative to the spec's URL), else the spec's own URL."""
    auth = bearer(token, headers)
    spec = load_spec(source, headers=auth)
    if base_url is None:
        servers = spec.get("servers") or []
        server = servers[0].get("url", "/") if servers and isinstance(servers[0], Mapping) else "/"
        if isinstance(source, (str, Path)) and str(source).startswith(("http://", "https://")):
            base_url = urljoin(str(source), server)
        elif server.startswith(("http://", "https://")):
            base_url = server
        else:
            raise SpecError("the spec names no absolute server URL: pass base_url")
    return OpenAPIToolSet(spec, base_url, headers=auth, operations=operations, timeout_s=timeout_s)


def agentlego_tools(
    url: str,
    *,
    token: str | None = None,
    headers: Mapping[str, str] | None = None,
    tools: Iterable[str] | None = None,
    timeout_s: float = 60.0,
) -> OpenAPIToolSet:
    """Tools of an AgentLego server (agentlego-server 0.2.0 or toolgym's AgentLego face), read
    from `url`/openapi.json as AgentLego's own `RemoteTool.from_server` does."""
    root = urljoin(url, "/")
    auth = bearer(token, headers)
    spec = load_spec(urljoin(root, "openapi.json"), headers=auth)
    toolset = OpenAPIToolSet(
        spec, root, headers=auth, operations=tools, timeout_s=timeout_s, backend="agentlego"
    )
    return toolset
