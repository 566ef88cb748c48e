"""GTA Calculator: values as Python computes them, and every guard against hostile input."""

from __future__ import annotations

import json
import math
import random
import time
from pathlib import Path

import pytest

from tests.shared_data import GTA_TOOLMETA
from toolgym.actions import Observation, ToolCall
from toolgym.errors import ErrorKind, ToolError
from toolgym.files import FileStore
from toolgym.tools import ToolContext, ToolSet
from toolgym.toolservers.gta.calculator import MAX_EXPRESSION_CHARS, calculate, calculator


@pytest.fixture()
def tools() -> ToolSet:
    return ToolSet([calculator])


@pytest.fixture()
def ctx() -> ToolContext:
    return ToolContext(files=FileStore())


def run(tools: ToolSet, ctx: ToolContext, expression: object) -> Observation:
    return tools.call(ToolCall(name="Calculator", arguments={"expression": expression}), ctx)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("290 / 5", "58.0"),  # AgentLego returns str(result): true division is a float
        ("290 // 5", "58"),
        ("2 ** 10", "1024"),
        ("2**3**2", "512"),
        ("-2 ** 2", "-4"),
        ("2 ** -1", "0.5"),
        ("10 % 3", "1"),
        ("(1 + 2) * 3 - 4 / 2", "7.0"),
        ("0.1 + 0.2", "0.30000000000000004"),
        ("sqrt(16)", "4.0"),
        ("math.sqrt(2)", str(math.sqrt(2))),
        ("factorial(10)", "3628800"),
        ("math.factorial(20) // math.factorial(18)", "380"),
        ("comb(5, 2)", "10"),
        ("round(3.14159, 2)", "3.14"),
        ("round(2.5)", "2"),
        ("max([1, 5, 3])", "5"),
        ("min(4, 2, 9)", "2"),
        ("sum([1.5, 2.5])", "4.0"),
        ("abs(-7)", "7"),
        ("int(7.9)", "7"),
        ("float(3)", "3.0"),
        ("divmod(17, 5)", "(3, 2)"),
        ("pow(2, 10)", "1024"),
        ("pow(2, 100, 7)", str(pow(2, 100, 7))),
        ("math.pow(2, 3)", "8.0"),
        ("pi", str(math.pi)),
        ("e", str(math.e)),
        ("tau / 2 == pi", "True"),
        ("inf", "inf"),
        ("log(100, 10)", "2.0"),
        ("log10(1000)", "3.0"),
        ("cos(0) + sin(0)", "1.0"),
        ("degrees(pi)", "180.0"),
        ("1 < 2 <= 2", "True"),
        ("1 > 2 or 3 == 3", "True"),
        ("not 0", "True"),
        ("3 if 2 > 1 else 4", "3"),
        ("1e308 * 10", "inf"),
        ("(-8) ** (1 / 3)", str((-8) ** (1 / 3))),
        ("  12 * 12\n", "144"),
        ("+".join(str(i) for i in range(1, 401)), str(sum(range(1, 401)))),  # long chains do not recurse
        ("10 ** 3999 // 10 ** 3998", "10"),
    ],
)
def test_values(tools: ToolSet, ctx: ToolContext, expression: str, expected: str) -> None:
    obs = run(tools, ctx, expression)
    assert obs.type == "tool_result", obs.text
    assert obs.text == expected
    assert obs.content == expected


def test_matches_python_on_random_arithmetic() -> None:
    """Differential check against CPython on generated (trusted) arithmetic."""
    rng = random.Random(1234)
    ops = ["+", "-", "*", "/", "//", "%", "**"]

    def gen(depth: int) -> str:
        if depth == 0 or rng.random() < 0.3:
            return rng.choice([str(rng.randint(-20, 20)), f"{rng.uniform(-10, 10):.3f}"])
        op = rng.choice(ops)
        right = str(rng.randint(0, 4)) if op == "**" else gen(depth - 1)
        return f"({gen(depth - 1)} {op} {right})"

    checked = 0
    for _ in range(400):
        expr = gen(4)
        try:
            expected = str(eval(expr, {"__builtins__": {}}))  # trusted: generated right here
        except (ZeroDivisionError, OverflowError):
            with pytest.raises(ToolError):
                calculate(expr)
            continue
        assert calculate(expr) == expected, expr
        checked += 1
    assert checked > 300


HOSTILE = [
    ("__import__('os').system('id')", "attribute access"),
    ("__import__('os')", "unknown name '__import__'"),
    ("().__class__", "attribute access"),
    ("().__class__.__bases__[0].__subclasses__()", "not allowed"),
    ("math.__dict__", "math has no function"),
    ("math.__loader__", "math has no function"),
    ("open('/etc/passwd')", "unknown name 'open'"),
    ("eval('1')", "unknown name 'eval'"),
    ("exec('x=1')", "unknown name 'exec'"),
    ("getattr(1, 'real')", "unknown name 'getattr'"),
    ("globals()", "unknown name 'globals'"),
    ("lambda: 1", "lambda"),
    ("[x for x in (1, 2)]", "list comprehension"),
    ("max(x for x in [1])", "generator expression"),
    ("(x := 5)", "assignment"),
    ("f'{1}'", "f-string"),
    ("'a' * 10", "only numbers"),
    ("b'x'", "only numbers"),
    ("{'a': 1}", "dict"),
    ("(1, 2)[0]", "indexing"),
    ("import os", "invalid expression"),
    ("x = 1", "invalid expression"),
    ("1; 2", "invalid expression"),
    ("9**9**9", "too large"),
    ("2 ** 100000", "too large"),
    ("pow(2, 10**9)", "too large"),
    ("pow(10**2000, 10**2000, 10**2000 + 1)", "at most"),
    ("10 ** 3999 * 10 ** 3999", "too large"),
    ("factorial(100000)", "too large"),
    ("math.factorial(10**100)", "too large"),
    ("comb(10**6, 500000)", "too large"),
    ("perm(10**15, 2)", "too large"),
    ("round(10 ** 100, -10**9)", "ndigits"),
    ("[1] * 10**9", "arithmetic needs numbers"),
    ("[1] + [2]", "arithmetic needs numbers"),
    ("1" * (MAX_EXPRESSION_CHARS + 1), "too long"),
    ("(" * 300 + "1" + ")" * 300, "invalid expression"),
    ("-" * 1500 + "1", "nested too deeply"),
    ("abs(" * 150 + "1" + ")" * 150, "nested"),
    ("1 / 0", "division by zero"),
    ("10 % 0", "division by zero"),
    ("math.exp(1000)", "overflow"),
    ("float(10 ** 3999)", "overflow"),
    ("sqrt(-1)", "math domain error"),
    ("max([])", "ValueError"),
    ("2 ^ 3", "use ** for powers"),
    ("1 << 10**9", "not supported"),
    ("~1", "not supported"),
    ("x + 1", "unknown name 'x'"),
    ("sqrt", "is a function"),
    ("math", "use a function of math"),
    ("1 in [1]", "in"),
    ("", "empty"),
]


@pytest.mark.parametrize(("expression", "fragment"), HOSTILE)
def test_hostile_input_is_a_tool_error(
    tools: ToolSet, ctx: ToolContext, expression: str, fragment: str
) -> None:
    start = time.perf_counter()
    obs = run(tools, ctx, expression)
    elapsed = time.perf_counter() - start
    assert obs.type == "error"
    assert obs.error_kind == ErrorKind.TOOL_ERROR, obs.text
    assert fragment in obs.text
    assert elapsed < 2.0, f"{expression[:40]!r} took {elapsed:.2f}s"
    # the process is alive and the tool still works
    assert run(tools, ctx, "1 + 1").text == "2"


def test_no_side_effects(tools: ToolSet, ctx: ToolContext, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    obs = run(tools, ctx, f"__import__('pathlib').Path({str(marker)!r}).touch()")
    assert obs.error_kind == ErrorKind.TOOL_ERROR
    assert not marker.exists()


@pytest.mark.parametrize("arguments", [{}, {"expression": 5}, {"expression": "1", "extra": 1}, {"expr": "1"}])
def test_bad_arguments_are_argument_errors(
    tools: ToolSet, ctx: ToolContext, arguments: dict[str, object]
) -> None:
    obs = tools.call(ToolCall(name="Calculator", arguments=arguments), ctx)
    assert obs.error_kind == ErrorKind.ARGUMENT_ERROR


def test_schema_matches_gta_toolmeta() -> None:
    if not GTA_TOOLMETA.exists():
        pytest.skip("GTA toolmeta.json not present")
    gta = json.loads(GTA_TOOLMETA.read_text())["Calculator"]
    ours = ToolSet([calculator]).to_agentlego_toolmeta()["Calculator"]
    assert ours == gta
    assert calculator.category == "logic"
