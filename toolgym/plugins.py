"""Plug-ins: what installed packages add to toolgym, through entry points.

Every registry reads one entry-point group, toolgym's own contributions included (its
pyproject.toml declares them as any package declares its own), so a package's app, tool, task
set, suite, simulated library or protocol appears wherever a built-in one does:

| group | an entry point loads | read by |
|---|---|---|
| `toolgym.apps` | an `App` class, or a list of them | `toolgym.mocks.apps.ALL_APPS`, `get_app` |
| `toolgym.tools` | a tool, a list of tools, or a callable returning either | `toolservers.registry.default_toolset`, the server's catalog |
| `toolgym.models` | a callable returning `BackendStatus` rows | `toolgym models` |
| `toolgym.tasks` | a task file's path, a `{name: path}` mapping, or a callable returning either | `--tasks NAME`, `toolgym tasks`, the env service |
| `toolgym.suites` | a `MetricSuite`, or its class | `evaluation.suites.SUITES`, `eval --suite` |
| `toolgym.simulated` | a doc file's path, a list of `ToolDoc`s, a `{library: loader}` mapping, or a callable returning one of them | `simulated:<library>` |
| `toolgym.protocols` | an `ActionProtocol` class | `protocols.PROTOCOLS`, `--protocol` |
| `toolgym.templates` | a task `Template`, a list of them, or a callable returning either | `authoring.templates.TEMPLATES`, `toolgym generate` |

A callable is called with no arguments, or with `config=` where the registry has a configuration
to give (tools and models get the `ModelConfig`) and the callable takes a `config` parameter.

Entry points are read once per process and loaded when a registry is first used. A plug-in that
fails to import or load, or whose name is taken, is skipped with one line on stderr naming its
package and entry point; toolgym's own come first, so a plug-in never replaces a built-in.
This module is on the core floor: it imports nothing of toolgym, and loads plug-ins by name.
"""

from __future__ import annotations

import functools
import importlib.metadata
import inspect
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

GROUP_PREFIX = "toolgym."
OWN_PACKAGE = "toolgym"
KINDS = ("apps", "tools", "models", "tasks", "suites", "simulated", "protocols", "templates")

T = TypeVar("T")


class PluginError(Exception):
    """What is wrong with what an entry point loaded (the registry skips it and says why)."""


@dataclass(frozen=True)
class Plugin:
    """One entry point of a `toolgym.<kind>` group and the package that declares it."""

    kind: str
    name: str
    value: str
    package: str
    version: str

    def describe(self) -> str:
        return f"package {self.package} {self.version}, entry point {self.group}: {self.name} = {self.value}"

    @property
    def group(self) -> str:
        return GROUP_PREFIX + self.kind

    def load(self) -> Any:
        return importlib.metadata.EntryPoint(self.name, self.value, self.group).load()


_problems: list[str] = []


def problems() -> list[str]:
    """The lines said so far about plug-ins that were skipped, in the order they were said."""
    return list(_problems)


def report(plugin: Plugin, what: str) -> None:
    """Says once, on one line, that a plug-in is skipped and why."""
    line = f"toolgym: plug-in skipped ({plugin.describe()}): {' '.join(what.split())}"
    if line not in _problems:
        _problems.append(line)
        log.warning("%s", line)


@functools.cache
def _entry_points() -> dict[str, tuple[Plugin, ...]]:
    """Every `toolgym.*` entry point of every distribution on sys.path, toolgym's first. Copies
    of one distribution's metadata (an installed one and a stale `*.egg-info` in a checkout on
    sys.path) are merged: what one declares is kept once."""
    seen: set[tuple[str, str, str]] = set()
    found: dict[str, list[Plugin]] = {kind: [] for kind in KINDS}
    for dist in importlib.metadata.distributions():
        package = dist.metadata["Name"] or "?"
        for ep in dist.entry_points:
            kind = ep.group.removeprefix(GROUP_PREFIX)
            key = (package.lower(), ep.group, ep.name)
            if not ep.group.startswith(GROUP_PREFIX) or kind not in found or key in seen:
                continue
            seen.add(key)
            found[kind].append(Plugin(kind, ep.name, ep.value, package, dist.version or "?"))
    return {kind: tuple(sorted(items, key=_order)) for kind, items in found.items()}


def _order(plugin: Plugin) -> tuple[bool, str]:
    return plugin.package.lower() != OWN_PACKAGE, plugin.package.lower()


def entry_points(kind: str) -> tuple[Plugin, ...]:
    """The entry points of `toolgym.<kind>`, toolgym's own first, then by package."""
    if kind not in KINDS:
        raise ValueError(f"no plug-in kind {kind!r}; known: {', '.join(KINDS)}")
    return _entry_points()[kind]


def call_factory(obj: Any, **given: Any) -> Any:
    """`obj()` for a plug-in's factory, passing the keywords of `given` its signature names."""
    try:
        params = inspect.signature(obj).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        params = {}  # type: ignore[assignment]
    return obj(**{k: v for k, v in given.items() if k in params})


Expand = Callable[[Plugin, Any], Iterable[tuple[str, T]]]


class Registry(Mapping[str, T], Generic[T]):
    """A name -> T mapping built from one entry-point group when first read. `expand` turns
    what an entry point loaded into (name, item) pairs, raising for what it cannot use; `sort`
    orders the names (else: the entry points' order)."""

    def __init__(self, kind: str, expand: Expand[T], *, sort: bool = False) -> None:
        if kind not in KINDS:  # a misspelt kind fails where the registry is declared
            raise ValueError(f"no plug-in kind {kind!r}; known: {', '.join(KINDS)}")
        self.kind = kind
        self._expand = expand
        self._sort = sort
        self._items: dict[str, T] | None = None
        self._owners: dict[str, Plugin] = {}
        _registries.append(self)

    def _built(self) -> dict[str, T]:
        if self._items is None:
            items, self._owners = collect(self.kind, self._expand)
            self._items = dict(sorted(items.items())) if self._sort else items
        return self._items

    def owner(self, name: str) -> Plugin:
        """The entry point that registered `name` (KeyError for a name nobody did)."""
        self._built()
        return self._owners[name]

    def __getitem__(self, name: str) -> T:
        return self._built()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._built())

    def __len__(self) -> int:
        return len(self._built())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {sorted(self._built())})"


def collect(kind: str, expand: Expand[T]) -> tuple[dict[str, T], dict[str, Plugin]]:
    """Every (name, item) the entry points of `kind` add, and the entry point of each name; a
    name taken already is skipped, with one line."""
    items: dict[str, T] = {}
    owners: dict[str, Plugin] = {}
    for plugin in entry_points(kind):
        for name, item in _pairs(plugin, expand):
            if name in items:
                taken = owners[name]
                report(plugin, f"{name!r} is taken by {taken.package} ({taken.name} = {taken.value})")
                continue
            items[name] = item
            owners[name] = plugin
    return items, owners


def _pairs(plugin: Plugin, expand: Expand[T]) -> list[tuple[str, T]]:
    """What one entry point adds, or nothing (and one line said) when it cannot be used."""
    try:
        return list(expand(plugin, plugin.load()))
    except PluginError as exc:
        report(plugin, str(exc))
    except Exception as exc:  # its import or its factory failed: the others still load
        report(plugin, f"{type(exc).__name__}: {exc}")
    return []


_registries: list[Registry[Any]] = []


def refresh() -> None:
    """Reads the installed entry points again and empties every registry (after an install in
    this process)."""
    _entry_points.cache_clear()
    _problems.clear()
    for registry in _registries:
        registry._items = None
        registry._owners = {}


__all__ = [
    "KINDS",
    "Plugin",
    "PluginError",
    "Registry",
    "call_factory",
    "collect",
    "entry_points",
    "problems",
    "refresh",
    "report",
]
