"""MTU rides: GetRide (SGD ride sharing), searchTaxi / BookTaxi (MultiWOZ taxis).

One fleet of cars, each with a ride type, seats, a plate and a position. A ride goes to the
nearest free car of the asked type with enough seats, and that car is then busy: when none is
left the request is a 409. Fares follow the trip's distance; distances come from a deterministic
geocoder over the place names (the same address is always the same distance away).
"""

from __future__ import annotations

import random
import zlib
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Volatile, read, set_counter, write
from toolgym.mocks.apps.mtu._common import (
    FIRST_NAMES,
    LAST_NAMES,
    Count,
    canon,
    count,
    finalize_tools,
    parse_clock,
    parse_day,
    phone,
    select_fields,
)
from toolgym.mocks.responses import bad_request, conflict, from_cents, ok, unprocessable
from toolgym.mocks.seeding import insert_rows, person_name
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

RIDE_TYPES: Final = ("Pool", "Regular", "Luxury")
RATE_CENTS_PER_KM: Final = {"Pool": 90, "Regular": 140, "Luxury": 260}
BASE_CENTS: Final = {"Pool": 250, "Regular": 350, "Luxury": 700}
MAKES: Final = {
    "Pool": ("toyota", "honda", "ford", "skoda"),
    "Regular": ("toyota", "honda", "volkswagen", "ford", "volvo"),
    "Luxury": ("bmw", "audi", "lexus", "tesla", "mercedes-benz"),
}
COLORS: Final = ("black", "white", "grey", "blue", "red", "silver", "yellow")
AVERAGE_KMH: Final = 30


def distance_km(a: str, b: str) -> float:
    """A stable pseudo-geocoded distance between two place names: 1.5 to 25 km."""
    if canon(a) == canon(b):
        return 0.0
    key = "|".join(sorted((canon(a), canon(b))))
    return 1.5 + (zlib.crc32(key.encode()) % 2350) / 100


class RidesApp(App):
    name = "mtu_rides"
    description = "Ride hailing and taxis (MTU-Bench ride and taxi APIs)."
    version = "1"
    schema = """
    CREATE TABLE mtu_rides_vehicles (
        license_plate TEXT PRIMARY KEY,
        ride_type TEXT NOT NULL CHECK (ride_type IN ('Pool', 'Regular', 'Luxury')),
        make TEXT NOT NULL,
        color TEXT NOT NULL,
        seats INTEGER NOT NULL,
        driver TEXT NOT NULL,
        phone TEXT NOT NULL,
        km_away REAL NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('available', 'busy'))
    );
    CREATE TABLE mtu_rides_rides (
        ride_id TEXT PRIMARY KEY,
        license_plate TEXT NOT NULL REFERENCES mtu_rides_vehicles(license_plate),
        departure TEXT,
        destination TEXT,
        number_of_seats INTEGER NOT NULL CHECK (number_of_seats > 0),
        ride_type TEXT NOT NULL,
        fare_cents INTEGER NOT NULL,
        wait_minutes INTEGER NOT NULL,
        requested_at TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('booked', 'completed', 'cancelled'))
    );
    """
    volatile: ClassVar[Volatile] = {"mtu_rides_rides": ["requested_at"]}

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        vehicles = []
        plates: set[str] = set()
        for _ in range(240):
            ride_type = rng.choices(RIDE_TYPES, weights=(3, 5, 2))[0]
            letters = "ABCDEFGHJKLMNPRSTUVWXYZ"
            plate = f"{rng.choice(letters)}{rng.randint(100, 999)}{rng.choice(letters)}{rng.randint(10, 99)}"
            if plate in plates:
                continue
            plates.add(plate)
            vehicles.append(
                {
                    "license_plate": plate,
                    "ride_type": ride_type,
                    "make": rng.choice(MAKES[ride_type]),
                    "color": rng.choice(COLORS),
                    "seats": 2 if ride_type == "Pool" else rng.choice((4, 4, 6)),
                    "driver": person_name(rng, FIRST_NAMES, LAST_NAMES),
                    "phone": phone(rng),
                    "km_away": round(rng.uniform(0.3, 12.0), 1),
                    # some cars are on a trip already
                    "status": "busy" if rng.random() < 0.3 else "available",
                }
            )
        insert_rows(db, "mtu_rides_vehicles", vehicles)
        set_counter(db, "RIDE", 0)

    # ---- helpers -------------------------------------------------------------------------------
    def _free_cars(self, ride_type: str | None, seats: int) -> list[dict[str, Any]]:
        sql = "SELECT * FROM mtu_rides_vehicles WHERE status = 'available' AND seats >= ?"
        params: list[Any] = [seats]
        if ride_type is not None:
            sql += " AND ride_type = ?"
            params.append(ride_type)
        return self.rows(sql + " ORDER BY km_away, license_plate", params)

    @staticmethod
    def _fare(ride_type: str, km: float) -> int:
        return BASE_CENTS[ride_type] + int(km * RATE_CENTS_PER_KM[ride_type])

    def _dispatch(
        self, car: dict[str, Any], departure: str | None, destination: str, seats: int, fare: int
    ) -> tuple[str, int]:
        wait = max(1, round(car["km_away"] / AVERAGE_KMH * 60))
        ride_id = self.next_id("RIDE")
        self.execute(
            "INSERT INTO mtu_rides_rides VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'booked')",
            (
                ride_id,
                car["license_plate"],
                departure,
                destination,
                seats,
                car["ride_type"],
                fare,
                wait,
                self.now_iso(),
            ),
        )
        self.execute(
            "UPDATE mtu_rides_vehicles SET status = 'busy' WHERE license_plate = ?", (car["license_plate"],)
        )
        return ride_id, wait

    # ---- SGD -------------------------------------------------------------------------------------
    @write(name="GetRide")
    def get_ride(
        self,
        destination: Annotated[str, Param("where to go: an address or a place")],
        number_of_seats: Annotated[Count, Param("seats needed")],
        ride_type: Annotated[str, Param("kind of ride", enum=RIDE_TYPES)],
    ) -> dict[str, Any]:
        """Book a cab for any destination, number of seats and ride type."""
        seats = count("number_of_seats", number_of_seats, hi=6)
        if ride_type == "Pool" and seats > 2:
            raise unprocessable("a Pool ride takes at most 2 seats")
        cars = self._free_cars(ride_type, seats)
        if not cars:
            raise conflict(f"no {ride_type} car with {seats} seats is free right now")
        km = distance_km("current location", destination)
        fare = self._fare(ride_type, km)
        ride_id, wait = self._dispatch(cars[0], None, destination, seats, fare)
        return ok(
            ride_id=ride_id,
            destination=destination,
            ride_type=ride_type,
            number_of_seats=seats,
            ride_fare=from_cents(fare),
            wait_time=wait,
            approximate_ride_duration=max(3, round(km / AVERAGE_KMH * 60)),
            license_plate=cars[0]["license_plate"],
        )

    # ---- MultiWOZ --------------------------------------------------------------------------------
    @read(name="searchTaxi")
    def search_taxi(
        self,
        departure: Annotated[str, Param("where the trip starts")],
        destination: Annotated[str, Param("where the trip ends")],
        return_info: Annotated[tuple[str, ...], Param("fields: all, phone, license_plate, type, ...")],
        day: Annotated[str | None, Param("day of the trip")] = None,
        leaveAt: Annotated[str | None, Param("leave at, HH:MM (or arriveBy)")] = None,
        arriveBy: Annotated[str | None, Param("arrive by, HH:MM (or leaveAt)")] = None,
    ) -> dict[str, Any]:
        """Find free taxis for a trip, nearest first, with the price and duration of the trip."""
        if not (leaveAt or arriveBy):
            raise bad_request("searchTaxi needs leaveAt or arriveBy")
        if day:
            parse_day("day", day, self.now().date())
        for name, value in (("leaveAt", leaveAt), ("arriveBy", arriveBy)):
            if value:
                parse_clock(name, value)
        km = distance_km(departure, destination)
        taxis = []
        for car in self._free_cars(None, 1)[:5]:
            row = {
                "type": f"{car['color']} {car['make']}",
                "license_plate": car["license_plate"],
                "phone": car["phone"],
                "seats": car["seats"],
                "ride_type": car["ride_type"],
                "price": from_cents(self._fare(car["ride_type"], km)),
                "duration": f"{max(3, round(km / AVERAGE_KMH * 60))} minutes",
                "minutes_away": max(1, round(car["km_away"] / AVERAGE_KMH * 60)),
            }
            taxis.append(select_fields(row, return_info))
        return ok(count=len(taxis), taxis=taxis, departure=departure, destination=destination)

    @write(name="BookTaxi")
    def book_taxi(
        self,
        people: Annotated[Count, Param("number of passengers")],
        license_plate: Annotated[str, Param("plate of the taxi to book (from searchTaxi)")],
        return_info: Annotated[tuple[str, ...], Param("fields: all, isSuccess, phone, type, reference")] = (
            "all",
        ),
    ) -> dict[str, Any]:
        """Book a taxi by its license plate."""
        car = self.get_or_404("mtu_rides_vehicles", "license_plate", license_plate.upper(), what="taxi")
        party = count("people", people, hi=8)
        if car["status"] != "available":
            raise conflict(f"taxi {car['license_plate']} is already booked")
        if car["seats"] < party:
            raise unprocessable(f"taxi {car['license_plate']} seats {car['seats']}, not {party}")
        fare = BASE_CENTS[car["ride_type"]]  # the meter starts at the base fare; the trip adds the rest
        reference, wait = self._dispatch(car, None, "", party, fare)
        details = {
            "isSuccess": True,
            "reference": reference,
            "type": f"{car['color']} {car['make']}",
            "phone": car["phone"],
            "license_plate": car["license_plate"],
            "people": party,
            "minutes_away": wait,
        }
        return ok(**select_fields(details, return_info))


finalize_tools(RidesApp)
