"""MTU rental cars: GetCarsAvailable and ReserveCar (two SGD variants: city/start_date/end_date/
car_type and pickup_city/pickup_date/dropoff_date/type).

A fleet of cars at pick-up locations; a car is available for a period when no rental of it
overlaps. Reserving takes the cheapest available car of the type at the location, so the fleet
really runs out (409). Insurance is a daily add-on.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Volatile, format_id, read, set_counter, write
from toolgym.mocks.apps.mtu._common import (
    CITIES,
    DONTCARE,
    Flag,
    canon,
    choice,
    city_name,
    earlier_booking,
    finalize_tools,
    flag,
    one_of,
    parse_clock,
    parse_day,
    require_city,
)
from toolgym.mocks.responses import bad_request, conflict, from_cents, not_found, ok, unprocessable
from toolgym.mocks.seeding import insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

MODELS: Final = {
    "Hatchback": ("Honda Fit", "Volkswagen Golf", "Toyota Yaris", "Ford Fiesta"),
    "Sedan": ("Toyota Camry", "Honda Accord", "Nissan Altima", "Hyundai Sonata"),
    "SUV": ("Toyota RAV4", "Ford Explorer", "Jeep Cherokee", "Honda CR-V"),
    "Compact": ("Toyota Corolla", "Nissan Versa", "Kia Rio", "Chevrolet Spark"),
    "Standard": ("Volkswagen Jetta", "Chevrolet Malibu", "Kia Forte", "Mazda 3"),
    "Full-size": ("Chevrolet Impala", "Dodge Charger", "Ford Taurus", "Chrysler 300"),
}
CAR_TYPES: Final = tuple(MODELS)
DAY_RATE: Final = {"Hatchback": 38, "Sedan": 48, "SUV": 68, "Compact": 35, "Standard": 45, "Full-size": 58}
INSURANCE_CENTS_PER_DAY: Final = 1500
PLACES: Final = ("International Airport", "Downtown", "Union Station", "Harbor")


class CarsApp(App):
    name = "mtu_cars"
    description = "Rental car search and reservations (MTU-Bench rental car APIs)."
    version = "1"
    schema = """
    CREATE TABLE mtu_cars_cars (
        car_id TEXT PRIMARY KEY,
        car_name TEXT NOT NULL,
        car_type TEXT NOT NULL,
        city TEXT NOT NULL,
        pickup_location TEXT NOT NULL,
        price_per_day_cents INTEGER NOT NULL
    );
    CREATE INDEX mtu_cars_cars_city ON mtu_cars_cars(city, car_type);
    CREATE TABLE mtu_cars_rentals (
        rental_id TEXT PRIMARY KEY,
        car_id TEXT NOT NULL REFERENCES mtu_cars_cars(car_id),
        start_date TEXT NOT NULL,
        end_date TEXT NOT NULL,
        pickup_time TEXT NOT NULL,
        add_insurance INTEGER NOT NULL,
        total_price_cents INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('confirmed', 'cancelled')),
        created_at TEXT NOT NULL,
        CHECK (end_date > start_date)
    );
    CREATE INDEX mtu_cars_rentals_car ON mtu_cars_rentals(car_id, start_date);
    """
    volatile: ClassVar[Volatile] = {"mtu_cars_rentals": ["created_at"]}

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        cars: list[dict[str, Any]] = []
        for city in CITIES:
            for place in rng.sample(PLACES, 2):
                location = f"{city.name} {place}"
                for car_type in CAR_TYPES:
                    for _ in range(rng.randint(1, 3)):
                        cars.append(
                            {
                                "car_id": format_id("CAR", len(cars) + 1, 5),
                                "car_name": rng.choice(MODELS[car_type]),
                                "car_type": car_type,
                                "city": city.name,
                                "pickup_location": location,
                                "price_per_day_cents": (DAY_RATE[car_type] + rng.randint(-5, 12)) * 100,
                            }
                        )
        insert_rows(db, "mtu_cars_cars", cars)
        rentals: list[dict[str, Any]] = []
        booked: dict[str, list[tuple[str, str]]] = {}
        today = clock.date()
        for _ in range(900):
            car = rng.choice(cars)
            start = today + timedelta(days=rng.randint(-3, 30))
            end = start + timedelta(days=rng.randint(1, 7))
            taken = booked.setdefault(car["car_id"], [])
            if any(s < end.isoformat() and e > start.isoformat() for s, e in taken):
                continue  # a car is never rented twice at once
            taken.append((start.isoformat(), end.isoformat()))
            days = (end - start).days
            row = {
                "rental_id": format_id("RNT", len(rentals) + 1),
                "car_id": car["car_id"],
                "start_date": start.isoformat(),
                "end_date": end.isoformat(),
                "pickup_time": f"{rng.randint(8, 18):02d}:00",
                "add_insurance": int(rng.random() < 0.4),
                "total_price_cents": days * car["price_per_day_cents"],
            }
            rentals.append(earlier_booking(row, rng, clock, days_ago=(5, 40)))
        insert_rows(db, "mtu_cars_rentals", rentals)
        set_counter(db, "RNT", len(rentals))

    # ---- helpers -------------------------------------------------------------------------------
    def _period(self, start: str, end: str) -> tuple[date, date]:
        today = self.now().date()
        first = parse_day("start_date", start, today)
        last = parse_day("end_date", end, first)
        if first < today:
            raise unprocessable(f"pick-up date {first.isoformat()} is in the past")
        if last <= first:
            raise bad_request("the drop-off date must be after the pick-up date")
        return first, last

    def _available(self, where_sql: str, params: list[Any], first: date, last: date) -> list[dict[str, Any]]:
        return self.rows(
            f"SELECT * FROM mtu_cars_cars c WHERE {where_sql} AND NOT EXISTS ("
            " SELECT 1 FROM mtu_cars_rentals r WHERE r.car_id = c.car_id AND r.status = 'confirmed'"
            " AND r.start_date < ? AND r.end_date > ?)"
            " ORDER BY c.price_per_day_cents, c.car_id",
            [*params, last.isoformat(), first.isoformat()],
        )

    @staticmethod
    def _view(
        c: dict[str, Any], first: date, last: date, pickup_time: str, insurance: bool
    ) -> dict[str, Any]:
        days = (last - first).days
        total = days * (int(c["price_per_day_cents"]) + (INSURANCE_CENTS_PER_DAY if insurance else 0))
        return {
            "car_name": c["car_name"],
            "car_type": c["car_type"],
            "type": c["car_type"],
            "pickup_location": c["pickup_location"],
            "city": c["city"],
            "pickup_city": c["city"],
            "start_date": first.isoformat(),
            "pickup_date": first.isoformat(),
            "end_date": last.isoformat(),
            "dropoff_date": last.isoformat(),
            "pickup_time": pickup_time,
            "price_per_day": from_cents(c["price_per_day_cents"]),
            "add_insurance": insurance,
            "total_price": from_cents(total),
        }

    # ---- APIs --------------------------------------------------------------------------------------
    @read(name="GetCarsAvailable")
    def get_cars_available(
        self,
        pickup_time: Annotated[str, Param("pick-up time, HH:MM")],
        city: Annotated[str | None, Param("city (or pickup_city)")] = None,
        start_date: Annotated[str | None, Param("pick-up date, YYYY-MM-DD (or pickup_date)")] = None,
        end_date: Annotated[str | None, Param("drop-off date, YYYY-MM-DD (or dropoff_date)")] = None,
        pickup_city: Annotated[str | None, Param("city")] = None,
        pickup_date: Annotated[str | None, Param("pick-up date, YYYY-MM-DD")] = None,
        dropoff_date: Annotated[str | None, Param("drop-off date, YYYY-MM-DD")] = None,
        car_type: Annotated[str, Param("Hatchback, Sedan, SUV, ... or dontcare")] = DONTCARE,
        type: Annotated[str, Param("Compact, Standard, Full-size, ...")] = "Standard",
    ) -> dict[str, Any]:
        """Discover cars available for rent in a city for a period; cheapest first."""
        _, where = one_of({"city": city, "pickup_city": pickup_city}, "GetCarsAvailable city")
        _, start = one_of({"start_date": start_date, "pickup_date": pickup_date}, "pick-up date")
        _, end = one_of({"end_date": end_date, "dropoff_date": dropoff_date}, "drop-off date")
        first, last = self._period(str(start), str(end))
        at = parse_clock("pickup_time", pickup_time)
        town = require_city("city", str(where))
        sql, params = "c.city = ?", [town]
        # the pickup_city variant filters by `type` (default Standard); the city variant by car_type
        wanted = car_type if canon(car_type) != DONTCARE else (type if pickup_city is not None else DONTCARE)
        if canon(wanted) != DONTCARE:
            sql += " AND c.car_type = ?"
            params.append(choice("car_type", wanted, CAR_TYPES))
        cars = [self._view(c, first, last, at, False) for c in self._available(sql, params, first, last)]
        return ok(count=len(cars), cars=cars[:10])

    @write(name="ReserveCar")
    def reserve_car(
        self,
        pickup_location: Annotated[str, Param("pick-up location (e.g. 'Seattle Downtown') or a city")],
        pickup_time: Annotated[str, Param("pick-up time, HH:MM")],
        pickup_date: Annotated[str | None, Param("pick-up date, YYYY-MM-DD (or start_date)")] = None,
        dropoff_date: Annotated[str | None, Param("drop-off date, YYYY-MM-DD (or end_date)")] = None,
        type: Annotated[str | None, Param("car type (or car_type)")] = None,
        start_date: Annotated[str | None, Param("pick-up date, YYYY-MM-DD")] = None,
        end_date: Annotated[str | None, Param("drop-off date, YYYY-MM-DD")] = None,
        car_type: Annotated[str | None, Param("car type")] = None,
        add_insurance: Annotated[Flag, Param("True to add insurance")] = "False",
    ) -> dict[str, Any]:
        """Reserve a rental car for given dates and location: the cheapest available of the type."""
        _, start = one_of({"pickup_date": pickup_date, "start_date": start_date}, "pick-up date")
        _, end = one_of({"dropoff_date": dropoff_date, "end_date": end_date}, "drop-off date")
        _, kind = one_of({"type": type, "car_type": car_type}, "car type")
        first, last = self._period(str(start), str(end))
        at = parse_clock("pickup_time", pickup_time)
        insurance = bool(flag("add_insurance", add_insurance))
        wanted = choice("car_type", str(kind), CAR_TYPES)
        town = city_name(pickup_location)
        if town is not None:
            sql, params = "c.city = ? AND c.car_type = ?", [town, wanted]
        else:
            sql, params = "lower(c.pickup_location) = ? AND c.car_type = ?", [canon(pickup_location), wanted]
            if (
                self.scalar("SELECT count(*) FROM mtu_cars_cars WHERE lower(pickup_location) = ?", params[:1])
                == 0
            ):
                raise not_found("pick-up location", pickup_location)
        cars = self._available(sql, params, first, last)
        if not cars:
            raise conflict(f"no {wanted} is free at {pickup_location} from {first} to {last}")
        car = cars[0]
        view = self._view(car, first, last, at, insurance)
        rental_id = self.next_id("RNT")
        self.execute(
            "INSERT INTO mtu_cars_rentals VALUES (?, ?, ?, ?, ?, ?, ?, 'confirmed', ?)",
            (
                rental_id,
                car["car_id"],
                first.isoformat(),
                last.isoformat(),
                at,
                int(insurance),
                round(view["total_price"] * 100),
                self.now_iso(),
            ),
        )
        return ok(rental_id=rental_id, **view)


finalize_tools(CarsApp)
