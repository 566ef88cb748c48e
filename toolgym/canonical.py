"""Canonical JSON: the one serialisation used for hashes, cache keys and byte-identical traces.

Strings are written as they are (UTF-8, not `\\u` escapes), except lone surrogates (`"\\ud800"`,
which a model's output or a decoded `\\ud800` escape can hold): UTF-8 cannot encode them, so they
are written as JSON `\\uXXXX` escapes. The output is then always encodable UTF-8, and
`json.loads` gives the same string back (two lone surrogates that form a pair, high then low,
read back as the one character they encode, as every JSON reader does).

`json_safe` turns any value into JSON data that `canonical_json` can write: what records
(traces) must keep whatever an agent or a tool produced uses it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import reprlib
import sys
from collections.abc import Mapping
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

_SURROGATE_RE = re.compile("[\ud800-\udfff]")
# what json.dumps(value, **these options) builds on every call, built once (encode is reentrant)
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
_ENCODE = _ENCODER.encode

# json_safe: containers deeper than this become a marker string (json.dumps and pydantic recurse)
MAX_SAFE_DEPTH = 100
# how much of a value's repr a marker keeps
MAX_REPR_CHARS = 200

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = MAX_REPR_CHARS
_REPR.maxlevel = 3


def _escape_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def escape_surrogates(json_text: str) -> str:
    """JSON text with every lone surrogate written as its `\\uXXXX` escape, so it encodes as
    UTF-8 and decodes to the same value (surrogates can only stand inside JSON strings)."""
    if json_text.isascii():  # no surrogate then: a C check instead of a regex scan
        return json_text
    return _SURROGATE_RE.sub(_escape_surrogate, json_text)


def encode_json(value: Any) -> str:
    """`canonical_json` with lone surrogates left as they are: for parts of a text that is
    escaped as a whole (`escape_surrogates`) once it is put together. It is `_ENCODER.encode`,
    by the same C encoder with the same options, less the Python set-up `encode` and
    `iterencode` redo on every call (a closure and two frames: a few microseconds a step)."""
    if isinstance(value, str):
        return encode_basestring(value)
    if c_make_encoder is None:  # an interpreter without the C accelerator
        return _ENCODE(value)
    encoder = c_make_encoder({}, _ENCODER.default, encode_basestring, None, ":", ",", True, False, False)
    return "".join(encoder(value, 0))


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 kept as is (lone surrogates escaped): equal values give
    equal strings. Raises ValueError/TypeError/RecursionError on what JSON cannot hold (NaN,
    sets, objects, nesting past the recursion limit); `json_safe` first for such values."""
    return escape_surrogates(encode_json(value))


# The canonical JSON texts of the latest values rendered with `render_json`, by the value's id, the
# value itself kept beside its text: while it is held here its id cannot be reused, so a lookup
# that finds the same object finds its text. A few entries: a step writes its trace line right
# after its observations are rendered.
_RENDERED: dict[int, tuple[Any, str]] = {}
_RENDERED_MAX = 16


def render_json(value: Any) -> str:
    """`canonical_json(value)`, remembered for `rendered_json`: a tool result's text is its
    content's canonical JSON, and the trace line that holds the content takes it from there
    instead of encoding the content again. The value must not change afterwards (tool results
    are frozen observations)."""
    text = canonical_json(value)
    if len(_RENDERED) >= _RENDERED_MAX:
        try:  # noqa: SIM105 - contextlib.suppress costs a microsecond on every call
            del _RENDERED[next(iter(_RENDERED))]
        except (KeyError, StopIteration, RuntimeError):  # another thread got there first
            pass
    _RENDERED[id(value)] = (value, text)
    return text


def rendered_json(value: Any) -> str | None:
    """The text `render_json` gave for this very object, if it is still remembered."""
    found = _RENDERED.get(id(value))
    return found[1] if found is not None and found[0] is value else None


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def canonical_hash(value: Any) -> str:
    return sha256_hex(canonical_json(value))


# the int->str digit limit is at least 640 digits (or off): a 20-digit int always fits
_ALWAYS_FITS = 2**64


def int_fits_json(value: int) -> bool:
    """Whether str(value) stays under Python's int->str digit limit (json.dumps needs it)."""
    if -_ALWAYS_FITS <= value <= _ALWAYS_FITS:  # nearly every int: no limit lookup
        return True
    limit = sys.get_int_max_str_digits()
    # bit_length * log10(2) over-estimates the digits by < 1; no str() of a huge int needed
    return limit == 0 or value.bit_length() * 0.30103 < limit - 1


_ADDRESS_RE = re.compile(r" at 0x[0-9a-fA-F]+")


def _marker(kind: str, value: Any) -> str:
    try:
        shown = _REPR.repr(value)
    except Exception:  # reprlib already catches a raising __repr__; belt and braces
        shown = "?"
    # default reprs carry a memory address: drop it, so traces stay byte-identical
    return f"<{kind}: {_ADDRESS_RE.sub('', shown)}>"


def json_safe(value: Any, max_depth: int = MAX_SAFE_DEPTH) -> Any:
    """`value` as JSON data `canonical_json` can always write; plain JSON data comes back equal.

    What JSON cannot hold is replaced, never dropped: a NaN or infinite float becomes the string
    "NaN" / "Infinity" / "-Infinity"; an int past Python's digit limit, bytes, and any other
    object become a marker string `<type: bounded repr>`; tuples, sets and frozensets become lists
    (sets sorted by canonical JSON); non-string keys become their marker or str(); a container
    nested deeper than `max_depth` (or a cycle) becomes `<list nested deeper than N levels>`."""
    return _safe(value, 0, max_depth)


def _safe(value: Any, depth: int, max_depth: int) -> Any:
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, int):
        return (
            int(value)
            if int_fits_json(value)
            else f"<int of about {int(value.bit_length() * 0.30103)} digits>"
        )
    if isinstance(value, float):
        if math.isfinite(value):
            return float(value)
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, (Mapping, list, tuple, set, frozenset)):
        if depth >= max_depth:
            return f"<{type(value).__name__} nested deeper than {max_depth} levels>"
        if isinstance(value, Mapping):
            out: dict[str, Any] = {}
            for key, item in value.items():
                name = key if isinstance(key, str) else _safe_key(key)
                out[name] = _safe(item, depth + 1, max_depth)
            return out
        items = [_safe(item, depth + 1, max_depth) for item in value]
        if isinstance(value, (set, frozenset)):
            items.sort(key=canonical_json)
        return items
    if depth < max_depth:
        try:  # a pydantic model: its JSON form (getattr too: a __getattr__ may raise anything)
            dump = getattr(value, "model_dump", None)
            if callable(dump):
                return _safe(dump(mode="json"), depth + 1, max_depth)
        except Exception:
            pass
    return _marker(type(value).__name__, value)


def _safe_key(key: Any) -> str:
    if key is None or isinstance(key, (bool, float)) or (isinstance(key, int) and int_fits_json(key)):
        return json.dumps(key)  # what json.dumps itself does with such keys: null, true, 1, 1.5
    return _marker(type(key).__name__, key)
