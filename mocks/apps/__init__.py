"""The registry of mock apps: name -> App class.

To add an app: write `mocks/apps/<name>.py` (see mocks/README.md), import its class here and add
one line to ALL_APPS, keeping the entries sorted by name.
"""

from __future__ import annotations

from collections.abc import Iterable

from toolgym.mocks.app import App
from toolgym.mocks.apps.banking import BankingApp
from toolgym.mocks.apps.shopping import ShoppingApp

ALL_APPS: dict[str, type[App]] = {
    BankingApp.name: BankingApp,
    ShoppingApp.name: ShoppingApp,
}


def get_app(name: str) -> type[App]:
    try:
        return ALL_APPS[name]
    except KeyError:
        raise KeyError(f"no mock app {name!r}; known: {sorted(ALL_APPS)}") from None


def load_apps(names: Iterable[str]) -> list[type[App]]:
    return [get_app(n) for n in names]


__all__ = ["ALL_APPS", "get_app", "load_apps"]
