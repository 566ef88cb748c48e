"""CToolEval-style mock apps with write operations: express delivery, instant messaging, meeting
rooms and calendars, maps, music and food delivery (takeout). English snake_case API names.

`CTOOL_APPS` lists the app classes; `resolve_app_names` turns task `apps` names into classes,
looking here first and then in the main registry (toolgym.mocks.apps.ALL_APPS).
"""

from __future__ import annotations

from collections.abc import Iterable

from toolgym.mocks.app import App
from toolgym.mocks.apps.ctool.calendar import CalendarApp
from toolgym.mocks.apps.ctool.express import ExpressApp
from toolgym.mocks.apps.ctool.maps import MapsApp
from toolgym.mocks.apps.ctool.messaging import MessagingApp
from toolgym.mocks.apps.ctool.music import MusicApp
from toolgym.mocks.apps.ctool.takeout import TakeoutApp

CTOOL_APPS: list[type[App]] = [ExpressApp, MessagingApp, CalendarApp, MapsApp, MusicApp, TakeoutApp]


def resolve_app_names(names: Iterable[str]) -> list[type[App]]:
    """App classes for registry names: the apps of this package, then the main registry's."""
    # imported here: the main registry may import this package, so it cannot be imported at the top
    from toolgym.mocks.apps import ALL_APPS

    known = {cls.name: cls for cls in CTOOL_APPS}
    out = []
    for name in names:
        cls = known.get(name) or ALL_APPS.get(name)
        if cls is None:
            raise KeyError(f"no mock app {name!r}; known: {sorted({*known, *ALL_APPS})}")
        out.append(cls)
    return out


__all__ = [
    "CTOOL_APPS",
    "CalendarApp",
    "ExpressApp",
    "MapsApp",
    "MessagingApp",
    "MusicApp",
    "TakeoutApp",
    "resolve_app_names",
]
