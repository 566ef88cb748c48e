"""MTU events and attractions: FindEvents, BuyEventTickets, GetEventDates (SGD events),
FindAttractions (SGD travel) and searchAttraction (MultiWOZ).

Concerts, games and plays on dated shows in many cities, each with a fixed number of tickets;
buying takes tickets until a show sells out (409). Attractions are a searchable directory.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Query, Volatile, format_id, read, set_counter, write
from toolgym.mocks.apps.mtu._common import (
    AREAS,
    CITIES,
    DONTCARE,
    STREETS,
    Count,
    Flag,
    canon,
    count,
    earlier_booking,
    finalize_tools,
    flag,
    parse_day,
    phone,
    require_city,
    select_fields,
    street_address,
    where_area,
    words_in,
)
from toolgym.mocks.responses import bad_request, conflict, from_cents, not_found, ok, unprocessable
from toolgym.mocks.seeding import insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

EVENT_TYPES: Final = ("Music", "Sports", "Theater")
CATEGORIES: Final = {
    "Music": ("Pop", "Rock", "Jazz", "Hip Hop", "Classical", "Country", "Electronic", "Blues"),
    "Sports": ("Football", "Baseball", "Basketball", "Soccer", "Hockey"),
    "Theater": ("Play", "Musical", "Comedy", "Drama"),
}
# what people call each type
TYPE_WORDS: Final = (
    ("Music", ("music", "concert", "gig", "band", "festival", "opera", "symphony")),
    ("Sports", ("sport", "game", "match")),
    ("Theater", ("theater", "theatre", "play", "musical", "show", "drama", "comedy")),
)
BANDS: Final = (
    ("The Midnight", "Electric", "Silver", "Neon", "Velvet", "Golden", "Crimson", "Wild"),
    ("Echoes", "Foxes", "Riders", "Harmony", "Lanterns", "Pilots", "Tides", "Orchestra"),
)
MASCOTS: Final = ("Hawks", "Tigers", "Giants", "Rangers", "Comets", "Wolves", "Sharks", "Lions", "Bears")
PLAYS: Final = (
    "Romeo and Juliet",
    "Hamlet",
    "Macbeth",
    "A Midsummer Night's Dream",
    "The Tempest",
    "Othello",
    "King Lear",
    "Twelfth Night",
    "Much Ado About Nothing",
    "The Importance of Being Earnest",
    "A Doll's House",
    "Pygmalion",
    "The Cherry Orchard",
    "Peter Pan",
)
VENUES: Final = ("Arena", "Stadium", "Theatre", "Concert Hall", "Amphitheatre", "Music Hall", "Playhouse")
ATTRACTIONS: Final = (
    # SGD category, MultiWOZ type, name stems
    ("Museum", "museum", ("Museum of Art", "History Museum", "Science Museum", "Natural History Museum")),
    ("Park", "park", ("Botanic Garden", "City Park", "Riverside Park", "Memorial Park")),
    ("Historical Landmark", "architecture", ("Old Cathedral", "Town Hall", "Castle", "Lighthouse")),
    ("Theme Park", "entertainment", ("Adventure Land", "Fun Park", "Water World")),
    ("Sports Venue", "multiple sports", ("Sports Centre", "Leisure Park")),
    ("Nature Preserve", "park", ("Wetlands Reserve", "Nature Trail")),
    ("Shopping Area", "entertainment", ("Market Square", "Grand Arcade")),
    ("Place of Worship", "architecture", ("Great St Mary's Church", "Holy Trinity Church")),
    ("Tourist Attraction", "boat", ("River Punting", "Harbor Cruise")),
    ("Tourist Attraction", "college", ("King's College", "Trinity College", "Queens' College")),
    ("Tourist Attraction", "theatre", ("Arts Theatre", "Corn Exchange", "Playhouse")),
    ("Tourist Attraction", "nightclub", ("Ballare", "Soul Tree Club", "Club Salsa")),
    ("Tourist Attraction", "cinema", ("Vue Cinema", "Cineworld")),
    ("Tourist Attraction", "concerthall", ("West Road Concert Hall", "Civic Hall")),
    ("Tourist Attraction", "swimmingpool", ("Parkside Pools", "Lido")),
)
SGD_CATEGORIES: Final = tuple(dict.fromkeys(a[0] for a in ATTRACTIONS))


def event_type_of(value: str) -> str:
    """Music, Sports or Theater from what a user calls it ("concert", "Shakespearean play")."""
    text = canon(value)
    for kind, words in TYPE_WORDS:
        if any(w in text for w in words):
            return kind
    raise bad_request(
        f"invalid event_type {value!r}; expected one of {list(EVENT_TYPES)} (or concert, play, game)"
    )


class EventsApp(App):
    name = "mtu_events"
    description = "Concerts, games and plays with tickets, and a directory of attractions (MTU-Bench)."
    version = "1"
    schema = """
    CREATE TABLE mtu_events_events (
        event_id TEXT PRIMARY KEY,
        event_name TEXT NOT NULL,
        event_type TEXT NOT NULL CHECK (event_type IN ('Music', 'Sports', 'Theater')),
        category TEXT NOT NULL,
        date TEXT NOT NULL,
        time TEXT NOT NULL,
        city TEXT NOT NULL,
        venue TEXT NOT NULL,
        venue_address TEXT NOT NULL,
        price_per_ticket_cents INTEGER NOT NULL,
        tickets_total INTEGER NOT NULL
    );
    CREATE INDEX mtu_events_events_city ON mtu_events_events(city, date);
    CREATE TABLE mtu_events_orders (
        order_id TEXT PRIMARY KEY,
        event_id TEXT NOT NULL REFERENCES mtu_events_events(event_id),
        number_of_tickets INTEGER NOT NULL CHECK (number_of_tickets > 0),
        total_cents INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('confirmed', 'cancelled')),
        created_at TEXT NOT NULL
    );
    CREATE INDEX mtu_events_orders_event ON mtu_events_orders(event_id);
    CREATE TABLE mtu_events_attractions (
        attraction_id TEXT PRIMARY KEY,
        attraction_name TEXT NOT NULL,
        category TEXT NOT NULL,
        type TEXT NOT NULL,
        city TEXT NOT NULL,
        area TEXT NOT NULL,
        address TEXT NOT NULL,
        postcode TEXT NOT NULL,
        phone_number TEXT NOT NULL,
        entrance_fee_cents INTEGER NOT NULL,
        good_for_kids INTEGER NOT NULL
    );
    """
    volatile: ClassVar[Volatile] = {"mtu_events_orders": ["created_at"]}

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        events: list[dict[str, Any]] = []
        today = clock.date()
        for city in CITIES:
            venues = [
                (
                    f"{city.name} {v}" if rng.random() < 0.5 else f"{rng.choice(STREETS).split()[0]} {v}",
                    street_address(rng),
                )
                for v in rng.sample(VENUES, 4)
            ]
            for _ in range(6):  # shows with several dates: GetEventDates has something to find
                kind = rng.choice(EVENT_TYPES)
                category = rng.choice(CATEGORIES[kind])
                if kind == "Music":
                    name = f"{rng.choice(BANDS[0])} {rng.choice(BANDS[1])}"
                elif kind == "Sports":
                    home, away = rng.sample(MASCOTS, 2)
                    name = f"{city.name} {home} vs {away}"
                else:
                    name = rng.choice(PLAYS)
                venue, address = rng.choice(venues)
                price = rng.randint(25, 180) * 100
                for _ in range(rng.randint(1, 4)):
                    day = today + timedelta(days=rng.randint(0, 60))
                    events.append(
                        {
                            "event_id": format_id("EVT", len(events) + 1, 5),
                            "event_name": name,
                            "event_type": kind,
                            "category": category,
                            "date": day.isoformat(),
                            "time": rng.choice(("14:00", "18:30", "19:00", "19:30", "20:00")),
                            "city": city.name,
                            "venue": venue,
                            "venue_address": address,
                            "price_per_ticket_cents": price,
                            "tickets_total": rng.choice((40, 120, 300, 800)),
                        }
                    )
        insert_rows(db, "mtu_events_events", events)
        orders = []
        for i in range(1, 801):
            e = rng.choice(events)
            n = e["tickets_total"] // 8 if rng.random() < 0.25 else rng.randint(1, 4)
            row = {
                "order_id": format_id("TIX", i),
                "event_id": e["event_id"],
                "number_of_tickets": n,
                "total_cents": n * e["price_per_ticket_cents"],
            }
            orders.append(earlier_booking(row, rng, clock, days_ago=(1, 30)))
        insert_rows(db, "mtu_events_orders", orders)
        set_counter(db, "TIX", len(orders))
        attractions: list[dict[str, Any]] = []
        for city in CITIES:
            for category, kind, stems in rng.sample(ATTRACTIONS, 10 if city.name != "Cambridge" else 15):
                stem = rng.choice(stems)
                free = rng.random() < 0.5
                attractions.append(
                    {
                        "attraction_id": format_id("ATR", len(attractions) + 1, 4),
                        "attraction_name": stem if city.name == "Cambridge" else f"{city.name} {stem}",
                        "category": category,
                        "type": kind,
                        "city": city.name,
                        "area": rng.choice(AREAS),
                        "address": street_address(rng),
                        "postcode": f"{rng.randint(10000, 99999)}",
                        "phone_number": phone(rng),
                        "entrance_fee_cents": 0 if free else rng.randint(2, 30) * 100,
                        "good_for_kids": int(rng.random() < 0.6),
                    }
                )
        insert_rows(db, "mtu_events_attractions", attractions)

    # ---- events ------------------------------------------------------------------------------
    def _tickets_left(self, e: dict[str, Any]) -> int:
        sold = self.scalar(
            "SELECT coalesce(sum(number_of_tickets), 0) FROM mtu_events_orders WHERE event_id = ? AND status = 'confirmed'",
            (e["event_id"],),
        )
        return max(0, int(e["tickets_total"]) - int(sold))

    def _event_view(self, e: dict[str, Any]) -> dict[str, Any]:
        return {
            "event_name": e["event_name"],
            "event_type": e["event_type"],
            "category": e["category"],
            "date": e["date"],
            "time": e["time"],
            "city": e["city"],
            "venue": e["venue"],
            "venue_address": e["venue_address"],
            "price_per_ticket": from_cents(e["price_per_ticket_cents"]),
            "tickets_left": self._tickets_left(e),
        }

    @read(name="FindEvents")
    def find_events(
        self,
        event_type: Annotated[str, Param("Music, Sports or Theater (concert, game, play)")],
        city: Annotated[str, Param("city")],
        date: Annotated[str, Param("date YYYY-MM-DD, or dontcare for any upcoming date")] = DONTCARE,
        category: Annotated[
            str, Param("genre or sport, e.g. Pop, Baseball, Musical; or dontcare")
        ] = DONTCARE,
    ) -> dict[str, Any]:
        """Find concerts, games and plays happening in a city; soonest first."""
        query = Query(
            "SELECT * FROM mtu_events_events WHERE event_type = ? AND city = ?",
            event_type_of(event_type),
            require_city("city", city),
        )
        today = self.now().date()
        if canon(date) != DONTCARE:
            query.where("date = ?", parse_day("date", date, today).isoformat())
        else:
            query.where("date >= ?", today.isoformat())
        if canon(category) != DONTCARE:
            query.where("lower(category) = ?", canon(category))
        rows = query.rows(self, "date, time, event_id")
        events = [self._event_view(r) for r in rows]
        return ok(count=len(events), events=events[:10])

    @read(name="GetEventDates")
    def get_event_dates(
        self,
        event_name: Annotated[str, Param("name of the event")],
        city: Annotated[str, Param("city")],
    ) -> dict[str, Any]:
        """Get the upcoming dates on which an event takes place in a city."""
        rows = self.rows(
            "SELECT * FROM mtu_events_events WHERE lower(event_name) = ? AND city = ? AND date >= ?"
            " ORDER BY date, time, event_id",
            (canon(event_name), require_city("city", city), self.now().date().isoformat()),
        )
        if not rows:
            raise not_found("event", f"{event_name} in {city}")
        return ok(count=len(rows), dates=[{k: v for k, v in self._event_view(r).items()} for r in rows])

    @write(name="BuyEventTickets")
    def buy_event_tickets(
        self,
        event_name: Annotated[str, Param("name of the event")],
        number_of_tickets: Annotated[Count, Param("tickets to buy")],
        date: Annotated[str, Param("date of the show, YYYY-MM-DD")],
        city: Annotated[str, Param("city of the show")],
    ) -> dict[str, Any]:
        """Buy tickets for an event on a date in a city."""
        n = count("number_of_tickets", number_of_tickets, hi=20)
        day = parse_day("date", date, self.now().date())
        if day < self.now().date():
            raise unprocessable(f"the show on {day.isoformat()} is over")
        e = self.row(
            "SELECT * FROM mtu_events_events WHERE lower(event_name) = ? AND city = ? AND date = ? ORDER BY event_id",
            (canon(event_name), require_city("city", city), day.isoformat()),
        )
        if e is None:
            raise not_found("event", f"{event_name} in {city} on {day.isoformat()}")
        left = self._tickets_left(e)
        if n > left:
            raise conflict(f"{e['event_name']} on {e['date']} has {left} tickets left, {n} wanted")
        order_id = self.next_id("TIX")
        total = n * int(e["price_per_ticket_cents"])
        self.execute(
            "INSERT INTO mtu_events_orders VALUES (?, ?, ?, ?, 'confirmed', ?)",
            (order_id, e["event_id"], n, total, self.now_iso()),
        )
        view = self._event_view(e)
        return ok(order_id=order_id, **view, number_of_tickets=n, total_price=from_cents(total))

    # ---- attractions ---------------------------------------------------------------------------------
    @staticmethod
    def _attraction_view(a: dict[str, Any]) -> dict[str, Any]:
        return {
            "attraction_name": a["attraction_name"],
            "category": a["category"],
            "location": a["city"],
            "phone_number": a["phone_number"],
            "free_entry": a["entrance_fee_cents"] == 0,
            "good_for_kids": bool(a["good_for_kids"]),
            "address": a["address"],
        }

    @read(name="FindAttractions")
    def find_attractions(
        self,
        location: Annotated[str, Param("city")],
        category: Annotated[str, Param("e.g. Museum, Park, Theme Park; or dontcare")] = DONTCARE,
        free_entry: Annotated[Flag, Param("True, False or dontcare")] = DONTCARE,
        good_for_kids: Annotated[Flag, Param("True, False or dontcare")] = DONTCARE,
    ) -> dict[str, Any]:
        """Browse attractions in a given city."""
        query = Query(
            "SELECT * FROM mtu_events_attractions WHERE city = ?", require_city("location", location)
        )
        if canon(category) != DONTCARE:
            if canon(category) not in {canon(c) for c in SGD_CATEGORIES}:
                raise bad_request(
                    f"invalid category {category!r}; expected one of {[*SGD_CATEGORIES, DONTCARE]}"
                )
            query.where("lower(category) = ?", canon(category))
        free = flag("free_entry", free_entry)
        if free is not None:
            query.where("entrance_fee_cents = 0" if free else "entrance_fee_cents > 0")
        query.flags(good_for_kids=flag("good_for_kids", good_for_kids))
        rows = query.rows(self, "attraction_name, attraction_id")
        return ok(count=len(rows), attractions=[self._attraction_view(r) for r in rows])

    @read(name="searchAttraction")
    def search_attraction(
        self,
        name: Annotated[str | None, Param("attraction name")] = None,
        type: Annotated[str | None, Param("e.g. museum, college, park, theatre, nightclub")] = None,
        area: Annotated[str | None, Param("part of town (centre, north, ...) or a city")] = None,
        return_info: Annotated[tuple[str, ...], Param("fields: all, address, phone, entrance fee, ...")] = (
            "all",
        ),
    ) -> dict[str, Any]:
        """Search attractions by name, type and area."""
        query = Query("SELECT * FROM mtu_events_attractions WHERE 1")
        if area is not None:
            where_area(query, area, lambda a: require_city("area", a))
        elif name is None:
            query.where("city = 'Cambridge'")  # the MultiWOZ town
        if type is not None:
            key = canon(type).replace(" ", "").replace("theater", "theatre")
            # "museums" finds "museum"
            query.where("replace(lower(type), ' ', '') IN (?, ?)", key, key.removesuffix("s"))
        rows = query.rows(self, "attraction_name, attraction_id")
        if name is not None:
            rows = [r for r in rows if words_in(name, r["attraction_name"])]
        found = [
            select_fields(
                {
                    "name": r["attraction_name"],
                    "type": r["type"],
                    "area": r["area"],
                    "address": r["address"],
                    "postcode": r["postcode"],
                    "phone": r["phone_number"],
                    "entrance_fee": "free"
                    if r["entrance_fee_cents"] == 0
                    else f"{from_cents(r['entrance_fee_cents']):.2f} pounds",
                    "city": r["city"],
                },
                return_info,
            )
            for r in rows
        ]
        return ok(count=len(found), attractions=found[:10])


finalize_tools(EventsApp)
