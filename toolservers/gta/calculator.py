"""GTA's Calculator: one Python arithmetic expression, evaluated safely.

AgentLego's Calculator runs `eval` with the `math` module's names in scope and returns
`str(result)`. Here the expression is parsed with `ast.parse(..., mode="eval")` and walked over an
allow-list of nodes; nothing is ever passed to eval/exec/compile. What an agent can write:

- int/float/bool literals, `+ - * / // % **`, unary `+ - not`, comparisons, `and`/`or`,
  `x if c else y`, tuples and lists (as arguments to min/max/sum/math.fsum/...);
- every public name of `math`, bare (`sqrt(2)`, `pi`) or qualified (`math.sqrt(2)`), and the
  builtins abs, round, min, max, sum, int, float, pow, divmod. Bare `pow` is the builtin (exact
  integers, optional modulus); AgentLego's was `math.pow`, which is still there as `math.pow`.

Output is `str(result)` like AgentLego, so Python's semantics show: `290 / 5` gives "58.0" (true
division is a float; GTA's recorded dialogs sometimes show "58", and its answer check matches
"58" inside "58.0" as a whole word anyway), `290 // 5` gives "58", `2 ** 10` gives "1024".

Guards, so that no expression can hang or exhaust the process: input length, nesting depth, list
sizes, and the digit count of every integer (checked before `**`, factorial, comb and perm are
computed, and after every other operation). Every failure is a ToolError with a readable message.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from toolgym.errors import ToolError
from toolgym.tools import tool

DESCRIPTION = (
    "A calculator tool. The input must be a single Python expression and you cannot import packages. "
    "You can use functions in the `math` package without import."
)

MAX_EXPRESSION_CHARS = 2000
# nesting such as abs(abs(...)) costs the evaluator about 3 stack frames per level; flat chains
# such as 1+2+3+... are evaluated in a loop and do not count
MAX_DEPTH = 120
MAX_SEQUENCE_ITEMS = 1000
# Python refuses to print ints longer than 4300 digits (sys.get_int_max_str_digits), so a larger
# result could not be returned anyway; a bound below that keeps every computation fast.
MAX_INT_DIGITS = 4000
# three-argument pow costs (bits of exponent) x (multiplications mod m): keep both modest
MAX_MODPOW_DIGITS = 1000

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_BITWISE = (ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift, ast.MatMult)
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_MATH: dict[str, Any] = {k: v for k, v in vars(math).items() if not k.startswith("_")}


def _check_int(value: Any) -> Any:
    """Reject integers with more digits than MAX_INT_DIGITS (bools and floats pass)."""
    if isinstance(value, int) and not isinstance(value, bool):
        # bit_length is O(1); 0.30103 = log10(2)
        if value.bit_length() * 0.30103 > MAX_INT_DIGITS:
            raise ToolError(f"result too large: more than {MAX_INT_DIGITS} digits")
    elif isinstance(value, (tuple, list)):
        for v in value:
            _check_int(v)
    return value


def _short(value: Any) -> str:
    """A number for an error message: huge ints are described, not printed."""
    if isinstance(value, int) and value.bit_length() > 100:
        return f"<a {int(value.bit_length() * 0.30103) + 1}-digit number>"
    return repr(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, complex))


def _check_power(base: Any, exponent: Any) -> None:
    if (
        isinstance(base, int)
        and isinstance(exponent, int)
        and exponent > 0
        and abs(base) > 1
        and exponent * math.log10(abs(base)) > MAX_INT_DIGITS
    ):
        raise ToolError(
            f"result too large: {_short(base)} ** {_short(exponent)} has more than {MAX_INT_DIGITS} digits"
        )


def _int_arg(value: Any, fname: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"{fname}() needs integer arguments, got {_short(value)}")
    return value


def _log10_factorial(n: int) -> float:
    return math.lgamma(n + 1) / math.log(10) if n > 1 else 0.0


def _guard_math_call(fname: str, args: list[Any]) -> None:
    """Estimate the size of factorial/comb/perm results before computing them."""
    if fname == "factorial" and args:
        n = _int_arg(args[0], fname)
        if n > 10**6 or _log10_factorial(n) > MAX_INT_DIGITS:
            raise ToolError(f"result too large: factorial({_short(n)}) has more than {MAX_INT_DIGITS} digits")
    elif fname in ("comb", "perm") and args:
        n = _int_arg(args[0], fname)
        k = _int_arg(args[1], fname) if len(args) > 1 else n
        if n < 0 or k < 0 or k > n:
            return  # math raises its own clear ValueError, or returns 0
        if n > 10**12:
            raise ToolError(f"{fname}() argument too large: n must be at most 10**12")
        log10_result = _log10_factorial(n) - _log10_factorial(n - k)
        if fname == "comb":
            log10_result -= _log10_factorial(k)
        if log10_result > MAX_INT_DIGITS:
            raise ToolError(
                f"result too large: {fname}({_short(n)}, {_short(k)}) has more than {MAX_INT_DIGITS} digits"
            )


def _guard_builtin_call(func: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> None:
    if func is pow:
        if len(args) == 2:
            _check_power(args[0], args[1])
        elif any(isinstance(a, int) and a.bit_length() * 0.30103 > MAX_MODPOW_DIGITS for a in args):
            raise ToolError(f"pow(base, exp, mod) arguments may have at most {MAX_MODPOW_DIGITS} digits")
    elif func is round:
        # round(n, -k) computes 10**k internally
        ndigits = args[1] if len(args) > 1 else kwargs.get("ndigits")
        if isinstance(ndigits, int) and abs(ndigits) > MAX_INT_DIGITS:
            raise ToolError(f"round() ndigits must be between -{MAX_INT_DIGITS} and {MAX_INT_DIGITS}")


_BUILTINS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sum": sum,
    "int": int,
    "float": float,
    "pow": pow,
    "divmod": divmod,
}


def _depth(node: ast.AST) -> int:
    """Nesting depth, computed without recursion so that hostile input cannot overflow the stack."""
    deepest = 0
    stack: list[tuple[ast.AST, int]] = [(node, 1)]
    while stack:
        current, d = stack.pop()
        deepest = max(deepest, d)
        for child in ast.iter_child_nodes(current):
            # the left spine of a chain like 1+2+3+... is evaluated in a loop, so it adds no depth
            flat = isinstance(current, ast.BinOp) and child is current.left and isinstance(child, ast.BinOp)
            stack.append((child, d if flat else d + 1))
    return deepest


class _Evaluator:
    """Evaluates an allow-listed expression tree. Anything not handled here is refused."""

    def eval(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return self.eval(node.body)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (bool, int, float)):
                return _check_int(node.value)
            if isinstance(node.value, complex):
                return node.value
            raise ToolError(f"only numbers are allowed, not {type(node.value).__name__} literals")
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.Attribute):
            return self._attribute(node)
        if isinstance(node, ast.BinOp):
            return self._binop(node)
        if isinstance(node, ast.UnaryOp):
            return self._unary(node)
        if isinstance(node, ast.BoolOp):
            return self._boolop(node)
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.IfExp):
            return self.eval(node.body) if self.eval(node.test) else self.eval(node.orelse)
        if isinstance(node, (ast.Tuple, ast.List)):
            if len(node.elts) > MAX_SEQUENCE_ITEMS:
                raise ToolError(f"too many items in a list: at most {MAX_SEQUENCE_ITEMS}")
            if any(isinstance(e, ast.Starred) for e in node.elts):
                raise ToolError("starred expressions (*x) are not supported")
            items = [self._value(e) for e in node.elts]
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if isinstance(node, ast.Call):
            return self._call(node)
        raise ToolError(f"unsupported syntax: {_describe(node)} is not allowed in a calculator expression")

    def _value(self, node: ast.AST) -> Any:
        """Evaluate a node that must produce a value, not a bare function."""
        value = self.eval(node)
        if callable(value):
            name = getattr(value, "__name__", "function")
            raise ToolError(f"{name} is a function: call it, e.g. {name}(2)")
        return value

    def _name(self, name: str) -> Any:
        # builtins first: `pow` is Python's exact integer pow (with optional modulus), not math.pow
        if name in _BUILTINS:
            return _BUILTINS[name]
        if name in _MATH:
            return _MATH[name]
        if name == "math":
            raise ToolError("use a function of math, e.g. math.sqrt(2) or sqrt(2)")
        raise ToolError(
            f"unknown name {name!r}: you can use numbers, the functions and constants of the math module "
            "(sqrt, sin, log, factorial, pi, e, ...) and abs, round, min, max, sum, int, float, pow, divmod"
        )

    def _attribute(self, node: ast.Attribute) -> Any:
        # only `math.<public name>`: any other attribute access could reach object internals
        if isinstance(node.value, ast.Name) and node.value.id == "math":
            if node.attr in _MATH:
                return _MATH[node.attr]
            raise ToolError(f"math has no function or constant {node.attr!r}")
        raise ToolError("attribute access is not allowed (only math.<function>, e.g. math.sqrt(2))")

    def _binop(self, node: ast.BinOp) -> Any:
        # walk down the left spine first: a long chain like 1+2+...+500 must not recurse per term
        spine = [node]
        while isinstance(spine[-1].left, ast.BinOp):
            spine.append(spine[-1].left)
        value = self._value(spine[-1].left)
        for step in reversed(spine):
            value = self._apply(step, value, self._value(step.right))
        return value

    def _apply(self, node: ast.BinOp, left: Any, right: Any) -> Any:
        if isinstance(node.op, _BITWISE):
            symbol = {
                ast.BitAnd: "&",
                ast.BitOr: "|",
                ast.BitXor: "^",
                ast.LShift: "<<",
                ast.RShift: ">>",
                ast.MatMult: "@",
            }[type(node.op)]
            hint = " (use ** for powers)" if symbol == "^" else ""
            raise ToolError(f"operator {symbol} is not supported{hint}")
        fn = _BINARY.get(type(node.op))
        if fn is None:
            raise ToolError(f"unsupported operator: {_describe(node.op)}")
        if not (_is_number(left) and _is_number(right)):
            # lists stay out of arithmetic: [1] * 10**9 must not allocate
            raise ToolError(f"arithmetic needs numbers, got {type(left).__name__} and {type(right).__name__}")
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        return _check_int(fn(left, right))

    def _unary(self, node: ast.UnaryOp) -> Any:
        operand = self._value(node.operand)
        if isinstance(node.op, ast.Not):
            return not operand
        if not _is_number(operand):
            raise ToolError(f"unary {_describe(node.op)} needs a number, got {type(operand).__name__}")
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return +operand
        raise ToolError("operator ~ is not supported")

    def _boolop(self, node: ast.BoolOp) -> Any:
        result: Any = None
        for value_node in node.values:
            result = self._value(value_node)
            if isinstance(node.op, ast.And) and not result:
                return result
            if isinstance(node.op, ast.Or) and result:
                return result
        return result

    def _compare(self, node: ast.Compare) -> Any:
        left = self._value(node.left)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            fn = _COMPARE.get(type(op))
            if fn is None:
                raise ToolError(f"unsupported comparison: {_describe(op)}")
            right = self._value(comparator)
            if not fn(left, right):
                return False
            left = right
        return True

    def _call(self, node: ast.Call) -> Any:
        func = self.eval(node.func)
        if not callable(func):
            raise ToolError(f"{ast.unparse(node.func)} is not a function")
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise ToolError("*args and **kwargs are not supported")
        args = [self._value(a) for a in node.args]
        kwargs = {k.arg: self._value(k.value) for k in node.keywords if k.arg is not None}
        fname = getattr(func, "__name__", "")
        if func is _MATH.get(fname):
            _guard_math_call(fname, args)
        else:
            _guard_builtin_call(func, args, kwargs)
        return _check_int(func(*args, **kwargs))


def _describe(node: ast.AST) -> str:
    names = {
        "Lambda": "lambda",
        "Subscript": "indexing ([...])",
        "ListComp": "a list comprehension",
        "GeneratorExp": "a generator expression",
        "SetComp": "a set comprehension",
        "DictComp": "a dict comprehension",
        "NamedExpr": "assignment (:=)",
        "JoinedStr": "an f-string",
        "Dict": "a dict",
        "Set": "a set",
        "Await": "await",
        "Yield": "yield",
        "Slice": "slicing",
        "In": "in",
        "NotIn": "not in",
        "Is": "is",
        "IsNot": "is not",
        "Invert": "~",
    }
    kind = type(node).__name__
    return names.get(kind, kind)


def evaluate(expression: str) -> Any:
    """The value of a calculator expression; ToolError for anything invalid or refused."""
    expr = expression.strip()
    if not expr:
        raise ToolError("the expression is empty")
    if len(expr) > MAX_EXPRESSION_CHARS:
        raise ToolError(
            f"the expression is too long ({len(expr)} characters; at most {MAX_EXPRESSION_CHARS})"
        )
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise ToolError(f"invalid expression: {exc.msg} (it must be a single Python expression)") from None
    except (RecursionError, MemoryError, ValueError):
        raise ToolError("invalid expression: too deeply nested or malformed") from None
    if _depth(tree) > MAX_DEPTH:
        raise ToolError(f"the expression is nested too deeply (at most {MAX_DEPTH} levels)")
    try:
        value = _Evaluator()._value(tree)
    except ToolError:
        raise
    except ZeroDivisionError:
        raise ToolError("division by zero") from None
    except OverflowError as exc:
        raise ToolError(f"numeric overflow: {exc}") from None
    except RecursionError:
        raise ToolError("the expression is nested too deeply") from None
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise ToolError(f"{type(exc).__name__}: {exc}") from None
    return value


def calculate(expression: str) -> str:
    """What the Calculator tool returns: `str` of the value, as AgentLego does."""
    value = evaluate(expression)
    try:
        return str(value)
    except ValueError as exc:  # e.g. an int over Python's printable digit limit inside a tuple
        raise ToolError(f"cannot print the result: {exc}") from None


@tool(name="Calculator", category="logic", description=DESCRIPTION)
def calculator(expression: str) -> str:
    return calculate(expression)
