from __future__ import annotations

import copy
import json
from typing import Annotated, Any, Literal

import jsonschema
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.lib._pydantic import _ensure_strict_json_schema as ensure_strict_json_schema
from openai.lib._pydantic import to_strict_json_schema
from pydantic import BaseModel, Field

from tests.shared_data import GTA_TOOLMETA
from toolgym.actions import ToolCall
from toolgym.errors import ArgumentError, ErrorKind, ToolError
from toolgym.files import FileHandle, FileStore
from toolgym.mocks.apps import ALL_APPS
from toolgym.mocks.simulated.app import bundled_libraries
from toolgym.mocks.world import MockWorld
from toolgym.tools import (
    BaseTool,
    FileParam,
    Image,
    Param,
    ToolContext,
    ToolSet,
    _collect_files,
    _json_and_files,
    _plain_arguments,
    drop_null_optionals,
    strict_json_schema,
    to_json_value,
    to_openai_tool,
    tool,
    tool_from_object,
)
from toolgym.toolservers.registry import default_toolset

TOOLMETA = GTA_TOOLMETA


@tool(category="logic", version="2")
def scale(
    value: float,
    factor: Annotated[int, Param("how many times")] = 2,
    unit: Literal["m", "km"] = "m",
) -> str:
    """Multiply a value."""
    return f"{value * factor} {unit}"


@tool(category="perception")
def image_size(image: Image, ctx: ToolContext) -> tuple[int, str]:
    """Size in bytes of an image, and the seed the env passed."""
    return len(image.read_bytes()), str(ctx.seed)


@tool(category="creativity")
def make_file(text: str, ctx: ToolContext) -> Annotated[FileHandle, FileParam("image")]:
    """Store a fake PNG."""
    return ctx.files.put_bytes(b"\x89PNG" + text.encode(), name="out.png", media_type="image/png")


class Greeter:
    """Greets people."""

    name = "Greeter"
    category = "operation"
    mutates_state = False

    def run(self, who: str) -> str:
        return f"hello {who}"


def test_schema_from_type_hints() -> None:
    schema = scale.parameters_schema()
    assert schema["required"] == ["value"]
    assert schema["properties"]["value"] == {"type": "number"}
    assert schema["properties"]["factor"] == {
        "type": "integer",
        "default": 2,
        "description": "how many times",
    }
    assert schema["properties"]["unit"]["enum"] == ["m", "km"]
    assert schema["additionalProperties"] is False
    assert scale.returns_schema() == {"type": "string"}
    assert image_size.parameters_schema()["properties"] == {"image": {"type": "string", "format": "image"}}
    assert [r.type for r in image_size.returns] == ["int", "text"]
    assert make_file.returns_schema() == {"type": "string", "format": "image"}
    assert (scale.version, scale.category, scale.description) == ("2", "logic", "Multiply a value.")


def test_exports_have_the_reference_shapes() -> None:
    ts = ToolSet([scale, image_size, tool_from_object(Greeter())])
    openai = ts.to_openai()
    assert openai[0]["type"] == "function" and openai[0]["function"]["name"] == "scale"
    meta = ts.to_agentlego_toolmeta()
    reference = json.loads(TOOLMETA.read_text()) if TOOLMETA.exists() else None
    keys = {"name", "description", "inputs", "outputs"}
    assert set(meta["image_size"]) == keys
    io_keys = {"type", "name", "description", "optional", "default", "filetype"}
    assert all(set(i) == io_keys for i in meta["image_size"]["inputs"] + meta["image_size"]["outputs"])
    if reference is not None:
        assert set(reference["OCR"]) == keys and set(reference["OCR"]["inputs"][0]) == io_keys
    assert meta["image_size"]["inputs"][0]["type"] == "image"
    teval = ts.to_teval_api_list()
    assert teval[0]["required_parameters"] == [{"name": "value", "type": "NUMBER", "description": ""}]
    assert [p["name"] for p in teval[0]["optional_parameters"]] == ["factor", "unit"]
    assert teval[2]["name"] == "Greeter"


def test_call_resolves_files_and_injects_context() -> None:
    store = FileStore()
    handle = store.put_bytes(b"\x89PNG12345", name="image/a.png")
    ts = ToolSet([image_size, make_file])
    ctx = ToolContext(files=store, seed=42)
    for ref in ("image/a.png", handle.ref, "a.png"):
        obs = ts.call(ToolCall(name="image_size", arguments={"image": ref}), ctx)
        assert obs.content == [9, "42"], ref
    obs = ts.call(ToolCall(name="make_file", arguments={"text": "x"}), ctx)
    assert obs.files and obs.files[0].media_type == "image/png"
    assert obs.text == f"image {obs.files[0].ref}"
    assert store.resolve(obs.files[0].ref).read_bytes() == b"\x89PNGx"


@pytest.mark.parametrize(
    ("arguments", "kind", "fragment"),
    [
        ({"value": "abc"}, ErrorKind.ARGUMENT_ERROR, "value"),
        ({}, ErrorKind.ARGUMENT_ERROR, "Field required"),
        ({"value": 1, "bogus": 1}, ErrorKind.ARGUMENT_ERROR, "bogus"),
        ({"value": 1, "unit": "mile"}, ErrorKind.ARGUMENT_ERROR, "unit"),
        ({"value": {"nested": [1]}}, ErrorKind.ARGUMENT_ERROR, "value"),
    ],
)
def test_bad_arguments(arguments: dict[str, Any], kind: ErrorKind, fragment: str) -> None:
    obs = ToolSet([scale]).call(ToolCall(name="scale", arguments=arguments), ToolContext(files=FileStore()))
    assert obs.error is not None and obs.error.kind is kind and fragment in obs.error.message


def test_unknown_file_and_non_image_file() -> None:
    store = FileStore()
    store.put_bytes(b"plain text", name="notes.txt")
    ts = ToolSet([image_size])
    ctx = ToolContext(files=store)
    missing = ts.call(ToolCall(name="image_size", arguments={"image": "/etc/passwd"}), ctx)
    assert missing.error is not None and missing.error.kind is ErrorKind.ARGUMENT_ERROR
    assert "no file" in missing.error.message
    wrong = ts.call(ToolCall(name="image_size", arguments={"image": "notes.txt"}), ctx)
    assert wrong.error is not None and "not an image" in wrong.error.message


def test_tool_errors_and_crashes_are_observations() -> None:
    @tool
    def broken(x: int) -> int:
        """Fails."""
        if x:
            raise ToolError("no such record", data={"status": "error", "code": 404})
        return 1 // x

    ts = ToolSet([broken])
    ctx = ToolContext(files=FileStore())
    obs = ts.call(ToolCall(name="broken", arguments={"x": 1}), ctx)
    assert obs.error is not None and obs.error.kind is ErrorKind.TOOL_ERROR
    assert obs.content == {"status": "error", "code": 404}
    obs = ts.call(ToolCall(name="broken", arguments={"x": 0}), ctx)
    assert obs.error is not None and "ZeroDivisionError" in obs.error.message
    obs = ts.call(ToolCall(name="nope"), ctx)
    assert obs.error is not None and obs.error.kind is ErrorKind.UNKNOWN_TOOL


def test_toolset_registry_rules() -> None:
    ts = ToolSet([scale])
    with pytest.raises(ValueError, match="duplicate"):
        ts.add(scale)
    with pytest.raises(KeyError):
        ts.subset(["scale", "missing"])
    assert ts.subset(None) is ts and ts.subset(["scale"]).names == ["scale"]
    with pytest.raises(TypeError):

        @tool
        def variadic(*args: int) -> int:
            return 0


def test_schema_tool_validates_with_json_schema_and_resolves_files() -> None:
    from toolgym.tools import SchemaTool

    seen: list[dict[str, Any]] = []

    def run(arguments: dict[str, Any], ctx: ToolContext) -> str:
        seen.append(arguments)
        return f"{arguments['query']}:{len(arguments['image'].read_bytes())}"

    remote = SchemaTool(
        "Lookup",
        {
            "properties": {
                "query": {"type": "string", "description": "what to look for"},
                "image": {"type": "string", "format": "image"},
                "k": {"type": "integer", "default": 3, "minimum": 1},
            },
            "required": ["query", "image"],
            "additionalProperties": False,
        },
        run,
        description="Look something up.",
    )
    assert [(p.name, p.type, p.optional) for p in remote.params] == [
        ("query", "text", False),
        ("image", "image", False),
        ("k", "int", True),
    ]
    assert remote.file_params == {"image": "image"}
    store = FileStore()
    store.put_bytes(b"\x89PNGabc", name="a.png")
    ts = ToolSet([remote])
    ctx = ToolContext(files=store)
    ok = ts.call(ToolCall(name="Lookup", arguments={"query": "q", "image": "a.png"}), ctx)
    assert ok.content == "q:7"
    for bad in (
        {"query": "q"},
        {"query": 1, "image": "a.png"},
        {"query": "q", "image": "a.png", "k": 0},
        {"query": "q", "image": "a.png", "zz": 1},
        {"query": "q", "image": "missing.png"},
    ):
        obs = ts.call(ToolCall(name="Lookup", arguments=bad), ctx)
        assert obs.error is not None and obs.error.kind is ErrorKind.ARGUMENT_ERROR, bad
    assert len(seen) == 1
    assert ts.to_openai()[0]["function"]["parameters"]["required"] == ["query", "image"]


def test_param_alias_publishes_names_python_cannot_spell() -> None:
    @tool
    def trains(
        from_: Annotated[str, Param("departure city", alias="from")],
        klass: Annotated[str, Param("seat class", alias="class")] = "economy",
    ) -> str:
        """Find trains."""
        return f"{from_}/{klass}"

    schema = trains.parameters_schema()
    assert list(schema["properties"]) == ["from", "class"] and schema["required"] == ["from"]
    assert schema["properties"]["from"]["description"] == "departure city"
    ts = ToolSet([trains])
    ctx = ToolContext(files=FileStore())
    assert (
        ts.call(ToolCall(name="trains", arguments={"from": "Paris", "class": "first"}), ctx).content
        == "Paris/first"
    )
    obs = ts.call(ToolCall(name="trains", arguments={"from_": "Paris"}), ctx)
    assert obs.error is not None and obs.error.kind is ErrorKind.ARGUMENT_ERROR
    assert [p["name"] for p in ts.to_teval_api_list()[0]["required_parameters"]] == ["from"]


def test_results_json_cannot_hold_are_escaped_not_raised() -> None:
    """A tool's result nested past the recursion limit, cyclic, infinite or a huge int: the call
    still gives a tool_result, with the parts JSON cannot hold as `json_safe` escapes them."""
    from toolgym.canonical import canonical_json

    deep: dict[str, Any] = {}
    node = deep
    for _ in range(5000):
        node["a"] = {}
        node = node["a"]
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    results: dict[str, Any] = {"deep": deep, "cyclic": cyclic, "inf": float("inf"), "huge": 10**5000}

    @tool
    def odd(which: str) -> dict[str, Any]:
        """Returns something JSON cannot hold."""
        return {"value": results[which]}

    @tool
    def odd_failure(which: str) -> str:
        """Fails with a payload JSON cannot hold."""
        raise ToolError("no", data=results[which])

    ctx = ToolContext(files=FileStore())
    tools = ToolSet([odd, odd_failure])
    for which in results:
        obs = tools.call(ToolCall(name="odd", arguments={"which": which}), ctx)
        assert obs.type == "tool_result" and obs.error is None, (which, obs.text)
        json.loads(canonical_json(obs.model_dump(mode="json")))
        json.loads(obs.text)
        failed = tools.call(ToolCall(name="odd_failure", arguments={"which": which}), ctx)
        assert failed.error_kind is ErrorKind.TOOL_ERROR


# ---- the fast paths agree with the general ones ------------------------------------------------
@tool
def plain_params(
    text: str,
    count: int,
    ratio: float,
    flag: bool,
    maybe: str | None = None,
    mode: Literal["a", "b"] = "a",
    limit: Annotated[int | None, Param("a limit", alias="max")] = 10,
    scale: float = 1.5,
) -> str:
    """Every plain kind of parameter."""
    return text


argument_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**60), 2**60),
    st.floats(allow_nan=False),
    st.text(max_size=3),
    st.sampled_from(["a", "b", "c"]),
    st.lists(st.integers(), max_size=2),
)


@settings(max_examples=400, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            ["text", "count", "ratio", "flag", "maybe", "mode", "max", "limit", "scale", "other"]
        ),
        argument_values,
        max_size=8,
    )
)
def test_plain_argument_check_gives_what_pydantic_gives(arguments: dict[str, Any]) -> None:
    t = ToolSet([plain_params]).get("plain_params")
    try:
        expected: Any = t.validate_with_pydantic(arguments)  # type: ignore[attr-defined]
    except ArgumentError as exc:
        expected = ("error", exc.message)
    try:
        got: Any = t.validate(arguments)
    except ArgumentError as exc:
        got = ("error", exc.message)
    assert got == expected
    if isinstance(got, dict):
        assert list(got) == list(expected)
        assert [type(v) for v in got.values()] == [type(v) for v in expected.values()]


json_like = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=3)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.one_of(st.text(max_size=2), st.integers(0, 3)), inner, max_size=3),
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(json_like, st.booleans())
def test_result_walk_equals_to_json_value_and_collect_files(value: Any, with_file: bool) -> None:
    handle = FileHandle(sha256="0" * 64, media_type="image/png", name="a.png")
    if with_file:
        value = {"result": value, "files": [handle, ErrorKind.TOOL_ERROR, {"nested": handle}]}
    files: list[FileHandle] = []
    content = _json_and_files(value, files)
    assert json.dumps(content, sort_keys=True) == json.dumps(to_json_value(value), sort_keys=True)
    assert files == _collect_files(value)


def test_plain_argument_check_takes_well_typed_arguments_without_pydantic() -> None:
    t = ToolSet([plain_params]).get("plain_params")
    plain = t._plain  # type: ignore[attr-defined]
    assert plain is not None
    good = {"text": "x", "count": 2, "ratio": 3, "flag": False, "max": None}
    assert _plain_arguments(plain, good) == {
        "text": "x", "count": 2, "ratio": 3.0, "flag": False, "maybe": None, "mode": "a", "limit": None,
        "scale": 1.5,
    }  # fmt: skip
    for bad in ({**good, "count": "2"}, {**good, "mode": "c"}, {**good, "other": 1}, {"text": "x"}):
        assert _plain_arguments(plain, bad) is None  # pydantic's path: its coercions and errors
    assert scale._plain is not None and image_size._plain is not None  # files are plain strings


# ---- strict schemas (OpenAI Structured Outputs) ------------------------------------------------
def _without_titles(schema: Any) -> Any:
    """pydantic titles every field; toolgym's schemas carry no titles."""
    if isinstance(schema, dict):
        return {k: _without_titles(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_without_titles(v) for v in schema]
    return schema


@tool
def book_trip(
    city: Annotated[str, Param("The city")],
    nights: int,
    unit: Annotated[Literal["c", "f"], Param("Temperature unit")] = "c",
    note: str | None = None,
    tags: list[str] | None = None,
) -> str:
    """Book a trip."""
    return f"{city} {nights} {unit} {note} {tags}"


# What book_trip takes, as a user of `openai.pydantic_function_tool` would write it: an optional
# parameter is `T | None` (the strict way to leave it out is null). No docstring: it would be the
# schema's description.
class BookTrip(BaseModel):
    city: str = Field(description="The city")
    nights: int
    unit: Literal["c", "f"] | None = Field("c", description="Temperature unit")
    note: str | None = None
    tags: list[str] | None = None


class Address(BaseModel):
    street: str
    zip_code: str | None = None


class Contact(BaseModel):
    name: str
    home: Address = Field(description="where they live")  # a $ref with a sibling: inlined
    other: list[Address] | None = None
    work: Address | None = None


def test_strict_schema_is_what_the_openai_sdk_makes_of_the_equivalent_model() -> None:
    ours = strict_json_schema(book_trip.parameters_schema())
    assert ours == _without_titles(to_strict_json_schema(BookTrip))
    assert ours["required"] == ["city", "nights", "unit", "note", "tags"]
    # the SDK's own tool builder agrees on the whole function tool
    sdk_tool = openai.pydantic_function_tool(BookTrip, name="book_trip", description="Book a trip.")
    assert to_openai_tool(book_trip, strict=True) == _without_titles(sdk_tool)


def test_strict_schema_follows_the_sdk_on_refs_defs_and_nesting() -> None:
    schema = Contact.model_json_schema()
    assert "$defs" in schema
    assert strict_json_schema(schema) == to_strict_json_schema(Contact)
    assert Contact.model_json_schema() == schema  # the input is copied, never changed


def test_strict_schema_closes_free_objects_and_drops_only_null_defaults() -> None:
    schema = {
        "type": "object",
        "properties": {
            "filters": {"type": "object", "additionalProperties": True},
            "limit": {"type": "integer", "minimum": 1, "default": 10},
            "cursor": {"type": ["string", "null"], "default": None},
        },
        "required": ["filters"],
    }
    strict = strict_json_schema(schema)
    assert strict["properties"]["filters"] == {
        "type": "object",
        "additionalProperties": False,
        "properties": {},
        "required": [],
    }
    # unsupported keywords stay as the SDK leaves them; only a null default goes
    assert strict["properties"]["limit"] == {
        "anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}],
        "default": 10,
    }
    assert strict["properties"]["cursor"] == {"type": ["string", "null"]}
    with pytest.raises(ValueError, match="only local references"):
        strict_json_schema(
            {
                "type": "object",
                "properties": {"a": {"$ref": "http://x/y", "description": "d"}},
                "required": ["a"],
            }
        )


def _bundled_tools() -> list[BaseTool]:
    """Every tool toolgym ships: the default tool set, every mock app's, every simulated library's."""
    tools = list(default_toolset())
    for cls in ALL_APPS.values():
        tools += list(MockWorld([cls]).tools)
    for library in bundled_libraries():
        tools += list(MockWorld([f"simulated:{library}"]).tools)
    return tools


def _strict_problems(schema: Any, path: str = "$") -> list[str]:
    """What OpenAI's strict mode refuses: an open object, a property left out of `required`, a
    `$ref` beside other keywords."""
    problems: list[str] = []
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            if schema.get("additionalProperties") is not False:
                problems.append(f"{path}: object not closed")
            if schema.get("required") != list(schema.get("properties", {})):
                problems.append(f"{path}: not every property required")
        if "$ref" in schema and len(schema) > 1:
            problems.append(f"{path}: $ref with siblings")
        for key, value in schema.items():
            problems += _strict_problems(value, f"{path}.{key}")
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            problems += _strict_problems(value, f"{path}[{i}]")
    return problems


def test_every_bundled_tool_exports_a_strict_schema_the_sdk_leaves_as_it_is() -> None:
    tools = _bundled_tools()
    assert len(tools) > 500
    for t in tools:
        original = t.parameters_schema()
        strict = strict_json_schema(original)
        assert _strict_problems(strict) == [], t.name
        jsonschema.Draft202012Validator.check_schema(strict)
        # the SDK's strict pass finds nothing left to do
        again = copy.deepcopy(strict)
        assert ensure_strict_json_schema(again, path=(), root=again) == strict, t.name
        for name, prop in strict["properties"].items():
            if name not in original.get("required", []):
                assert jsonschema.Draft202012Validator(prop).is_valid(None), (t.name, name)
        # optional parameters left null: what stays of them, the original schema takes
        required = set(original.get("required", []))
        kept = drop_null_optionals(t, {n: None for n in strict["properties"]}).keys() - required
        for name in kept:
            assert jsonschema.Draft202012Validator(original["properties"][name]).is_valid(None), (
                t.name,
                name,
            )


def test_null_for_an_optional_parameter_means_not_given() -> None:
    tools = ToolSet([book_trip])
    ctx = ToolContext(files=FileStore(), seed=0)
    arguments = {"city": "Oslo", "nights": 2, "unit": None, "note": None, "tags": None}
    obs = tools.call(ToolCall(name="book_trip", arguments=arguments), ctx)
    assert obs.error is None and obs.text == "Oslo 2 c None None"
    bad = tools.call(ToolCall(name="book_trip", arguments={"city": None, "nights": 2}), ctx)
    assert bad.error is not None and bad.error.kind is ErrorKind.ARGUMENT_ERROR
