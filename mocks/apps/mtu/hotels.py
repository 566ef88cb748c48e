"""MTU hotels: SearchHotel / ReserveHotel (SGD, three variants), searchHotel / bookHotel
(MultiWOZ), SearchHouse / BookHouse (SGD holiday houses).

Each hotel has a number of rooms; a booking holds rooms for every night of the stay, and a stay
that finds any night without enough free rooms is a 409. A house is booked whole: overlapping
stays are a 409, and a party larger than the house sleeps is a 422.
"""

from __future__ import annotations

import math
import random
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Query, Volatile, format_id, read, set_counter, write
from toolgym.mocks.apps.mtu._common import (
    AREAS,
    CITIES,
    DONTCARE,
    Count,
    Flag,
    canon,
    choice,
    city_name,
    count,
    earlier_booking,
    finalize_tools,
    flag,
    one_of,
    parse_day,
    phone,
    select_fields,
    street_address,
    upcoming_day,
    where_area,
    words_in,
)
from toolgym.mocks.responses import bad_request, conflict, from_cents, not_found, ok, unprocessable
from toolgym.mocks.seeding import insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

BRANDS: Final = ("Hilton", "Marriott", "Hyatt Regency", "Holiday Inn", "Best Western", "Radisson", "Westin")
BOUTIQUE: Final = (
    ("The Grand", "The Royal", "Park", "Harbor", "Central", "The Ritz"),
    ("Hotel", "Inn", "Suites"),
)
GUESTHOUSES: Final = (
    ("Hamilton", "Bridge", "Acorn", "Archway", "Avalon", "Carolina", "Finches", "Limehouse", "Warkworth"),
    ("Lodge", "Guest House", "Bed and Breakfast", "House"),
)
MULTIWOZ_PRICES: Final = ("cheap", "moderate", "expensive")
HOTEL_TYPES: Final = ("hotel", "guesthouse")
MAX_STAY: Final = 30


def _price_label(cents: int) -> str:
    return "cheap" if cents < 9000 else "moderate" if cents < 18000 else "expensive"


class HotelsApp(App):
    name = "mtu_hotels"
    description = "Hotel and holiday-house search and booking (MTU-Bench hotel APIs)."
    version = "1"
    schema = """
    CREATE TABLE mtu_hotels_hotels (
        hotel_id TEXT PRIMARY KEY,
        hotel_name TEXT NOT NULL,
        city TEXT NOT NULL,
        area TEXT NOT NULL,
        type TEXT NOT NULL CHECK (type IN ('hotel', 'guesthouse')),
        star_rating INTEGER NOT NULL,
        average_rating REAL NOT NULL,
        price_per_night_cents INTEGER NOT NULL,
        smoking_allowed INTEGER NOT NULL,
        has_wifi INTEGER NOT NULL,
        pets_welcome INTEGER NOT NULL,
        parking INTEGER NOT NULL,
        street_address TEXT NOT NULL,
        postcode TEXT NOT NULL,
        phone_number TEXT NOT NULL,
        rooms INTEGER NOT NULL CHECK (rooms > 0)
    );
    CREATE INDEX mtu_hotels_hotels_city ON mtu_hotels_hotels(city);
    CREATE TABLE mtu_hotels_bookings (
        booking_id TEXT PRIMARY KEY,
        hotel_id TEXT NOT NULL REFERENCES mtu_hotels_hotels(hotel_id),
        check_in_date TEXT NOT NULL,
        check_out_date TEXT NOT NULL,
        number_of_rooms INTEGER NOT NULL CHECK (number_of_rooms > 0),
        people INTEGER,
        total_price_cents INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('confirmed', 'cancelled')),
        created_at TEXT NOT NULL,
        CHECK (check_out_date > check_in_date)
    );
    CREATE INDEX mtu_hotels_bookings_hotel ON mtu_hotels_bookings(hotel_id, check_in_date);
    CREATE TABLE mtu_hotels_houses (
        house_id TEXT PRIMARY KEY,
        where_to TEXT NOT NULL,
        address TEXT NOT NULL,
        rating REAL NOT NULL,
        max_adults INTEGER NOT NULL,
        has_laundry_service INTEGER NOT NULL,
        price_per_night_cents INTEGER NOT NULL,
        phone_number TEXT NOT NULL
    );
    CREATE TABLE mtu_hotels_house_bookings (
        booking_id TEXT PRIMARY KEY,
        house_id TEXT NOT NULL REFERENCES mtu_hotels_houses(house_id),
        check_in_date TEXT NOT NULL,
        check_out_date TEXT NOT NULL,
        number_of_adults INTEGER NOT NULL CHECK (number_of_adults > 0),
        total_price_cents INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('confirmed', 'cancelled')),
        created_at TEXT NOT NULL,
        CHECK (check_out_date > check_in_date)
    );
    """
    volatile: ClassVar[Volatile] = {
        "mtu_hotels_bookings": ["created_at"],
        "mtu_hotels_house_bookings": ["created_at"],
    }

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        hotels: list[dict[str, Any]] = []
        houses: list[dict[str, Any]] = []
        for city in CITIES:
            names: set[str] = set()
            for _ in range(24 if city.name == "Cambridge" else 12):
                guesthouse = city.name == "Cambridge" and rng.random() < 0.6
                if guesthouse:
                    name = f"{rng.choice(GUESTHOUSES[0])} {rng.choice(GUESTHOUSES[1])}"
                elif rng.random() < 0.5:
                    name = f"{rng.choice(BRANDS)} {city.name}"
                else:
                    name = f"{rng.choice(BOUTIQUE[0])} {rng.choice(BOUTIQUE[1])}"
                if name in names:
                    continue
                names.add(name)
                stars = rng.randint(0, 4) if guesthouse else rng.randint(2, 5)
                hotels.append(
                    {
                        "hotel_id": format_id("HTL", len(hotels) + 1, 4),
                        "hotel_name": name,
                        "city": city.name,
                        "area": rng.choice(AREAS),
                        "type": "guesthouse" if guesthouse else "hotel",
                        "star_rating": stars,
                        "average_rating": round(rng.uniform(3.0, 5.0), 1),
                        "price_per_night_cents": (40 + stars * 35 + rng.randint(0, 60)) * 100,
                        "smoking_allowed": int(rng.random() < 0.2),
                        "has_wifi": int(rng.random() < 0.85),
                        "pets_welcome": int(rng.random() < 0.3),
                        "parking": int(rng.random() < 0.6),
                        "street_address": street_address(rng),
                        "postcode": f"{rng.randint(10000, 99999)}",
                        "phone_number": phone(rng),
                        "rooms": rng.randint(4, 12) if guesthouse else rng.randint(20, 120),
                    }
                )
            for _ in range(8):
                houses.append(
                    {
                        "house_id": format_id("HSE", len(houses) + 1, 4),
                        "where_to": city.name,
                        "address": f"{street_address(rng)}, {city.name}",
                        "rating": round(rng.uniform(3.0, 5.0), 1),
                        "max_adults": rng.choice((2, 3, 4, 5, 6, 8)),
                        "has_laundry_service": int(rng.random() < 0.5),
                        "price_per_night_cents": rng.randint(8, 40) * 1000,
                        "phone_number": phone(rng),
                    }
                )
        insert_rows(db, "mtu_hotels_hotels", hotels)
        insert_rows(db, "mtu_hotels_houses", houses)
        today = clock.date()
        bookings = []
        for i in range(1, 601):
            h = rng.choice(hotels)
            start = today + timedelta(days=rng.randint(0, 40))
            nights = rng.randint(1, 5)
            # a few big group bookings fill small hotels for some nights
            n_rooms = h["rooms"] if rng.random() < 0.05 else rng.randint(1, 2)
            row = {
                "booking_id": format_id("HB", i),
                "hotel_id": h["hotel_id"],
                "check_in_date": start.isoformat(),
                "check_out_date": (start + timedelta(days=nights)).isoformat(),
                "number_of_rooms": n_rooms,
                "people": n_rooms * 2,
                "total_price_cents": n_rooms * nights * h["price_per_night_cents"],
            }
            bookings.append(earlier_booking(row, rng, clock, days_ago=(1, 60)))
        insert_rows(db, "mtu_hotels_bookings", bookings)
        house_bookings = []
        for i in range(1, 151):
            hs = rng.choice(houses)
            start = today + timedelta(days=rng.randint(0, 40))
            nights = rng.randint(2, 7)
            row = {
                "booking_id": format_id("HH", i),
                "house_id": hs["house_id"],
                "check_in_date": start.isoformat(),
                "check_out_date": (start + timedelta(days=nights)).isoformat(),
                "number_of_adults": min(2, hs["max_adults"]),
                "total_price_cents": nights * hs["price_per_night_cents"],
            }
            house_bookings.append(earlier_booking(row, rng, clock, days_ago=(1, 60)))
        # two stays of one house must not overlap: drop the later of any overlapping pair
        kept: list[dict[str, Any]] = []
        for b in sorted(house_bookings, key=lambda b: b["booking_id"]):
            if all(
                k["house_id"] != b["house_id"]
                or k["check_out_date"] <= b["check_in_date"]
                or b["check_out_date"] <= k["check_in_date"]
                for k in kept
            ):
                kept.append(b)
        insert_rows(db, "mtu_hotels_house_bookings", kept)
        set_counter(db, "HB", len(bookings))
        set_counter(db, "HH", len(house_bookings))

    # ---- helpers -------------------------------------------------------------------------------
    def _free_rooms(self, hotel: dict[str, Any], check_in: date, check_out: date) -> int:
        """The fewest free rooms over the nights of a stay."""
        rows = self.rows(
            "SELECT check_in_date, check_out_date, number_of_rooms FROM mtu_hotels_bookings"
            " WHERE hotel_id = ? AND status = 'confirmed' AND check_in_date < ? AND check_out_date > ?",
            (hotel["hotel_id"], check_out.isoformat(), check_in.isoformat()),
        )
        fewest = int(hotel["rooms"])
        night = check_in
        while night < check_out:
            iso = night.isoformat()
            taken = sum(r["number_of_rooms"] for r in rows if r["check_in_date"] <= iso < r["check_out_date"])
            fewest = min(fewest, int(hotel["rooms"]) - int(taken))
            night += timedelta(days=1)
        return fewest

    @staticmethod
    def _view(h: dict[str, Any]) -> dict[str, Any]:
        return {
            "hotel_name": h["hotel_name"],
            "place_name": h["hotel_name"],
            "location": h["city"],
            "destination": h["city"],
            "star_rating": h["star_rating"],
            "average_rating": h["average_rating"],
            "street_address": h["street_address"],
            "phone_number": h["phone_number"],
            "price_per_night": from_cents(h["price_per_night_cents"]),
            "smoking_allowed": bool(h["smoking_allowed"]),
            "has_wifi": bool(h["has_wifi"]),
            "pets_welcome": bool(h["pets_welcome"]),
        }

    @staticmethod
    def _multiwoz_view(h: dict[str, Any]) -> dict[str, Any]:
        return {
            "name": h["hotel_name"],
            "type": h["type"],
            "area": h["area"],
            "stars": h["star_rating"],
            "pricerange": _price_label(h["price_per_night_cents"]),
            "parking": "yes" if h["parking"] else "no",
            "internet": "yes" if h["has_wifi"] else "no",
            "address": h["street_address"],
            "postcode": h["postcode"],
            "phone": h["phone_number"],
            "city": h["city"],
        }

    def _hotel_by_name(self, name: str, city: str | None, town: str | None = None) -> dict[str, Any]:
        """The hotel with this name (in `city`); `town` breaks a tie between cities."""
        rows = self.rows(
            "SELECT * FROM mtu_hotels_hotels WHERE lower(hotel_name) = ? ORDER BY hotel_id", (canon(name),)
        )
        if city:
            rows = [r for r in rows if r["city"] == (city_name(city) or city)]
        elif len(rows) > 1 and town is not None:
            rows = [r for r in rows if r["city"] == town] or rows
        if not rows:
            raise not_found("hotel", name if not city else f"{name} in {city}")
        if len(rows) > 1:
            raise bad_request(
                f"{len(rows)} hotels are called {name!r}; give the city", cities=[r["city"] for r in rows]
            )
        return rows[0]

    def _stay(self, check_in: str, nights: int | None, check_out: str | None) -> tuple[date, date]:
        today = self.now().date()
        start = upcoming_day("check_in_date", check_in, today, called="check-in date")
        end = (
            parse_day("check_out_date", check_out, start)
            if check_out
            else start + timedelta(days=nights or 0)
        )
        if end <= start:
            raise bad_request("the stay must be at least one night (check-out after check-in)")
        if (end - start).days > MAX_STAY:
            raise bad_request(f"stays are limited to {MAX_STAY} nights")
        return start, end

    def _book_rooms(
        self, h: dict[str, Any], start: date, end: date, rooms: int, people: int | None
    ) -> dict[str, Any]:
        free = self._free_rooms(h, start, end)
        if rooms > free:
            raise conflict(
                f"{h['hotel_name']} has {max(free, 0)} rooms free from {start.isoformat()} to"
                f" {end.isoformat()}, {rooms} needed"
            )
        nights = (end - start).days
        total = rooms * nights * int(h["price_per_night_cents"])
        booking_id = self.next_id("HB")
        self.execute(
            "INSERT INTO mtu_hotels_bookings VALUES (?, ?, ?, ?, ?, ?, ?, 'confirmed', ?)",
            (
                booking_id,
                h["hotel_id"],
                start.isoformat(),
                end.isoformat(),
                rooms,
                people,
                total,
                self.now_iso(),
            ),
        )
        return {
            "booking_id": booking_id,
            "check_in_date": start.isoformat(),
            "check_out_date": end.isoformat(),
            "stay_length": nights,
            "number_of_days": nights,
            "number_of_rooms": rooms,
            "price": from_cents(total),
        }

    # ---- SGD hotels ------------------------------------------------------------------------------
    @read(name="SearchHotel")
    def search_hotel(
        self,
        location: Annotated[str | None, Param("city (or destination)")] = None,
        destination: Annotated[str | None, Param("city, same as location")] = None,
        smoking_allowed: Annotated[Flag, Param("True, False or dontcare")] = DONTCARE,
        star_rating: Annotated[str, Param("minimum stars 1-5, or dontcare")] = DONTCARE,
        number_of_rooms: Annotated[Count, Param("rooms needed tonight, or dontcare")] = DONTCARE,
        has_wifi: Annotated[Flag, Param("True, False or dontcare")] = DONTCARE,
        pets_welcome: Annotated[Flag, Param("True, False or dontcare")] = DONTCARE,
    ) -> dict[str, Any]:
        """Look for accommodation in a city; best rated first."""
        _, where = one_of({"location": location, "destination": destination}, "SearchHotel")
        query = Query("SELECT * FROM mtu_hotels_hotels WHERE city = ?", city_name(str(where)) or str(where))
        query.flags(
            smoking_allowed=flag("smoking_allowed", smoking_allowed),
            has_wifi=flag("has_wifi", has_wifi),
            pets_welcome=flag("pets_welcome", pets_welcome),
        )
        if canon(star_rating) != DONTCARE:
            query.where("star_rating >= ?", count("star_rating", star_rating, hi=5))
        rows = query.rows(self, "average_rating DESC, hotel_name, hotel_id")
        today = self.now().date()
        results = []
        for h in rows:
            free = self._free_rooms(h, today, today + timedelta(days=1))
            if canon(number_of_rooms) != DONTCARE and free < count("number_of_rooms", number_of_rooms, hi=20):
                continue
            results.append({**self._view(h), "rooms_available_tonight": free})
        return ok(count=len(results), hotels=results[:10])

    @write(name="ReserveHotel")
    def reserve_hotel(
        self,
        check_in_date: Annotated[str, Param("first night, YYYY-MM-DD")],
        place_name: Annotated[str | None, Param("hotel name (or hotel_name)")] = None,
        hotel_name: Annotated[str | None, Param("hotel name, same as place_name")] = None,
        location: Annotated[str | None, Param("city of the hotel (or destination)")] = None,
        destination: Annotated[str | None, Param("city of the hotel, same as location")] = None,
        stay_length: Annotated[
            Count | None, Param("number of nights (or number_of_days, check_out_date)")
        ] = None,
        number_of_days: Annotated[Count | None, Param("number of nights, same as stay_length")] = None,
        check_out_date: Annotated[str | None, Param("check-out day, YYYY-MM-DD")] = None,
        number_of_rooms: Annotated[Count, Param("rooms to book")] = "1",
    ) -> dict[str, Any]:
        """Reserve rooms at a selected hotel for given dates."""
        _, name = one_of({"place_name": place_name, "hotel_name": hotel_name}, "ReserveHotel")
        h = self._hotel_by_name(str(name), location or destination)
        _, length = one_of(
            {"stay_length": stay_length, "number_of_days": number_of_days, "check_out_date": check_out_date},
            "ReserveHotel: the length of the stay",
        )
        nights = None if check_out_date else count("stay_length", length, hi=MAX_STAY)
        start, end = self._stay(check_in_date, nights, check_out_date)
        rooms = count("number_of_rooms", number_of_rooms, hi=10)
        return ok(**self._view(h), **self._book_rooms(h, start, end, rooms, None))

    # ---- MultiWOZ hotels -------------------------------------------------------------------------
    @read(name="searchHotel")
    def search_hotel_multiwoz(
        self,
        stars: Annotated[str | None, Param("star rating 0-5")] = None,
        type: Annotated[str | None, Param("hotel or guesthouse")] = None,
        parking: Annotated[Flag | None, Param("free parking: True or False")] = None,
        internet: Annotated[Flag | None, Param("free internet: True or False")] = None,
        area: Annotated[str | None, Param("part of town (centre, north, ...) or a city")] = None,
        name: Annotated[str | None, Param("hotel name")] = None,
        priceRange: Annotated[str | None, Param("cheap, moderate or expensive")] = None,
        return_info: Annotated[tuple[str, ...], Param("fields to return: all, name, address, phone, ...")] = (
            "all",
        ),
    ) -> dict[str, Any]:
        """Search hotels by stars, type, parking, internet, area, name and price range."""
        query = Query("SELECT * FROM mtu_hotels_hotels WHERE 1")
        if area is not None:
            where_area(query, area)
        if stars is not None and canon(stars) != DONTCARE:
            query.where("star_rating = ?", count("stars", stars, lo=0, hi=5))
        if type is not None and canon(type) != DONTCARE:
            query.where("type = ?", choice("type", type.replace("guest house", "guesthouse"), HOTEL_TYPES))
        query.flags(parking=flag("parking", parking), has_wifi=flag("has_wifi", internet))
        rows = query.rows(self, "hotel_name, city, hotel_id")
        if priceRange is not None and canon(priceRange) != DONTCARE:
            label = choice("priceRange", priceRange, MULTIWOZ_PRICES)
            rows = [r for r in rows if _price_label(r["price_per_night_cents"]) == label]
        if name is not None:
            rows = [r for r in rows if words_in(name, r["hotel_name"])]
        found = [select_fields(self._multiwoz_view(r), return_info) for r in rows]
        return ok(count=len(found), hotels=found[:10])

    @write(name="bookHotel")
    def book_hotel_multiwoz(
        self,
        day: Annotated[str | None, Param("day of arrival (YYYY-MM-DD or a weekday)")] = None,
        name: Annotated[str | None, Param("hotel name")] = None,
        stay: Annotated[Count | None, Param("number of nights")] = None,
        people: Annotated[Count | None, Param("number of guests (two per room)")] = None,
        return_info: Annotated[tuple[str, ...], Param("fields to return: all, reference, ...")] = ("all",),
    ) -> dict[str, Any]:
        """Book a hotel by arrival day, name, nights and guests."""
        missing = [
            p for p, v in (("day", day), ("name", name), ("stay", stay), ("people", people)) if v is None
        ]
        if missing:
            raise bad_request(f"bookHotel needs {missing}", missing=missing)
        assert day is not None and name is not None
        h = self._hotel_by_name(name, None, town="Cambridge")  # MultiWOZ's town
        guests = count("people", people, hi=40)
        start, end = self._stay(day, count("stay", stay, hi=MAX_STAY), None)
        booking = self._book_rooms(h, start, end, math.ceil(guests / 2), guests)
        details = {
            "name": h["hotel_name"],
            "day": booking["check_in_date"],
            "stay": booking["stay_length"],
            "people": guests,
            "rooms": booking["number_of_rooms"],
            "reference": booking["booking_id"],
            "total_price": booking["price"],
            "address": h["street_address"],
            "phone": h["phone_number"],
        }
        return ok(isSuccess=True, **select_fields(details, return_info))

    # ---- SGD houses ------------------------------------------------------------------------------
    def _house_free(self, house_id: str, start: date, end: date) -> bool:
        clash = self.scalar(
            "SELECT count(*) FROM mtu_hotels_house_bookings WHERE house_id = ? AND status = 'confirmed'"
            " AND check_in_date < ? AND check_out_date > ?",
            (house_id, end.isoformat(), start.isoformat()),
        )
        return int(clash) == 0

    @staticmethod
    def _house_view(h: dict[str, Any]) -> dict[str, Any]:
        return {
            "where_to": h["where_to"],
            "address": h["address"],
            "rating": h["rating"],
            "phone_number": h["phone_number"],
            "has_laundry_service": bool(h["has_laundry_service"]),
            "max_adults": h["max_adults"],
            "price_per_night": from_cents(h["price_per_night_cents"]),
        }

    @read(name="SearchHouse")
    def search_house(
        self,
        where_to: Annotated[str, Param("city")],
        rating: Annotated[str, Param("minimum rating 1-5, or dontcare")] = DONTCARE,
        has_laundry_service: Annotated[Flag, Param("True, False or dontcare")] = DONTCARE,
        number_of_adults: Annotated[Count, Param("guests, or dontcare")] = DONTCARE,
    ) -> dict[str, Any]:
        """Find a house at a given location; best rated first."""
        rows = self.rows(
            "SELECT * FROM mtu_hotels_houses WHERE where_to = ? ORDER BY rating DESC, house_id",
            (city_name(where_to) or where_to,),
        )
        laundry = flag("has_laundry_service", has_laundry_service)
        if laundry is not None:
            rows = [r for r in rows if bool(r["has_laundry_service"]) == laundry]
        if canon(rating) != DONTCARE:
            try:
                floor = float(rating)
            except ValueError:
                raise bad_request(f"rating must be a number or dontcare, got {rating!r}") from None
            rows = [r for r in rows if r["rating"] >= floor]
        if canon(number_of_adults) != DONTCARE:
            adults = count("number_of_adults", number_of_adults, hi=20)
            rows = [r for r in rows if r["max_adults"] >= adults]
        return ok(count=len(rows), houses=[self._house_view(r) for r in rows[:10]])

    @write(name="BookHouse")
    def book_house(
        self,
        where_to: Annotated[str, Param("the house's address, or a city (its best-rated free house)")],
        number_of_adults: Annotated[Count, Param("guests")],
        check_in_date: Annotated[str, Param("first night, YYYY-MM-DD")],
        check_out_date: Annotated[str, Param("check-out day, YYYY-MM-DD")],
    ) -> dict[str, Any]:
        """Book the selected house for given dates and number of adults."""
        adults = count("number_of_adults", number_of_adults, hi=20)
        start, end = self._stay(check_in_date, None, check_out_date)
        by_address = self.rows(
            "SELECT * FROM mtu_hotels_houses WHERE lower(address) = ? ORDER BY house_id", (canon(where_to),)
        )
        if by_address:
            house = by_address[0]
            if house["max_adults"] < adults:
                raise unprocessable(
                    f"the house at {house['address']} sleeps {house['max_adults']}, not {adults}"
                )
            if not self._house_free(house["house_id"], start, end):
                raise conflict(f"the house at {house['address']} is taken for some of those nights")
        else:
            city = city_name(where_to)
            if city is None:
                raise not_found("house or city", where_to)
            houses = self.rows(
                "SELECT * FROM mtu_hotels_houses WHERE where_to = ? AND max_adults >= ?"
                " ORDER BY rating DESC, house_id",
                (city, adults),
            )
            free = [h for h in houses if self._house_free(h["house_id"], start, end)]
            if not free:
                raise conflict(f"no house in {city} for {adults} is free from {start} to {end}")
            house = free[0]
        nights = (end - start).days
        total = nights * int(house["price_per_night_cents"])
        booking_id = self.next_id("HH")
        self.execute(
            "INSERT INTO mtu_hotels_house_bookings VALUES (?, ?, ?, ?, ?, ?, 'confirmed', ?)",
            (
                booking_id,
                house["house_id"],
                start.isoformat(),
                end.isoformat(),
                adults,
                total,
                self.now_iso(),
            ),
        )
        return ok(
            booking_id=booking_id,
            **self._house_view(house),
            number_of_adults=adults,
            check_in_date=start.isoformat(),
            check_out_date=end.isoformat(),
            total_price=from_cents(total),
        )


finalize_tools(HotelsApp)
