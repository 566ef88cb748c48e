"""T-Eval AirbnbSearch: short-term rentals in ~38 destinations outside China.

Semantics: ~450 properties with a type, capacity, coordinates near their neighbourhood, a nightly
price, a cleaning fee and a minimum stay; each has 1-6 reviews and its rating is the mean of
them. The calendar is the set of seeded reservations: a night is available when no reservation
covers it, so availability and checkout prices really depend on it. Searching by place matches
the city, country or neighbourhood and returns the 3 best-rated matches. A checkout price is the
sum of the nightly prices (Friday and Saturday nights cost 15% more) plus the cleaning fee; a
stay with a booked night is a 409, one shorter than the minimum stay or in the past a 422.
"""

from __future__ import annotations

import math
import random
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import read
from toolgym.mocks.apps.teval.common import TevalApp, norm, parse_day
from toolgym.mocks.responses import bad_request, conflict, from_cents, ok, unprocessable
from toolgym.mocks.seeding import insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

CALENDAR_DAYS: Final = 365
AVAILABILITY_WINDOW: Final = 10
MAX_NIGHTS: Final = 60
WEEKEND_UPLIFT: Final = 1.15
PER_CITY: Final = 12
BOOKED_AHEAD_DAYS: Final = 75  # guests book up to ~2.5 months ahead; later nights are all free

# city, country, latitude, longitude, neighbourhoods, price level (1 = cheap .. 5 = dear)
CITIES: Final[tuple[tuple[str, str, float, float, tuple[str, str, str], int], ...]] = (
    ("Paris", "France", 48.8566, 2.3522, ("Le Marais", "Montmartre", "Saint-Germain"), 4),
    ("London", "United Kingdom", 51.5074, -0.1278, ("Soho", "Camden", "Notting Hill"), 5),
    ("New York", "United States", 40.7128, -74.0060, ("Brooklyn", "Harlem", "Chelsea"), 5),
    ("Tokyo", "Japan", 35.6762, 139.6503, ("Shinjuku", "Shibuya", "Asakusa"), 3),
    ("Kyoto", "Japan", 35.0116, 135.7681, ("Gion", "Arashiyama", "Higashiyama"), 3),
    ("Rome", "Italy", 41.9028, 12.4964, ("Trastevere", "Monti", "Testaccio"), 3),
    ("Barcelona", "Spain", 41.3874, 2.1686, ("Gracia", "El Born", "Eixample"), 3),
    ("Amsterdam", "Netherlands", 52.3676, 4.9041, ("Jordaan", "De Pijp", "Oud-West"), 4),
    ("Berlin", "Germany", 52.5200, 13.4050, ("Kreuzberg", "Mitte", "Prenzlauer Berg"), 3),
    ("Lisbon", "Portugal", 38.7223, -9.1393, ("Alfama", "Bairro Alto", "Belem"), 2),
    ("Sydney", "Australia", -33.8688, 151.2093, ("Bondi", "Surry Hills", "Manly"), 4),
    ("Bangkok", "Thailand", 13.7563, 100.5018, ("Sukhumvit", "Silom", "Riverside"), 1),
    ("Bali", "Indonesia", -8.4095, 115.1889, ("Ubud", "Seminyak", "Canggu"), 2),
    ("Seoul", "South Korea", 37.5665, 126.9780, ("Hongdae", "Gangnam", "Itaewon"), 3),
    ("Los Angeles", "United States", 34.0522, -118.2437, ("Venice", "Silver Lake", "Hollywood"), 4),
    (
        "San Francisco",
        "United States",
        37.7749,
        -122.4194,
        ("Mission District", "Nob Hill", "Haight-Ashbury"),
        5,
    ),
    ("Miami", "United States", 25.7617, -80.1918, ("South Beach", "Wynwood", "Little Havana"), 4),
    ("Chicago", "United States", 41.8781, -87.6298, ("Wicker Park", "Lincoln Park", "River North"), 3),
    ("Honolulu", "United States", 21.3069, -157.8583, ("Waikiki", "Kaimuki", "Manoa"), 4),
    ("Toronto", "Canada", 43.6532, -79.3832, ("Kensington Market", "The Annex", "Leslieville"), 3),
    ("Vancouver", "Canada", 49.2827, -123.1207, ("Gastown", "Kitsilano", "Yaletown"), 4),
    ("Mexico City", "Mexico", 19.4326, -99.1332, ("Roma Norte", "Condesa", "Coyoacan"), 2),
    ("Buenos Aires", "Argentina", -34.6037, -58.3816, ("Palermo", "San Telmo", "Recoleta"), 1),
    ("Rio de Janeiro", "Brazil", -22.9068, -43.1729, ("Copacabana", "Ipanema", "Santa Teresa"), 2),
    ("Cape Town", "South Africa", -33.9249, 18.4241, ("Sea Point", "Camps Bay", "Bo-Kaap"), 2),
    ("Marrakech", "Morocco", 31.6295, -7.9811, ("Medina", "Gueliz", "Hivernage"), 1),
    ("Istanbul", "Turkey", 41.0082, 28.9784, ("Beyoglu", "Kadikoy", "Sultanahmet"), 2),
    ("Athens", "Greece", 37.9838, 23.7275, ("Plaka", "Koukaki", "Kolonaki"), 2),
    ("Prague", "Czech Republic", 50.0755, 14.4378, ("Old Town", "Vinohrady", "Mala Strana"), 2),
    ("Vienna", "Austria", 48.2082, 16.3738, ("Innere Stadt", "Neubau", "Leopoldstadt"), 3),
    ("Dublin", "Ireland", 53.3498, -6.2603, ("Temple Bar", "Ranelagh", "Portobello"), 4),
    ("Edinburgh", "United Kingdom", 55.9533, -3.1883, ("Old Town", "Leith", "Stockbridge"), 3),
    ("Reykjavik", "Iceland", 64.1466, -21.9426, ("Midborg", "Vesturbaer", "Hlidar"), 4),
    ("Copenhagen", "Denmark", 55.6761, 12.5683, ("Norrebro", "Vesterbro", "Christianshavn"), 4),
    ("Stockholm", "Sweden", 59.3293, 18.0686, ("Sodermalm", "Ostermalm", "Gamla Stan"), 4),
    ("Dubai", "United Arab Emirates", 25.2048, 55.2708, ("Dubai Marina", "Downtown Dubai", "Jumeirah"), 4),
    ("Singapore", "Singapore", 1.3521, 103.8198, ("Tiong Bahru", "Chinatown", "Katong"), 4),
    ("Hanoi", "Vietnam", 21.0278, 105.8342, ("Old Quarter", "Tay Ho", "Ba Dinh"), 1),
)
# property type, title noun, capacity range, price factor
TYPES: Final = (
    ("Entire rental unit", "Apartment", (2, 5), 1.0),
    ("Private room in rental unit", "Room", (1, 2), 0.45),
    ("Entire home", "House", (4, 10), 1.7),
    ("Entire loft", "Loft", (2, 4), 1.2),
    ("Entire villa", "Villa", (6, 12), 2.6),
    ("Entire condo", "Condo", (2, 6), 1.1),
    ("Room in boutique hotel", "Hotel Room", (1, 3), 0.8),
    ("Entire guesthouse", "Guesthouse", (2, 4), 0.9),
)
ADJECTIVES: Final = (
    "Sunny",
    "Cozy",
    "Modern",
    "Charming",
    "Spacious",
    "Stylish",
    "Quiet",
    "Bright",
    "Rustic",
    "Elegant",
    "Minimalist",
    "Historic",
)
EXTRAS: Final = (
    "with Balcony",
    "near the Metro",
    "with City Views",
    "with Garden",
    "with Rooftop Terrace",
    "by the Park",
    "with Workspace",
    "with Free Parking",
)
PRAISE: Final = (
    "Great location",
    "Spotless and comfortable",
    "The host was very responsive",
    "Lovely view",
    "Exactly as pictured",
    "Quiet at night",
    "Perfect for a weekend",
    "Comfortable beds",
)
CRITICISM: Final = (
    "the wifi was slow",
    "a bit noisy from the street",
    "the check-in was confusing",
    "the kitchen was small",
    "the stairs were steep",
    "the shower pressure was weak",
)
GUESTS: Final = (
    "Anna",
    "Ben",
    "Carla",
    "David",
    "Elena",
    "Farid",
    "Greta",
    "Hiro",
    "Ines",
    "Jonas",
    "Kofi",
    "Lucia",
    "Mateo",
    "Nina",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sven",
    "Tara",
)


def _review(rng: random.Random, stars: int) -> str:
    if stars >= 5:
        return f"{rng.choice(PRAISE)}! {rng.choice(PRAISE)}."
    if stars == 4:
        return f"{rng.choice(PRAISE)}, though {rng.choice(CRITICISM)}."
    return f"Not great: {rng.choice(CRITICISM)} and {rng.choice(CRITICISM)}."


class AirbnbSearch(TevalApp):
    name = "teval_airbnb"
    teval_tool: ClassVar[str] = "AirbnbSearch"
    description = "Search information from airbnb Short-term rental and housing information outside China"
    schema = """
    CREATE TABLE teval_airbnb_properties (
        property_id INTEGER PRIMARY KEY,
        title TEXT NOT NULL,
        property_type TEXT NOT NULL,
        person_capacity INTEGER NOT NULL,
        rating REAL NOT NULL,
        latitude REAL NOT NULL,
        longitude REAL NOT NULL,
        neighbourhood TEXT NOT NULL,
        city TEXT NOT NULL,
        country TEXT NOT NULL,
        nightly_price_cents INTEGER NOT NULL CHECK (nightly_price_cents > 0),
        cleaning_fee_cents INTEGER NOT NULL,
        min_nights INTEGER NOT NULL
    );
    CREATE INDEX teval_airbnb_properties_city ON teval_airbnb_properties(city);
    CREATE TABLE teval_airbnb_reviews (
        review_id INTEGER PRIMARY KEY,
        property_id INTEGER NOT NULL,
        guest TEXT NOT NULL,
        comment TEXT NOT NULL,
        rating INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),
        date TEXT NOT NULL
    );
    CREATE INDEX teval_airbnb_reviews_property ON teval_airbnb_reviews(property_id, date);
    CREATE TABLE teval_airbnb_reservations (
        reservation_id INTEGER PRIMARY KEY,
        property_id INTEGER NOT NULL,
        check_in TEXT NOT NULL,
        check_out TEXT NOT NULL CHECK (check_out > check_in)
    );
    CREATE INDEX teval_airbnb_reservations_property ON teval_airbnb_reservations(property_id, check_in);
    """

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        today = clock.date()
        props: list[dict[str, Any]] = []
        reviews: list[dict[str, Any]] = []
        stays: list[dict[str, Any]] = []
        for city, country, lat, lon, hoods, level in CITIES:
            for _ in range(PER_CITY):
                ptype, noun, (lo, hi), factor = rng.choice(TYPES)
                hood = rng.choice(hoods)
                pid = 10_000 + len(props) * 7 + rng.randint(0, 6)  # sparse ids, like a real site
                # neighbourhoods sit a few km from the centre, properties around them
                h = hoods.index(hood)
                hlat = lat + 0.025 * math.cos(2.1 * h)
                hlon = lon + 0.025 * math.sin(2.1 * h) / math.cos(math.radians(lat))
                title = f"{rng.choice(ADJECTIVES)} {noun} in {hood}"
                if rng.random() < 0.5:
                    title += f" {rng.choice(EXTRAS)}"
                stars = []
                for _ in range(rng.randint(1, 6)):
                    star = rng.choices((5, 4, 3, 2), (55, 30, 10, 5))[0]
                    stars.append(star)
                    reviews.append(
                        {
                            "review_id": len(reviews) + 1,
                            "property_id": pid,
                            "guest": rng.choice(GUESTS),
                            "comment": _review(rng, star),
                            "rating": star,
                            "date": (today - timedelta(days=rng.randint(3, 700))).isoformat(),
                        }
                    )
                props.append(
                    {
                        "property_id": pid,
                        "title": title,
                        "property_type": ptype,
                        "person_capacity": rng.randint(lo, hi),
                        "rating": round(sum(stars) / len(stars), 2),
                        "latitude": round(hlat + rng.gauss(0, 0.006), 6),
                        "longitude": round(hlon + rng.gauss(0, 0.006), 6),
                        "neighbourhood": hood,
                        "city": city,
                        "country": country,
                        "nightly_price_cents": int(rng.uniform(25, 45) * level * factor) * 100 + 99,
                        "cleaning_fee_cents": rng.choice((0, 1500, 2500, 4000, 6000)),
                        "min_nights": rng.choice((1, 1, 1, 2, 2, 3)),
                    }
                )
                # reservations over the coming months: a busy place has few free nights
                day = today - timedelta(days=rng.randint(0, 5))
                occupancy = rng.uniform(0.2, 0.8)
                while day < today + timedelta(days=BOOKED_AHEAD_DAYS):
                    nights = rng.randint(2, 7)
                    if rng.random() < occupancy:
                        stays.append(
                            {
                                "reservation_id": len(stays) + 1,
                                "property_id": pid,
                                "check_in": day.isoformat(),
                                "check_out": (day + timedelta(days=nights)).isoformat(),
                            }
                        )
                    day += timedelta(days=nights + rng.randint(0, 3))
        insert_rows(db, "teval_airbnb_properties", props)
        insert_rows(db, "teval_airbnb_reviews", reviews)
        insert_rows(db, "teval_airbnb_reservations", stays)

    # ---- helpers --------------------------------------------------------------------------------
    def _property(self, property_id: int) -> dict[str, Any]:
        return self.get_or_404("teval_airbnb_properties", "property_id", property_id, what="property")

    def _booked_nights(self, property_id: int, first: date, last: date) -> set[date]:
        """The nights in [first, last) covered by a reservation."""
        rows = self.rows(
            "SELECT check_in, check_out FROM teval_airbnb_reservations"
            " WHERE property_id = ? AND check_in < ? AND check_out > ?",
            (property_id, last.isoformat(), first.isoformat()),
        )
        nights: set[date] = set()
        for r in rows:
            d = max(date.fromisoformat(r["check_in"]), first)
            end = min(date.fromisoformat(r["check_out"]), last)
            while d < end:
                nights.add(d)
                d += timedelta(days=1)
        return nights

    # ---- APIs -----------------------------------------------------------------------------------
    @read
    def search_property_by_place(
        self, place: Annotated[str, Param("The name of the destination.")]
    ) -> dict[str, Any]:
        """This function takes various parameters to search properties on Airbnb (at most 3, best rated first)."""
        key = norm(place)
        if not key:
            raise bad_request("place must not be empty")
        parts = [p.strip() for p in key.split(",") if p.strip()]
        # best rated first; among equal ratings, the one with more reviews
        rows = self.rows(
            "SELECT p.property_id, p.title, p.neighbourhood, p.city, p.country, p.rating,"
            " (SELECT count(*) FROM teval_airbnb_reviews r WHERE r.property_id = p.property_id) AS reviews"
            " FROM teval_airbnb_properties p ORDER BY p.rating DESC, reviews DESC, p.property_id"
        )

        def matches(r: dict[str, Any]) -> bool:
            fields = {r["city"].lower(), r["country"].lower(), r["neighbourhood"].lower()}
            return all(p in fields for p in parts)

        found = [r for r in rows if matches(r)][:3]
        return ok(
            property=[
                {
                    "id": r["property_id"],
                    "name": r["title"],
                    "address": f"{r['neighbourhood']}, {r['city']}, {r['country']}",
                }
                for r in found
            ]
        )

    @read
    def get_property_details(
        self, propertyId: Annotated[int, Param("The ID of the property.")]
    ) -> dict[str, Any]:
        """This function retrieves the details of a property given its ID."""
        p = self._property(propertyId)
        return ok(
            title=p["title"],
            propertyType=p["property_type"],
            personCapacity=p["person_capacity"],
            rating=p["rating"],
            latitude=p["latitude"],
            longitude=p["longitude"],
        )

    @read
    def check_availability(
        self,
        propertyId: Annotated[int, Param("The ID of the property.")],
        date: Annotated[str | None, Param("The date to check, it must in the format of YYYY-MM-DD.")] = None,
    ) -> dict[str, Any]:
        """This function checks the availability of a property given its ID (for the date, or the next 10 days)."""
        self._property(propertyId)
        today = self.now().date()
        if date is None:
            first, count = today, AVAILABILITY_WINDOW
        else:
            first, count = parse_day("date", date), 1
            if first < today:
                raise unprocessable(f"{date} is in the past")
            if first >= today + timedelta(days=CALENDAR_DAYS):
                raise unprocessable(f"the calendar is open for {CALENDAR_DAYS} days only")
        last = first + timedelta(days=count)
        booked = self._booked_nights(propertyId, first, last)
        days = [first + timedelta(days=i) for i in range(count)]
        return ok(availability=[{"date": d.isoformat(), "available": d not in booked} for d in days])

    @read
    def get_property_reviews(
        self, propertyId: Annotated[int, Param("The ID of the property.")]
    ) -> dict[str, Any]:
        """This function retrieves the reviews of a property given its ID (the 3 most recent)."""
        self._property(propertyId)
        rows = self.rows(
            "SELECT comment, rating, date FROM teval_airbnb_reviews WHERE property_id = ?"
            " ORDER BY date DESC, review_id DESC LIMIT 3",
            (propertyId,),
        )
        return ok(reviews=rows)

    @read
    def get_property_checkout_price(
        self,
        propertyId: Annotated[int, Param("The ID of the property.")],
        checkIn: Annotated[str, Param("The check-in date, it must in the format of YYYY-MM-DD.")],
        checkOut: Annotated[str, Param("The check-out date, it must in the format of YYYY-MM-DD.")],
    ) -> dict[str, Any]:
        """This function retrieves the checkout cost of a property given its ID and check-in date (in USD)."""
        p = self._property(propertyId)
        first, last = parse_day("checkIn", checkIn), parse_day("checkOut", checkOut)
        if last <= first:
            raise bad_request("checkOut must be after checkIn")
        nights = (last - first).days
        if first < self.now().date():
            raise unprocessable(f"checkIn {checkIn} is in the past")
        if nights > MAX_NIGHTS:
            raise unprocessable(f"stays are limited to {MAX_NIGHTS} nights")
        if nights < p["min_nights"]:
            raise unprocessable(f"this property needs a stay of at least {p['min_nights']} nights")
        booked = sorted(self._booked_nights(propertyId, first, last))
        if booked:
            raise conflict(
                "the property is not available for these dates",
                booked_nights=[d.isoformat() for d in booked],
            )
        cents = p["cleaning_fee_cents"]
        for i in range(nights):
            night = first + timedelta(days=i)
            rate = p["nightly_price_cents"]
            cents += round(rate * WEEKEND_UPLIFT) if night.weekday() in (4, 5) else rate
        return ok(accommodationCost=from_cents(cents))
