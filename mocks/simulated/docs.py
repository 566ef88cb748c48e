"""Tool documentation in the formats benchmarks ship, read into one `ToolDoc` per tool.

Formats (`load_docs` tells them apart by shape):
- OpenAI function records: a list of `{name, description, parameters}` or
  `{"type": "function", "function": {...}}` (ToolEyes' `config_gpt4.json`);
- ToolBench / StableToolBench tool JSON: `{tool_name, tool_description, api_list: [...]}` with
  `required_parameters` / `optional_parameters` of `{name, type, description, default}`; tools
  are named `<api>_for_<tool>` as ToolBench names them;
- T-Eval `api_descrip.json`: a list of `{name, tool_description, api_list}` whose APIs document
  `return_data`; tools are named `<Tool>.<api>` as T-Eval's prompts name them;
- MTU-Bench API lists: `{name, description, required_parameters, optional_parameters,
  result_parameters}` (the parameter forms vary: names, `{name: default}`, records);
- OpenAPI 3 documents: each operation is a tool (its `operationId`), no server needed.

Bad input is a `DocError` naming the file and the tool: an empty or invalid document, a
parameters schema that is not JSON Schema (checked against the 2020-12 meta-schema with
jsonschema-rs: ~5 µs a schema where jsonschema takes ~1 ms), two tools with one name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import jsonschema_rs

Action = Literal["create", "update", "delete", "get", "list", "call"]
DocFormat = Literal["openai", "toolbench", "teval", "mtu", "openapi"]

# the verbs a tool name starts with, and what they imply for the episode's state
_VERBS: dict[str, Action] = {
    **dict.fromkeys(
        (
            "create",
            "add",
            "book",
            "reserve",
            "post",
            "insert",
            "register",
            "make",
            "new",
            "schedule",
            "submit",
            "upload",
            "save",
            "buy",
            "order",
            "send",
            "write",
            "set",
            "put",
            "transfer",
            "pay",
            "rent",
            "subscribe",
            "start",
            "play",
            "generate",
        ),
        "create",
    ),
    **dict.fromkeys(
        ("update", "edit", "modify", "change", "rename", "patch", "move", "reschedule"), "update"
    ),
    **dict.fromkeys(("delete", "remove", "cancel", "drop", "unsubscribe", "clear", "stop"), "delete"),
    **dict.fromkeys(("list", "search", "find", "query", "browse", "lookup", "filter", "all"), "list"),
    **dict.fromkeys(
        (
            "get",
            "read",
            "fetch",
            "retrieve",
            "show",
            "check",
            "view",
            "describe",
            "info",
            "detail",
            "details",
            "lookup",
            "current",
            "download",
            "open",
        ),
        "get",
    ),
}
# "generate" answers freshly each call; it creates nothing another call could look up
_STATELESS_CREATE = frozenset({"generate", "play", "start", "send"})
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


class DocError(ValueError):
    """Documentation that cannot become tools; the message names the file and the tool."""

    def __init__(self, source: str, problem: str, tool: str | None = None) -> None:
        where = f"{source}: tool {tool!r}" if tool is not None else source
        super().__init__(f"{where}: {problem}")
        self.source, self.tool, self.problem = source, tool, problem


def words(name: str) -> list[str]:
    """`getCountryInfo`, `get_country_info`, `Get-Country info` -> ['get', 'country', 'info']."""
    return [w.lower() for w in _WORD.findall(name)]


def classify(name: str) -> tuple[Action, str]:
    """What a call to the tool does to the episode's state, read from its name, and the kind of
    record it is about (the resource): `create_event` -> (create, event), `get_events` ->
    (list, event), `SearchHotel` -> (list, hotel), `country_info` -> (get, country)."""
    parts = words(name.rsplit(".", 1)[-1])
    action: Action = "call"
    verb: str | None = None
    for part in parts:
        if part in _VERBS:
            action, verb = _VERBS[part], part
            break
    nouns = [p for p in parts if p not in _VERBS and p not in ("by", "for", "of", "the", "a", "to", "id")]
    resource = nouns[0] if nouns else (parts[-1] if parts else "item")
    if action == "get" and nouns and nouns[0].endswith("s") and not nouns[0].endswith("ss"):
        action = "list"  # get_events: many
    if action == "create" and verb in _STATELESS_CREATE:
        action = "call"
    return action, resource.removesuffix("s") if len(resource) > 3 and not resource.endswith(
        "ss"
    ) else resource


@dataclass(frozen=True)
class ToolDoc:
    """One documented tool: what the agent sees (name, description, parameters as JSON Schema),
    what it answers (`returns`: a JSON Schema of the answer when the doc gives one), and what a
    call does to the episode's state (`action` on `resource`)."""

    name: str
    description: str
    parameters: dict[str, Any]
    returns: dict[str, Any] | None = None
    source: str = "<docs>"
    action: Action = "call"
    resource: str = "item"
    examples: tuple[dict[str, Any], ...] = field(default=())

    @property
    def required(self) -> list[str]:
        found = self.parameters.get("required", [])
        return [str(r) for r in found] if isinstance(found, list) else []

    @property
    def mutates_state(self) -> bool:
        return self.action in ("create", "update", "delete")


def make_doc(
    name: Any,
    description: Any,
    parameters: Any,
    *,
    source: str,
    returns: Mapping[str, Any] | None = None,
    examples: Sequence[Mapping[str, Any]] = (),
) -> ToolDoc:
    """A checked ToolDoc: a non-empty name, parameters that are a JSON Schema of an object."""
    if not isinstance(name, str) or not name.strip():
        raise DocError(source, f"a tool needs a non-empty string name, got {name!r}")
    name = name.strip()
    if parameters is None:
        parameters = {"type": "object", "properties": {}}
    if not isinstance(parameters, Mapping):
        raise DocError(
            source, f"parameters must be a JSON Schema object, got {type(parameters).__name__}", name
        )
    schema = {"type": "object", "properties": {}, **dict(parameters)}
    if schema.get("type") != "object" or not isinstance(schema.get("properties"), Mapping):
        raise DocError(source, "parameters must be a JSON Schema of type object with properties", name)
    try:
        jsonschema_rs.meta.validate(schema)
    except jsonschema_rs.ValidationError as exc:
        raise DocError(source, f"parameters are not JSON Schema: {exc.message}", name) from None
    except jsonschema_rs.ReferencingError as exc:
        raise DocError(source, f"parameters are not JSON Schema: {exc}", name) from None
    if returns is not None:
        try:
            jsonschema_rs.meta.validate(dict(returns))
        except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError) as exc:
            raise DocError(source, f"the return schema is not JSON Schema: {exc}", name) from None
    action, resource = classify(name)
    return ToolDoc(
        name=name,
        description=str(description or "").strip(),
        parameters=schema,
        returns=dict(returns) if returns is not None else None,
        source=source,
        action=action,
        resource=resource,
        examples=tuple(dict(e) for e in examples),
    )


def unique(docs: Iterable[ToolDoc], source: str, *, keep_first: bool = False) -> list[ToolDoc]:
    """`docs` as a list; two tools with one name are a DocError naming the tool (with
    `keep_first`, the later ones are dropped: for benchmark data that has such duplicates)."""
    out: list[ToolDoc] = []
    seen: set[str] = set()
    for doc in docs:
        if doc.name in seen:
            if keep_first:
                continue
            raise DocError(source, "two tools have this name", doc.name)
        seen.add(doc.name)
        out.append(doc)
    return out


# ---- OpenAI function records -----------------------------------------------------------------------
def from_openai(
    records: Any, source: str, *, exclude: Iterable[str] = (), keep_first: bool = False
) -> list[ToolDoc]:
    if not isinstance(records, list):
        raise DocError(source, "OpenAI tool docs are a list of function records")
    skip = set(exclude)
    docs = []
    for n, record in enumerate(records):
        fn = (
            record.get("function")
            if isinstance(record, Mapping) and record.get("type") == "function"
            else record
        )
        if not isinstance(fn, Mapping):
            raise DocError(source, f"record {n} is not an object")
        if fn.get("name") in skip:
            continue
        docs.append(make_doc(fn.get("name"), fn.get("description"), fn.get("parameters"), source=source))
    return unique(docs, source, keep_first=keep_first)


# ---- ToolBench / StableToolBench, T-Eval, MTU: parameter lists -----------------------------------
_LIST_TYPES = {
    "string": "string",
    "str": "string",
    "text": "string",
    "enum": "string",
    "date": "string",
    "time": "string",
    "integer": "integer",
    "int": "integer",
    "number": "number",
    "float": "number",
    "double": "number",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "object": "object",
    "dict": "object",
    "json": "object",
}


def param_entries(spec: Any, *, typed: bool) -> list[tuple[str, dict[str, Any]]]:
    """(name, JSON Schema) from the parameter forms of ToolBench, T-Eval and MTU: ["a", "b"],
    [{"name", "type", "description", "default"}] or {"name": default}. With `typed`, documented
    types become JSON Schema types (MTU's are left out: its types are loose, "integer"
    parameters get "5", and its scorer compares text)."""
    out: list[tuple[str, dict[str, Any]]] = []
    if isinstance(spec, Mapping):
        for name, default in spec.items():
            out.append((str(name), {"default": default}))
    elif isinstance(spec, list):
        for entry in spec:
            if isinstance(entry, str):
                out.append((entry, {}))
            elif isinstance(entry, Mapping) and "name" in entry:
                schema: dict[str, Any] = {}
                kind = _LIST_TYPES.get(str(entry.get("type", "")).strip().lower())
                if typed and kind is not None:
                    schema["type"] = kind
                if isinstance(entry.get("description"), str):
                    schema["description"] = entry["description"]
                if "default" in entry and entry["default"] not in ("", None):
                    schema["default"] = entry["default"]
                out.append((str(entry["name"]), schema))
    return out


def list_parameters_schema(api: Mapping[str, Any], *, typed: bool) -> dict[str, Any]:
    """A JSON Schema of an API's `required_parameters` and `optional_parameters`."""
    required = param_entries(api.get("required_parameters", []), typed=typed)
    optional = param_entries(api.get("optional_parameters", []), typed=typed)
    properties = {name: schema for name, schema in [*required, *optional]}
    return {
        "type": "object",
        "properties": properties,
        "required": list(dict.fromkeys(n for n, _ in required)),
    }


def _fields_schema(fields: Any) -> dict[str, Any] | None:
    """A return schema from a list of documented result fields (T-Eval `return_data`, MTU
    `result_parameters`): an object with those properties, each described where documented."""
    if not isinstance(fields, list) or not fields:
        return None
    properties: dict[str, Any] = {}
    for entry in fields:
        if isinstance(entry, str):
            properties[entry] = {}
        elif isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
            described = entry.get("description")
            properties[entry["name"]] = {"description": described} if isinstance(described, str) else {}
    return {"type": "object", "properties": properties, "required": list(properties)} if properties else None


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_")


def from_toolbench(tool: Any, source: str) -> list[ToolDoc]:
    if not isinstance(tool, Mapping) or not isinstance(tool.get("api_list"), list):
        raise DocError(source, "a ToolBench tool is an object with an api_list")
    tool_name = _slug(str(tool.get("standardized_name") or tool.get("tool_name") or ""))
    if not tool_name:
        raise DocError(source, "a ToolBench tool needs a tool_name")
    docs = []
    for api in tool["api_list"]:
        if not isinstance(api, Mapping):
            raise DocError(source, "an api_list entry is not an object", tool_name)
        api_name = _slug(str(api.get("name", "")))
        name = f"{api_name}_for_{tool_name}" if api_name else None
        returns = None
        template = api.get("template_response")
        if isinstance(template, Mapping) and template:
            returns = _template_schema(template)
        examples = [api["test_endpoint"]] if isinstance(api.get("test_endpoint"), Mapping) else []
        docs.append(
            make_doc(
                name,
                api.get("description") or tool.get("tool_description"),
                list_parameters_schema(api, typed=True),
                source=source,
                returns=returns,
                examples=examples,
            )
        )
    return unique(docs, source)


def _template_schema(template: Any) -> dict[str, Any]:
    """A JSON Schema from a ToolBench `template_response`: {"field": "str", "items": [...]} ."""
    if isinstance(template, Mapping):
        return {"type": "object", "properties": {str(k): _template_schema(v) for k, v in template.items()}}
    if isinstance(template, list):
        return {"type": "array", "items": _template_schema(template[0]) if template else {}}
    kind = _LIST_TYPES.get(str(template).strip().lower())
    return {"type": kind} if kind is not None else {}


def from_teval(tools: Any, source: str) -> list[ToolDoc]:
    if not isinstance(tools, list):
        raise DocError(source, "T-Eval API docs are a list of tools with api_list")
    docs = []
    for tool in tools:
        if not isinstance(tool, Mapping) or not isinstance(tool.get("api_list"), list):
            raise DocError(source, "a T-Eval tool is an object with a name and an api_list")
        for api in tool["api_list"]:
            if not isinstance(api, Mapping):
                raise DocError(source, "an api_list entry is not an object", str(tool.get("name")))
            docs.append(
                make_doc(
                    f"{tool.get('name')}.{api.get('name')}",
                    api.get("description"),
                    list_parameters_schema(api, typed=True),
                    source=source,
                    returns=_fields_schema(api.get("return_data")),
                )
            )
    return unique(docs, source)


def from_mtu(apis: Any, source: str) -> list[ToolDoc]:
    if not isinstance(apis, list):
        raise DocError(source, "an MTU API list is a list of APIs")
    docs = []
    for api in apis:
        if not isinstance(api, Mapping):
            raise DocError(source, "an MTU API is an object with a name")
        docs.append(
            make_doc(
                api.get("name"),
                api.get("description"),
                list_parameters_schema(api, typed=False),
                source=source,
                returns=_fields_schema(api.get("result_parameters")),
            )
        )
    return unique(docs, source)


# ---- OpenAPI ---------------------------------------------------------------------------------------
OPENAPI_METHODS = ("get", "post", "put", "patch", "delete")


class RefError(ValueError):
    """A `$ref` that does not resolve, points outside the document, or loops."""


def resolve_refs(spec: Mapping[str, Any], node: Any, seen: frozenset[str] = frozenset()) -> Any:
    """`node` with local `$ref`s (`#/...`) replaced by what they point at."""
    if isinstance(node, Mapping):
        ref = node.get("$ref")
        if isinstance(ref, str):
            if not ref.startswith("#/"):
                raise RefError(f"only local references are supported, got {ref!r}")
            if ref in seen:
                raise RefError(f"recursive reference {ref!r}")
            target: Any = spec
            for part in ref[2:].split("/"):
                part = part.replace("~1", "/").replace("~0", "~")
                if not isinstance(target, Mapping) or part not in target:
                    raise RefError(f"reference {ref!r} does not resolve")
                target = target[part]
            return resolve_refs(spec, target, seen | {ref})
        return {k: resolve_refs(spec, v, seen) for k, v in node.items()}
    if isinstance(node, list):
        return [resolve_refs(spec, v, seen) for v in node]
    return node


def operation_name(op: Mapping[str, Any], method: str, path: str) -> str:
    """An operation's tool name: its operationId, else method and path."""
    op_id = op.get("operationId")
    if isinstance(op_id, str) and op_id:
        return re.sub(r"[^A-Za-z0-9_.-]", "_", op_id)
    return re.sub(r"[^A-Za-z0-9_]+", "_", f"{method}_{path}").strip("_")


def _json_content(holder: Any) -> dict[str, Any] | None:
    content = holder.get("content") if isinstance(holder, Mapping) else None
    if not isinstance(content, Mapping):
        return None
    for media, body in content.items():
        if "json" in str(media) and isinstance(body, Mapping) and isinstance(body.get("schema"), Mapping):
            return dict(body["schema"])
    return None


def from_openapi(spec: Any, source: str) -> list[ToolDoc]:
    if not isinstance(spec, Mapping) or not str(spec.get("openapi", "")).startswith("3"):
        raise DocError(source, "not an OpenAPI 3 document")
    paths = spec.get("paths")
    if not isinstance(paths, Mapping):
        raise DocError(source, "an OpenAPI document needs paths")
    docs = []
    for path, item in paths.items():
        if not isinstance(item, Mapping):
            continue
        for method in OPENAPI_METHODS:
            op = item.get(method)
            if not isinstance(op, Mapping):
                continue
            name = operation_name(op, method, str(path))
            try:
                op = resolve_refs(spec, op)
                shared = resolve_refs(spec, item.get("parameters", []))
            except RefError as exc:
                raise DocError(source, str(exc), name) from None
            properties: dict[str, Any] = {}
            required: list[str] = []
            for param in [*shared, *op.get("parameters", [])]:
                if not isinstance(param, Mapping) or not isinstance(param.get("name"), str):
                    continue
                schema = dict(param.get("schema") or {"type": "string"})
                if isinstance(param.get("description"), str):
                    schema.setdefault("description", param["description"])
                properties[param["name"]] = schema
                if param.get("required") or param.get("in") == "path":
                    required.append(param["name"])
            body = _json_content(op.get("requestBody"))
            if body is not None and isinstance(body.get("properties"), Mapping):
                properties.update({str(k): dict(v) for k, v in body["properties"].items()})
                required += [str(r) for r in body.get("required", []) if isinstance(r, str)]
            responses = op.get("responses") if isinstance(op.get("responses"), Mapping) else {}
            ok = next((responses[c] for c in ("200", "201", 200, 201, "default") if c in responses), None)
            doc = make_doc(
                name,
                op.get("description") or op.get("summary"),
                {"type": "object", "properties": properties, "required": list(dict.fromkeys(required))},
                source=source,
                returns=_json_content(ok),
            )
            # the HTTP method says more about state than the name does
            verb: Action = {"post": "create", "put": "update", "patch": "update", "delete": "delete"}.get(
                method, doc.action if doc.action in ("get", "list") else "get"
            )  # type: ignore[assignment]
            docs.append(ToolDoc(**{**doc.__dict__, "action": verb}))
    if not docs:
        raise DocError(source, "the document has no operations")
    return unique(docs, source)


# ---- any file ----------------------------------------------------------------------------------------
def detect_format(data: Any) -> DocFormat | None:
    """Which documentation format `data` is, by shape (None: none of them)."""
    if isinstance(data, Mapping):
        if "openapi" in data:
            return "openapi"
        if "api_list" in data:
            return "toolbench"
        return None
    if not isinstance(data, list) or not data or not isinstance(data[0], Mapping):
        return None
    first = data[0]
    if "api_list" in first:
        return "teval"
    if first.get("type") == "function" or "parameters" in first:
        return "openai"
    if "required_parameters" in first or "optional_parameters" in first or "result_parameters" in first:
        return "mtu"
    return "openai" if "name" in first else None


def parse_docs(
    data: Any,
    source: str,
    *,
    fmt: DocFormat | None = None,
    exclude: Iterable[str] = (),
    keep_first: bool = False,
) -> list[ToolDoc]:
    """The tools documented in `data` (already parsed JSON), in `fmt` or the detected format.
    `exclude`: OpenAI records left out by name; `keep_first`: of OpenAI records with one name,
    the first is kept (else a DocError)."""
    if data in (None, [], {}):
        raise DocError(source, "the document is empty: no tools")
    fmt = fmt or detect_format(data)
    if fmt == "openai":
        return from_openai(data, source, exclude=exclude, keep_first=keep_first)
    if fmt == "toolbench":
        return from_toolbench(data, source)
    if fmt == "teval":
        return from_teval(data, source)
    if fmt == "mtu":
        return from_mtu(data, source)
    if fmt == "openapi":
        return from_openapi(data, source)
    raise DocError(
        source,
        "not a tool document toolgym reads (OpenAI function records, ToolBench tool JSON, "
        "T-Eval api_descrip.json, an MTU API list or OpenAPI 3)",
    )


def load_docs(
    path: Path | str, *, fmt: DocFormat | None = None, exclude: Iterable[str] = (), keep_first: bool = False
) -> list[ToolDoc]:
    """The tools documented in a JSON file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DocError(str(path), f"cannot read: {exc.strerror or exc}") from None
    if not text.strip():
        raise DocError(str(path), "the file is empty")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise DocError(str(path), f"not JSON: {exc}") from None
    return parse_docs(data, str(path), fmt=fmt, exclude=exclude, keep_first=keep_first)
