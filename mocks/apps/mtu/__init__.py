"""MTU-Bench's APIs as mock apps (see SPECS.md for the API -> parameters -> app table)."""

from __future__ import annotations

from toolgym.mocks.app import App
from toolgym.mocks.apps.mtu.buses import BusesApp
from toolgym.mocks.apps.mtu.cars import CarsApp
from toolgym.mocks.apps.mtu.flights import FlightsApp
from toolgym.mocks.apps.mtu.hotels import HotelsApp
from toolgym.mocks.apps.mtu.restaurants import RestaurantsApp
from toolgym.mocks.apps.mtu.rides import RidesApp
from toolgym.mocks.apps.mtu.trains import TrainsApp

MTU_APPS: list[type[App]] = [
    BusesApp,
    CarsApp,
    FlightsApp,
    HotelsApp,
    RestaurantsApp,
    RidesApp,
    TrainsApp,
]

__all__ = ["MTU_APPS"]
