"""Maps: places in five cities, geocoding, reverse geocoding, routes, nearby search, favourites.

Semantics: each city has streets laid out as straight lines with house numbers every 25 m, so an
address geocodes by interpolation along its street and a coordinate reverse-geocodes to the nearest
point of the nearest street (the way real geocoders interpolate). Districts are the Voronoi cells
of seeded district centers. Places stand at real street addresses of that grid. Routes use the
great-circle (haversine) distance times a detour factor per mode, with a speed per mode; walking,
cycling and transit have a maximum range. Nearby search really measures distances and sorts by
them. Reviews update the place's average rating and review count.
"""

from __future__ import annotations

import math
import random
import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Volatile, format_id, read, set_counter, write
from toolgym.mocks.apps.ctool._common import FIRST_NAMES, LAST_NAMES, app_now, iso, utc
from toolgym.mocks.responses import bad_request, check_range, conflict, not_found, ok, unprocessable
from toolgym.mocks.seeding import haversine_km, insert_rows, offset_point, person_name
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

# city -> (center latitude, center longitude, district names)
CITIES: Final[dict[str, tuple[float, float, tuple[str, ...]]]] = {
    "Beijing": (39.9042, 116.4074, ("Dongcheng", "Xicheng", "Chaoyang", "Haidian", "Fengtai")),
    "Shanghai": (31.2304, 121.4737, ("Huangpu", "Xuhui", "Jing'an", "Pudong", "Changning")),
    "Guangzhou": (23.1291, 113.2644, ("Tianhe", "Yuexiu", "Haizhu", "Liwan", "Baiyun")),
    "Shenzhen": (22.5431, 114.0579, ("Futian", "Nanshan", "Luohu", "Bao'an", "Longgang")),
    "Hangzhou": (30.2741, 120.1551, ("Xihu", "Shangcheng", "Gongshu", "Binjiang", "Yuhang")),
}
CITY_NAMES: Final = tuple(CITIES)
STREET_NAMES: Final = (
    "Zhongshan Road",
    "Renmin Avenue",
    "Jiefang Road",
    "Heping Street",
    "Xinhua Road",
    "Jianguo Road",
    "Chang'an Avenue",
    "Yan'an Road",
    "Dongfeng Road",
    "Huaihai Road",
    "Wenhua Street",
    "Binjiang Avenue",
)
CATEGORIES: Final = (
    "restaurant",
    "cafe",
    "hotel",
    "hospital",
    "pharmacy",
    "bank",
    "supermarket",
    "gas_station",
    "parking",
    "park",
    "museum",
    "subway_station",
    "shopping_mall",
    "cinema",
    "gym",
)
NAME_PARTS: Final[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    # category: (first words, last words)
    "restaurant": (
        ("Golden", "Jade", "Old Town", "Lucky", "Red Lantern", "Spicy", "Harbor", "Bamboo"),
        ("Noodle House", "Dumpling Bar", "Hotpot", "Roast Duck", "Dim Sum", "Kitchen", "Bistro"),
    ),
    "cafe": (("Morning", "Corner", "Cloud", "Maple", "Velvet", "Blue Door"), ("Coffee", "Cafe", "Tea House")),
    "hotel": (("Grand", "Riverside", "Garden", "Skyline", "Heritage", "Lotus"), ("Hotel", "Inn", "Suites")),
    "hospital": (("First People's", "Central", "Union", "Children's", "Traditional Medicine"), ("Hospital",)),
    "pharmacy": (("Health", "Kangjian", "Family", "Green Cross"), ("Pharmacy", "Drugstore")),
    "bank": (("Merchants", "Commerce", "Agricultural", "Construction", "Harbor"), ("Bank Branch",)),
    "supermarket": (("Fresh", "Daily", "Happy", "Family"), ("Mart", "Supermarket", "Market")),
    "gas_station": (("Sino", "East", "Highway", "City"), ("Petrol Station", "Gas Station")),
    "parking": (("Central", "Plaza", "Underground", "Riverside"), ("Car Park", "Parking Lot")),
    "park": (("People's", "Lakeside", "Century", "Peach Blossom", "Riverside"), ("Park", "Gardens")),
    "museum": (("City", "Provincial", "Science", "Art", "Silk"), ("Museum", "Gallery")),
    "subway_station": (("Line 1", "Line 2", "Line 3", "Line 4"), ("Station",)),
    "shopping_mall": (("Wanda", "Times", "Joy City", "Galaxy", "Starlight"), ("Plaza", "Mall", "Center")),
    "cinema": (("Starlight", "Golden Reel", "Imax", "Palace"), ("Cinema", "Cineplex")),
    "gym": (("Iron", "Pulse", "Fit", "Peak"), ("Gym", "Fitness", "Studio")),
}
MODES: Final[dict[str, tuple[float, float, float | None]]] = {
    # mode: (detour factor, average km/h, longest route in km or None)
    "walking": (1.25, 5.0, 50.0),
    "cycling": (1.25, 15.0, 100.0),
    "transit": (1.3, 22.0, 80.0),
    "driving": (1.35, 35.0, None),
}
MODE_NAMES: Final = tuple(MODES)
TRANSIT_WAIT_MIN: Final = 6
HIGHWAY_FROM_KM: Final = 30.0  # driving: beyond this the route takes highways at 80 km/h
HIGHWAY_KMH: Final = 80.0
HOUSE_SPACING_KM: Final = 0.025
MAX_HOUSE: Final = 240
STREETS_PER_CITY: Final = 10
PLACES_PER_CITY: Final = 130
KM_PER_DEG_LAT: Final = 111.32
SORT_KEYS: Final = ("relevance", "rating", "review_count", "name")
ADDRESS_RE: Final = re.compile(r"^\s*(?:no\.?\s*)?(\d+)\s*,?\s+(.+)$", re.IGNORECASE)


def offset(lat: float, lon: float, north_km: float, east_km: float) -> tuple[float, float]:
    """The point `north_km` north and `east_km` east of (lat, lon), on this app's degree length."""
    return offset_point(lat, lon, north_km, east_km, KM_PER_DEG_LAT)


def _local_km(lat0: float, lon0: float, lat: float, lon: float) -> tuple[float, float]:
    """(north, east) in km of (lat, lon) from (lat0, lon0)."""
    return (lat - lat0) * KM_PER_DEG_LAT, (lon - lon0) * KM_PER_DEG_LAT * math.cos(math.radians(lat0))


def _compass(north: float, east: float) -> str:
    angle = (math.degrees(math.atan2(east, north)) + 360) % 360
    return ("north", "northeast", "east", "southeast", "south", "southwest", "west", "northwest")[
        round(angle / 45) % 8
    ]


def _check_point(lat: float, lon: float, what: str = "") -> None:
    if not (-90 <= lat <= 90 and -180 <= lon <= 180):
        raise bad_request(f"{what}coordinates out of range: ({lat}, {lon})")


class MapsApp(App):
    name = "maps"
    description = (
        "A maps app for Beijing, Shanghai, Guangzhou, Shenzhen and Hangzhou: geocode addresses, "
        "reverse geocode coordinates, plan routes, find places nearby, save favourites, write reviews."
    )
    version = "1"
    schema = """
    CREATE TABLE maps_districts (
        city TEXT NOT NULL,
        district TEXT NOT NULL,
        lat REAL NOT NULL,
        lon REAL NOT NULL,
        PRIMARY KEY (city, district)
    );
    CREATE TABLE maps_streets (
        street_id TEXT PRIMARY KEY,
        city TEXT NOT NULL,
        name TEXT NOT NULL,
        start_lat REAL NOT NULL,
        start_lon REAL NOT NULL,
        bearing_deg REAL NOT NULL,
        max_number INTEGER NOT NULL,
        UNIQUE (city, name)
    );
    CREATE TABLE maps_places (
        place_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        category TEXT NOT NULL,
        city TEXT NOT NULL,
        district TEXT NOT NULL,
        address TEXT NOT NULL,
        lat REAL NOT NULL,
        lon REAL NOT NULL,
        rating REAL NOT NULL,
        review_count INTEGER NOT NULL,
        price_level INTEGER,
        phone TEXT NOT NULL,
        opening_hours TEXT NOT NULL
    );
    CREATE INDEX maps_places_geo ON maps_places(lat, lon);
    CREATE TABLE maps_users (
        user_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        home_city TEXT NOT NULL
    );
    CREATE TABLE maps_saved_places (
        user_id TEXT NOT NULL,
        place_id TEXT NOT NULL,
        label TEXT NOT NULL,
        saved_at TEXT NOT NULL,
        PRIMARY KEY (user_id, place_id)
    );
    CREATE TABLE maps_reviews (
        review_id TEXT PRIMARY KEY,
        place_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        rating INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),
        text TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE INDEX maps_reviews_place ON maps_reviews(place_id);
    """
    volatile: ClassVar[Volatile] = {"maps_saved_places": ["saved_at"], "maps_reviews": ["created_at"]}

    # ---- seed data ---------------------------------------------------------------------------
    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        now = utc(clock)
        districts: list[dict[str, Any]] = []
        streets: list[dict[str, Any]] = []
        places: list[dict[str, Any]] = []
        for city, (lat0, lon0, names) in CITIES.items():
            for k, district in enumerate(names):
                # the first district sits at the center, the others around it
                angle = 2 * math.pi * k / (len(names) - 1) + rng.uniform(-0.3, 0.3)
                radius = 0.0 if k == 0 else rng.uniform(5, 9)
                lat, lon = offset(lat0, lon0, radius * math.cos(angle), radius * math.sin(angle))
                districts.append({"city": city, "district": district, "lat": lat, "lon": lon})
            city_districts = districts[-len(names) :]
            for name in rng.sample(STREET_NAMES, STREETS_PER_CITY):
                lat, lon = offset(lat0, lon0, rng.uniform(-8, 8), rng.uniform(-8, 8))
                streets.append(
                    {
                        "street_id": format_id("ST", len(streets) + 1, 4),
                        "city": city,
                        "name": name,
                        "start_lat": round(lat, 6),
                        "start_lon": round(lon, 6),
                        "bearing_deg": float(rng.randrange(0, 360, 5)),
                        "max_number": rng.randrange(120, MAX_HOUSE + 1, 20),
                    }
                )
            city_streets = streets[-STREETS_PER_CITY:]
            used: set[str] = set()
            for _ in range(PLACES_PER_CITY):
                category = rng.choice(CATEGORIES)
                firsts, lasts = NAME_PARTS[category]
                street = rng.choice(city_streets)
                number = rng.randint(1, street["max_number"])
                lat, lon = self._house_point(street, number)
                district = min(city_districts, key=lambda d: haversine_km(lat, lon, d["lat"], d["lon"]))[
                    "district"
                ]
                name = f"{rng.choice(firsts)} {rng.choice(lasts)}"
                if name in used:  # branches of one name are told apart by their street
                    name = f"{name} ({street['name']})"
                if name in used:
                    continue
                used.add(name)
                commercial = category in ("restaurant", "cafe", "hotel", "shopping_mall", "cinema", "gym")
                places.append(
                    {
                        "place_id": format_id("PL", len(places) + 1, 5),
                        "name": name,
                        "category": category,
                        "city": city,
                        "district": district,
                        "address": f"{number} {street['name']}, {district}, {city}",
                        "lat": round(lat, 6),
                        "lon": round(lon, 6),
                        "rating": round(rng.uniform(3.0, 4.9), 1),
                        "review_count": rng.randint(3, 3000),
                        "price_level": rng.randint(1, 4) if commercial else None,
                        "phone": f"0{rng.randint(10, 99)}-{rng.randint(10000000, 99999999)}",
                        "opening_hours": "00:00-24:00"
                        if category in ("hospital", "gas_station", "parking", "subway_station")
                        else rng.choice(("09:00-21:00", "10:00-22:00", "07:00-19:00", "11:00-23:00")),
                    }
                )
        insert_rows(db, "maps_districts", districts)
        insert_rows(db, "maps_streets", streets)
        insert_rows(db, "maps_places", places)

        users = [
            {
                "user_id": f"MU{i:03d}",
                "name": person_name(rng, FIRST_NAMES, LAST_NAMES),
                "home_city": rng.choice(CITY_NAMES),
            }
            for i in range(1, 41)
        ]
        insert_rows(db, "maps_users", users)
        saved: dict[tuple[str, str], dict[str, Any]] = {}
        reviews: list[dict[str, Any]] = []
        for u in users:
            local = [p for p in places if p["city"] == u["home_city"]]
            for p in rng.sample(local, rng.randint(0, 5)):
                saved[(u["user_id"], p["place_id"])] = {
                    "user_id": u["user_id"],
                    "place_id": p["place_id"],
                    "label": rng.choice(("Favourite", "Want to go", "Work", "")),
                    "saved_at": iso(now - timedelta(days=rng.randint(1, 300))),
                }
            for p in rng.sample(local, rng.randint(0, 4)):
                reviews.append(
                    {
                        "review_id": format_id("RV", len(reviews) + 1),
                        "place_id": p["place_id"],
                        "user_id": u["user_id"],
                        "rating": rng.randint(2, 5),
                        "text": rng.choice(
                            ("Great spot.", "A bit crowded.", "Friendly staff.", "Would come back.")
                        ),
                        "created_at": iso(now - timedelta(days=rng.randint(1, 300))),
                    }
                )
        insert_rows(db, "maps_saved_places", list(saved.values()))
        insert_rows(db, "maps_reviews", reviews)
        set_counter(db, "RV", len(reviews))

    # ---- geometry ----------------------------------------------------------------------------
    @staticmethod
    def _house_point(street: dict[str, Any], number: int) -> tuple[float, float]:
        along = (number - 1) * HOUSE_SPACING_KM
        bearing = math.radians(street["bearing_deg"])
        return offset(
            street["start_lat"], street["start_lon"], along * math.cos(bearing), along * math.sin(bearing)
        )

    def _district(self, city: str, lat: float, lon: float) -> str:
        rows = self.rows(
            "SELECT district, lat, lon FROM maps_districts WHERE city = ? ORDER BY district", (city,)
        )
        return str(min(rows, key=lambda d: haversine_km(lat, lon, d["lat"], d["lon"]))["district"])

    def _nearest_city(self, lat: float, lon: float) -> tuple[str, float]:
        city = min(CITIES, key=lambda c: haversine_km(lat, lon, CITIES[c][0], CITIES[c][1]))
        return city, haversine_km(lat, lon, CITIES[city][0], CITIES[city][1])

    def _address(self, street: dict[str, Any], number: int) -> dict[str, Any]:
        lat, lon = self._house_point(street, number)
        district = self._district(street["city"], lat, lon)
        return {
            "formatted_address": f"{number} {street['name']}, {district}, {street['city']}",
            "house_number": number,
            "street": street["name"],
            "district": district,
            "city": street["city"],
            "lat": round(lat, 6),
            "lon": round(lon, 6),
        }

    def _place(self, place_id: str) -> dict[str, Any]:
        return self.get_or_404("maps_places", "place_id", place_id, what="place")

    def _user(self, user_id: str) -> dict[str, Any]:
        return self.get_or_404("maps_users", "user_id", user_id, what="user")

    @staticmethod
    def _place_view(p: dict[str, Any]) -> dict[str, Any]:
        return {
            k: p[k]
            for k in ("place_id", "name", "category", "city", "district", "address", "lat", "lon", "rating")
        } | {"review_count": p["review_count"]}

    # ---- geocoding -------------------------------------------------------------------------------
    @read
    def geocode(
        self,
        address: Annotated[
            str, Param("an address like '120 Zhongshan Road, Shanghai', a place name or a city")
        ],
        city: Annotated[str | None, Param("restrict to this city", enum=CITY_NAMES)] = None,
    ) -> dict[str, Any]:
        """Turn an address, a place name or a city name into coordinates; best match first."""
        text = address.strip()
        if not text:
            raise bad_request("address must not be empty")
        lowered = text.lower()
        if city is None:
            city = next((c for c in CITY_NAMES if c.lower() in lowered), None)
        candidates: list[dict[str, Any]] = []
        m = ADDRESS_RE.match(text)
        if m is not None:
            number, rest = int(m.group(1)), m.group(2).lower()
            sql, params = "SELECT * FROM maps_streets", []
            if city is not None:
                sql, params = sql + " WHERE city = ?", [city]
            for street in self.rows(sql + " ORDER BY street_id", params):
                if rest.startswith(street["name"].lower()):
                    if number > street["max_number"]:
                        continue
                    candidates.append({**self._address(street, number), "match_type": "street_address"})
        if not candidates:
            # the query names the place, or is part of its name
            where = "(instr(lower(?), lower(name)) > 0 OR instr(lower(name), ?) > 0)"
            params = [text, lowered]
            if city is not None:
                where += " AND city = ?"
                params.append(city)
            sql = f"SELECT * FROM maps_places WHERE {where} ORDER BY review_count DESC, place_id LIMIT 5"
            for p in self.rows(sql, params):
                candidates.append(
                    {
                        "formatted_address": p["address"],
                        "district": p["district"],
                        "city": p["city"],
                        "lat": p["lat"],
                        "lon": p["lon"],
                        "match_type": "place",
                        "place_id": p["place_id"],
                        "place_name": p["name"],
                    }
                )
        if not candidates and city is not None and lowered in (city.lower(), f"{city.lower()} city"):
            lat, lon, _ = CITIES[city]
            candidates.append(
                {"formatted_address": city, "city": city, "lat": lat, "lon": lon, "match_type": "city"}
            )
        if not candidates:
            raise not_found("address", address)
        return ok(query=address, total=len(candidates), results=candidates)

    @read
    def reverse_geocode(
        self,
        lat: Annotated[float, Param("latitude")],
        lon: Annotated[float, Param("longitude")],
    ) -> dict[str, Any]:
        """The nearest street address to a coordinate (within 1 km of a street), district and city."""
        _check_point(lat, lon)
        city, from_center = self._nearest_city(lat, lon)
        if from_center > 40:
            raise not_found("address near", f"{lat},{lon}")
        best: tuple[float, dict[str, Any], int] | None = None
        for street in self.rows("SELECT * FROM maps_streets WHERE city = ? ORDER BY street_id", (city,)):
            north, east = _local_km(street["start_lat"], street["start_lon"], lat, lon)
            bearing = math.radians(street["bearing_deg"])
            along = north * math.cos(bearing) + east * math.sin(bearing)  # projection on the street
            number = min(max(round(along / HOUSE_SPACING_KM) + 1, 1), street["max_number"])
            p_lat, p_lon = self._house_point(street, number)
            d = haversine_km(lat, lon, p_lat, p_lon)
            if best is None or d < best[0]:
                best = (d, street, number)
        district = self._district(city, lat, lon)
        if best is None or best[0] > 1.0:
            return ok(
                formatted_address=f"{district}, {city}",
                street=None,
                house_number=None,
                district=district,
                city=city,
                distance_m=None,
            )
        d, street, number = best
        found = self._address(street, number)
        return ok(
            formatted_address=found["formatted_address"],
            street=street["name"],
            house_number=number,
            district=found["district"],
            city=city,
            distance_m=round(d * 1000),
        )

    # ---- routes --------------------------------------------------------------------------------
    @read
    def plan_route(
        self,
        origin_lat: Annotated[float, Param("start latitude")],
        origin_lon: Annotated[float, Param("start longitude")],
        destination_lat: Annotated[float, Param("destination latitude")],
        destination_lon: Annotated[float, Param("destination longitude")],
        mode: Annotated[str, Param("how to travel", enum=MODE_NAMES)] = "driving",
    ) -> dict[str, Any]:
        """Distance and travel time between two points for walking, cycling, transit or driving."""
        _check_point(origin_lat, origin_lon, "origin ")
        _check_point(destination_lat, destination_lon, "destination ")
        factor, speed, longest = MODES[mode]
        straight = haversine_km(origin_lat, origin_lon, destination_lat, destination_lon)
        distance = straight * factor
        if longest is not None and distance > longest:
            raise unprocessable(
                f"no {mode} route: {distance:.1f} km is beyond the {longest:g} km {mode} limit",
                distance_km=round(distance, 2),
            )
        if mode == "driving":
            hours = min(distance, HIGHWAY_FROM_KM) / speed + max(distance - HIGHWAY_FROM_KM, 0) / HIGHWAY_KMH
        else:
            hours = distance / speed
        minutes = hours * 60 + (TRANSIT_WAIT_MIN if mode == "transit" and distance > 0 else 0)
        north, east = _local_km(origin_lat, origin_lon, destination_lat, destination_lon)
        heading = _compass(north, east)
        steps = (
            []
            if straight < 0.001
            else [
                f"Head {heading} for {distance:.1f} km"
                + (" (board at the nearest station, includes waiting)" if mode == "transit" else ""),
                "Arrive at the destination",
            ]
        )
        return ok(
            mode=mode,
            distance_km=round(distance, 2),
            straight_line_km=round(straight, 2),
            duration_minutes=round(minutes),
            arrival_time=iso(app_now(self) + timedelta(minutes=round(minutes))),
            steps=steps,
        )

    # ---- places --------------------------------------------------------------------------------
    @read
    def search_nearby_places(
        self,
        lat: Annotated[float, Param("latitude of the center")],
        lon: Annotated[float, Param("longitude of the center")],
        category: Annotated[str | None, Param("only this kind of place", enum=CATEGORIES)] = None,
        radius_m: Annotated[int, Param("search radius in meters, 1-50000")] = 1000,
        keyword: Annotated[str | None, Param("word in the place name")] = None,
        min_rating: Annotated[float | None, Param("lowest rating, 0-5")] = None,
        limit: Annotated[int, Param("most results, 1-50")] = 10,
    ) -> dict[str, Any]:
        """Places within a radius of a point, nearest first, with their distance."""
        _check_point(lat, lon)
        check_range("radius_m", radius_m, 1, 50000)
        check_range("limit", limit, 1, 50)
        if min_rating is not None:
            check_range("min_rating", min_rating, 0, 5)
        km = radius_m / 1000
        (lat_lo, lon_lo), (lat_hi, lon_hi) = offset(lat, lon, -km, -km), offset(lat, lon, km, km)
        sql = "SELECT * FROM maps_places WHERE lat BETWEEN ? AND ? AND lon BETWEEN ? AND ?"
        params: list[Any] = [lat_lo, lat_hi, lon_lo, lon_hi]
        if category is not None:
            sql += " AND category = ?"
            params.append(category)
        if keyword:
            sql += " AND instr(lower(name), ?) > 0"
            params.append(keyword.strip().lower())
        if min_rating is not None:
            sql += " AND rating >= ?"
            params.append(min_rating)
        found = []
        for p in self.rows(sql, params):
            d = haversine_km(lat, lon, p["lat"], p["lon"]) * 1000
            if d <= radius_m:
                found.append((round(d), p["place_id"], p))
        found.sort(key=lambda t: (t[0], t[1]))
        return ok(
            total=len(found),
            places=[{**self._place_view(p), "distance_m": d} for d, _, p in found[:limit]],
        )

    @read
    def search_places(
        self,
        query: Annotated[str, Param("words in the name or category; empty = all")] = "",
        city: Annotated[str | None, Param("only this city", enum=CITY_NAMES)] = None,
        category: Annotated[str | None, Param("only this category", enum=CATEGORIES)] = None,
        district: Annotated[str | None, Param("only this district")] = None,
        sort_by: Annotated[str, Param("sort key", enum=SORT_KEYS)] = "relevance",
        limit: Annotated[int, Param("most results, 1-50")] = 10,
    ) -> dict[str, Any]:
        """Search places by text with filters; relevance puts name matches first, then popularity."""
        check_range("limit", limit, 1, 50)
        sql, params = "SELECT * FROM maps_places WHERE 1", []
        terms = [t.lower() for t in query.split()]
        for t in terms:
            sql += " AND instr(lower(name || ' ' || replace(category, '_', ' ')), ?) > 0"
            params.append(t)
        for col, value in (("city", city), ("category", category), ("district", district)):
            if value is not None:
                sql += f" AND lower({col}) = lower(?)"
                params.append(value)
        order = {
            "relevance": "review_count DESC",
            "rating": "rating DESC, review_count DESC",
            "review_count": "review_count DESC",
            "name": "name ASC",
        }[sort_by]
        rows = self.rows(sql + f" ORDER BY {order}, place_id", params)
        if sort_by == "relevance" and terms:
            rows.sort(key=lambda p: -sum(t in p["name"].lower() for t in terms))  # stable: keeps popularity
        return ok(total=len(rows), places=[self._place_view(p) for p in rows[:limit]])

    @read
    def get_place_details(self, place_id: Annotated[str, Param("place id, e.g. PL-00042")]) -> dict[str, Any]:
        """Everything about a place: address, coordinates, rating, phone, hours, latest reviews."""
        p = self._place(place_id)
        reviews = self.rows(
            "SELECT review_id, user_id, rating, text, created_at FROM maps_reviews WHERE place_id = ?"
            " ORDER BY created_at DESC, review_id DESC LIMIT 3",
            (place_id,),
        )
        return ok(place={**p, "latest_reviews": reviews})

    @read
    def list_place_categories(self) -> dict[str, Any]:
        """The place categories and how many places each has."""
        rows = self.rows("SELECT category, count(*) AS place_count FROM maps_places GROUP BY category")
        counts = {r["category"]: r["place_count"] for r in rows}
        return ok(categories=[{"category": c, "place_count": counts.get(c, 0)} for c in CATEGORIES])

    # ---- favourites and reviews -----------------------------------------------------------------
    @write
    def save_place(
        self,
        user_id: Annotated[str, Param("user id, e.g. MU001")],
        place_id: Annotated[str, Param("place id")],
        label: Annotated[str, Param("a label such as Home, Work or Want to go")] = "",
    ) -> dict[str, Any]:
        """Add a place to the user's saved places."""
        self._user(user_id)
        p = self._place(place_id)
        exists = self.scalar(
            "SELECT 1 FROM maps_saved_places WHERE user_id = ? AND place_id = ?", (user_id, place_id)
        )
        if exists is not None:
            raise conflict(f"{p['name']} is already in {user_id}'s saved places")
        self.execute(
            "INSERT INTO maps_saved_places VALUES (?, ?, ?, ?)",
            (user_id, place_id, label, iso(app_now(self))),
        )
        return ok(user_id=user_id, place_id=place_id, name=p["name"], label=label)

    @read
    def list_saved_places(self, user_id: Annotated[str, Param("user id")]) -> dict[str, Any]:
        """The user's saved places, most recently saved first."""
        self._user(user_id)
        rows = self.rows(
            "SELECT s.label, s.saved_at, p.* FROM maps_saved_places s JOIN maps_places p USING (place_id)"
            " WHERE s.user_id = ? ORDER BY s.saved_at DESC, p.place_id",
            (user_id,),
        )
        return ok(
            user_id=user_id,
            places=[{**self._place_view(r), "label": r["label"], "saved_at": r["saved_at"]} for r in rows],
        )

    @write
    def remove_saved_place(
        self,
        user_id: Annotated[str, Param("user id")],
        place_id: Annotated[str, Param("place id")],
    ) -> dict[str, Any]:
        """Remove a place from the user's saved places."""
        self._user(user_id)
        cur = self.execute(
            "DELETE FROM maps_saved_places WHERE user_id = ? AND place_id = ?", (user_id, place_id)
        )
        if cur.rowcount == 0:
            raise not_found("saved place", place_id)
        return ok(user_id=user_id, place_id=place_id, removed=True)

    @write
    def add_place_review(
        self,
        user_id: Annotated[str, Param("user id")],
        place_id: Annotated[str, Param("place id")],
        rating: Annotated[int, Param("stars, 1-5")],
        text: Annotated[str, Param("the review")] = "",
    ) -> dict[str, Any]:
        """Review a place (once per user); its average rating and review count are updated."""
        self._user(user_id)
        p = self._place(place_id)
        check_range("rating", rating, 1, 5)
        if self.scalar("SELECT 1 FROM maps_reviews WHERE user_id = ? AND place_id = ?", (user_id, place_id)):
            raise conflict(f"{user_id} has already reviewed {place_id}")
        review_id = self.next_id("RV")
        self.execute(
            "INSERT INTO maps_reviews VALUES (?, ?, ?, ?, ?, ?)",
            (review_id, place_id, user_id, rating, text, iso(app_now(self))),
        )
        count = p["review_count"] + 1
        average = round((p["rating"] * p["review_count"] + rating) / count, 2)
        self.execute(
            "UPDATE maps_places SET rating = ?, review_count = ? WHERE place_id = ?",
            (average, count, place_id),
        )
        return ok(review_id=review_id, place_id=place_id, rating=average, review_count=count)
