"""MTU restaurants: FindRestaurants / ReserveRestaurant (SGD), SearchRestaurant / BookRestaurant
(MultiWOZ and SNIPS variants of one booking API).

Semantics: searches filter and sort the seeded venues; a reservation takes seats for two hours,
so a slot whose overlapping reservations already fill the dining room is a 409; reservations
outside opening hours or in the past are a 422.
"""

from __future__ import annotations

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
    minutes,
    one_of,
    parse_clock,
    parse_day,
    phone,
    select_fields,
    street_address,
    where_area,
    words_in,
)
from toolgym.mocks.responses import bad_request, conflict, not_found, ok, unprocessable
from toolgym.mocks.seeding import insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

DISHES: Final[dict[str, tuple[str, ...]]] = {
    "Italian": ("pizza", "lasagna", "risotto", "carbonara", "tiramisu"),
    "Chinese": ("dumplings", "peking duck", "chow mein", "dim sum", "hot pot"),
    "Mexican": ("tacos", "burritos", "enchiladas", "guacamole", "churros"),
    "Indian": ("curry", "biryani", "tandoori chicken", "naan", "samosa"),
    "Japanese": ("sushi", "ramen", "tempura", "udon", "sashimi"),
    "Thai": ("pad thai", "green curry", "tom yum", "satay", "mango sticky rice"),
    "American": ("burgers", "steak", "ribs", "fried chicken", "mac and cheese"),
    "French": ("croissant", "coq au vin", "escargot", "ratatouille", "creme brulee"),
    "Brazilian": ("churrasco", "feijoada", "pao de queijo", "picanha", "moqueca"),
    "German": ("bratwurst", "schnitzel", "pretzel", "sauerbraten", "strudel"),
    "Korean": ("bibimbap", "bulgogi", "kimchi", "tteokbokki", "korean fried chicken"),
    "Vietnamese": ("pho", "banh mi", "spring rolls", "bun cha", "vermicelli"),
    "Mediterranean": ("falafel", "hummus", "shawarma", "kebab", "baklava"),
    "Spanish": ("paella", "tapas", "tortilla", "gazpacho", "churros"),
    "Greek": ("gyros", "moussaka", "souvlaki", "spanakopita", "greek salad"),
    "Seafood": ("oysters", "lobster", "clam chowder", "fish and chips", "crab cakes"),
    "British": ("fish and chips", "sunday roast", "pie", "full english breakfast", "scones"),
    "European": ("schnitzel", "goulash", "risotto", "mussels", "cheese board"),
    "Vegetarian": ("salad", "veggie burger", "falafel", "buddha bowl", "lentil soup"),
    "Steakhouse": ("steak", "prime rib", "burgers", "lobster", "wedge salad"),
}
CUISINES: Final = tuple(DISHES)
# the popular cuisines are more common, as on any restaurant site
CUISINE_WEIGHTS: Final = tuple(
    3 if c in ("Italian", "Chinese", "Mexican", "American", "Indian") else 1 for c in CUISINES
)
BIG_CITIES: Final = ("San Francisco", "New York", "Los Angeles", "Chicago", "Seattle", "London")
NAME_PARTS: Final[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    "Italian": (
        ("Bella", "Trattoria", "Osteria", "Casa", "Pizza"),
        ("Napoli", "Roma", "Toscana", "Express", "Forno"),
    ),
    "Chinese": (("Golden", "Lucky", "Jade", "Red", "Happy"), ("Dragon", "Star", "Palace", "Lotus", "Garden")),
    "Mexican": (("El", "La", "Casa", "Taco"), ("Sol", "Cantina", "Jalisco", "Fiesta", "Agave")),
    "Indian": (
        ("Taj", "Royal", "Spice", "Curry", "Bombay"),
        ("Mahal", "Garden", "House", "Palace", "Kitchen"),
    ),
    "Japanese": (
        ("Sakura", "Kyoto", "Tokyo", "Umi", "Zen"),
        ("Sushi", "Ramen Bar", "House", "Garden", "Izakaya"),
    ),
    "Thai": (("Bangkok", "Siam", "Lotus", "Thai"), ("Orchid", "Basil", "Kitchen", "Spice", "House")),
    "American": (
        ("Liberty", "Main Street", "Union", "Harbor", "Route 66"),
        ("Grill", "Diner", "Kitchen", "Tavern"),
    ),
    "French": (("Le", "La", "Chez", "Petit"), ("Bistro", "Jardin", "Marcel", "Paris", "Maison")),
    "Brazilian": (("Rio", "Samba", "Copacabana", "Gaucho"), ("Grill", "Churrascaria", "Steakhouse", "Brasa")),
    "German": (("Bavarian", "Black Forest", "Old", "Hofbrau"), ("Haus", "Beer Hall", "Stube", "Kitchen")),
    "Korean": (("Seoul", "Kimchi", "Gangnam", "Arirang"), ("BBQ", "House", "Kitchen", "Garden")),
    "Vietnamese": (("Saigon", "Pho", "Hanoi", "Mekong"), ("Bistro", "House", "Kitchen", "Corner")),
    "Mediterranean": (("Olive", "Aegean", "Cedar", "Santorini"), ("Grill", "Table", "Kitchen", "House")),
    "Spanish": (("Barcelona", "Sevilla", "Casa", "El"), ("Tapas", "Bodega", "Cocina", "Taberna")),
    "Greek": (("Athena", "Zorba", "Mykonos", "Olympus"), ("Taverna", "Grill", "Kitchen", "Cafe")),
    "Seafood": (("Blue", "Ocean", "Pier", "Salty"), ("Oyster Bar", "Catch", "Crab House", "Fish Market")),
    "British": (
        ("The Slug and", "The Red", "The Eagle and", "The Crown and"),
        ("Lettuce", "Lion", "Child", "Anchor"),
    ),
    "European": (
        ("Grand", "Old Town", "Riverside", "Continental"),
        ("Brasserie", "Cafe", "Kitchen", "Table"),
    ),
    "Vegetarian": (("Green", "Garden", "Sprout", "Leaf"), ("Table", "Kitchen", "Cafe", "Bowl")),
    "Steakhouse": (("Prime", "Cattleman's", "Ember", "Iron"), ("Steakhouse", "Chophouse", "Grill", "Cut")),
}
VENUE_TYPES: Final = ("restaurant", "bistro", "diner", "pub", "brasserie", "cafe", "bar", "taverna")
FACILITIES: Final = ("wifi", "parking", "wheelchair access", "outdoor seating", "private room", "kids menu")
# SGD's two vocabularies (Restaurants_1 and _2) and MultiWOZ's, mapped onto price levels 1-4
PRICE_RANGES: Final[dict[str, tuple[int, ...]]] = {
    "inexpensive": (1,),
    "cheap": (1,),
    "moderate": (2,),
    "expensive": (3,),
    "pricey": (3,),
    "very expensive": (4,),
    "ultra high-end": (4,),
}
PRICE_LABELS: Final = {1: "inexpensive", 2: "moderate", 3: "expensive", 4: "very expensive"}
MULTIWOZ_PRICES: Final = {1: "cheap", 2: "moderate", 3: "expensive", 4: "expensive"}
SITTING_MINUTES: Final = 120  # a party holds its seats for two hours
DEFAULT_DINNER: Final = "19:00"


class RestaurantsApp(App):
    name = "mtu_restaurants"
    description = "Restaurant search and table reservations (MTU-Bench restaurant APIs)."
    version = "1"
    schema = """
    CREATE TABLE mtu_restaurants_venues (
        restaurant_id TEXT PRIMARY KEY,
        restaurant_name TEXT NOT NULL,
        city TEXT NOT NULL,
        state TEXT NOT NULL,
        country TEXT NOT NULL,
        area TEXT NOT NULL,
        cuisine TEXT NOT NULL,
        venue_type TEXT NOT NULL,
        price_level INTEGER NOT NULL CHECK (price_level BETWEEN 1 AND 4),
        rating REAL NOT NULL,
        serves_alcohol INTEGER NOT NULL,
        has_live_music INTEGER NOT NULL,
        has_seating_outdoors INTEGER NOT NULL,
        has_vegetarian_options INTEGER NOT NULL,
        phone_number TEXT NOT NULL,
        street_address TEXT NOT NULL,
        postcode TEXT NOT NULL,
        facilities TEXT NOT NULL,
        dishes TEXT NOT NULL,
        opens TEXT NOT NULL,
        closes TEXT NOT NULL,
        capacity INTEGER NOT NULL CHECK (capacity > 0)
    );
    CREATE INDEX mtu_restaurants_venues_city ON mtu_restaurants_venues(city, cuisine);
    CREATE TABLE mtu_restaurants_reservations (
        reservation_id TEXT PRIMARY KEY,
        restaurant_id TEXT NOT NULL REFERENCES mtu_restaurants_venues(restaurant_id),
        date TEXT NOT NULL,
        time TEXT NOT NULL,
        party_size INTEGER NOT NULL CHECK (party_size > 0),
        status TEXT NOT NULL CHECK (status IN ('confirmed', 'cancelled')),
        created_at TEXT NOT NULL
    );
    CREATE INDEX mtu_restaurants_reservations_slot ON mtu_restaurants_reservations(restaurant_id, date);
    """
    volatile: ClassVar[Volatile] = {"mtu_restaurants_reservations": ["created_at"]}

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        venues: list[dict[str, Any]] = []
        n = 0
        for city in CITIES:
            used: set[str] = set()
            per_city = 40 if city.name in BIG_CITIES else 36 if city.name == "Cambridge" else 18
            for _ in range(per_city):
                cuisine = rng.choices(CUISINES, weights=CUISINE_WEIGHTS)[0]
                first, second = NAME_PARTS[cuisine]
                name = f"{rng.choice(first)} {rng.choice(second)}"
                if name.lower() in used:
                    name = f"{name} {rng.choice(('Express', 'Kitchen', 'Corner', 'Too'))}"
                if name.lower() in used:
                    continue
                used.add(name.lower())
                n += 1
                level = rng.choices((1, 2, 3, 4), weights=(3, 4, 2, 1))[0]
                opens = rng.choice(("11:00", "11:30", "12:00", "17:00"))
                venues.append(
                    {
                        "restaurant_id": format_id("RST", n, 4),
                        "restaurant_name": name,
                        "city": city.name,
                        "state": city.state,
                        "country": city.country,
                        "area": rng.choice(AREAS),
                        "cuisine": cuisine,
                        "venue_type": rng.choice(VENUE_TYPES),
                        "price_level": level,
                        "rating": round(rng.uniform(3.0, 5.0), 1),
                        "serves_alcohol": int(rng.random() < 0.6),
                        "has_live_music": int(rng.random() < 0.2),
                        "has_seating_outdoors": int(rng.random() < 0.4),
                        "has_vegetarian_options": int(cuisine == "Vegetarian" or rng.random() < 0.6),
                        "phone_number": phone(rng),
                        "street_address": street_address(rng),
                        "postcode": f"{rng.randint(10000, 99999)}",
                        "facilities": ",".join(sorted(rng.sample(FACILITIES, rng.randint(1, 3)))),
                        "dishes": ",".join(rng.sample(DISHES[cuisine], 3)),
                        "opens": opens,
                        "closes": rng.choice(("21:30", "22:00", "23:00")),
                        "capacity": rng.choice((12, 20, 30, 40, 60)),
                    }
                )
        insert_rows(db, "mtu_restaurants_venues", venues)
        # other diners' bookings over the next three weeks: some dinner slots are already full
        reservations = []
        today = clock.date()
        for i in range(1, 601):
            v = rng.choice(venues)
            day = today + timedelta(days=rng.randint(0, 20))
            slot = rng.choice(("18:00", "18:30", "19:00", "19:30", "20:00", "12:30", "13:00"))
            if minutes(slot) < minutes(v["opens"]):
                slot = v["opens"]
            row = {
                "reservation_id": format_id("RES", i),
                "restaurant_id": v["restaurant_id"],
                "date": day.isoformat(),
                "time": slot,
                "party_size": min(v["capacity"], rng.choice((2, 2, 4, 6, 8, 12))),
            }
            reservations.append(earlier_booking(row, rng, clock, days_ago=(1, 30)))
        insert_rows(db, "mtu_restaurants_reservations", reservations)
        set_counter(db, "RES", len(reservations))

    # ---- helpers ---------------------------------------------------------------------------
    @staticmethod
    def _view(v: dict[str, Any]) -> dict[str, Any]:
        return {
            "restaurant_name": v["restaurant_name"],
            "city": v["city"],
            "location": v["city"],
            "cuisine": v["cuisine"],
            "category": v["cuisine"],
            "price_range": PRICE_LABELS[v["price_level"]],
            "rating": v["rating"],
            "serves_alcohol": bool(v["serves_alcohol"]),
            "has_live_music": bool(v["has_live_music"]),
            "has_seating_outdoors": bool(v["has_seating_outdoors"]),
            "has_vegetarian_options": bool(v["has_vegetarian_options"]),
            "phone_number": v["phone_number"],
            "street_address": v["street_address"],
            "address": f"{v['street_address']}, {v['city']}",
        }

    @staticmethod
    def _multiwoz_view(v: dict[str, Any]) -> dict[str, Any]:
        return {
            "name": v["restaurant_name"],
            "area": v["area"],
            "food": v["cuisine"].lower(),
            "pricerange": MULTIWOZ_PRICES[v["price_level"]],
            "address": v["street_address"],
            "postcode": v["postcode"],
            "phone": v["phone_number"],
            "city": v["city"],
        }

    def _by_name(self, name: str, city: str | None, town: str | None = None) -> dict[str, Any]:
        """The restaurant with this name (in `city`); `town` breaks a tie between cities."""
        rows = self.rows(
            "SELECT * FROM mtu_restaurants_venues WHERE lower(restaurant_name) = ? ORDER BY restaurant_id",
            (canon(name),),
        )
        if city is not None:
            wanted = city_name(city)
            rows = [r for r in rows if r["city"] == wanted]
        elif len(rows) > 1 and town is not None:
            rows = [r for r in rows if r["city"] == town] or rows
        if not rows:
            raise not_found("restaurant", name if city is None else f"{name} in {city}")
        if len(rows) > 1:
            raise bad_request(
                f"{len(rows)} restaurants are called {name!r}; give the city",
                cities=[r["city"] for r in rows],
            )
        return rows[0]

    def _seats_taken(self, restaurant_id: str, day: date, at: int) -> int:
        taken = 0
        for r in self.rows(
            "SELECT time, party_size FROM mtu_restaurants_reservations"
            " WHERE restaurant_id = ? AND date = ? AND status = 'confirmed'",
            (restaurant_id, day.isoformat()),
        ):
            if abs(minutes(r["time"]) - at) < SITTING_MINUTES:
                taken += r["party_size"]
        return int(taken)

    def _book(self, v: dict[str, Any], day: date, clock_time: str, party: int) -> dict[str, Any]:
        now = self.now()
        at = minutes(clock_time)
        if (day, at) < (now.date(), now.hour * 60 + now.minute):
            raise unprocessable(f"{day.isoformat()} {clock_time} is in the past")
        if not minutes(v["opens"]) <= at <= minutes(v["closes"]) - 60:
            raise unprocessable(
                f"{v['restaurant_name']} takes reservations from {v['opens']} until an hour before"
                f" it closes at {v['closes']}"
            )
        free = v["capacity"] - self._seats_taken(v["restaurant_id"], day, at)
        if party > free:
            raise conflict(
                f"{v['restaurant_name']} has no table for {party} on {day.isoformat()} at {clock_time}"
                f" ({max(free, 0)} seats left)"
            )
        reservation_id = self.next_id("RES")
        self.execute(
            "INSERT INTO mtu_restaurants_reservations VALUES (?, ?, ?, ?, ?, 'confirmed', ?)",
            (reservation_id, v["restaurant_id"], day.isoformat(), clock_time, party, self.now_iso()),
        )
        return {
            "reservation_id": reservation_id,
            "date": day.isoformat(),
            "time": clock_time,
            "party_size": party,
        }

    # ---- SGD -----------------------------------------------------------------------------------
    @read(name="FindRestaurants")
    def find_restaurants(
        self,
        cuisine: Annotated[str | None, Param("cuisine, e.g. Italian (or use category)")] = None,
        city: Annotated[str | None, Param("city (or use location)")] = None,
        category: Annotated[str | None, Param("cuisine category, same as cuisine")] = None,
        location: Annotated[str | None, Param("city, same as city")] = None,
        price_range: Annotated[str, Param("price range", enum=(*PRICE_RANGES, DONTCARE))] = DONTCARE,
        has_live_music: Annotated[Flag, Param("True, False or dontcare")] = DONTCARE,
        serves_alcohol: Annotated[Flag, Param("True, False or dontcare")] = DONTCARE,
        has_seating_outdoors: Annotated[Flag, Param("True, False or dontcare")] = DONTCARE,
        has_vegetarian_options: Annotated[Flag, Param("True, False or dontcare")] = DONTCARE,
    ) -> dict[str, Any]:
        """Find a restaurant of a particular cuisine in a city; best rated first."""
        _, food = one_of({"cuisine": cuisine, "category": category}, "FindRestaurants")
        _, where = one_of({"city": city, "location": location}, "FindRestaurants")
        flags = {
            "has_live_music": flag("has_live_music", has_live_music),
            "serves_alcohol": flag("serves_alcohol", serves_alcohol),
            "has_seating_outdoors": flag("has_seating_outdoors", has_seating_outdoors),
            "has_vegetarian_options": flag("has_vegetarian_options", has_vegetarian_options),
        }
        query = Query(
            "SELECT * FROM mtu_restaurants_venues WHERE city = ? AND lower(cuisine) = ?",
            city_name(str(where)) or str(where),
            canon(str(food)),
        )
        if price_range != DONTCARE:
            query.where_in("price_level", PRICE_RANGES[price_range])
        rows = query.flags(flags).rows(self, "rating DESC, restaurant_name, restaurant_id")
        return ok(count=len(rows), restaurants=[self._view(r) for r in rows[:10]])

    @write(name="ReserveRestaurant")
    def reserve_restaurant(
        self,
        restaurant_name: Annotated[str, Param("the restaurant's name")],
        time: Annotated[str, Param("time of the reservation, HH:MM")],
        city: Annotated[str | None, Param("city of the restaurant (or use location)")] = None,
        location: Annotated[str | None, Param("city of the restaurant, same as city")] = None,
        date: Annotated[str, Param("date YYYY-MM-DD; default today")] = "today",
        party_size: Annotated[Count, Param("number of people")] = "2",
        number_of_seats: Annotated[Count | None, Param("number of seats, same as party_size")] = None,
    ) -> dict[str, Any]:
        """Reserve a table at a restaurant."""
        v = self._by_name(restaurant_name, city or location)
        day = parse_day("date", date, self.now().date())
        party = count("party_size", number_of_seats if number_of_seats is not None else party_size, hi=60)
        booking = self._book(v, day, parse_clock("time", time), party)
        return ok(**self._view(v), **booking, number_of_seats=party)

    # ---- MultiWOZ / SNIPS ------------------------------------------------------------------------
    @read(name="SearchRestaurant")
    def search_restaurant(
        self,
        area: Annotated[str, Param("part of town (centre, north, south, east, west) or a city")],
        name: Annotated[str | None, Param("restaurant name")] = None,
        priceRange: Annotated[str | None, Param("cheap, moderate or expensive")] = None,
        food: Annotated[str | None, Param("type of food, e.g. indian")] = None,
        return_info: Annotated[tuple[str, ...], Param("fields to return: all, name, address, phone, ...")] = (
            "all",
        ),
    ) -> dict[str, Any]:
        """Search restaurants by area, name, price range and food."""
        query = where_area(Query("SELECT * FROM mtu_restaurants_venues WHERE 1"), area)
        if priceRange is not None and canon(priceRange) != DONTCARE:
            wanted = choice("priceRange", priceRange, ("cheap", "moderate", "expensive"))
            query.where_in("price_level", [k for k, label in MULTIWOZ_PRICES.items() if label == wanted])
        if food is not None and canon(food) != DONTCARE:
            query.where("lower(cuisine) = ?", canon(food))
        rows = query.rows(self, "restaurant_name, restaurant_id")
        if name is not None:
            rows = [r for r in rows if words_in(name, r["restaurant_name"])]
        found = [select_fields(self._multiwoz_view(r), return_info) for r in rows]
        return ok(count=len(found), restaurants=found[:10])

    @write(name="BookRestaurant")
    def book_restaurant(
        self,
        name: Annotated[str | None, Param("the restaurant's name")] = None,
        day: Annotated[str | None, Param("date of the reservation (YYYY-MM-DD or a weekday)")] = None,
        time: Annotated[str | None, Param("time of the reservation, HH:MM")] = None,
        people: Annotated[Count | None, Param("number of people")] = None,
        return_info: Annotated[tuple[str, ...], Param("fields to return: all, name, phone, address, ...")] = (
            "all",
        ),
        poi: Annotated[str | None, Param("a point of interest near the restaurant")] = None,
        party_size_description: Annotated[str | None, Param("who is coming, e.g. 'me and my 3 kids'")] = None,
        served_dish: Annotated[str | None, Param("a dish the restaurant should serve")] = None,
        restaurant_name: Annotated[str | None, Param("the restaurant's name, same as name")] = None,
        restaurant_type: Annotated[str | None, Param("kind of place: bistro, pub, diner, ...")] = None,
        facility: Annotated[str | None, Param("a facility: wifi, parking, ...")] = None,
        spatial_relation: Annotated[str | None, Param("e.g. 'close to'")] = None,
        party_size_number: Annotated[Count | None, Param("number of people, same as people")] = None,
        cuisine: Annotated[str | None, Param("cuisine")] = None,
        country: Annotated[str | None, Param("country")] = None,
        sort: Annotated[str | None, Param("which match to take: best (default) or cheapest")] = None,
        state: Annotated[str | None, Param("state")] = None,
        city: Annotated[str | None, Param("city")] = None,
        timeRange: Annotated[str | None, Param("when: 'tomorrow', '7 pm', 'saturday at 8pm'")] = None,
    ) -> dict[str, Any]:
        """Make a restaurant reservation: a named restaurant, or the best match of the filters."""
        today = self.now().date()
        wanted = name or restaurant_name
        if wanted:
            # MultiWOZ's calls name a restaurant of its town without saying which town
            v = self._by_name(wanted, city, town="Cambridge")
        else:
            v = self._best_match(city, state, country, cuisine, restaurant_type, served_dish, facility, sort)
        # when: explicit day/time first, then whatever timeRange says
        when_day, when_time = self._parse_time_range(timeRange, today) if timeRange else (None, None)
        booking_day = parse_day("day", day, today) if day else when_day or today
        clock_time = parse_clock("time", time) if time else when_time
        party = self._party(people if people is not None else party_size_number, party_size_description)
        if clock_time is None:
            clock_time = self._first_free_dinner_slot(v, booking_day, party)
        booking = self._book(v, booking_day, clock_time, party)
        details = {
            **self._multiwoz_view(v),
            "cuisine": v["cuisine"],
            "day": booking["date"],
            "time": booking["time"],
            "people": party,
            "reference": booking["reservation_id"],
        }
        return ok(
            reservation_confirmation=(
                f"Table for {party} at {v['restaurant_name']}, {v['street_address']}, {v['city']}"
                f" on {booking['date']} at {booking['time']}; reference {booking['reservation_id']}"
            ),
            restaurant_details=select_fields(details, return_info),
            reservation_id=booking["reservation_id"],
        )

    def _best_match(
        self,
        city: str | None,
        state: str | None,
        country: str | None,
        cuisine: str | None,
        restaurant_type: str | None,
        served_dish: str | None,
        facility: str | None,
        sort: str | None,
    ) -> dict[str, Any]:
        if not (city or state or country):
            raise bad_request("BookRestaurant: name the restaurant, or give a city, state or country")
        rows = self.rows("SELECT * FROM mtu_restaurants_venues ORDER BY restaurant_id")
        if city:
            rows = [r for r in rows if r["city"] == (city_name(city) or city)]
        if state:
            rows = [r for r in rows if canon(r["state"]) == canon(state)]
        if country:
            rows = [r for r in rows if canon(r["country"]) == canon(country)]
        for kind in (cuisine, restaurant_type):
            if kind:
                rows = [r for r in rows if canon(kind) in (canon(r["cuisine"]), canon(r["venue_type"]))]
        if served_dish:
            rows = [r for r in rows if any(words_in(served_dish, d) for d in r["dishes"].split(","))]
        if facility:
            rows = [r for r in rows if any(words_in(facility, f) for f in r["facilities"].split(","))]
        if not rows:
            raise not_found("restaurant matching", {"city": city, "state": state, "country": country})
        if sort and "cheap" in canon(sort):
            rows.sort(key=lambda r: (r["price_level"], -r["rating"], r["restaurant_name"]))
        else:
            rows.sort(key=lambda r: (-r["rating"], r["restaurant_name"]))
        return rows[0]

    @staticmethod
    def _parse_time_range(text: str, today: date) -> tuple[date | None, str | None]:
        """'saturday at 8 pm' -> (that Saturday, '20:00'); parts that are not a day or a time are ignored."""
        day: date | None = None
        clock_time: str | None = None
        lowered = canon(text)
        for sep in (" at ", " for ", " around "):
            if sep in lowered:
                head, tail = lowered.split(sep, 1)
                return (
                    RestaurantsApp._try_day(head, today),
                    RestaurantsApp._try_time(tail),
                )
        day = RestaurantsApp._try_day(lowered, today)
        if day is None:
            clock_time = RestaurantsApp._try_time(lowered.removeprefix("at "))
        return day, clock_time

    @staticmethod
    def _try_day(text: str, today: date) -> date | None:
        try:
            return parse_day("timeRange", text, today)
        except Exception:
            return None

    @staticmethod
    def _try_time(text: str) -> str | None:
        try:
            return parse_clock("timeRange", text)
        except Exception:
            return None

    @staticmethod
    def _party(number: Count | None, description: str | None) -> int:
        if number is not None:
            return count("people", number, hi=60)
        if description:
            # "me and my 3 kids" -> 1 + 3; "my wife and i" -> 2
            total = 0
            for part in canon(description).replace(",", " and ").split(" and "):
                try:
                    total += count("party_size_description", part.removeprefix("my ").strip(), lo=0)
                except Exception:
                    total += 1 if part.strip() else 0
            return max(total, 1)
        return 2

    def _first_free_dinner_slot(self, v: dict[str, Any], day: date, party: int) -> str:
        """No time given: the first half-hour from 19:00 on that still has room (a host's offer)."""
        start = max(minutes(DEFAULT_DINNER), minutes(v["opens"]))
        for at in range(start, minutes(v["closes"]) - 59, 30):
            if v["capacity"] - self._seats_taken(v["restaurant_id"], day, at) >= party:
                return f"{at // 60:02d}:{at % 60:02d}"
        raise conflict(f"{v['restaurant_name']} has no table for {party} on {day.isoformat()} evening")


finalize_tools(RestaurantsApp)
