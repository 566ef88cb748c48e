"""MTU weather: GetWeather (an SGD variant with city and date, and a SNIPS variant with places,
points of interest, time ranges and conditions; one API takes both).

Daily weather for cities and points of interest from two weeks back to a month ahead, from a
climate by latitude and season plus seeded day-to-day noise. A question about a condition
("freezing", "hotter", "sun be out") is answered from the forecast. Dates outside the data are a
404.
"""

from __future__ import annotations

import math
import random
import re
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Volatile, format_id, read
from toolgym.mocks.apps.mtu._common import CITIES, canon, city_name, finalize_tools, parse_clock, parse_day
from toolgym.mocks.responses import bad_request, not_found, ok
from toolgym.mocks.seeding import NUMBER_WORDS, insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

# places that are not in the shared city list: (name, kind, state, country, latitude, nearest city)
EXTRA_PLACES: Final = (
    ("Omaha", "city", "Nebraska", "United States", 41.26),
    ("Searcy", "city", "Arkansas", "United States", 35.25),
    ("Colorado City", "city", "Texas", "United States", 32.39),
    ("Anchorage", "city", "Alaska", "United States", 61.22),
    ("Miami", "city", "Florida", "United States", 25.76),
    ("Honolulu", "city", "Hawaii", "United States", 21.31),
    ("Kampala", "city", "Central Region", "Uganda", 0.35),
    ("Yosemite National Park", "poi", "California", "United States", 37.87),
    ("Grand Canyon National Park", "poi", "Arizona", "United States", 36.11),
    ("Yellowstone National Park", "poi", "Wyoming", "United States", 44.43),
    ("Custer National Forest", "poi", "Montana", "United States", 45.5),
    ("Delaware and Lehigh National Heritage Corridor", "poi", "Pennsylvania", "United States", 40.6),
    ("Southford Falls State Park", "poi", "Connecticut", "United States", 41.46),
    ("Milleville Beach", "poi", "New Jersey", "United States", 39.4),
    ("Lake Tahoe", "poi", "California", "United States", 39.1),
    ("Mount Rainier National Park", "poi", "Washington", "United States", 46.85),
    ("Central Park", "poi", "New York", "United States", 40.78),
    ("Golden Gate Park", "poi", "California", "United States", 37.77),
)
DAYS_BACK: Final = 14
DAYS_AHEAD: Final = 30
HOME_CITY: Final = "San Francisco"  # "here" when the user names no place
CONDITION_WORDS: Final = {
    "sun": ("sunny", "partly cloudy"),
    "clear": ("sunny",),
    "rain": ("rain", "showers", "thunderstorms"),
    "shower": ("showers", "rain"),
    "storm": ("thunderstorms",),
    "snow": ("snow",),
    "cloud": ("cloudy", "partly cloudy", "overcast"),
    "overcast": ("overcast",),
    "fog": ("fog",),
    "wind": (),
    "humid": (),
}


def _climate_high(lat: float, day: date) -> float:
    """A seasonal daily high in Fahrenheit: warmer near the equator, northern winter in January."""
    season = math.cos(2 * math.pi * (day.timetuple().tm_yday - 200) / 365)  # +1 in mid-July
    swing = min(abs(lat), 60) / 60 * 25
    sign = 1 if lat >= 0 else -1
    return 88 - abs(lat) * 0.55 + sign * swing * season


class WeatherApp(App):
    name = "mtu_weather"
    description = "Weather: past, current and forecast daily weather for cities and parks (MTU-Bench)."
    version = "1"
    schema = """
    CREATE TABLE mtu_weather_places (
        place_id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL CHECK (kind IN ('city', 'poi')),
        state TEXT NOT NULL,
        country TEXT NOT NULL
    );
    CREATE TABLE mtu_weather_days (
        place_id TEXT NOT NULL REFERENCES mtu_weather_places(place_id),
        date TEXT NOT NULL,
        temp_high_f INTEGER NOT NULL,
        temp_low_f INTEGER NOT NULL,
        conditions TEXT NOT NULL,
        precipitation_pct INTEGER NOT NULL,
        humidity_pct INTEGER NOT NULL,
        wind_mph INTEGER NOT NULL,
        PRIMARY KEY (place_id, date)
    );
    """
    volatile: ClassVar[Volatile] = {}

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        places = [(c.name, "city", c.state, c.country, c.lat) for c in CITIES] + list(EXTRA_PLACES)
        rows: list[dict[str, Any]] = []
        days: list[dict[str, Any]] = []
        start = clock.date() - timedelta(days=DAYS_BACK)
        for i, (name, kind, state, country, lat) in enumerate(places, 1):
            place_id = format_id("PLC", i, 3)
            rows.append(
                {"place_id": place_id, "name": name, "kind": kind, "state": state, "country": country}
            )
            wet = rng.uniform(0.15, 0.55)
            drift = 0.0
            for k in range(DAYS_BACK + DAYS_AHEAD + 1):
                day = start + timedelta(days=k)
                drift = drift * 0.6 + rng.gauss(0, 4)  # weather runs in spells
                high = round(_climate_high(lat, day) + drift)
                low = high - rng.randint(8, 20)
                precip = max(0, min(100, int(rng.gauss(wet * 100, 25))))
                if precip > 60:
                    conditions = "snow" if high <= 34 else rng.choice(("rain", "showers", "thunderstorms"))
                elif precip > 35:
                    conditions = rng.choice(("cloudy", "overcast", "fog"))
                else:
                    conditions = rng.choice(("sunny", "partly cloudy"))
                days.append(
                    {
                        "place_id": place_id,
                        "date": day.isoformat(),
                        "temp_high_f": high,
                        "temp_low_f": low,
                        "conditions": conditions,
                        "precipitation_pct": precip,
                        "humidity_pct": max(15, min(100, precip + rng.randint(20, 45))),
                        "wind_mph": rng.randint(0, 25),
                    }
                )
        insert_rows(db, "mtu_weather_places", rows)
        insert_rows(db, "mtu_weather_days", days)

    # ---- helpers -------------------------------------------------------------------------------
    def _place(
        self,
        geographic_poi: str | None,
        city: str | None,
        state: str | None,
        country: str | None,
        current_location: str | None,
    ) -> dict[str, Any]:
        places = self.rows("SELECT * FROM mtu_weather_places ORDER BY place_id")
        for value in (geographic_poi, city, current_location):
            if value:
                key = canon(city_name(value) or value)
                found = [p for p in places if canon(p["name"]) == key] or [
                    p for p in places if p["kind"] == "poi" and key in canon(p["name"])
                ]
                if found:
                    return found[0]
                raise not_found("place", value)
        for column, value in (("state", state), ("country", country)):
            if value:
                found = [p for p in places if canon(p[column]) == canon(value) and p["kind"] == "city"]
                if found:
                    return found[0]  # the state's or country's first city on record
                raise not_found(column, value)
        return next(p for p in places if p["name"] == HOME_CITY)

    def _day(self, place: dict[str, Any], when: date) -> dict[str, Any]:
        found = self.row(
            "SELECT * FROM mtu_weather_days WHERE place_id = ? AND date = ?",
            (place["place_id"], when.isoformat()),
        )
        if found is None:
            raise not_found(f"weather for {place['name']} on", when.isoformat())
        return found

    @staticmethod
    def _temperature_check(text: str, day: dict[str, Any], previous: dict[str, Any] | None) -> bool:
        key = canon(text)
        if "freez" in key:
            return bool(day["temp_low_f"] <= 32)
        if any(w in key for w in ("hotter", "warmer")):
            return previous is not None and day["temp_high_f"] > previous["temp_high_f"]
        if any(w in key for w in ("chillier", "colder", "cooler")):
            return previous is not None and day["temp_high_f"] < previous["temp_high_f"]
        if any(w in key for w in ("hot", "warm")):
            return bool(day["temp_high_f"] >= 80)
        if any(w in key for w in ("cold", "chilly", "cool")):
            return bool(day["temp_high_f"] <= 50)
        raise bad_request(
            f"unknown condition_temperature {text!r}: try freezing, hot, cold, warmer, chillier"
        )

    @staticmethod
    def _description_check(text: str, day: dict[str, Any]) -> bool:
        key = canon(text)
        if "humid" in key:
            return bool(day["humidity_pct"] >= 70)
        if "wind" in key:
            return bool(day["wind_mph"] >= 15)
        for word, conditions in CONDITION_WORDS.items():
            if word in key:
                return day["conditions"] in conditions
        raise bad_request(
            f"unknown condition_description {text!r}: try sunny, rain, snow, cloudy, windy, humid"
        )

    @staticmethod
    def _time_today(text: str) -> None:
        """A timeRange that is not a day must be a moment of today: "seven pm", "in 1 minute"."""
        key = canon(text)
        if any(w in key for w in ("minute", "hour", "now", "moment", "currently", "soon")):
            return
        for word, digit in NUMBER_WORDS.items():
            key = re.sub(rf"\b{word}\b", str(digit), key) if len(word) > 2 else key
        parse_clock("timeRange", key.removeprefix("at ").removeprefix("around "))

    # ---- API ---------------------------------------------------------------------------------------
    @read(name="GetWeather")
    def get_weather(
        self,
        city: Annotated[str | None, Param("city")] = None,
        date: Annotated[str, Param("date YYYY-MM-DD, default today")] = "today",
        condition_description: Annotated[
            str | None, Param("a condition to check: sunny, rain, snow, windy")
        ] = None,
        geographic_poi: Annotated[str | None, Param("a park, beach or landmark")] = None,
        country: Annotated[str | None, Param("country")] = None,
        condition_temperature: Annotated[
            str | None, Param("a temperature to check: freezing, hot, chillier")
        ] = None,
        spatial_relation: Annotated[str | None, Param("e.g. 'near', 'in'")] = None,
        state: Annotated[str | None, Param("state")] = None,
        timeRange: Annotated[str | None, Param("when: a date, 'tomorrow', 'next friday'")] = None,
        current_location: Annotated[str | None, Param("where the user is")] = None,
    ) -> dict[str, Any]:
        """The weather of a place on a date: temperature, conditions, precipitation, humidity, wind."""
        place = self._place(geographic_poi, city, state, country, current_location)
        today = self.now().date()
        when = parse_day("date", date, today)
        if timeRange:
            try:
                when = parse_day("timeRange", timeRange, today)
            except Exception:
                self._time_today(timeRange)
        day = self._day(place, when)
        out: dict[str, Any] = {
            "city": place["name"],
            "state": place["state"],
            "country": place["country"],
            "date": day["date"],
            "temperature": day["temp_high_f"],
            "temperature_low": day["temp_low_f"],
            "conditions": day["conditions"],
            "precipitation": f"{day['precipitation_pct']}%",
            "humidity": f"{day['humidity_pct']}%",
            "wind": f"{day['wind_mph']} mph",
            "wind_speed": day["wind_mph"],
        }
        if condition_temperature:
            previous = self.row(
                "SELECT * FROM mtu_weather_days WHERE place_id = ? AND date = ?",
                (place["place_id"], (when - timedelta(days=1)).isoformat()),
            )
            out["condition_temperature_holds"] = self._temperature_check(condition_temperature, day, previous)
        if condition_description:
            out["condition_description_holds"] = self._description_check(condition_description, day)
        return ok(**out)


finalize_tools(WeatherApp)
