"""CToolEval-style mock apps with write operations: express delivery, instant messaging, meeting
rooms and calendars, maps, music and food delivery (takeout). English snake_case API names;
`CTOOL_ZH_APPS` are the six apps with Chinese data (zh locale).

`CTOOL_APPS` lists the app classes; `resolve_app_names` turns task `apps` names into classes
through the main registry (toolgym.mocks.apps.ALL_APPS, which holds these apps too).
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
from toolgym.mocks.apps.ctool.zh import (
    CalendarZhApp,
    ExpressZhApp,
    MapsZhApp,
    MessagingZhApp,
    MusicZhApp,
    TakeoutZhApp,
)

CTOOL_APPS: list[type[App]] = [ExpressApp, MessagingApp, CalendarApp, MapsApp, MusicApp, TakeoutApp]
# the zh locale: the same apps with Chinese data (mocks/apps/ctool/zh.py)
CTOOL_ZH_APPS: list[type[App]] = [
    ExpressZhApp,
    MessagingZhApp,
    CalendarZhApp,
    MapsZhApp,
    MusicZhApp,
    TakeoutZhApp,
]


def resolve_app_names(names: Iterable[str]) -> list[type[App]]:
    """App classes for registry names (this group's apps are in the main registry too)."""
    # imported here: the main registry imports this package
    from toolgym.mocks.apps import load_apps

    return load_apps(names)


__all__ = [
    "CTOOL_APPS",
    "CTOOL_ZH_APPS",
    "CalendarApp",
    "CalendarZhApp",
    "ExpressApp",
    "ExpressZhApp",
    "MapsApp",
    "MapsZhApp",
    "MessagingApp",
    "MessagingZhApp",
    "MusicApp",
    "MusicZhApp",
    "TakeoutApp",
    "TakeoutZhApp",
    "resolve_app_names",
]
