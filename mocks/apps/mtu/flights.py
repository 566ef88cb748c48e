"""MTU flights: SearchOnewayFlight, SearchRoundtripFlights, ReserveOnewayFlight,
ReserveRoundtripFlights (SGD) and SearchFlights (ATIS).

A timetable of daily flights between airports; each flight-date has a fixed number of seats per
cabin class, minus what bookings already took. Fares depend on distance, cabin, stops and how far
ahead the date is, so they are stable for a date and rise close to departure. Booking a full cabin
is a 409; dates in the past are a 422.
"""

from __future__ import annotations

import math
import random
import re
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Query, Volatile, format_id, read, set_counter, write
from toolgym.mocks.apps.mtu._common import (
    CITY_BY_NAME,
    DONTCARE,
    Count,
    Flag,
    canon,
    choice,
    city_name,
    clock_of,
    count,
    earlier_booking,
    finalize_tools,
    flag,
    minutes,
    one_of,
    parse_clock,
    parse_day,
    time_window,
    upcoming_day,
)
from toolgym.mocks.responses import bad_request, conflict, from_cents, not_found, ok
from toolgym.mocks.seeding import insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

# city, IATA code, airport name
AIRPORTS: Final = (
    ("San Francisco", "SFO", "San Francisco International Airport"),
    ("New York", "JFK", "John F. Kennedy International Airport"),
    ("New York", "LGA", "LaGuardia Airport"),
    ("Los Angeles", "LAX", "Los Angeles International Airport"),
    ("Seattle", "SEA", "Seattle-Tacoma International Airport"),
    ("Chicago", "ORD", "O'Hare International Airport"),
    ("Atlanta", "ATL", "Hartsfield-Jackson Atlanta International Airport"),
    ("Boston", "BOS", "Logan International Airport"),
    ("Washington", "IAD", "Washington Dulles International Airport"),
    ("Philadelphia", "PHL", "Philadelphia International Airport"),
    ("San Diego", "SAN", "San Diego International Airport"),
    ("Portland", "PDX", "Portland International Airport"),
    ("Las Vegas", "LAS", "Harry Reid International Airport"),
    ("Denver", "DEN", "Denver International Airport"),
    ("Phoenix", "PHX", "Phoenix Sky Harbor International Airport"),
    ("Vancouver", "YVR", "Vancouver International Airport"),
    ("Toronto", "YYZ", "Toronto Pearson International Airport"),
    ("London", "LHR", "Heathrow Airport"),
    ("Paris", "CDG", "Charles de Gaulle Airport"),
    ("Sydney", "SYD", "Sydney Kingsford Smith Airport"),
    ("Mexico City", "MEX", "Mexico City International Airport"),
    ("New Delhi", "DEL", "Indira Gandhi International Airport"),
)
DOMESTIC_AIRLINES: Final = (
    "American Airlines",
    "Delta Airlines",
    "United Airlines",
    "Southwest Airlines",
    "Alaska Airlines",
    "JetBlue Airways",
)
INTERNATIONAL_AIRLINES: Final = (
    "American Airlines",
    "Delta Airlines",
    "United Airlines",
    "Air Canada",
    "British Airways",
    "Air France",
    "Qantas Airways",
)
CLASSES: Final = ("Economy", "Premium Economy", "Business", "First Class")
CLASS_SYNONYMS: Final = {"first": "First Class", "business class": "Business", "economy class": "Economy"}
SEATS: Final = {"Economy": 120, "Premium Economy": 24, "Business": 16, "First Class": 8}
CLASS_FACTOR: Final = {"Economy": 1.0, "Premium Economy": 1.6, "Business": 3.2, "First Class": 5.0}
BAG_FEE_CENTS: Final = 3500


def _km(a: str, b: str) -> float:
    ca, cb = CITY_BY_NAME[a.lower()], CITY_BY_NAME[b.lower()]
    la, lb = math.radians(ca.lat), math.radians(cb.lat)
    dlon = math.radians(cb.lon - ca.lon)
    cos = math.sin(la) * math.sin(lb) + math.cos(la) * math.cos(lb) * math.cos(dlon)
    return 6371 * math.acos(max(-1.0, min(1.0, cos)))


class FlightsApp(App):
    name = "mtu_flights"
    description = "Flight search and booking (MTU-Bench flight APIs)."
    version = "1"
    schema = """
    CREATE TABLE mtu_flights_airports (
        code TEXT PRIMARY KEY,
        city TEXT NOT NULL,
        airport_name TEXT NOT NULL
    );
    CREATE TABLE mtu_flights_schedules (
        flight_number TEXT PRIMARY KEY,
        airlines TEXT NOT NULL,
        origin_airport TEXT NOT NULL REFERENCES mtu_flights_airports(code),
        destination_airport TEXT NOT NULL REFERENCES mtu_flights_airports(code),
        departure_time TEXT NOT NULL,
        duration_minutes INTEGER NOT NULL,
        number_stops INTEGER NOT NULL,
        base_fare_cents INTEGER NOT NULL,
        refundable INTEGER NOT NULL
    );
    CREATE INDEX mtu_flights_route ON mtu_flights_schedules(origin_airport, destination_airport);
    CREATE TABLE mtu_flights_bookings (
        booking_id TEXT PRIMARY KEY,
        trip_id TEXT NOT NULL,
        flight_number TEXT NOT NULL REFERENCES mtu_flights_schedules(flight_number),
        departure_date TEXT NOT NULL,
        seating_class TEXT NOT NULL,
        passengers INTEGER NOT NULL CHECK (passengers > 0),
        number_checked_bags INTEGER NOT NULL DEFAULT 0,
        total_price_cents INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('confirmed', 'cancelled')),
        created_at TEXT NOT NULL
    );
    CREATE INDEX mtu_flights_bookings_flight ON mtu_flights_bookings(flight_number, departure_date);
    """
    volatile: ClassVar[Volatile] = {"mtu_flights_bookings": ["created_at"]}

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        insert_rows(
            db,
            "mtu_flights_airports",
            [{"code": code, "city": city, "airport_name": name} for city, code, name in AIRPORTS],
        )
        schedules: list[dict[str, Any]] = []
        numbers: set[str] = set()
        for o_city, o_code, _ in AIRPORTS:
            for d_city, d_code, _ in AIRPORTS:
                if o_city == d_city:
                    continue
                km = _km(o_city, d_city)
                domestic = CITY_BY_NAME[o_city.lower()].country == CITY_BY_NAME[d_city.lower()].country
                pool = DOMESTIC_AIRLINES if domestic else INTERNATIONAL_AIRLINES
                for airline in rng.sample(pool, rng.randint(1, 3)):
                    stops = 0 if km < 1500 or rng.random() < 0.6 else 1
                    flight_no = f"{''.join(w[0] for w in airline.split()[:2])}{rng.randint(100, 9999)}"
                    while flight_no in numbers:
                        flight_no = f"{flight_no[:2]}{rng.randint(100, 9999)}"
                    numbers.add(flight_no)
                    fare = int((60 + 0.11 * km) * (0.8 if stops else 1.0) * rng.uniform(0.85, 1.2)) * 100
                    schedules.append(
                        {
                            "flight_number": flight_no,
                            "airlines": airline,
                            "origin_airport": o_code,
                            "destination_airport": d_code,
                            "departure_time": f"{rng.randint(6, 22):02d}:{rng.choice((0, 15, 30, 45)):02d}",
                            "duration_minutes": int(km / 13) + 40 + stops * 95,
                            "number_stops": stops,
                            "base_fare_cents": fare,
                            "refundable": int(rng.random() < 0.35),
                        }
                    )
        insert_rows(db, "mtu_flights_schedules", schedules)
        # other travellers' bookings for the next month; some economy cabins sell out
        bookings = []
        today = clock.date()
        for i in range(1, 501):
            s = rng.choice(schedules)
            cabin = rng.choices(CLASSES, weights=(8, 2, 1, 1))[0]
            party = rng.randint(1, 4) if rng.random() < 0.9 else SEATS[cabin]
            row = {
                "booking_id": format_id("FB", i),
                "trip_id": format_id("TRIP", i),
                "flight_number": s["flight_number"],
                "departure_date": (today + timedelta(days=rng.randint(0, 30))).isoformat(),
                "seating_class": cabin,
                "passengers": party,
                "number_checked_bags": 0,
                "total_price_cents": party * s["base_fare_cents"],
            }
            bookings.append(earlier_booking(row, rng, clock, days_ago=(1, 60)))
        insert_rows(db, "mtu_flights_bookings", bookings)
        set_counter(db, "FB", len(bookings))
        set_counter(db, "TRIP", len(bookings))

    # ---- helpers ---------------------------------------------------------------------------
    def _airports(self, param: str, value: str) -> list[str]:
        """Airport codes for a city ("NYC"), a code ("JFK") or an airport's name."""
        city = city_name(value)
        if city is not None:
            rows = self.rows("SELECT code FROM mtu_flights_airports WHERE city = ? ORDER BY code", (city,))
        else:
            key = canon(value)
            rows = [
                r
                for r in self.rows("SELECT code, airport_name FROM mtu_flights_airports ORDER BY code")
                if key == r["code"].lower()
                or (len(key) >= 3 and re.search(rf"\b{re.escape(key)}\b", r["airport_name"].lower()))
            ]
        if not rows:
            raise not_found("airport or city", value)
        return [r["code"] for r in rows]

    def _fare(self, flight: dict[str, Any], day: date, cabin: str) -> int:
        """Per-passenger fare in cents: late and weekend departures cost more."""
        ahead = (day - self.now().date()).days
        factor = CLASS_FACTOR[cabin] * (1.3 if ahead < 7 else 1.1 if ahead < 21 else 1.0)
        if day.weekday() in (4, 6):
            factor *= 1.1
        base: int = flight["base_fare_cents"]
        return round(base * factor / 100) * 100

    def _seats_left(self, flight_number: str, day: date, cabin: str) -> int:
        taken = self.scalar(
            "SELECT coalesce(sum(passengers), 0) FROM mtu_flights_bookings WHERE flight_number = ?"
            " AND departure_date = ? AND seating_class = ? AND status = 'confirmed'",
            (flight_number, day.isoformat(), cabin),
        )
        return SEATS[cabin] - int(taken)

    def _legs(
        self, origins: list[str], destinations: list[str], airline: str | None, refundable: bool | None
    ) -> list[dict[str, Any]]:
        query = Query(
            "SELECT s.*, o.city AS origin_city, o.airport_name AS origin_airport_name,"
            " d.city AS destination_city, d.airport_name AS destination_airport_name"
            " FROM mtu_flights_schedules s JOIN mtu_flights_airports o ON o.code = s.origin_airport"
            " JOIN mtu_flights_airports d ON d.code = s.destination_airport WHERE 1"
        )
        query.where_in("s.origin_airport", origins).where_in("s.destination_airport", destinations)
        if airline is not None:
            query.where("lower(s.airlines) = ?", canon(airline))
        return query.flags({"s.refundable": refundable}).rows(self, "s.departure_time, s.flight_number")

    def _leg_view(self, f: dict[str, Any], day: date, cabin: str, party: int, bags: int) -> dict[str, Any]:
        dep = minutes(f["departure_time"])
        arr = dep + f["duration_minutes"]
        fare = self._fare(f, day, cabin)
        return {
            "flight_number": f["flight_number"],
            "airlines": f["airlines"],
            "origin_city": f["origin_city"],
            "origin_airport": f["origin_airport"],
            "origin_airport_name": f["origin_airport_name"],
            "destination_city": f["destination_city"],
            "destination_airport": f["destination_airport"],
            "destination_airport_name": f["destination_airport_name"],
            "departure_date": day.isoformat(),
            "departure_time": f["departure_time"],
            "arrival_time": clock_of(arr),
            "arrives_next_day": arr >= 24 * 60,
            "number_stops": f["number_stops"],
            "is_nonstop": f["number_stops"] == 0,
            "refundable": bool(f["refundable"]),
            "seating_class": cabin,
            "price_per_ticket": from_cents(fare),
            "price": from_cents((fare + bags * BAG_FEE_CENTS) * party),
            "seats_left": self._seats_left(f["flight_number"], day, cabin),
        }

    def _round_trip_days(self, departure_date: str, return_date: str) -> tuple[date, date]:
        """The outbound and return days of a round trip: neither in the past, in that order."""
        out_day = upcoming_day("departure_date", departure_date, self.now().date())
        back_day = upcoming_day("return_date", return_date, self.now().date())
        if back_day < out_day:
            raise bad_request("return_date is before departure_date")
        return out_day, back_day

    @staticmethod
    def _cabin(seating_class: str, flight_class: str) -> str:
        # two MTU variants name the cabin differently; a non-default value wins
        value = seating_class if canon(seating_class) != "economy" else flight_class
        return choice("seating_class", value, CLASSES, CLASS_SYNONYMS)

    def _search(
        self,
        origin: str,
        destination: str,
        day: date,
        airlines: str,
        refundable: Flag,
        cabin: str,
        party: int,
        bags: int,
    ) -> list[dict[str, Any]]:
        airline = None if canon(airlines) == DONTCARE else airlines
        legs = self._legs(
            self._airports("origin", origin),
            self._airports("destination", destination),
            airline,
            flag("refundable", refundable),
        )
        views = [self._leg_view(f, day, cabin, party, bags) for f in legs]
        return [v for v in views if v["seats_left"] >= party]

    def _book(
        self, legs: list[tuple[dict[str, Any], date]], cabin: str, party: int, bags: int
    ) -> dict[str, Any]:
        trip_id = self.next_id("TRIP")
        total = 0
        for f, day in legs:
            left = self._seats_left(f["flight_number"], day, cabin)
            if left < party:
                raise conflict(
                    f"{f['flight_number']} on {day.isoformat()} has {left} {cabin} seats left, {party} needed"
                )
            price = (self._fare(f, day, cabin) + bags * BAG_FEE_CENTS) * party
            total += price
            self.execute(
                "INSERT INTO mtu_flights_bookings VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'confirmed', ?)",
                (
                    self.next_id("FB"),
                    trip_id,
                    f["flight_number"],
                    day.isoformat(),
                    cabin,
                    party,
                    bags,
                    price,
                    self.now_iso(),
                ),
            )
        return {"booking_id": trip_id, "total_price": from_cents(total)}

    def _sgd_query(
        self,
        origin_city: str | None,
        origin_airport: str | None,
        destination_city: str | None,
        destination_airport: str | None,
        passengers: Count,
        number_of_tickets: Count,
        number_checked_bags: Count,
        seating_class: str,
        flight_class: str,
    ) -> tuple[str, str, int, int, str]:
        """The search arguments both SGD flight searches share: endpoints given as city or
        airport, the party (passengers or tickets), bags and cabin, checked."""
        _, origin = one_of({"origin_city": origin_city, "origin_airport": origin_airport}, "origin")
        _, dest = one_of(
            {"destination_city": destination_city, "destination_airport": destination_airport}, "destination"
        )
        party = max(
            count("passengers", passengers, hi=9), count("number_of_tickets", number_of_tickets, hi=9)
        )
        bags = count("number_checked_bags", number_checked_bags, lo=0, hi=3)
        return str(origin), str(dest), party, bags, self._cabin(seating_class, flight_class)

    # ---- SGD search --------------------------------------------------------------------------
    @read(name="SearchOnewayFlight")
    def search_oneway_flight(
        self,
        departure_date: Annotated[str, Param("date of the flight, YYYY-MM-DD")],
        origin_city: Annotated[str | None, Param("city to fly from (or origin_airport)")] = None,
        destination_city: Annotated[str | None, Param("city to fly to (or destination_airport)")] = None,
        origin_airport: Annotated[str | None, Param("airport to fly from: code, name or city")] = None,
        destination_airport: Annotated[str | None, Param("airport to fly to: code, name or city")] = None,
        airlines: Annotated[str, Param("airline, or dontcare")] = DONTCARE,
        refundable: Annotated[Flag, Param("True, False or dontcare")] = DONTCARE,
        passengers: Annotated[Count, Param("number of passengers")] = "1",
        seating_class: Annotated[str, Param("cabin", enum=CLASSES)] = "Economy",
        number_of_tickets: Annotated[Count, Param("number of tickets, same as passengers")] = "1",
        flight_class: Annotated[str, Param("cabin, same as seating_class", enum=CLASSES)] = "Economy",
        number_checked_bags: Annotated[Count, Param("checked bags per passenger")] = "0",
    ) -> dict[str, Any]:
        """Search for one-way flights to a destination; cheapest first."""
        origin, dest, party, bags, cabin = self._sgd_query(
            origin_city,
            origin_airport,
            destination_city,
            destination_airport,
            passengers,
            number_of_tickets,
            number_checked_bags,
            seating_class,
            flight_class,
        )
        day = upcoming_day("departure_date", departure_date, self.now().date())
        found = self._search(origin, dest, day, airlines, refundable, cabin, party, bags)
        found.sort(key=lambda v: (v["price"], v["departure_time"]))
        for v in found:
            v.update(
                outbound_departure_time=v["departure_time"],
                outbound_arrival_time=v["arrival_time"],
                passengers=party,
                number_of_tickets=party,
                flight_class=cabin,
                number_checked_bags=bags,
            )
        return ok(count=len(found), flights=found[:10])

    @read(name="SearchRoundtripFlights")
    def search_roundtrip_flights(
        self,
        departure_date: Annotated[str, Param("date of the outbound flight, YYYY-MM-DD")],
        return_date: Annotated[str, Param("date of the return flight, YYYY-MM-DD")],
        origin_city: Annotated[str | None, Param("city to fly from (or origin_airport)")] = None,
        destination_city: Annotated[str | None, Param("city to fly to (or destination_airport)")] = None,
        origin_airport: Annotated[str | None, Param("airport to fly from: code, name or city")] = None,
        destination_airport: Annotated[str | None, Param("airport to fly to: code, name or city")] = None,
        airlines: Annotated[str, Param("airline, or dontcare")] = DONTCARE,
        refundable: Annotated[Flag, Param("True, False or dontcare")] = DONTCARE,
        passengers: Annotated[Count, Param("number of passengers")] = "1",
        seating_class: Annotated[str, Param("cabin", enum=CLASSES)] = "Economy",
        number_of_tickets: Annotated[Count, Param("number of tickets, same as passengers")] = "1",
        flight_class: Annotated[str, Param("cabin, same as seating_class", enum=CLASSES)] = "Economy",
        number_checked_bags: Annotated[Count, Param("checked bags per passenger")] = "0",
    ) -> dict[str, Any]:
        """Search for round-trip flights (both legs on one airline); cheapest first."""
        origin, dest, party, bags, cabin = self._sgd_query(
            origin_city,
            origin_airport,
            destination_city,
            destination_airport,
            passengers,
            number_of_tickets,
            number_checked_bags,
            seating_class,
            flight_class,
        )
        out_day, back_day = self._round_trip_days(departure_date, return_date)
        outs = self._search(origin, dest, out_day, airlines, refundable, cabin, party, bags)
        backs = self._search(dest, origin, back_day, airlines, refundable, cabin, party, bags)
        trips = []
        for o in outs:
            for b in backs:
                if o["airlines"] != b["airlines"]:
                    continue
                trips.append(
                    {
                        "airlines": o["airlines"],
                        "origin_city": o["origin_city"],
                        "destination_city": o["destination_city"],
                        "origin_airport": o["origin_airport"],
                        "origin_airport_name": o["origin_airport_name"],
                        "destination_airport": o["destination_airport"],
                        "destination_airport_name": o["destination_airport_name"],
                        "departure_date": out_day.isoformat(),
                        "return_date": back_day.isoformat(),
                        "outbound_flight_number": o["flight_number"],
                        "outbound_departure_time": o["departure_time"],
                        "outbound_arrival_time": o["arrival_time"],
                        "inbound_flight_number": b["flight_number"],
                        "inbound_departure_time": b["departure_time"],
                        "inbound_arrival_time": b["arrival_time"],
                        "arrives_next_day": o["arrives_next_day"],
                        "number_stops": o["number_stops"] + b["number_stops"],
                        "is_nonstop": o["is_nonstop"] and b["is_nonstop"],
                        "refundable": o["refundable"] and b["refundable"],
                        "seating_class": cabin,
                        "flight_class": cabin,
                        "passengers": party,
                        "number_of_tickets": party,
                        "number_checked_bags": bags,
                        "price": round(o["price"] + b["price"], 2),
                    }
                )
        trips.sort(key=lambda t: (t["price"], t["outbound_departure_time"]))
        return ok(count=len(trips), flights=trips[:10])

    # ---- SGD booking -----------------------------------------------------------------------------
    @write(name="ReserveOnewayFlight")
    def reserve_oneway_flight(
        self,
        origin_city: Annotated[str, Param("city to fly from")],
        destination_city: Annotated[str, Param("city to fly to")],
        airlines: Annotated[str, Param("airline")],
        departure_date: Annotated[str, Param("date of the flight, YYYY-MM-DD")],
        refundable: Annotated[Flag, Param("True, False or dontcare")] = DONTCARE,
        passengers: Annotated[Count, Param("number of passengers")] = "1",
        seating_class: Annotated[str, Param("cabin", enum=CLASSES)] = "Economy",
    ) -> dict[str, Any]:
        """Reserve a one-way flight: the cheapest flight of that airline on that day with room."""
        party = count("passengers", passengers, hi=9)
        cabin = choice("seating_class", seating_class, CLASSES, CLASS_SYNONYMS)
        day = upcoming_day("departure_date", departure_date, self.now().date())
        legs = self._legs(
            self._airports("origin_city", origin_city),
            self._airports("destination_city", destination_city),
            airlines,
            flag("refundable", refundable),
        )
        if not legs:
            raise not_found("flight", f"{airlines} {origin_city} -> {destination_city}")
        legs.sort(key=lambda f: (self._fare(f, day, cabin), f["departure_time"]))
        roomy = [f for f in legs if self._seats_left(f["flight_number"], day, cabin) >= party]
        chosen = roomy[0] if roomy else legs[0]  # a full flight books into the 409 below
        booking = self._book([(chosen, day)], cabin, party, 0)
        view = self._leg_view(chosen, day, cabin, party, 0)
        return ok(
            **booking,
            **{k: view[k] for k in ("airlines", "flight_number", "origin_city", "destination_city")},
            origin_airport=view["origin_airport"],
            destination_airport=view["destination_airport"],
            departure_date=day.isoformat(),
            outbound_departure_time=view["departure_time"],
            outbound_arrival_time=view["arrival_time"],
            number_stops=view["number_stops"],
            refundable=view["refundable"],
            passengers=party,
            seating_class=cabin,
            price=booking["total_price"],
        )

    @write(name="ReserveRoundtripFlights")
    def reserve_roundtrip_flights(
        self,
        origin_city: Annotated[str, Param("city to fly from")],
        destination_city: Annotated[str, Param("city to fly to")],
        airlines: Annotated[str, Param("airline")],
        departure_date: Annotated[str, Param("date of the outbound flight, YYYY-MM-DD")],
        return_date: Annotated[str, Param("date of the return flight, YYYY-MM-DD")],
        outbound_departure_time: Annotated[str, Param("departure time of the outbound flight, HH:MM")],
        inbound_departure_time: Annotated[str, Param("departure time of the return flight, HH:MM")],
        refundable: Annotated[Flag, Param("True, False or dontcare")] = DONTCARE,
        passengers: Annotated[Count, Param("number of passengers")] = "1",
        seating_class: Annotated[str, Param("cabin", enum=CLASSES)] = "Economy",
    ) -> dict[str, Any]:
        """Reserve a round-trip flight: the two flights leaving at the given times."""
        party = count("passengers", passengers, hi=9)
        cabin = choice("seating_class", seating_class, CLASSES, CLASS_SYNONYMS)
        out_day, back_day = self._round_trip_days(departure_date, return_date)
        wanted_refund = flag("refundable", refundable)
        origins = self._airports("origin_city", origin_city)
        dests = self._airports("destination_city", destination_city)
        chosen: list[tuple[dict[str, Any], date]] = []
        for frm, to, day, at, what in (
            (origins, dests, out_day, outbound_departure_time, "outbound"),
            (dests, origins, back_day, inbound_departure_time, "inbound"),
        ):
            clock_time = parse_clock(f"{what}_departure_time", at)
            legs = [
                f for f in self._legs(frm, to, airlines, wanted_refund) if f["departure_time"] == clock_time
            ]
            if not legs:
                raise not_found(f"{what} flight", f"{airlines} at {clock_time}")
            chosen.append((legs[0], day))
        booking = self._book(chosen, cabin, party, 0)
        out_view = self._leg_view(chosen[0][0], out_day, cabin, party, 0)
        back_view = self._leg_view(chosen[1][0], back_day, cabin, party, 0)
        return ok(
            **booking,
            airlines=out_view["airlines"],
            origin_city=out_view["origin_city"],
            destination_city=out_view["destination_city"],
            origin_airport=out_view["origin_airport"],
            destination_airport=out_view["destination_airport"],
            departure_date=out_day.isoformat(),
            return_date=back_day.isoformat(),
            outbound_departure_time=out_view["departure_time"],
            outbound_arrival_time=out_view["arrival_time"],
            inbound_departure_time=back_view["departure_time"],
            inbound_arrival_time=back_view["arrival_time"],
            number_stops=out_view["number_stops"] + back_view["number_stops"],
            refundable=out_view["refundable"] and back_view["refundable"],
            passengers=party,
            seating_class=cabin,
            price=booking["total_price"],
        )

    # ---- ATIS ------------------------------------------------------------------------------------
    @read(name="SearchFlights")
    def search_flights(
        self,
        toloc: Annotated[str, Param("city or airport to fly to")],
        fromloc: Annotated[str, Param("city or airport to fly from")],
        depart_date: Annotated[str | None, Param("departure date; default today")] = None,
        depart_time: Annotated[str | None, Param("departure time or window: 'morning', 'after 5 pm'")] = None,
        arrive_date: Annotated[str | None, Param("arrival date")] = None,
        arrive_time: Annotated[str | None, Param("arrival time or window: 'before 10 am'")] = None,
        airline_name: Annotated[str | None, Param("airline")] = None,
    ) -> dict[str, Any]:
        """Search flight information between two places; earliest departure first."""
        today = self.now().date()
        if depart_date is not None:
            day = parse_day("depart_date", depart_date, today)
        elif arrive_date is not None:
            day = parse_day("arrive_date", arrive_date, today)
        else:
            day = today
        legs = self._legs(
            self._airports("fromloc", fromloc), self._airports("toloc", toloc), airline_name, None
        )
        details = []
        for f in legs:
            v = self._leg_view(f, day, "Economy", 1, 0)
            if depart_time is not None:
                lo, hi = time_window("depart_time", depart_time)
                if not lo <= minutes(v["departure_time"]) <= hi:
                    continue
            if arrive_time is not None:
                lo, hi = time_window("arrive_time", arrive_time)
                if v["arrives_next_day"] or not lo <= minutes(v["arrival_time"]) <= hi:
                    continue
            details.append(
                {
                    k: v[k]
                    for k in (
                        "flight_number",
                        "airlines",
                        "origin_city",
                        "origin_airport",
                        "destination_city",
                        "destination_airport",
                        "departure_date",
                        "departure_time",
                        "arrival_time",
                        "number_stops",
                        "seating_class",
                        "price",
                        "seats_left",
                    )
                }
            )
        return ok(count=len(details), flight_details=details)


finalize_tools(FlightsApp)
