"""MTU homes: FindHomeByArea, FindApartment and ScheduleVisit (SGD real estate and apartments).

Properties to rent or buy in many cities. Searches filter on beds, baths, garage, laundry,
furniture and pets; a visit books a viewing slot: at most four viewings a property a day (409
when full), one per property and day for the user (409), never in the past (422).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Query, Volatile, format_id, read, set_counter, write
from toolgym.mocks.apps.mtu._common import (
    CITIES,
    DONTCARE,
    Count,
    Flag,
    canon,
    city_name,
    count,
    finalize_tools,
    flag,
    phone,
    street_address,
    upcoming_day,
)
from toolgym.mocks.responses import conflict, from_cents, not_found, ok
from toolgym.mocks.seeding import insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

INTENTS: Final = ("rent", "buy")
NAME_WORDS: Final = (
    (
        "Acacia",
        "Bay View",
        "Cedar",
        "Park",
        "Willow",
        "Harbor",
        "Sunset",
        "Oak",
        "Maple",
        "River",
        "Summit",
        "Lakeside",
    ),
    (
        "Apartments",
        "Residences",
        "Villas",
        "Commons",
        "Terrace",
        "Court",
        "Gardens",
        "Lofts",
        "Place",
        "Heights",
    ),
)
VISITS_PER_DAY: Final = 4


class HomesApp(App):
    name = "mtu_homes"
    description = "Homes to rent or buy, apartments, and viewing appointments (MTU-Bench)."
    version = "1"
    schema = """
    CREATE TABLE mtu_homes_properties (
        property_id TEXT PRIMARY KEY,
        property_name TEXT NOT NULL UNIQUE,
        area TEXT NOT NULL,
        address TEXT NOT NULL,
        phone_number TEXT NOT NULL,
        intent TEXT NOT NULL CHECK (intent IN ('rent', 'buy')),
        price_cents INTEGER NOT NULL,
        number_of_beds INTEGER NOT NULL,
        number_of_baths INTEGER NOT NULL,
        has_garage INTEGER NOT NULL,
        in_unit_laundry INTEGER NOT NULL,
        furnished INTEGER NOT NULL,
        pets_allowed INTEGER NOT NULL
    );
    CREATE INDEX mtu_homes_properties_area ON mtu_homes_properties(area, intent);
    CREATE TABLE mtu_homes_visits (
        visit_id TEXT PRIMARY KEY,
        property_id TEXT NOT NULL REFERENCES mtu_homes_properties(property_id),
        visit_date TEXT NOT NULL,
        visitor TEXT NOT NULL CHECK (visitor IN ('user', 'other')),
        created_at TEXT NOT NULL
    );
    CREATE INDEX mtu_homes_visits_property ON mtu_homes_visits(property_id, visit_date);
    """
    volatile: ClassVar[Volatile] = {"mtu_homes_visits": ["created_at"]}

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        names = sorted({f"{a} {b}" for a in NAME_WORDS[0] for b in NAME_WORDS[1]})
        rng.shuffle(names)
        props: list[dict[str, Any]] = []
        for city in CITIES:
            if city.country != "United States":
                continue
            for _ in range(18):
                name = names[len(props) % len(names)]
                if len(props) >= len(names):
                    name = f"{name} {city.name}"
                intent = rng.choice(INTENTS)
                beds = rng.choices((1, 2, 3, 4, 5), weights=(3, 4, 4, 2, 1))[0]
                baths = max(1, min(beds, rng.choice((1, 1, 2, 2, 3))))
                price = (
                    (rng.randint(12, 30) * 100 + beds * 600) * 100
                    if intent == "rent"
                    else (rng.randint(250, 900) + beds * 150) * 1000 * 100
                )
                props.append(
                    {
                        "property_id": format_id("PROP", len(props) + 1, 4),
                        "property_name": name,
                        "area": city.name,
                        "address": f"{street_address(rng)}, {city.name}",
                        "phone_number": phone(rng),
                        "intent": intent,
                        "price_cents": price,
                        "number_of_beds": beds,
                        "number_of_baths": baths,
                        "has_garage": int(rng.random() < 0.45),
                        "in_unit_laundry": int(rng.random() < 0.55),
                        "furnished": int(rng.random() < 0.3),
                        "pets_allowed": int(rng.random() < 0.5),
                    }
                )
        insert_rows(db, "mtu_homes_properties", props)
        visits = []
        today = clock.date()
        for i in range(1, 401):
            p = rng.choice(props)
            visits.append(
                {
                    "visit_id": format_id("VIS", i),
                    "property_id": p["property_id"],
                    "visit_date": (today + timedelta(days=rng.randint(1, 6))).isoformat(),
                    "visitor": "other",
                    "created_at": (clock - timedelta(days=rng.randint(0, 10))).isoformat(),
                }
            )
        # a property shows at most VISITS_PER_DAY times a day
        per_day: dict[tuple[str, str], int] = {}
        kept = []
        for v in visits:
            key = (v["property_id"], v["visit_date"])
            if per_day.get(key, 0) < VISITS_PER_DAY:
                per_day[key] = per_day.get(key, 0) + 1
                kept.append(v)
        insert_rows(db, "mtu_homes_visits", kept)
        set_counter(db, "VIS", len(visits))

    # ---- helpers -------------------------------------------------------------------------------
    @staticmethod
    def _view(p: dict[str, Any]) -> dict[str, Any]:
        price = from_cents(p["price_cents"])
        return {
            "property_name": p["property_name"],
            "area": p["area"],
            "address": p["address"],
            "phone_number": p["phone_number"],
            "intent": p["intent"],
            "price": price,
            "rent": price if p["intent"] == "rent" else None,
            "number_of_beds": p["number_of_beds"],
            "number_of_baths": p["number_of_baths"],
            "has_garage": bool(p["has_garage"]),
            "in_unit_laundry": bool(p["in_unit_laundry"]),
            "furnished": bool(p["furnished"]),
            "pets_allowed": bool(p["pets_allowed"]),
        }

    def _search(
        self, area: str, intent: str, beds: int | None, baths: int | None, flags: dict[str, bool | None]
    ) -> list[dict[str, Any]]:
        town = city_name(area)
        if town is None:
            raise not_found("area", area)
        query = Query("SELECT * FROM mtu_homes_properties WHERE area = ? AND intent = ?", town, intent)
        if beds is not None:
            query.where("number_of_beds = ?", beds)
        if baths is not None:
            query.where("number_of_baths >= ?", baths)
        return [self._view(r) for r in query.flags(flags).rows(self, "price_cents, property_id")]

    # ---- APIs --------------------------------------------------------------------------------------
    @read(name="FindHomeByArea")
    def find_home_by_area(
        self,
        area: Annotated[str, Param("city")],
        intent: Annotated[str, Param("rent or buy", enum=INTENTS)],
        number_of_beds: Annotated[Count, Param("bedrooms")],
        number_of_baths: Annotated[Count, Param("at least this many bathrooms")],
        has_garage: Annotated[Flag, Param("True, False or dontcare")] = DONTCARE,
        in_unit_laundry: Annotated[Flag, Param("True, False or dontcare")] = DONTCARE,
    ) -> dict[str, Any]:
        """Search for a property to rent or buy in a city; cheapest first."""
        homes = self._search(
            area,
            intent,
            count("number_of_beds", number_of_beds, hi=10),
            count("number_of_baths", number_of_baths, hi=10),
            {
                "has_garage": flag("has_garage", has_garage),
                "in_unit_laundry": flag("in_unit_laundry", in_unit_laundry),
            },
        )
        return ok(count=len(homes), properties=homes[:10])

    @read(name="FindApartment")
    def find_apartment(
        self,
        area: Annotated[str, Param("city")],
        number_of_beds: Annotated[Count, Param("bedrooms")],
        furnished: Annotated[Flag, Param("True, False or dontcare")] = DONTCARE,
        pets_allowed: Annotated[Flag, Param("True, False or dontcare")] = DONTCARE,
        number_of_baths: Annotated[Count, Param("at least this many bathrooms, or dontcare")] = DONTCARE,
    ) -> dict[str, Any]:
        """Find an apartment to rent in a city for a number of bedrooms; cheapest first."""
        baths = (
            None if canon(number_of_baths) == DONTCARE else count("number_of_baths", number_of_baths, hi=10)
        )
        homes = self._search(
            area,
            "rent",
            count("number_of_beds", number_of_beds, hi=10),
            baths,
            {"furnished": flag("furnished", furnished), "pets_allowed": flag("pets_allowed", pets_allowed)},
        )
        return ok(count=len(homes), apartments=homes[:10])

    @write(name="ScheduleVisit")
    def schedule_visit(
        self,
        property_name: Annotated[str, Param("the property")],
        visit_date: Annotated[str, Param("date YYYY-MM-DD")],
    ) -> dict[str, Any]:
        """Schedule a visit to a property on a date."""
        p = self.row(
            "SELECT * FROM mtu_homes_properties WHERE lower(property_name) = ?", (canon(property_name),)
        )
        if p is None:
            raise not_found("property", property_name)
        day = upcoming_day("visit_date", visit_date, self.now().date(), called="")
        visits = self.rows(
            "SELECT visitor FROM mtu_homes_visits WHERE property_id = ? AND visit_date = ? ORDER BY visit_id",
            (p["property_id"], day.isoformat()),
        )
        if any(v["visitor"] == "user" for v in visits):
            raise conflict(f"you already have a visit to {p['property_name']} on {day.isoformat()}")
        if len(visits) >= VISITS_PER_DAY:
            raise conflict(f"{p['property_name']} has no viewing slot left on {day.isoformat()}")
        visit_id = self.next_id("VIS")
        self.execute(
            "INSERT INTO mtu_homes_visits VALUES (?, ?, ?, 'user', ?)",
            (visit_id, p["property_id"], day.isoformat(), self.now_iso()),
        )
        return ok(visit_id=visit_id, visit_date=day.isoformat(), **self._view(p))


finalize_tools(HomesApp)
