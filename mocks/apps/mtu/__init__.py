"""MTU-Bench's APIs as mock apps (see SPECS.md for the API -> parameters -> app table).

MTU_APPS lists them in registry-name order; each is an ordinary App, named "mtu_<domain>", with
tables "mtu_<domain>_<thing>", so any of them can share a world with the others.
"""

from __future__ import annotations

from toolgym.mocks.app import App
from toolgym.mocks.apps.mtu.alarms import AlarmsApp
from toolgym.mocks.apps.mtu.appointments import AppointmentsApp
from toolgym.mocks.apps.mtu.banking import MtuBankingApp
from toolgym.mocks.apps.mtu.buses import BusesApp
from toolgym.mocks.apps.mtu.calendar import CalendarApp
from toolgym.mocks.apps.mtu.cars import CarsApp
from toolgym.mocks.apps.mtu.contacts import ContactsApp
from toolgym.mocks.apps.mtu.creative import CreativeApp
from toolgym.mocks.apps.mtu.events import EventsApp
from toolgym.mocks.apps.mtu.flights import FlightsApp
from toolgym.mocks.apps.mtu.homes import HomesApp
from toolgym.mocks.apps.mtu.hotels import HotelsApp
from toolgym.mocks.apps.mtu.library import LibraryApp
from toolgym.mocks.apps.mtu.movies import MoviesApp
from toolgym.mocks.apps.mtu.music import MusicApp
from toolgym.mocks.apps.mtu.restaurants import RestaurantsApp
from toolgym.mocks.apps.mtu.rides import RidesApp
from toolgym.mocks.apps.mtu.smart_home import SmartHomeApp
from toolgym.mocks.apps.mtu.trains import TrainsApp
from toolgym.mocks.apps.mtu.weather import WeatherApp

MTU_APPS: list[type[App]] = [
    AlarmsApp,
    AppointmentsApp,
    MtuBankingApp,
    BusesApp,
    CalendarApp,
    CarsApp,
    ContactsApp,
    CreativeApp,
    EventsApp,
    FlightsApp,
    HomesApp,
    HotelsApp,
    LibraryApp,
    MoviesApp,
    MusicApp,
    RestaurantsApp,
    RidesApp,
    SmartHomeApp,
    TrainsApp,
    WeatherApp,
]

__all__ = ["MTU_APPS", *(cls.__name__ for cls in MTU_APPS)]
