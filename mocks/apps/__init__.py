"""The registry of mock apps: name -> App class.

Apps register through the `toolgym.apps` entry-point group (toolgym.plugins): an entry point
loads an App class or a list of them. toolgym's own are declared in its pyproject.toml, by group
(CTOOL_APPS, MTU_APPS, TEVAL_APPS); an installed package adds its apps the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from toolgym.mocks.app import App
from toolgym.plugins import Plugin, PluginError, Registry


def _apps_of(plugin: Plugin, loaded: Any) -> list[tuple[str, type[App]]]:
    """An entry point's App class, or its list of them, by app name."""
    classes = list(loaded) if isinstance(loaded, Sequence) else [loaded]
    for cls in classes:
        if not (isinstance(cls, type) and issubclass(cls, App)):
            raise PluginError(f"loads {cls!r}, not an App class (or a list of them)")
    return [(cls.name, cls) for cls in classes]


# name -> App class, built from the installed entry points when first read
ALL_APPS: Registry[type[App]] = Registry("apps", _apps_of, sort=True)


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
