"""Deterministic mock apps: a state store with O(changes) reset, restore and hash, an app
declaration API, MockWorld (toolgym.world.World), rewards from final state.

How to write an app: mocks/README.md. The registry of apps: toolgym.mocks.apps.
"""

# One import path: this root folder is the package `toolgym.mocks` (through the link toolgym/mocks),
# never a top-level `mocks` package, or every module would exist twice.
if __name__ != "toolgym.mocks":
    raise ImportError(
        f"import toolgym.mocks, not {__name__}: the root folder mocks/ is a subpackage of toolgym"
    )


from toolgym.mocks.app import App, Volatile, format_id, insert_rows, read, set_counter, write
from toolgym.mocks.responses import AppError, bad_request, conflict, not_found, ok, unprocessable
from toolgym.mocks.world import MockWorld, check_app

__all__ = [
    "App",
    "AppError",
    "MockWorld",
    "Volatile",
    "bad_request",
    "check_app",
    "conflict",
    "format_id",
    "insert_rows",
    "not_found",
    "ok",
    "read",
    "set_counter",
    "unprocessable",
    "write",
]
