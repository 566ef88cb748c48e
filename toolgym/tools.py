"""The tool model: declare a tool from a typed function or class; schemas come from the type hints.

    @tool(category="logic")
    def add(a: int, b: Annotated[int, Param("the second term")] = 0) -> int:
        "Add two integers."
        return a + b

Image and file parameters are annotated `Image` / `File`: the agent passes a handle or a task
file name, and the tool receives a `StoredFile`. A parameter annotated `ToolContext` is injected
by the env (file store, seed, clock) and is not part of the schema.
"""

from __future__ import annotations

import inspect
import operator
import time
import types
import typing
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from typing import Annotated, Any, Literal, get_args, get_origin, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from toolgym.actions import ActionRecord, Observation, ObservationRecord, ToolCall
from toolgym.canonical import json_safe, render_json
from toolgym.errors import ArgumentError, ErrorKind, ToolgymError, UnknownToolError
from toolgym.files import FileHandle, FileKind, FileStore, StoredFile, UnknownFileError

ToolCategory = Literal["perception", "operation", "logic", "creativity", "app"]
ParamType = Literal["text", "int", "float", "bool", "image", "file", "list", "object"]

DEFAULT_CLOCK = datetime(2024, 1, 1, tzinfo=UTC)
# the backend of the env's own tools (a timeline's `wait` and `current_time`): they act on the
# episode, not on a tool backend, so a cassette or a replay runs them, never records them
ENV_BACKEND = "toolgym-env"


@dataclass(frozen=True)
class Param:
    """Annotated metadata for a parameter: `x: Annotated[str, Param("what x is")]`.
    `alias` publishes the parameter under a name Python cannot spell (`from`, `song/playlist`);
    the function still receives it under its own name."""

    description: str | None = None
    enum: tuple[Any, ...] | None = None
    alias: str | None = None


@dataclass(frozen=True)
class FileParam:
    kind: FileKind


Image = Annotated[StoredFile, FileParam("image")]
File = Annotated[StoredFile, FileParam("file")]


@dataclass
class ToolContext:
    """What the env lends a tool for one call. Tools never look at wall-clock time or global RNGs."""

    files: FileStore
    seed: int = 0
    clock: datetime = DEFAULT_CLOCK
    task_id: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)


class ParamSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    type: ParamType
    description: str | None = None
    optional: bool = False
    default: Any = None
    enum: tuple[Any, ...] | None = None
    json_schema: dict[str, Any]


class ReturnSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    type: ParamType
    description: str | None = None


_TYPE_NAMES: dict[type, ParamType] = {str: "text", int: "int", float: "float", bool: "bool"}
_JSON_TYPES: dict[ParamType, str] = {
    "text": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "image": "string",
    "file": "string",
    "list": "array",
    "object": "object",
}


def _split_annotated(annotation: Any) -> tuple[Any, list[Any]]:
    if get_origin(annotation) is Annotated:
        base, *meta = get_args(annotation)
        return base, list(meta)
    return annotation, []


def _strip_optional(annotation: Any) -> Any:
    origin = get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _param_type(base: Any) -> ParamType:
    base = _strip_optional(base)
    if base in _TYPE_NAMES:
        return _TYPE_NAMES[base]
    origin = get_origin(base)
    if origin is Literal:
        first = get_args(base)[0]
        return _TYPE_NAMES.get(type(first), "text")
    if isinstance(base, type) and issubclass(base, Enum):
        return "text"
    if origin in (list, tuple) or base in (list, tuple):
        return "list"
    if origin is dict or base is dict or (isinstance(base, type) and issubclass(base, BaseModel)):
        return "object"
    if base is FileHandle or base is StoredFile:
        return "file"
    raise TypeError(f"unsupported parameter or return type {base!r}")


def _return_specs(annotation: Any) -> list[ReturnSpec]:
    if annotation is inspect.Signature.empty or annotation is None or annotation is type(None):
        return []
    base, meta = _split_annotated(annotation)
    description = next((m.description for m in meta if isinstance(m, Param)), None)
    file_kind = next((m.kind for m in meta if isinstance(m, FileParam)), None)
    if get_origin(base) is tuple:
        return [spec for arg in get_args(base) if arg is not Ellipsis for spec in _return_specs(arg)]
    if file_kind is not None:
        return [ReturnSpec(type=file_kind, description=description)]
    return [ReturnSpec(type=_param_type(base), description=description)]


@dataclass(frozen=True)
class _ParamBinding:
    spec: ParamSpec
    file_kind: FileKind | None


_PLAIN_TYPES: tuple[type, ...] = (str, int, float, bool)
_EXACT_FLOAT_INT = 2**53  # ints a float holds exactly: pydantic turns them into that float


@dataclass(frozen=True, slots=True)
class _PlainParam:
    """A parameter whose value pydantic would pass through unchanged when it already has the
    right type: str, int, float or bool, optionally None, or a Literal of strings."""

    key: str  # the name in the arguments (the alias, if any)
    pname: str  # the function's parameter
    kind: type
    nullable: bool
    choices: frozenset[str] | None
    required: bool
    default: Any


def _plain_params(model: type[BaseModel]) -> tuple[_PlainParam, ...] | None:
    """The fast path's view of an arguments model, or None when a field is not plain (or has
    validators or constraints: then pydantic must see every value)."""
    found = []
    for pname, info in model.model_fields.items():
        plain = None
        if not info.metadata:
            required = info.is_required()
            plain = _plain_param(pname, info.alias or pname, info.annotation, required, info.default)
        if plain is None:
            return None
        found.append(plain)
    return tuple(found)


def _plain_param(pname: str, key: str, field_type: Any, required: bool, default: Any) -> _PlainParam | None:
    base = _strip_optional(field_type)
    nullable = base is not field_type
    choices = None
    if get_origin(base) is Literal:
        values = get_args(base)
        if not all(type(v) is str for v in values):
            return None
        base, choices = str, frozenset(values)
    if base not in _PLAIN_TYPES or (not required and type(default) not in (*_PLAIN_TYPES, type(None))):
        return None
    return _PlainParam(key, pname, base, nullable, choices, required, default)


def _plain_arguments(params: tuple[_PlainParam, ...], arguments: Mapping[str, Any]) -> dict[str, Any] | None:
    """What pydantic's model_validate would give for arguments that are already of the declared
    types (the common case), without building a model; None for anything else, which then takes
    pydantic's path (coercions and every error message stay pydantic's)."""
    out: dict[str, Any] = {}
    seen = 0
    for p in params:
        if p.key in arguments:
            value = arguments[p.key]
            seen += 1
            kind = type(value)
            if kind is p.kind:
                if p.choices is not None and value not in p.choices:
                    return None
            elif value is None and p.nullable:
                pass
            elif kind is int and p.kind is float and -_EXACT_FLOAT_INT <= value <= _EXACT_FLOAT_INT:
                value = float(value)
            else:
                return None
            out[p.pname] = value
        elif p.required:
            return None
        else:
            out[p.pname] = p.default
    return out if seen == len(arguments) else None  # an unknown key: pydantic says which


class BaseTool(ABC):
    """What the env, the server and the exporters need from a tool. `Tool` builds one from a typed
    Python function; `SchemaTool` from a JSON Schema (remote tools, imported specs)."""

    name: str
    description: str
    category: ToolCategory
    mutates_state: bool
    version: str
    backend: str
    returns: list[ReturnSpec]

    @property
    @abstractmethod
    def params(self) -> list[ParamSpec]: ...

    @abstractmethod
    def parameters_schema(self) -> dict[str, Any]: ...

    @abstractmethod
    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validated arguments (file params still as references); ArgumentError otherwise."""

    @abstractmethod
    def invoke(self, arguments: Mapping[str, Any], ctx: ToolContext) -> Any:
        """Validate, resolve file references, run. Raises ToolgymError subclasses, or whatever
        the tool itself raises."""

    def returns_schema(self) -> dict[str, Any]:
        items = [
            {"type": _JSON_TYPES[r.type], **({"format": r.type} if r.type in ("image", "file") else {})}
            for r in self.returns
        ]
        if len(items) == 1:
            return items[0]
        return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}

    @property
    def file_params(self) -> dict[str, FileKind]:
        return {
            p.name: ("image" if p.type == "image" else "file")
            for p in self.params
            if p.type in ("image", "file")
        }

    def resolve_files(self, kwargs: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        """File references become StoredFiles; an unknown file or a non-image is an ArgumentError."""
        for pname, kind in self.file_params.items():
            ref = kwargs.get(pname)
            if ref is None:
                continue
            try:
                stored = ctx.files.resolve(ref)
            except UnknownFileError as exc:
                raise ArgumentError(f"{self.name}: {pname}: {exc}") from None
            if kind == "image" and not stored.handle.media_type.startswith("image/"):
                raise ArgumentError(
                    f"{self.name}: {pname}: {ref!r} is {stored.handle.media_type}, not an image"
                )
            kwargs[pname] = stored
        return kwargs

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, category={self.category!r})"


class Tool(BaseTool):
    """A tool from a typed Python callable: schema from the hints, arguments checked by pydantic."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        category: ToolCategory = "operation",
        mutates_state: bool = False,
        version: str = "1",
        returns_description: str | None = None,
        backend: str = "builtin",
    ) -> None:
        self.fn = fn
        self.name: str = name or str(getattr(fn, "__name__", type(fn).__name__))
        self.description = inspect.cleandoc(description or fn.__doc__ or "").strip()
        self.category: ToolCategory = category
        self.mutates_state = mutates_state
        self.version = version
        self.backend = backend
        self._bindings: dict[str, _ParamBinding] = {}
        self._context_param: str | None = None
        hints = typing.get_type_hints(fn, include_extras=True)
        fields: dict[str, Any] = {}
        for pname, p in inspect.signature(fn).parameters.items():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TypeError(f"tool {self.name}: *args/**kwargs cannot be described by a schema")
            annotation = hints.get(pname, str)
            base, meta = _split_annotated(annotation)
            if base is ToolContext:
                self._context_param = pname
                continue
            info = next((m for m in meta if isinstance(m, Param)), Param())
            file_kind = next((m.kind for m in meta if isinstance(m, FileParam)), None)
            optional = p.default is not inspect.Parameter.empty
            default = None if not optional else p.default
            if file_kind is not None:
                ptype: ParamType = file_kind
                field_type: Any = str | None if optional else str
            else:
                ptype = _param_type(base)
                field_type = base
            fields[pname] = (field_type, Field(default if optional else ..., alias=info.alias))
            enum = info.enum
            if enum is None and get_origin(_strip_optional(base)) is Literal:
                enum = tuple(get_args(_strip_optional(base)))
            self._bindings[pname] = _ParamBinding(
                spec=ParamSpec(
                    name=info.alias or pname,
                    type=ptype,
                    description=info.description,
                    optional=optional,
                    default=default if isinstance(default, (str, int, float, bool, type(None))) else None,
                    enum=enum,
                    json_schema={},
                ),
                file_kind=file_kind,
            )
        self.args_model = create_model(f"{self.name}Args", __config__=ConfigDict(extra="forbid"), **fields)
        properties = self.args_model.model_json_schema().get("properties", {})
        for pname, binding in self._bindings.items():
            schema = dict(properties.get(binding.spec.name, {}))
            schema.pop("title", None)
            if binding.file_kind is not None:
                schema = {"type": "string", "format": binding.file_kind}
                if binding.spec.optional:
                    schema["default"] = None
            if binding.spec.description:
                schema["description"] = binding.spec.description
            if binding.spec.enum is not None:
                schema["enum"] = list(binding.spec.enum)
            self._bindings[pname] = _ParamBinding(
                spec=binding.spec.model_copy(update={"json_schema": schema}), file_kind=binding.file_kind
            )
        self._file_kinds: dict[str, FileKind] = {
            b.spec.name: b.file_kind for b in self._bindings.values() if b.file_kind is not None
        }
        self.returns = _return_specs(hints.get("return", inspect.Signature.empty))
        if returns_description and self.returns:
            self.returns = [self.returns[0].model_copy(update={"description": returns_description})]

    # ---- description -------------------------------------------------------------------
    @property
    def params(self) -> list[ParamSpec]:
        return [b.spec for b in self._bindings.values()]

    def parameters_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {b.spec.name: b.spec.json_schema for b in self._bindings.values()},
            "required": [b.spec.name for b in self._bindings.values() if not b.spec.optional],
            "additionalProperties": False,
        }

    @property
    def file_params(self) -> dict[str, FileKind]:
        return dict(self._file_kinds)

    @property
    def args_model(self) -> type[BaseModel]:
        """The pydantic model of the arguments. Setting it (apps adjust their prototypes) also
        sets what the fast path of `validate` may take without it."""
        return self._args_model

    @args_model.setter
    def args_model(self, model: type[BaseModel]) -> None:
        self._args_model = model
        self._plain = _plain_params(model)

    # ---- calling ------------------------------------------------------------------------
    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validated arguments (file params still as references); ArgumentError otherwise."""
        if self._plain is not None and isinstance(arguments, dict):
            found = _plain_arguments(self._plain, arguments)
            if found is not None:
                return found
        return self.validate_with_pydantic(arguments)

    def validate_with_pydantic(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """`validate` by the model alone: what the fast path must agree with (tests compare)."""
        if not isinstance(arguments, Mapping):
            raise ArgumentError(
                f"{self.name}: arguments must be a JSON object, got {type(arguments).__name__}"
            )
        try:
            model = self.args_model.model_validate(dict(arguments))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(arguments)'}: {err['msg']}"
                for err in exc.errors()
            )
            raise ArgumentError(f"{self.name}: {problems}") from None
        return {k: getattr(model, k) for k in self._bindings}

    def invoke(self, arguments: Mapping[str, Any], ctx: ToolContext) -> Any:
        """Validate, resolve file references, run. Raises ToolgymError subclasses, or whatever
        the tool itself raises."""
        kwargs = self.validate(arguments)
        if self._file_kinds:
            kwargs = self.resolve_files(kwargs, ctx)
        if self._context_param:
            kwargs[self._context_param] = ctx
        return self.fn(**kwargs)


class WrappedTool(BaseTool):
    """A tool that adds behaviour around another: it publishes `inner`'s metadata, schema and
    argument checks unchanged; subclasses override `invoke`."""

    def __init__(self, inner: BaseTool) -> None:
        self.inner = inner
        self.name = inner.name
        self.description = inner.description
        self.category = inner.category
        self.mutates_state = inner.mutates_state
        self.version = inner.version
        self.backend = inner.backend
        self.returns = list(inner.returns)

    @property
    def params(self) -> list[ParamSpec]:
        return self.inner.params

    def parameters_schema(self) -> dict[str, Any]:
        return self.inner.parameters_schema()

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return self.inner.validate(arguments)

    def invoke(self, arguments: Mapping[str, Any], ctx: ToolContext) -> Any:
        return self.inner.invoke(arguments, ctx)


# JSON Schema "type" -> our parameter type (used by everything that reads foreign schemas)
SCHEMA_PARAM_TYPES: dict[str, ParamType] = {
    "string": "text",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "object": "object",
}


def _schema_param_type(schema: Mapping[str, Any]) -> ParamType:
    fmt = schema.get("format")
    if fmt in ("image", "file"):
        return "image" if fmt == "image" else "file"
    kind = schema.get("type", "string")
    if isinstance(kind, list):  # e.g. ["string", "null"]
        kind = next((k for k in kind if k != "null"), "string")
    return SCHEMA_PARAM_TYPES.get(str(kind), "text")


class SchemaTool(BaseTool):
    """A tool described by a JSON Schema and run by `fn(arguments, ctx)`: remote tools (HTTP,
    MCP, AgentLego, OpenAPI) and tools imported from specs. Arguments are checked with
    `jsonschema` before `fn` runs; file parameters arrive as StoredFiles."""

    def __init__(
        self,
        name: str,
        parameters: Mapping[str, Any],
        fn: Callable[[dict[str, Any], ToolContext], Any],
        *,
        description: str = "",
        returns: Iterable[ReturnSpec] = (ReturnSpec(type="text"),),
        category: ToolCategory = "operation",
        mutates_state: bool = False,
        version: str = "1",
        backend: str = "remote",
        check_schema: bool = True,
    ) -> None:
        """`check_schema=False` skips the meta-schema check, for callers that checked already
        (it costs ~1 ms a schema with jsonschema)."""
        from jsonschema import Draft202012Validator

        self.name = name
        self.description = description
        self.category = category
        self.mutates_state = mutates_state
        self.version = version
        self.backend = backend
        self.returns = list(returns)
        self.fn = fn
        self._schema = {"type": "object", "properties": {}, **dict(parameters)}
        if check_schema:
            Draft202012Validator.check_schema(self._schema)
        self._validator = Draft202012Validator(self._schema)
        required = set(self._schema.get("required", []))
        self._params = [
            ParamSpec(
                name=pname,
                type=_schema_param_type(pschema),
                description=pschema.get("description"),
                optional=pname not in required,
                default=pschema.get("default"),
                enum=tuple(pschema["enum"]) if "enum" in pschema else None,
                json_schema=dict(pschema),
            )
            for pname, pschema in self._schema["properties"].items()
        ]

    @property
    def params(self) -> list[ParamSpec]:
        return list(self._params)

    def parameters_schema(self) -> dict[str, Any]:
        return dict(self._schema)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(arguments, Mapping):
            raise ArgumentError(
                f"{self.name}: arguments must be a JSON object, got {type(arguments).__name__}"
            )
        errors = sorted(self._validator.iter_errors(dict(arguments)), key=lambda e: list(e.path))
        if errors:
            problems = "; ".join(
                f"{'.'.join(map(str, e.path)) or '(arguments)'}: {e.message}" for e in errors
            )
            raise ArgumentError(f"{self.name}: {problems}")
        return dict(arguments)

    def invoke(self, arguments: Mapping[str, Any], ctx: ToolContext) -> Any:
        return self.fn(self.resolve_files(self.validate(arguments), ctx), ctx)


@overload
def tool(
    fn: Callable[..., Any],
    *,
    name: str | None = ...,
    description: str | None = ...,
    category: ToolCategory = ...,
    mutates_state: bool = ...,
    version: str = ...,
    returns_description: str | None = ...,
    backend: str = ...,
) -> Tool: ...


@overload
def tool(
    fn: None = None,
    *,
    name: str | None = ...,
    description: str | None = ...,
    category: ToolCategory = ...,
    mutates_state: bool = ...,
    version: str = ...,
    returns_description: str | None = ...,
    backend: str = ...,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    category: ToolCategory = "operation",
    mutates_state: bool = False,
    version: str = "1",
    returns_description: str | None = None,
    backend: str = "builtin",
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Decorator: turn a typed function into a Tool. Usable bare or with keyword options."""

    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool(
            f,
            name=name,
            description=description,
            category=category,
            mutates_state=mutates_state,
            version=version,
            returns_description=returns_description,
            backend=backend,
        )

    return wrap(fn) if fn is not None else wrap


def tool_from_object(obj: Any) -> Tool:
    """A Tool from a class instance with a typed `run` method and class attributes
    `name`, `description`, `category`, and optionally `mutates_state`, `version`, `backend`."""
    return Tool(
        obj.run,
        name=getattr(obj, "name", type(obj).__name__),
        description=getattr(obj, "description", None) or type(obj).__doc__,
        category=getattr(obj, "category", "operation"),
        mutates_state=getattr(obj, "mutates_state", False),
        version=str(getattr(obj, "version", "1")),
        returns_description=getattr(obj, "returns_description", None),
        backend=getattr(obj, "backend", "builtin"),
    )


# ---- results --------------------------------------------------------------------------------
_PLAIN = (str, int, bool, type(None))


def to_json_value(value: Any) -> Any:
    """Tool results as JSON: files become handle dicts, models become dicts, tuples lists."""
    if isinstance(value, _PLAIN) and not isinstance(value, Enum):  # the common case first
        return value
    if isinstance(value, float):
        return None if value != value else value  # NaN is not JSON
    if isinstance(value, dict):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    if isinstance(value, StoredFile):
        value = value.handle
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): to_json_value(v) for k, v in value.items()}
    return str(value)


def _error_content(data: Any) -> Any:
    try:
        return to_json_value(data)
    except RecursionError:  # an error payload nested past the recursion limit, or a cycle
        return json_safe(data)


def _collect_files(value: Any) -> list[FileHandle]:
    if isinstance(value, StoredFile):
        return [value.handle]
    if isinstance(value, FileHandle):
        return [value]
    if isinstance(value, Mapping):
        return [h for v in value.values() for h in _collect_files(v)]
    if isinstance(value, (list, tuple)):
        return [h for v in value for h in _collect_files(v)]
    return []


def _render(value: Any, content: Any) -> str:
    """The text an agent sees: strings as they are, files as `image file:<sha>`, the rest as
    canonical JSON of the already-converted `content` (remembered: the trace line reuses it)."""

    if isinstance(value, str):
        return value
    if isinstance(value, StoredFile):
        value = value.handle
    if isinstance(value, FileHandle):
        return f"{value.media_type.split('/')[0]} {value.ref}"
    if isinstance(value, (list, tuple)) and any(isinstance(v, (FileHandle, StoredFile)) for v in value):
        return "\n".join(_render(v, c) for v, c in zip(value, content, strict=True))
    return render_json(content)


_ROW_TYPES = frozenset({str, int, float, bool, type(None)})
_STR_TYPE = frozenset({str})


def _json_and_files(value: Any, files: list[FileHandle]) -> Any:
    """to_json_value(value), with _collect_files(value) appended to `files`, in one walk: plain
    JSON data (the usual result) by exact type; anything else by those two functions."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        return None if value != value else value
    if kind is dict:
        values = value.values()
        if (  # a row of scalars under str keys, none NaN (x == x): checked in C, copied as it is
            _ROW_TYPES.issuperset(map(type, values))
            and _STR_TYPE.issuperset(map(type, value))
            and all(map(operator.eq, values, values))
        ):
            return dict(value)
        out: dict[str, Any] = {}
        for k, v in value.items():
            item = type(v)  # a row of scalars is the usual result: no call per value
            if item is not str and item is not int and v is not None and item is not bool:
                v = (v if v == v else None) if item is float else _json_and_files(v, files)
            out[k if type(k) is str else str(k)] = v
        return out
    if kind is list or kind is tuple:
        return [_json_and_files(v, files) for v in value]
    files.extend(_collect_files(value))
    return to_json_value(value)


def result_observation(call: ToolCall, value: Any) -> Observation:
    return result_record(call, value).observation()


def result_record(call: ToolCall | ActionRecord, value: Any) -> ObservationRecord:
    """A tool's result as the step path's record (`result_observation` without the model)."""
    files: list[FileHandle] = []
    content = _json_and_files(value, files)
    return ObservationRecord(
        "tool_result",
        _render(value, content),
        call.name,
        call.call_id,
        content,
        tuple(files) if files else (),
    )


# ---- registry -------------------------------------------------------------------------------
class ToolSet:
    """Tools by name. Calls are resolved by dictionary lookup, never by evaluating text."""

    def __init__(self, tools: Iterable[BaseTool] = ()) -> None:
        self._tools: dict[str, BaseTool] = {}
        for t in tools:
            self.add(t)

    def add(self, t: BaseTool) -> None:
        if t.name in self._tools:
            raise ValueError(f"duplicate tool name {t.name!r}")
        self._tools[t.name] = t

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[BaseTool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> BaseTool:
        try:
            return self._tools[name]
        except (KeyError, TypeError):
            raise UnknownToolError(f"unknown tool {name!r}; available: {', '.join(self._tools)}") from None

    def subset(self, names: Iterable[str] | None) -> ToolSet:
        if names is None:
            return self
        wanted = list(names)
        missing = [n for n in wanted if n not in self._tools]
        if missing:
            raise KeyError(f"tools not in this registry: {missing}")
        return ToolSet(self._tools[n] for n in wanted)

    def merged(self, other: ToolSet) -> ToolSet:
        return ToolSet([*self, *other])

    def call(self, call: ToolCall, ctx: ToolContext) -> Observation:
        """Run one call; every failure becomes a typed error observation."""
        return self.call_record(call, ctx).observation()

    def call_record(self, call: ToolCall | ActionRecord, ctx: ToolContext) -> ObservationRecord:
        """`call`, answered with the step path's lean record instead of the model. `ToolEnv` calls
        it where `call` is this class's own (a subclass that overrides `call` gets `call`)."""
        try:
            t = self.get(call.name)
            arguments = call.arguments
            if any(v is None for v in arguments.values()):  # rare: a strict schema's "not given"
                arguments = drop_null_optionals(t, arguments)
            value = t.invoke(arguments, ctx)
        except ToolgymError as exc:
            return ObservationRecord.from_error(
                exc.kind, exc.message, tool=call.name, call_id=call.call_id, content=_error_content(exc.data)
            )
        except Exception as exc:  # the tool's own failure: the agent sees it, the env survives
            return ObservationRecord.from_error(
                ErrorKind.TOOL_ERROR, f"{type(exc).__name__}: {exc}", tool=call.name, call_id=call.call_id
            )
        try:
            return result_record(call, value)
        except (RecursionError, ValueError, TypeError):
            # a result JSON cannot hold as it is (nested past the recursion limit, a cycle, an
            # infinity, a huge int): the agent sees it, escaped as json_safe says
            return result_record(call, json_safe(value))

    # ---- exports ----------------------------------------------------------------------------
    def to_openai(self, *, strict: bool = False) -> list[dict[str, Any]]:
        return [to_openai_tool(t, strict=strict) for t in self]

    def to_responses(self, *, strict: bool = False) -> list[dict[str, Any]]:
        """Flat function tools, as the Responses API takes them; `strict`: schemas for strict
        function calling (`strict_json_schema`)."""
        return [to_responses_tool(t.name, t.description, t.parameters_schema(), strict=strict) for t in self]

    def to_agentlego_toolmeta(self) -> dict[str, dict[str, Any]]:
        return {t.name: to_agentlego_meta(t) for t in self}

    def to_teval_api_list(self) -> list[dict[str, Any]]:
        return [to_teval_api(t) for t in self]


def to_openai_tool(t: BaseTool, *, strict: bool = False) -> dict[str, Any]:
    """A Chat Completions tool; `strict`: its schema made strict and `strict: true` set."""
    function: dict[str, Any] = {"name": t.name, "description": t.description}
    if strict:
        function.update(parameters=strict_json_schema(t.parameters_schema()), strict=True)
    else:
        function["parameters"] = t.parameters_schema()
    return {"type": "function", "function": function}


def to_responses_tool(
    name: str, description: str | None, parameters: Mapping[str, Any], *, strict: bool = False
) -> dict[str, Any]:
    """A Responses API function tool: flat, and `strict` said out loud (the API's default is
    true, which a schema that is not strict fails)."""
    return {
        "type": "function",
        "name": name,
        "description": description,
        "parameters": strict_json_schema(parameters) if strict else dict(parameters),
        "strict": strict,
    }


# Keywords that describe a property rather than its type: they stay beside the union with null
# that makes an optional property nullable, as pydantic writes `x: T | None = None`.
_ANNOTATION_KEYWORDS = ("title", "description", "default", "examples", "deprecated")


def _admits_null(schema: Any, root: Mapping[str, Any]) -> bool:
    """Whether null is valid for `schema`, a part of `root` (whose $refs it may use). Asked of
    jsonschema itself: `{"anyOf": [..., {"type": "null"}], "enum": [...]}` takes no null."""
    from jsonschema import Draft202012Validator  # lazily, as SchemaTool does

    try:
        return bool(Draft202012Validator(root).evolve(schema=schema).is_valid(None))
    except Exception:  # an unresolvable $ref, a schema jsonschema cannot read: not known to take null
        return False


def _nullable(schema: dict[str, Any], root: Mapping[str, Any]) -> dict[str, Any]:
    if _admits_null(schema, root):
        return schema
    outer = {k: schema.pop(k) for k in _ANNOTATION_KEYWORDS if k in schema}
    return {"anyOf": [schema, {"type": "null"}], **outer}


def strict_json_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `schema` valid for OpenAI's strict function calling (Structured Outputs): every
    object closed (`additionalProperties: false`), every property required, the ones that were
    optional a union with null (null then means "not given": `drop_null_optionals`). Otherwise
    the rules of the openai SDK's `to_strict_json_schema`: `$defs` made strict too, a lone
    `allOf` merged, a `$ref` with siblings inlined, `default: null` dropped, every other keyword
    kept as it is."""
    root = json_safe(dict(schema))
    if not isinstance(root, dict):
        raise TypeError(f"a JSON schema must be an object, got {type(schema).__name__}")
    return _strict(root, root)


def _strict(node: Any, root: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(node, dict):
        raise TypeError(f"a JSON schema must be an object, got {type(node).__name__}")
    for key in ("$defs", "definitions"):
        defs = node.get(key)
        if isinstance(defs, dict):
            for name in defs:
                defs[name] = _strict(defs[name], root)
    if node.get("type") == "object" and not isinstance(node.get("properties"), dict):
        node["properties"] = {}  # a free-form object cannot be strict: closed, it takes only {}
    properties = node.get("properties")
    if isinstance(properties, dict):
        node["additionalProperties"] = False
    if isinstance(properties, dict):
        required = node.get("required")
        was_required = set(required) if isinstance(required, list) else set()
        node["properties"] = {
            key: _strict(value if key in was_required else _nullable(value, root), root)
            for key, value in properties.items()
        }
        node["required"] = list(properties)
    if isinstance(node.get("items"), dict):
        node["items"] = _strict(node["items"], root)
    if isinstance(node.get("anyOf"), list):
        node["anyOf"] = [_strict(variant, root) for variant in node["anyOf"]]
    all_of = node.get("allOf")
    if isinstance(all_of, list):
        if len(all_of) == 1:
            node.update(_strict(all_of[0], root))
            node.pop("allOf")
        else:
            node["allOf"] = [_strict(entry, root) for entry in all_of]
    if "default" in node and node["default"] is None:
        node.pop("default")
    ref = node.get("$ref")
    if isinstance(ref, str) and len(node) > 1:
        # a $ref beside other keywords is not allowed: inline it, the node's own keywords winning
        resolved = _resolve_ref(root, ref)
        node.update({**resolved, **node})
        node.pop("$ref")
        return _strict(node, root)
    return node


def _resolve_ref(root: Mapping[str, Any], ref: str) -> dict[str, Any]:
    if not ref.startswith("#/"):
        raise ValueError(f"unsupported $ref {ref!r}: only local references (#/...) can be inlined")
    target: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(target, Mapping) or part not in target:
            raise ValueError(f"$ref {ref!r} points at nothing")
        target = target[part]
    if not isinstance(target, Mapping):
        raise ValueError(f"$ref {ref!r} is not a schema object")
    return dict(target)


def drop_null_optionals(t: BaseTool, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` without the nulls given for optional parameters that do not take null: how a
    model answering a strict schema says "not given" (strict schemas make every property
    required, the optional ones nullable)."""
    schema = t.parameters_schema()
    properties = schema.get("properties")
    required = schema.get("required") or []
    if not isinstance(properties, Mapping):
        return dict(arguments)
    return {
        key: value
        for key, value in arguments.items()
        if not (
            value is None
            and key not in required
            and isinstance(properties.get(key), Mapping)
            and not _admits_null(properties[key], schema)
        )
    }


def _agentlego_io(
    ptype: ParamType, name: str | None, description: str | None, optional: bool, default: Any
) -> dict[str, Any]:
    # AgentLego knows text/int/float/bool/image/audio/file; structured values travel as text.
    legacy = ptype if ptype in ("text", "int", "float", "bool", "image", "file") else "text"
    return {
        "type": legacy,
        "name": name,
        "description": description,
        "optional": optional,
        "default": default,
        "filetype": None,
    }


def to_agentlego_meta(t: BaseTool) -> dict[str, Any]:
    return {
        "name": t.name,
        "description": t.description,
        "inputs": [_agentlego_io(p.type, p.name, p.description, p.optional, p.default) for p in t.params],
        "outputs": [_agentlego_io(r.type, None, r.description, False, None) for r in t.returns],
    }


_TEVAL_TYPES: dict[ParamType, str] = {
    "text": "STRING",
    "int": "NUMBER",
    "float": "NUMBER",
    "bool": "BOOLEAN",
    "image": "STRING",
    "file": "STRING",
    "list": "ARRAY",
    "object": "OBJECT",
}


def to_teval_api(t: BaseTool) -> dict[str, Any]:
    def param(p: ParamSpec) -> dict[str, Any]:
        return {"name": p.name, "type": _TEVAL_TYPES[p.type], "description": p.description or ""}

    return {
        "name": t.name,
        "description": t.description,
        "required_parameters": [param(p) for p in t.params if not p.optional],
        "optional_parameters": [param(p) for p in t.params if p.optional],
        "return_data": [
            {
                "name": f"output_{i}" if len(t.returns) > 1 else "result",
                "description": r.description or r.type,
            }
            for i, r in enumerate(t.returns)
        ],
    }


def timed(fn: Callable[[], Observation]) -> tuple[Observation, float]:
    start = time.perf_counter()
    obs = fn()
    return obs, time.perf_counter() - start
