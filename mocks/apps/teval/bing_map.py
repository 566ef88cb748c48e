"""T-Eval BINGMap: places, distances, routes and nearby search in the United States.

Semantics: ~75 known locations (cities and landmarks with real approximate coordinates) resolve
by name, case-insensitively, with or without ", ST"/", USA"; unknown ones are a 404. Distances are
great-circle distances times a road factor of 1.2 (km, one decimal). A route is built from the
geometry: a north-south leg on the interstate of that longitude band and an east-west leg on the
interstate of that latitude band (local roads for short trips), with leg lengths summing to the
distance. Nearby search filters ~700 seeded places by category or name within the radius (metres,
default 5000) around a named location or a latitude/longitude, nearest first, at most 5.
"""

from __future__ import annotations

import math
import random
import re
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import read
from toolgym.mocks.apps.teval.common import (
    COMPASS_EN,
    TevalApp,
    bearing_deg,
    compass_index,
    norm,
    places_near,
)
from toolgym.mocks.responses import bad_request, not_found, ok
from toolgym.mocks.seeding import haversine_km, insert_rows, point_near
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

ROAD_FACTOR: Final = 1.2
DEFAULT_RADIUS_M: Final = 5000.0
MAX_RADIUS_M: Final = 50000.0
MAX_PLACES: Final = 5
SHORT_LEG_KM: Final = 40.0

# name, city, state, latitude, longitude, kind
LOCATIONS: Final[tuple[tuple[str, str, str, float, float, str], ...]] = (
    ("New York", "New York", "NY", 40.7128, -74.0060, "city"),
    ("Los Angeles", "Los Angeles", "CA", 34.0522, -118.2437, "city"),
    ("Chicago", "Chicago", "IL", 41.8781, -87.6298, "city"),
    ("Houston", "Houston", "TX", 29.7604, -95.3698, "city"),
    ("Phoenix", "Phoenix", "AZ", 33.4484, -112.0740, "city"),
    ("Philadelphia", "Philadelphia", "PA", 39.9526, -75.1652, "city"),
    ("San Antonio", "San Antonio", "TX", 29.4241, -98.4936, "city"),
    ("San Diego", "San Diego", "CA", 32.7157, -117.1611, "city"),
    ("Dallas", "Dallas", "TX", 32.7767, -96.7970, "city"),
    ("San Jose", "San Jose", "CA", 37.3382, -121.8863, "city"),
    ("Austin", "Austin", "TX", 30.2672, -97.7431, "city"),
    ("Seattle", "Seattle", "WA", 47.6062, -122.3321, "city"),
    ("San Francisco", "San Francisco", "CA", 37.7749, -122.4194, "city"),
    ("Denver", "Denver", "CO", 39.7392, -104.9903, "city"),
    ("Boston", "Boston", "MA", 42.3601, -71.0589, "city"),
    ("Washington", "Washington", "DC", 38.9072, -77.0369, "city"),
    ("Nashville", "Nashville", "TN", 36.1627, -86.7816, "city"),
    ("Las Vegas", "Las Vegas", "NV", 36.1699, -115.1398, "city"),
    ("Portland", "Portland", "OR", 45.5152, -122.6784, "city"),
    ("Miami", "Miami", "FL", 25.7617, -80.1918, "city"),
    ("Atlanta", "Atlanta", "GA", 33.7490, -84.3880, "city"),
    ("Orlando", "Orlando", "FL", 28.5383, -81.3792, "city"),
    ("Minneapolis", "Minneapolis", "MN", 44.9778, -93.2650, "city"),
    ("Detroit", "Detroit", "MI", 42.3314, -83.0458, "city"),
    ("New Orleans", "New Orleans", "LA", 29.9511, -90.0715, "city"),
    ("Salt Lake City", "Salt Lake City", "UT", 40.7608, -111.8910, "city"),
    ("Pittsburgh", "Pittsburgh", "PA", 40.4406, -79.9959, "city"),
    ("Baltimore", "Baltimore", "MD", 39.2904, -76.6122, "city"),
    ("St. Louis", "St. Louis", "MO", 38.6270, -90.1994, "city"),
    ("Kansas City", "Kansas City", "MO", 39.0997, -94.5786, "city"),
    ("Sacramento", "Sacramento", "CA", 38.5816, -121.4944, "city"),
    ("Charlotte", "Charlotte", "NC", 35.2271, -80.8431, "city"),
    ("Honolulu", "Honolulu", "HI", 21.3069, -157.8583, "city"),
    ("Albuquerque", "Albuquerque", "NM", 35.0844, -106.6504, "city"),
    ("Statue of Liberty", "New York", "NY", 40.6892, -74.0445, "landmark"),
    ("Empire State Building", "New York", "NY", 40.7484, -73.9857, "landmark"),
    ("Times Square", "New York", "NY", 40.7580, -73.9855, "landmark"),
    ("Central Park", "New York", "NY", 40.7829, -73.9654, "landmark"),
    ("JFK Airport", "New York", "NY", 40.6413, -73.7781, "airport"),
    ("Golden Gate Bridge", "San Francisco", "CA", 37.8199, -122.4783, "landmark"),
    ("Alcatraz Island", "San Francisco", "CA", 37.8270, -122.4230, "landmark"),
    ("Stanford University", "Stanford", "CA", 37.4275, -122.1697, "university"),
    ("Space Needle", "Seattle", "WA", 47.6205, -122.3493, "landmark"),
    ("Pike Place Market", "Seattle", "WA", 47.6097, -122.3422, "landmark"),
    ("Seattle-Tacoma International Airport", "SeaTac", "WA", 47.4502, -122.3088, "airport"),
    ("Hollywood Sign", "Los Angeles", "CA", 34.1341, -118.3215, "landmark"),
    ("Santa Monica Pier", "Santa Monica", "CA", 34.0100, -118.4962, "landmark"),
    ("Griffith Observatory", "Los Angeles", "CA", 34.1184, -118.3004, "landmark"),
    ("LAX Airport", "Los Angeles", "CA", 33.9416, -118.4085, "airport"),
    ("Disneyland", "Anaheim", "CA", 33.8121, -117.9190, "landmark"),
    ("White House", "Washington", "DC", 38.8977, -77.0365, "landmark"),
    ("Lincoln Memorial", "Washington", "DC", 38.8893, -77.0502, "landmark"),
    ("United States Capitol", "Washington", "DC", 38.8899, -77.0091, "landmark"),
    ("Willis Tower", "Chicago", "IL", 41.8789, -87.6359, "landmark"),
    ("Millennium Park", "Chicago", "IL", 41.8826, -87.6226, "landmark"),
    ("Navy Pier", "Chicago", "IL", 41.8917, -87.6086, "landmark"),
    ("O'Hare Airport", "Chicago", "IL", 41.9742, -87.9073, "airport"),
    ("Fenway Park", "Boston", "MA", 42.3467, -71.0972, "landmark"),
    ("Harvard University", "Cambridge", "MA", 42.3770, -71.1167, "university"),
    ("MIT", "Cambridge", "MA", 42.3601, -71.0942, "university"),
    ("Las Vegas Strip", "Las Vegas", "NV", 36.1147, -115.1728, "landmark"),
    ("Hoover Dam", "Boulder City", "NV", 36.0161, -114.7377, "landmark"),
    ("Grand Canyon Village", "Grand Canyon", "AZ", 36.0544, -112.1401, "landmark"),
    ("Walt Disney World", "Orlando", "FL", 28.3852, -81.5639, "landmark"),
    ("Liberty Bell", "Philadelphia", "PA", 39.9496, -75.1503, "landmark"),
    ("The Alamo", "San Antonio", "TX", 29.4260, -98.4861, "landmark"),
    ("Gateway Arch", "St. Louis", "MO", 38.6247, -90.1848, "landmark"),
    ("French Quarter", "New Orleans", "LA", 29.9584, -90.0644, "landmark"),
    ("Mount Rushmore", "Keystone", "SD", 43.8791, -103.4591, "landmark"),
    ("Old Faithful", "Yellowstone National Park", "WY", 44.4605, -110.8281, "landmark"),
    ("Waikiki Beach", "Honolulu", "HI", 21.2793, -157.8292, "landmark"),
)
ALIASES: Final = {
    "nyc": "New York",
    "new york city": "New York",
    "manhattan": "New York",
    "la": "Los Angeles",
    "sf": "San Francisco",
    "washington dc": "Washington",
    "washington, d.c.": "Washington",
    "dc": "Washington",
    "us capitol": "United States Capitol",
    "alamo": "The Alamo",
    "sea-tac airport": "Seattle-Tacoma International Airport",
    "jfk": "JFK Airport",
    "lax": "LAX Airport",
}
# category: (search words, name pool)
CATEGORIES: Final[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    "restaurant": (
        ("restaurant", "restaurants", "food", "dinner", "lunch", "diner", "eat"),
        (
            "Blue Door Diner",
            "Golden Spoon Bistro",
            "Harbor Grill",
            "Maple Street Kitchen",
            "Taqueria Sol",
            "Little Saigon Pho",
            "Nonna's Trattoria",
            "Smokehouse BBQ",
            "Sakura Sushi",
            "Green Fork Cafe",
        ),
    ),
    "coffee shop": (
        ("coffee", "cafe", "café", "espresso", "coffee shop"),
        (
            "Bean There Coffee",
            "Daily Grind",
            "Morning Ritual Espresso",
            "Copper Kettle Cafe",
            "Third Wave Roasters",
        ),
    ),
    "hotel": (
        ("hotel", "hotels", "motel", "inn", "lodging", "stay"),
        ("Riverside Inn", "Grand Plaza Hotel", "Parkview Suites", "Budget Lodge", "The Landmark Hotel"),
    ),
    "gas station": (
        ("gas", "gas station", "fuel", "petrol"),
        ("QuickFuel", "Liberty Gas", "Sunrise Fuel Stop", "Metro Gas & Go"),
    ),
    "pharmacy": (
        ("pharmacy", "drugstore", "medicine"),
        ("CityCare Pharmacy", "Corner Drugstore", "HealthFirst Pharmacy"),
    ),
    "grocery store": (
        ("grocery", "groceries", "supermarket", "market"),
        ("FreshMart", "Green Basket Market", "Neighborhood Grocer", "Harvest Foods"),
    ),
    "park": (
        ("park", "parks", "playground", "garden"),
        ("Riverside Park", "Oak Hollow Park", "Veterans Memorial Park", "Sunset Gardens"),
    ),
    "museum": (
        ("museum", "museums", "gallery", "exhibit"),
        (
            "City History Museum",
            "Museum of Modern Art and Design",
            "Science Discovery Center",
            "Maritime Museum",
        ),
    ),
    "hospital": (
        ("hospital", "emergency", "clinic", "doctor"),
        ("St. Mary's Hospital", "General Medical Center", "Urgent Care Clinic"),
    ),
    "bank": (
        ("bank", "atm", "banks"),
        ("First National Bank", "Community Credit Union", "Summit Savings Bank"),
    ),
    "parking": (
        ("parking", "garage", "car park"),
        ("Central Parking Garage", "Park & Go Lot", "Midtown Parking"),
    ),
}
STREETS: Final = (
    "Main St",
    "Oak Ave",
    "Pine St",
    "Market St",
    "1st Ave",
    "Broadway",
    "Elm St",
    "Washington Blvd",
    "Lincoln Ave",
    "Park Ave",
    "Maple Dr",
    "Cedar Ln",
    "Lake Shore Dr",
    "Sunset Blvd",
    "Mission St",
)


def _north_south_interstate(lon: float) -> str:
    for limit, road in (
        (-119.0, "I-5"),
        (-113.0, "I-15"),
        (-100.0, "I-25"),
        (-91.0, "I-35"),
        (-86.0, "I-65"),
        (-81.0, "I-75"),
    ):
        if lon < limit:
            return road
    return "I-95"


def _east_west_interstate(lat: float) -> str:
    for limit, road in ((32.0, "I-10"), (35.5, "I-40"), (39.5, "I-70"), (43.0, "I-80")):
        if lat < limit:
            return road
    return "I-90"


class BINGMap(TevalApp):
    name = "teval_bing_map"
    teval_tool: ClassVar[str] = "BINGMap"
    description = "Plugin for look up map information in American"
    schema = """
    CREATE TABLE teval_bing_map_locations (
        location_id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        city TEXT NOT NULL,
        state TEXT NOT NULL,
        latitude REAL NOT NULL,
        longitude REAL NOT NULL,
        kind TEXT NOT NULL
    );
    CREATE TABLE teval_bing_map_places (
        place_id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        category TEXT NOT NULL,
        address TEXT NOT NULL,
        latitude REAL NOT NULL,
        longitude REAL NOT NULL
    );
    """

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        insert_rows(
            db,
            "teval_bing_map_locations",
            [
                {
                    "location_id": i,
                    "name": n,
                    "city": c,
                    "state": s,
                    "latitude": la,
                    "longitude": lo,
                    "kind": k,
                }
                for i, (n, c, s, la, lo, k) in enumerate(LOCATIONS, 1)
            ],
        )
        places: list[dict[str, Any]] = []
        categories = sorted(CATEGORIES)
        for _, city, state, lat, lon, kind in LOCATIONS:
            for _ in range(14 if kind == "city" else 6):
                category = rng.choice(categories)
                plat, plon = point_near(rng, lat, lon, 4.0)
                places.append(
                    {
                        "place_id": len(places) + 1,
                        "name": rng.choice(CATEGORIES[category][1]),
                        "category": category,
                        "address": f"{rng.randint(10, 9899)} {rng.choice(STREETS)}, {city}, {state}",
                        "latitude": round(plat, 6),
                        "longitude": round(plon, 6),
                    }
                )
        insert_rows(db, "teval_bing_map_places", places)

    # ---- helpers --------------------------------------------------------------------------------
    def find_location(self, text: str) -> dict[str, Any] | None:
        key = norm(text).removesuffix(", usa").removesuffix(", united states").removesuffix(" usa").strip()
        key = ALIASES.get(key, key)
        found = self.row("SELECT * FROM teval_bing_map_locations WHERE lower(name) = ?", (key.lower(),))
        if found is None and "," in key:  # "Seattle, WA"
            name, _, state = key.rpartition(",")
            found = self.row(
                "SELECT * FROM teval_bing_map_locations WHERE lower(name) = ? AND lower(state) = ?",
                (name.strip().lower(), state.strip().lower()),
            )
        return found

    def _location(self, text: str, param: str) -> dict[str, Any]:
        if not text.strip():
            raise bad_request(f"{param} must not be empty")
        found = self.find_location(text)
        if found is None:
            raise not_found("location", text)
        return found

    @staticmethod
    def _road_km(a: dict[str, Any], b: dict[str, Any]) -> float:
        return haversine_km(a["latitude"], a["longitude"], b["latitude"], b["longitude"]) * ROAD_FACTOR

    # ---- APIs -----------------------------------------------------------------------------------
    @read
    def get_distance(
        self,
        start: Annotated[str, Param("The start location.")],
        end: Annotated[str, Param("The end location.")],
    ) -> dict[str, Any]:
        """Get the distance between two locations in km."""
        a, b = self._location(start, "start"), self._location(end, "end")
        return ok(distance=round(self._road_km(a, b), 1))

    @read
    def get_route(
        self,
        start: Annotated[str, Param("The start location.")],
        end: Annotated[str, Param("The end location.")],
    ) -> dict[str, Any]:
        """Get the route between two locations in km."""
        a, b = self._location(start, "start"), self._location(end, "end")
        total = self._road_km(a, b)
        if total == 0:
            return ok(route=[f"You are already at {b['name']}."])
        heading = COMPASS_EN[
            compass_index(bearing_deg(a["latitude"], a["longitude"], b["latitude"], b["longitude"]))
        ]
        route = [f"Head {heading} from {a['name']}, {a['state']}."]
        # split the trip into its north-south and east-west parts, in proportion to the offsets
        dy = abs(b["latitude"] - a["latitude"])
        dx = abs(b["longitude"] - a["longitude"]) * math.cos(
            math.radians((a["latitude"] + b["latitude"]) / 2)
        )
        ns_km = round(total * dy / (dx + dy), 1) if dx + dy else 0.0
        ew_km = round(total - ns_km, 1)
        if total < SHORT_LEG_KM:
            route.append(f"Follow local roads {heading} for {round(total, 1)} km.")
        else:
            ns_dir = "north" if b["latitude"] > a["latitude"] else "south"
            ew_dir = "east" if b["longitude"] > a["longitude"] else "west"
            ns_road, ew_road = _north_south_interstate(a["longitude"]), _east_west_interstate(b["latitude"])
            # a short leg is driven on local roads, not on an interstate
            for km, text in (
                (ns_km, f"Take {ns_road} {ns_dir} for {ns_km} km."),
                (ew_km, f"Take {ew_road} {ew_dir} for {ew_km} km."),
            ):
                if km >= SHORT_LEG_KM:
                    route.append(text)
                elif km > 0:
                    route.append(f"Follow local roads for {km} km.")
        route.append(f"Arrive at {b['name']}, {b['state']}. Total distance: {round(total, 1)} km.")
        return ok(route=route)

    @read
    def get_coordinates(
        self, location: Annotated[str, Param("the location need to get coordinates.")]
    ) -> dict[str, Any]:
        """Get the coordinates of a location."""
        found = self._location(location, "location")
        return ok(latitude=found["latitude"], longitude=found["longitude"])

    @read
    def search_nearby(
        self,
        search_term: Annotated[str, Param("the place name (the location name may come at the end)")],
        places: Annotated[str | None, Param("the name of the location.")] = None,
        latitude: Annotated[float | None, Param("the latitude of the location.")] = None,
        longitude: Annotated[float | None, Param("the longitude of the location.")] = None,
        radius: Annotated[float | None, Param("radius in meters (default 5000).")] = None,
    ) -> dict[str, Any]:
        """Search for places nearby a location, within a given radius, and return the results into a list. Put the location name at the end of the query."""
        term = norm(search_term)
        center: tuple[float, float] | None = None
        if places is not None and places.strip():
            loc = self._location(places, "places")
            center = (loc["latitude"], loc["longitude"])
        elif latitude is not None or longitude is not None:
            if latitude is None or longitude is None:
                raise bad_request("give both latitude and longitude")
            if not (-90 <= latitude <= 90 and -180 <= longitude <= 180):
                raise bad_request("latitude must be in [-90, 90] and longitude in [-180, 180]")
            center = (latitude, longitude)
        else:
            # "coffee near Space Needle": the location is the longest known name ending the query
            for cut in range(len(term.split()) - 1, 0, -1):
                head, tail = " ".join(term.split()[:-cut]), " ".join(term.split()[-cut:])
                named = self.find_location(tail)
                if named is not None:
                    center, term = (named["latitude"], named["longitude"]), head
                    break
            term = re.sub(r"\s+(near|in|around|at|close to)$", "", term).strip()
            if center is None:
                raise bad_request(
                    "name a location: `places`, `latitude`/`longitude`, or end the search_term with it"
                )
        r_m = DEFAULT_RADIUS_M if radius is None else radius
        if not 0 < r_m <= MAX_RADIUS_M:
            raise bad_request(f"radius must be in (0, {MAX_RADIUS_M:.0f}] metres, got {r_m}")
        if not term:
            raise bad_request("search_term must say what to look for")
        wanted = {
            c for c, (keys, _) in CATEGORIES.items() if any(k == term or k in term.split() for k in keys)
        }
        found = places_near(self, "teval_bing_map_places", center, r_m, wanted, term, MAX_PLACES, per_km=1000)
        return ok(places=found)
