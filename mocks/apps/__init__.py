"""The registry of mock apps: name -> App class.

To add an app: write it (see mocks/README.md) and add its class to ALL_APPS below, directly or
through its group's list (CTOOL_APPS, MTU_APPS, TEVAL_APPS).
"""

from __future__ import annotations

from collections.abc import Iterable

from toolgym.mocks.app import App
from toolgym.mocks.apps.banking import BankingApp
from toolgym.mocks.apps.ctool import CTOOL_APPS
from toolgym.mocks.apps.mtu import MTU_APPS
from toolgym.mocks.apps.shopping import ShoppingApp
from toolgym.mocks.apps.teval import TEVAL_APPS


def _registry(classes: Iterable[type[App]]) -> dict[str, type[App]]:
    out: dict[str, type[App]] = {}
    for cls in classes:
        if cls.name in out:
            raise ValueError(f"two mock apps named {cls.name!r}: {out[cls.name]} and {cls}")
        out[cls.name] = cls
    return dict(sorted(out.items()))


ALL_APPS: dict[str, type[App]] = _registry([BankingApp, ShoppingApp, *CTOOL_APPS, *MTU_APPS, *TEVAL_APPS])


def get_app(name: str) -> type[App]:
    """A mock app by name; "simulated:<library>" names a library of simulated tools
    (toolgym.mocks.simulated: registered in this process, or bundled)."""
    if name.startswith("simulated:"):
        from toolgym.mocks.simulated.app import get_simulated_app

        return get_simulated_app(name)
    try:
        return ALL_APPS[name]
    except KeyError:
        raise KeyError(f"no mock app {name!r}; known: {sorted(ALL_APPS)}") from None


def load_apps(names: Iterable[str]) -> list[type[App]]:
    return [get_app(n) for n in names]


__all__ = ["ALL_APPS", "get_app", "load_apps"]
