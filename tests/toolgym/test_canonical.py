"""Canonical JSON: byte-stable, always encodable UTF-8; json_safe keeps what JSON cannot hold."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import pytest

from tests.hostile import nested_dict
from toolgym.canonical import MAX_SAFE_DEPTH, canonical_hash, canonical_json, int_fits_json, json_safe


def test_plain_data_is_unchanged_and_utf8_stays_as_is() -> None:
    value = {"b": [1, 2.5, None, True], "a": "héllo ✓ 😀"}
    assert canonical_json(value) == '{"a":"héllo ✓ 😀","b":[1,2.5,null,true]}'
    assert json_safe(value) == value


@pytest.mark.parametrize("text", ["\ud800", "a\udfffb", "\udc00\ud800", "x" * 10 + "\ud83d"])
def test_lone_surrogates_are_escaped_and_read_back(text: str) -> None:
    line = canonical_json({"raw": text})
    line.encode("utf-8")  # encodable: no surrogate left in the text
    assert json.loads(line) == {"raw": text}
    assert canonical_hash({"raw": text}) == canonical_hash({"raw": text})


def test_a_surrogate_pair_reads_back_as_its_character() -> None:
    # the documented edge: high then low surrogate are one character to every JSON reader
    assert json.loads(canonical_json("\ud83d\ude00")) == "😀"


def test_json_safe_replaces_what_json_cannot_hold() -> None:
    class Opaque:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    class Hostile:  # every attribute lookup (model_dump included) raises, not AttributeError
        def __getattr__(self, name: str) -> Any:
            raise RuntimeError(f"no {name}")

    safe = json_safe(
        {
            "nan": math.nan,
            "inf": -math.inf,
            "huge": 10**5000,
            "bytes": b"\xff\x00",
            "set": {3, 1, 2},
            "tuple": (1, "x"),
            "obj": Opaque(),
            "hostile": Hostile(),
            1: "int key",
            (1, 2): "tuple key",
        }
    )
    assert safe["nan"] == "NaN" and safe["inf"] == "-Infinity"
    assert safe["huge"].startswith("<int of about 500")
    assert safe["bytes"] == "<bytes: b'\\xff\\x00'>"
    assert safe["set"] == [1, 2, 3] and safe["tuple"] == [1, "x"]
    assert safe["obj"] == "<Opaque: <Opaque instance>>"  # no memory address: traces stay stable
    assert safe["hostile"].startswith("<Hostile: ")
    assert safe["1"] == "int key" and safe["<tuple: (1, 2)>"] == "tuple key"
    json.loads(canonical_json(safe))


def test_json_safe_cuts_deep_and_cyclic_nesting() -> None:
    deep = nested_dict(5000)
    with pytest.raises((ValueError, RecursionError)):
        canonical_json(deep)
    safe = json_safe(deep)
    node = safe
    for _ in range(MAX_SAFE_DEPTH):
        node = node["a"]
    assert node == "<dict nested deeper than 100 levels>"
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    assert json.loads(canonical_json(json_safe(cyclic)))


@pytest.mark.parametrize("limit", [640, 4300, 0])
def test_int_fits_json_follows_the_digit_limit(limit: int) -> None:
    values = (0, -1, 2**63, 2**64, -(2**64), 2**64 + 1, 10**600, 10**700, 10**5000)
    previous = sys.get_int_max_str_digits()
    try:
        sys.set_int_max_str_digits(0)  # to count the digits of each
        digits = {v: len(str(abs(v))) for v in values}
        sys.set_int_max_str_digits(limit)
        for value in values:
            assert int_fits_json(value) is (limit == 0 or digits[value] < limit), (limit, digits[value])
    finally:
        sys.set_int_max_str_digits(previous)
