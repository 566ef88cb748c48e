"""Responses and errors of mock APIs.

Success: a JSON object with a "status" field. Either the enveloped form `ok(data)` ->
{"status": "success", "data": ...}, or the flat layout a published API uses, `ok(order_id=..., ...)`
-> {"status": "success", "order_id": ...}. Pick one per API, always keep "status".

Errors: raise an AppError (a ToolError) with an HTTP-like code. The agent gets a `tool_error`
observation whose content is {"status": "error", "code": 404, "message": "..."}. Because every
write API runs in a savepoint, raising anywhere undoes everything the call did.

    400 invalid parameter value (bad enum, negative quantity, malformed date)
    404 unknown id
    409 conflict with the current state (no stock left, already cancelled, already paid)
    422 impossible operation (insufficient funds, empty cart)
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from datetime import date
from typing import Any, Final, TypeVar

from toolgym.errors import ToolError

T = TypeVar("T")

REASONS: Final[dict[int, str]] = {
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
    422: "Unprocessable Entity",
    500: "Internal Error",
}


class AppError(ToolError):
    """A mock API's error with an HTTP-like status code."""

    def __init__(self, code: int, message: str, *, details: Any = None) -> None:
        data: dict[str, Any] = {"status": "error", "code": code, "message": message}
        if details is not None:
            data["details"] = details
        super().__init__(f"{code} {REASONS.get(code, 'Error')}: {message}", data=data)
        self.code = code
        self.reason = message


def ok(data: Any = None, /, **fields: Any) -> dict[str, Any]:
    """{"status": "success", "data": data} or, with keyword fields, the flat layout."""
    out: dict[str, Any] = {"status": "success"}
    if data is not None or not fields:
        out["data"] = data
    out.update(fields)
    return out


def bad_request(message: str, **details: Any) -> AppError:
    return AppError(400, message, details=details or None)


def not_found(what: str, ident: Any) -> AppError:
    return AppError(404, f"{what} {ident!r} not found")


def conflict(message: str, **details: Any) -> AppError:
    return AppError(409, message, details=details or None)


def unprocessable(message: str, **details: Any) -> AppError:
    return AppError(422, message, details=details or None)


def check_enum(param: str, value: T, allowed: Collection[T]) -> T:
    """400 unless `value` is one of `allowed` (for APIs that take free strings as published)."""
    if value not in allowed:
        raise bad_request(
            f"invalid value {value!r} for {param!r}; expected one of {sorted(map(str, allowed))}"
        )
    return value


def check_range(param: str, value: int | float, lo: float | None = None, hi: float | None = None) -> None:
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        bounds = f"[{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]"
        raise bad_request(f"{param!r} must be in {bounds}, got {value!r}")


def parse_date(param: str, value: str) -> date:
    """YYYY-MM-DD or 400."""
    try:
        return date.fromisoformat(value)
    except (TypeError, ValueError):
        raise bad_request(f"{param!r} must be a date YYYY-MM-DD, got {value!r}") from None


def to_cents(param: str, amount: float) -> int:
    """A money amount in currency units as integer cents; 400 if not finite or finer than a cent."""
    if not math.isfinite(amount):
        raise bad_request(f"{param!r} must be a finite number")
    cents = round(amount * 100)
    if abs(amount * 100 - cents) > 1e-6:
        raise bad_request(f"{param!r} has more than two decimals: {amount!r}")
    return int(cents)


def positive_cents(param: str, amount: float) -> int:
    """`to_cents` for an amount that must be above zero (a payment, a transfer); 400 otherwise."""
    cents = to_cents(param, amount)
    if cents <= 0:
        raise bad_request(f"{param} must be positive")
    return cents


def from_cents(cents: int) -> float:
    return round(cents / 100, 2)


def paginate(items: Sequence[T], page: int, page_size: int, *, max_page_size: int = 100) -> list[T]:
    """The items of 1-based `page`; 400 for a page < 1 or a page size outside [1, max_page_size]."""
    check_range("page", page, 1)
    check_range("page_size", page_size, 1, max_page_size)
    start = (page - 1) * page_size
    return list(items[start : start + page_size])
