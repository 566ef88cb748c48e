"""MTU buses: FindBus and BuyBusTicket (three SGD variants that name origin, destination, date,
time and party size differently; any one spelling is accepted).

A daily timetable between nearby cities; every departure has 50 seats per date, minus the
tickets already sold. Fares depend on distance, fare type and luggage. A sold-out departure is a
409, a departure that does not exist a 404, a past date a 422.
"""

from __future__ import annotations

import math
import random
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Volatile, format_id, read, set_counter, write
from toolgym.mocks.apps.mtu._common import (
    CITY_BY_NAME,
    DONTCARE,
    Count,
    Flag,
    choice,
    city_name,
    count,
    earlier_booking,
    finalize_tools,
    flag,
    one_of,
    parse_clock,
    upcoming_day,
)
from toolgym.mocks.responses import conflict, from_cents, not_found, ok, unprocessable
from toolgym.mocks.seeding import insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

BUS_CITIES: Final = (
    "Sacramento",
    "San Francisco",
    "Oakland",
    "San Jose",
    "Fresno",
    "Los Angeles",
    "Anaheim",
    "San Diego",
    "Las Vegas",
    "Phoenix",
    "Portland",
    "Seattle",
    "Vancouver",
    "New York",
    "Philadelphia",
    "Washington",
    "Boston",
)
STATIONS: Final = {
    "San Francisco": "Salesforce Transit Center",
    "Los Angeles": "Union Station",
    "New York": "Port Authority Bus Terminal",
    "Washington": "Union Station",
    "Seattle": "King Street Station",
    "Vancouver": "Pacific Central Station",
}
FARE_TYPES: Final = ("Economy", "Economy extra", "Flexible")
FARE_FACTOR: Final = {"Economy": 1.0, "Economy extra": 1.25, "Flexible": 1.6}
CATEGORIES: Final = ("direct", "one-stop")
SEATS: Final = 50
LUGGAGE_FEE_CENTS: Final = 500


def _km(a: str, b: str) -> float:
    ca, cb = CITY_BY_NAME[a.lower()], CITY_BY_NAME[b.lower()]
    return math.hypot((ca.lat - cb.lat) * 111, (ca.lon - cb.lon) * 85)


class BusesApp(App):
    name = "mtu_buses"
    description = "Intercity bus search and tickets (MTU-Bench bus APIs)."
    version = "1"
    schema = """
    CREATE TABLE mtu_buses_departures (
        departure_id TEXT PRIMARY KEY,
        from_city TEXT NOT NULL,
        to_city TEXT NOT NULL,
        from_station TEXT NOT NULL,
        to_station TEXT NOT NULL,
        departure_time TEXT NOT NULL,
        duration_minutes INTEGER NOT NULL,
        transfers INTEGER NOT NULL,
        base_fare_cents INTEGER NOT NULL
    );
    CREATE INDEX mtu_buses_route ON mtu_buses_departures(from_city, to_city);
    CREATE TABLE mtu_buses_tickets (
        ticket_id TEXT PRIMARY KEY,
        departure_id TEXT NOT NULL REFERENCES mtu_buses_departures(departure_id),
        departure_date TEXT NOT NULL,
        num_passengers INTEGER NOT NULL CHECK (num_passengers > 0),
        fare_type TEXT NOT NULL,
        additional_luggage INTEGER NOT NULL,
        price_cents INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('confirmed', 'cancelled')),
        created_at TEXT NOT NULL
    );
    CREATE INDEX mtu_buses_tickets_departure ON mtu_buses_tickets(departure_id, departure_date);
    """
    volatile: ClassVar[Volatile] = {"mtu_buses_tickets": ["created_at"]}

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        departures: list[dict[str, Any]] = []
        for a in BUS_CITIES:
            for b in BUS_CITIES:
                km = _km(a, b)
                if a == b or km > 1300:
                    continue
                # one departure per route and time, so a time names a departure
                times = {
                    f"{rng.randint(5, 22):02d}:{rng.choice((0, 10, 20, 30, 40, 50)):02d}" for _ in range(5)
                }
                for at in sorted(times)[: rng.randint(2, 5)]:
                    transfers = 0 if km < 500 or rng.random() < 0.5 else 1
                    departures.append(
                        {
                            "departure_id": format_id("BUS", len(departures) + 1, 5),
                            "from_city": a,
                            "to_city": b,
                            "from_station": STATIONS.get(a, f"{a} Intercity Bus Station"),
                            "to_station": STATIONS.get(b, f"{b} Intercity Bus Station"),
                            "departure_time": at,
                            "duration_minutes": int(km * 0.75) + 20 + transfers * 45,
                            "transfers": transfers,
                            "base_fare_cents": int(8 + km * 0.08 * rng.uniform(0.8, 1.2)) * 100,
                        }
                    )
        insert_rows(db, "mtu_buses_departures", departures)
        tickets = []
        today = clock.date()
        for i in range(1, 701):
            d = rng.choice(departures)
            party = SEATS if rng.random() < 0.03 else rng.randint(1, 4)
            row = {
                "ticket_id": format_id("BT", i),
                "departure_id": d["departure_id"],
                "departure_date": (today + timedelta(days=rng.randint(0, 21))).isoformat(),
                "num_passengers": party,
                "fare_type": "Economy",
                "additional_luggage": 0,
                "price_cents": party * d["base_fare_cents"],
            }
            tickets.append(earlier_booking(row, rng, clock, days_ago=(1, 30)))
        insert_rows(db, "mtu_buses_tickets", tickets)
        set_counter(db, "BT", len(tickets))

    # ---- helpers -------------------------------------------------------------------------------
    def _seats_left(self, departure_id: str, day: date) -> int:
        sold = self.scalar(
            "SELECT coalesce(sum(num_passengers), 0) FROM mtu_buses_tickets"
            " WHERE departure_id = ? AND departure_date = ? AND status = 'confirmed'",
            (departure_id, day.isoformat()),
        )
        return SEATS - int(sold)

    @staticmethod
    def _city(param: str, value: str) -> str:
        found = city_name(value)
        if found is None or found not in BUS_CITIES:
            raise not_found("bus city", value)
        return found

    @staticmethod
    def _price(d: dict[str, Any], fare_type: str, party: int, luggage: bool) -> int:
        per_seat = int(d["base_fare_cents"] * FARE_FACTOR[fare_type] / 100) * 100
        return party * (per_seat + (LUGGAGE_FEE_CENTS if luggage else 0))

    def _view(
        self, d: dict[str, Any], day: date, party: int, fare_type: str, luggage: bool
    ) -> dict[str, Any]:
        price = from_cents(self._price(d, fare_type, party, luggage))
        return {
            "departure_id": d["departure_id"],
            "from_city": d["from_city"],
            "to_city": d["to_city"],
            "origin": d["from_city"],
            "destination": d["to_city"],
            "from_location": d["from_city"],
            "to_location": d["to_city"],
            "from_station": d["from_station"],
            "to_station": d["to_station"],
            "origin_station_name": d["from_station"],
            "destination_station_name": d["to_station"],
            "departure_date": day.isoformat(),
            "leaving_date": day.isoformat(),
            "departure_time": d["departure_time"],
            "leaving_time": d["departure_time"],
            "duration_minutes": d["duration_minutes"],
            "transfers": d["transfers"],
            "category": CATEGORIES[min(d["transfers"], 1)],
            "fare_type": fare_type,
            "price": price,
            "fare": price,
            "num_passengers": party,
            "travelers": party,
            "group_size": party,
            "additional_luggage": luggage,
            "seats_left": self._seats_left(d["departure_id"], day),
        }

    @staticmethod
    def _party(num_passengers: Count | None, travelers: Count | None, group_size: Count | None) -> int:
        # each variant defaults its own spelling to "1": the largest given count is the party
        return max(
            count(n, v, hi=SEATS)
            for n, v in (
                ("num_passengers", num_passengers),
                ("travelers", travelers),
                ("group_size", group_size),
            )
            if v is not None
        )

    # ---- APIs --------------------------------------------------------------------------------------
    @read(name="FindBus")
    def find_bus(
        self,
        from_city: Annotated[str | None, Param("city to leave from (or from_location, origin)")] = None,
        to_city: Annotated[str | None, Param("city to go to (or to_location, destination)")] = None,
        departure_date: Annotated[str | None, Param("date of travel, YYYY-MM-DD (or leaving_date)")] = None,
        from_location: Annotated[str | None, Param("city to leave from")] = None,
        to_location: Annotated[str | None, Param("city to go to")] = None,
        leaving_date: Annotated[str | None, Param("date of travel, YYYY-MM-DD")] = None,
        origin: Annotated[str | None, Param("city to leave from")] = None,
        destination: Annotated[str | None, Param("city to go to")] = None,
        num_passengers: Annotated[Count, Param("number of passengers")] = "1",
        category: Annotated[
            str, Param("direct, one-stop or dontcare", enum=(*CATEGORIES, DONTCARE))
        ] = "direct",
        travelers: Annotated[Count, Param("number of passengers")] = "1",
        fare_type: Annotated[str, Param("fare", enum=FARE_TYPES)] = "Economy",
        group_size: Annotated[Count, Param("number of passengers")] = "1",
    ) -> dict[str, Any]:
        """Search for a bus itinerary between two places on a certain date; earliest first."""
        _, frm = one_of(
            {"from_city": from_city, "from_location": from_location, "origin": origin}, "FindBus origin"
        )
        _, to = one_of(
            {"to_city": to_city, "to_location": to_location, "destination": destination},
            "FindBus destination",
        )
        _, when = one_of({"departure_date": departure_date, "leaving_date": leaving_date}, "FindBus date")
        day = upcoming_day("departure_date", str(when), self.now().date())
        party = self._party(num_passengers, travelers, group_size)
        rows = self.rows(
            "SELECT * FROM mtu_buses_departures WHERE from_city = ? AND to_city = ?"
            " ORDER BY departure_time, departure_id",
            (self._city("from_city", str(frm)), self._city("to_city", str(to))),
        )
        if category != DONTCARE:
            rows = [r for r in rows if CATEGORIES[min(r["transfers"], 1)] == category]
        views = [self._view(r, day, party, fare_type, False) for r in rows]
        views = [v for v in views if v["seats_left"] >= party]
        return ok(count=len(views), buses=views)

    @write(name="BuyBusTicket")
    def buy_bus_ticket(
        self,
        from_city: Annotated[str | None, Param("city to leave from (or from_location, origin)")] = None,
        to_city: Annotated[str | None, Param("city to go to (or to_location, destination)")] = None,
        departure_date: Annotated[str | None, Param("date of travel, YYYY-MM-DD (or leaving_date)")] = None,
        departure_time: Annotated[str | None, Param("departure time, HH:MM (or leaving_time)")] = None,
        num_passengers: Annotated[
            Count | None, Param("number of passengers (or travelers, group_size)")
        ] = None,
        from_location: Annotated[str | None, Param("city to leave from")] = None,
        to_location: Annotated[str | None, Param("city to go to")] = None,
        leaving_date: Annotated[str | None, Param("date of travel, YYYY-MM-DD")] = None,
        leaving_time: Annotated[str | None, Param("departure time, HH:MM")] = None,
        travelers: Annotated[Count | None, Param("number of passengers")] = None,
        origin: Annotated[str | None, Param("city to leave from")] = None,
        destination: Annotated[str | None, Param("city to go to")] = None,
        group_size: Annotated[Count | None, Param("number of passengers")] = None,
        additional_luggage: Annotated[Flag, Param("True to add a luggage fee per passenger")] = "False",
        fare_type: Annotated[str, Param("fare", enum=FARE_TYPES)] = "Economy",
    ) -> dict[str, Any]:
        """Purchase bus tickets for one departure."""
        _, frm = one_of({"from_city": from_city, "from_location": from_location, "origin": origin}, "origin")
        _, to = one_of(
            {"to_city": to_city, "to_location": to_location, "destination": destination}, "destination"
        )
        _, when = one_of({"departure_date": departure_date, "leaving_date": leaving_date}, "date")
        _, at = one_of({"departure_time": departure_time, "leaving_time": leaving_time}, "departure time")
        one_of(
            {"num_passengers": num_passengers, "travelers": travelers, "group_size": group_size}, "passengers"
        )
        party = self._party(num_passengers, travelers, group_size)
        day = upcoming_day("departure_date", str(when), self.now().date())
        clock_time = parse_clock("departure_time", str(at))
        luggage = bool(flag("additional_luggage", additional_luggage))
        fare = choice("fare_type", fare_type, FARE_TYPES)
        src, dst = self._city("from_city", str(frm)), self._city("to_city", str(to))
        d = self.row(
            "SELECT * FROM mtu_buses_departures WHERE from_city = ? AND to_city = ? AND departure_time = ?",
            (src, dst, clock_time),
        )
        if d is None:
            raise not_found("bus", f"{src} -> {dst} at {clock_time}")
        now = self.now()
        if day == now.date() and clock_time < f"{now.hour:02d}:{now.minute:02d}":
            raise unprocessable(f"the {clock_time} bus has already left today")
        left = self._seats_left(d["departure_id"], day)
        if left < party:
            raise conflict(f"the {clock_time} bus on {day.isoformat()} has {left} seats left, {party} needed")
        ticket_id = self.next_id("BT")
        price = self._price(d, fare, party, luggage)
        self.execute(
            "INSERT INTO mtu_buses_tickets VALUES (?, ?, ?, ?, ?, ?, ?, 'confirmed', ?)",
            (ticket_id, d["departure_id"], day.isoformat(), party, fare, int(luggage), price, self.now_iso()),
        )
        view = self._view(d, day, party, fare, luggage)
        view["seats_left"] = left - party
        return ok(ticket_id=ticket_id, **view)


finalize_tools(BusesApp)
