"""T-Eval's 15 tools (50 APIs) as mock apps, one App per tool, with the APIs, parameter names and
return fields of T-Eval's `api_descrip.json`.

Registry names are `teval_<tool>` (see TEVAL_TOOL_NAMES for T-Eval's own tool names). BINGMap and
GaodeMap both publish `get_distance`, `get_route` and `search_nearby`; each app keeps the exact
names, and a world holding both must prefix one of them: `teval_prefixes(apps)` gives
{"teval_gaode_map": "gaode_"} in that case (pass it as `MockWorld(..., prefixes=...)`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from toolgym.mocks.app import App
from toolgym.mocks.apps.teval.airbnb import AirbnbSearch
from toolgym.mocks.apps.teval.arxiv import ArxivSearch
from toolgym.mocks.apps.teval.bing_map import BINGMap
from toolgym.mocks.apps.teval.common import TevalApp
from toolgym.mocks.apps.teval.email import Email
from toolgym.mocks.apps.teval.file_operation import FileOperation
from toolgym.mocks.apps.teval.film_douban import FilmDouban
from toolgym.mocks.apps.teval.film_tmdb import FilmTMDB
from toolgym.mocks.apps.teval.gaode_map import GaodeMap
from toolgym.mocks.apps.teval.google_scholar import GoogleScholar
from toolgym.mocks.apps.teval.google_search import GoogleSearch
from toolgym.mocks.apps.teval.polygon_finance import PolygonFinance
from toolgym.mocks.apps.teval.ppt import PPT
from toolgym.mocks.apps.teval.reserve_meeting import ReserveMeeting
from toolgym.mocks.apps.teval.time_tool import TimeTool
from toolgym.mocks.apps.teval.weather import Weather

# in T-Eval's order (api_descrip.json)
_APPS: Final[tuple[type[TevalApp], ...]] = (
    AirbnbSearch,
    ArxivSearch,
    BINGMap,
    Email,
    FileOperation,
    FilmDouban,
    FilmTMDB,
    GaodeMap,
    GoogleScholar,
    GoogleSearch,
    ReserveMeeting,
    TimeTool,
    PPT,
    Weather,
    PolygonFinance,
)
TEVAL_APPS: list[type[App]] = list(_APPS)
# registry name -> app class, and registry name -> T-Eval tool name
TEVAL_APP_BY_NAME: Final[dict[str, type[TevalApp]]] = {cls.name: cls for cls in _APPS}
TEVAL_TOOL_NAMES: Final[dict[str, str]] = {cls.name: cls.teval_tool for cls in _APPS}
GAODE_PREFIX: Final = "gaode_"


def resolve_app_names(names: Iterable[str]) -> list[type[App]]:
    """App classes for registry names (this group's apps are in the main registry too)."""
    # imported here: the main registry imports this package
    from toolgym.mocks.apps import load_apps

    return load_apps(names)


def teval_prefixes(apps: Iterable[str | type[App]]) -> dict[str, str]:
    """API prefixes a world of these apps needs: only GaodeMap's, and only beside BINGMap."""
    names = {a if isinstance(a, str) else a.name for a in apps}
    if {BINGMap.name, GaodeMap.name} <= names:
        return {GaodeMap.name: GAODE_PREFIX}
    return {}


__all__ = [
    "GAODE_PREFIX",
    "PPT",
    "TEVAL_APPS",
    "TEVAL_APP_BY_NAME",
    "TEVAL_TOOL_NAMES",
    "AirbnbSearch",
    "ArxivSearch",
    "BINGMap",
    "Email",
    "FileOperation",
    "FilmDouban",
    "FilmTMDB",
    "GaodeMap",
    "GoogleScholar",
    "GoogleSearch",
    "PolygonFinance",
    "ReserveMeeting",
    "TevalApp",
    "TimeTool",
    "Weather",
    "resolve_app_names",
    "teval_prefixes",
]
