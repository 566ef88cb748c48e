"""A restricted evaluator for the Python expressions models write as tool arguments.

ToolEyes checks an `Action Input` by running Python's `eval` on it, so `{'q': 'a' + 'b'}`,
`dict(q='x')` and `{'n': 2 * 3}` pass its format check while JSON's `true` fails. We never call
eval or exec: `evaluate_literal_expression` parses the text with `ast.parse` and computes only
expressions that build data from literals:

- constants (strings, bytes, numbers, True, False, None, ...);
- dict, list, tuple and set displays, with `*` and `**` unpacking of such values;
- calls of the builtins dict, list, tuple and set with such arguments (`dict(q='x')`);
- unary `+ - ~ not` and binary `+ - * / // % ** << >> & | ^` on such values, with Python's own
  semantics (the operators are applied to plain data, so results equal eval's).

Everything else is rejected: names (but those four builtins called), attribute access,
subscripts, other calls, lambdas, comprehensions, f-strings with fields, comparisons, `and`/`or`,
conditionals, `%` formatting of strings. So are expressions too large to compute cheaply:
source longer than MAX_SOURCE_CHARS, nesting deeper than MAX_DEPTH, integers wider than
MAX_INT_BITS (checked before `**`, `*` and `<<` compute), sequences and containers longer than
MAX_LENGTH (checked before `*` and `+` build them), and more than MAX_TOTAL built in all. A
rejection is an ExpressionRejected; what eval would raise on the same data (1/0, {[]: 1},
dict('ab')) is one too.
"""

from __future__ import annotations

import ast
import operator
import warnings
from collections.abc import Callable
from typing import Any

MAX_SOURCE_CHARS = 100_000
MAX_DEPTH = 100  # AST levels; real arguments nest a few levels, the evaluator recurses once per level
MAX_INT_BITS = 1 << 16  # every integer literal Python accepts (4300 digits) fits; 2**65536 does not
MAX_LENGTH = 100_000  # characters of one str/bytes, items of one list/tuple/set/dict
# everything one expression builds, intermediate values included (characters, items, 64-bit words
# of integers): many values each under MAX_LENGTH cannot add up to gigabytes either
MAX_TOTAL = 1_000_000

CONSTRUCTORS: dict[str, Callable[..., Any]] = {"dict": dict, "list": list, "tuple": tuple, "set": set}

_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
    ast.Invert: operator.invert,
    ast.Not: operator.not_,
}
_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}
# the nodes an accepted expression may contain (operators and Load contexts are nodes too)
_ALLOWED = (
    ast.Expression,
    ast.Constant,
    ast.Dict,
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Starred,
    ast.UnaryOp,
    ast.BinOp,
    ast.Call,
    ast.keyword,
    ast.Name,  # only as the callee of a constructor call, checked where calls are evaluated
    ast.Load,
    *_UNARY,
    *_BINARY,
)
_SIZED = (str, bytes, list, tuple, set, frozenset, dict)
# what operating on plain data can raise; eval fails the same way on the same input
_DATA_ERRORS = (ArithmeticError, TypeError, ValueError, MemoryError, RecursionError)


class ExpressionRejected(ValueError):
    """The text is not an expression that builds data from literals (or it is too large)."""


def evaluate_literal_expression(source: str) -> Any:
    """The value Python's eval would give `source`, for literal-building expressions only;
    ExpressionRejected otherwise. Never calls eval or exec."""
    if len(source) > MAX_SOURCE_CHARS:
        raise ExpressionRejected(f"longer than {MAX_SOURCE_CHARS} characters")
    try:
        with warnings.catch_warnings():
            # model text is full of "\d"-style escapes: eval would warn too, but warnings here are noise
            warnings.simplefilter("ignore")
            # eval skips leading spaces and tabs of a source string; ast.parse would not
            tree = ast.parse(source.lstrip(" \t"), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        raise ExpressionRejected(f"not an expression: {exc}") from None
    _check_shape(tree)
    try:
        return _Evaluation().value(tree.body)
    except ExpressionRejected:
        raise
    except _DATA_ERRORS as exc:
        raise ExpressionRejected(f"{type(exc).__name__}: {exc}") from None


def _check_shape(tree: ast.Expression) -> None:
    """Every node allowed and the tree shallow enough, before anything is computed (iterative,
    so a deep tree cannot exhaust the stack here)."""
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ExpressionRejected(f"nested deeper than {MAX_DEPTH} levels")
        if not isinstance(node, _ALLOWED):
            raise ExpressionRejected(f"{type(node).__name__} is not a literal-building expression")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _length_ok(value: Any) -> Any:
    if isinstance(value, _SIZED) and len(value) > MAX_LENGTH:
        raise ExpressionRejected(f"longer than {MAX_LENGTH} items")
    return value


class _Evaluation:
    """One expression's evaluation, with what it has built so far (MAX_TOTAL)."""

    def __init__(self) -> None:
        self.spent = 0

    def checked(self, value: Any) -> Any:
        """A value just built: within the limits, and charged to the total."""
        if isinstance(value, int):
            if value.bit_length() > MAX_INT_BITS:
                raise ExpressionRejected(f"an integer wider than {MAX_INT_BITS} bits")
            self.spent += 1 + value.bit_length() // 64
        elif isinstance(value, _SIZED):
            self.spent += len(_length_ok(value))
        if self.spent > MAX_TOTAL:
            raise ExpressionRejected(f"builds more than {MAX_TOTAL} items in all")
        return value

    def value(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return self.checked(node.value)
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for key, item in zip(node.keys, node.values, strict=True):
                if key is None:  # {**mapping}
                    self.merge(out, self.value(item))
                else:
                    out[self.value(key)] = self.value(item)
            return self.checked(out)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = self.items(node.elts)
            if isinstance(node, ast.Tuple):
                return self.checked(tuple(items))
            return self.checked(set(items) if isinstance(node, ast.Set) else items)
        if isinstance(node, ast.UnaryOp):
            return self.checked(_UNARY[type(node.op)](self.value(node.operand)))
        if isinstance(node, ast.BinOp):
            left, right = self.value(node.left), self.value(node.right)
            _check_operation(type(node.op), left, right)
            return self.checked(_BINARY[type(node.op)](left, right))
        if isinstance(node, ast.Call):
            return self.call(node)
        raise ExpressionRejected(f"{type(node).__name__} is not a literal-building expression")

    def items(self, nodes: list[ast.expr]) -> list[Any]:
        items: list[Any] = []
        for element in nodes:
            if isinstance(element, ast.Starred):
                unpacked = self.value(element.value)
                if not isinstance(unpacked, _SIZED):
                    raise ExpressionRejected(f"cannot unpack {type(unpacked).__name__}")
                items.extend(unpacked)
            else:
                items.append(self.value(element))
            _length_ok(items)
        return items

    def merge(self, out: dict[Any, Any], mapping: Any) -> None:
        if not isinstance(mapping, dict):
            raise ExpressionRejected(f"'{type(mapping).__name__}' object is not a mapping")
        out.update(mapping)
        _length_ok(out)

    def call(self, node: ast.Call) -> Any:
        if not isinstance(node.func, ast.Name) or node.func.id not in CONSTRUCTORS:
            callee = node.func.id if isinstance(node.func, ast.Name) else type(node.func).__name__
            raise ExpressionRejected(f"calls {callee}: only {', '.join(CONSTRUCTORS)} build literals")
        args = self.items(node.args)
        kwargs: dict[Any, Any] = {}
        for keyword in node.keywords:
            if keyword.arg is None:  # f(**mapping)
                mapping = self.value(keyword.value)
                if not isinstance(mapping, dict) or not all(isinstance(k, str) for k in mapping):
                    raise ExpressionRejected("** needs a mapping with string keys")
                duplicate = kwargs.keys() & mapping.keys()
                if duplicate:
                    raise ExpressionRejected(f"keyword argument repeated: {sorted(duplicate)[0]}")
                kwargs.update(mapping)
            elif keyword.arg in kwargs:
                raise ExpressionRejected(f"keyword argument repeated: {keyword.arg}")
            else:
                kwargs[keyword.arg] = self.value(keyword.value)
        # the constructors only copy plain data here, within the size limits already checked
        return self.checked(CONSTRUCTORS[node.func.id](*args, **kwargs))


def _int_bits(value: Any) -> int:
    return value.bit_length() if isinstance(value, int) else 0


def _check_operation(op: type[ast.operator], left: Any, right: Any) -> None:
    """Refuse, before computing, the operations whose result would be too large to build."""
    ints = isinstance(left, int) and isinstance(right, int)
    if op is ast.Pow and ints and right > 0 and abs(left) > 1:
        # |left| ** right has at least (bits - 1) * right bits
        if (_int_bits(left) - 1) * right > MAX_INT_BITS:
            raise ExpressionRejected(f"a power wider than {MAX_INT_BITS} bits")
    elif op is ast.LShift and ints:
        if _int_bits(left) + right > MAX_INT_BITS:
            raise ExpressionRejected(f"a shift wider than {MAX_INT_BITS} bits")
    elif op is ast.Mult and ints:
        if _int_bits(left) + _int_bits(right) > MAX_INT_BITS + 1:
            raise ExpressionRejected(f"a product wider than {MAX_INT_BITS} bits")
    elif op is ast.Mult:
        sequence, count = (left, right) if isinstance(right, int) else (right, left)
        repeatable = isinstance(sequence, (str, bytes, list, tuple)) and isinstance(count, int)
        if repeatable and len(sequence) * max(count, 0) > MAX_LENGTH:
            raise ExpressionRejected(f"a repetition longer than {MAX_LENGTH} items")
    elif op is ast.Add and isinstance(left, _SIZED) and isinstance(right, _SIZED):
        if len(left) + len(right) > MAX_LENGTH:
            raise ExpressionRejected(f"a concatenation longer than {MAX_LENGTH} items")
    elif op is ast.Mod and isinstance(left, (str, bytes)):
        # printf-style formatting can pad to any width ('%0999999999d' % 1)
        raise ExpressionRejected("% formatting of strings is not a literal")
