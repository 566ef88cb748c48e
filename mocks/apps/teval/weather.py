"""T-Eval Weather: today's weather and a forecast of up to 3 days for ~75 cities worldwide.

Semantics: each city has a daily record (overall condition, average/min/max temperature in °C)
for the 15 days from the world's start date. Temperatures follow the city's latitude, climate and
season (southern cities have summer in January); conditions follow a per-city Markov chain, and
precipitation below 1 °C falls as snow. "Today" is the simulated clock's date, so advancing the
clock moves the window; past the seeded horizon the API answers 422. Cities match by English or
Chinese name, case-insensitively, with or without a ", country" suffix; unknown ones are a 404.
"""

from __future__ import annotations

import math
import random
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import read
from toolgym.mocks.apps.teval.common import TevalApp, norm
from toolgym.mocks.responses import bad_request, not_found, ok, unprocessable
from toolgym.mocks.seeding import insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

HORIZON_DAYS: Final = 15
MAX_FORECAST_DAYS: Final = 3

# name, country, latitude, longitude, Chinese name, climate, mean-temperature correction (°C)
CITIES: Final[tuple[tuple[str, str, float, float, str, str, float], ...]] = (
    ("Beijing", "China", 39.90, 116.41, "北京", "continental", -1),
    ("Shanghai", "China", 31.23, 121.47, "上海", "subtropical", 0),
    ("Guangzhou", "China", 23.13, 113.26, "广州", "subtropical", 0),
    ("Shenzhen", "China", 22.54, 114.06, "深圳", "subtropical", 0),
    ("Hangzhou", "China", 30.27, 120.16, "杭州", "subtropical", 0),
    ("Chengdu", "China", 30.57, 104.07, "成都", "subtropical", -1),
    ("Xi'an", "China", 34.34, 108.94, "西安", "continental", 0),
    ("Nanjing", "China", 32.06, 118.80, "南京", "subtropical", 0),
    ("Wuhan", "China", 30.59, 114.31, "武汉", "subtropical", 0),
    ("Chongqing", "China", 29.56, 106.55, "重庆", "subtropical", 1),
    ("Tianjin", "China", 39.08, 117.20, "天津", "continental", -1),
    ("Harbin", "China", 45.80, 126.53, "哈尔滨", "continental", -5),
    ("Kunming", "China", 24.88, 102.83, "昆明", "maritime", -6),
    ("Xiamen", "China", 24.48, 118.09, "厦门", "subtropical", 0),
    ("Qingdao", "China", 36.07, 120.38, "青岛", "maritime", 0),
    ("Hong Kong", "China", 22.32, 114.17, "香港", "subtropical", 0),
    ("Taipei", "China", 25.03, 121.57, "台北", "subtropical", 0),
    ("Tokyo", "Japan", 35.68, 139.65, "东京", "subtropical", 0),
    ("Osaka", "Japan", 34.69, 135.50, "大阪", "subtropical", 0),
    ("Seoul", "South Korea", 37.57, 126.98, "首尔", "continental", -2),
    ("Singapore", "Singapore", 1.35, 103.82, "新加坡", "tropical", 0),
    ("Bangkok", "Thailand", 13.76, 100.50, "曼谷", "tropical", 1),
    ("Hanoi", "Vietnam", 21.03, 105.85, "河内", "subtropical", 0),
    ("Manila", "Philippines", 14.60, 120.98, "马尼拉", "tropical", 0),
    ("Jakarta", "Indonesia", -6.21, 106.85, "雅加达", "tropical", 0),
    ("Kuala Lumpur", "Malaysia", 3.14, 101.69, "吉隆坡", "tropical", 0),
    ("Mumbai", "India", 19.08, 72.88, "孟买", "tropical", 0),
    ("New Delhi", "India", 28.61, 77.21, "新德里", "continental", 4),
    ("Dubai", "United Arab Emirates", 25.20, 55.27, "迪拜", "desert", 3),
    ("Istanbul", "Turkey", 41.01, 28.98, "伊斯坦布尔", "maritime", 1),
    ("Moscow", "Russia", 55.76, 37.62, "莫斯科", "continental", -2),
    ("London", "United Kingdom", 51.51, -0.13, "伦敦", "maritime", 1),
    ("Paris", "France", 48.86, 2.35, "巴黎", "maritime", 1),
    ("Berlin", "Germany", 52.52, 13.40, "柏林", "continental", 1),
    ("Madrid", "Spain", 40.42, -3.70, "马德里", "continental", 1),
    ("Rome", "Italy", 41.90, 12.50, "罗马", "maritime", 2),
    ("Amsterdam", "Netherlands", 52.37, 4.90, "阿姆斯特丹", "maritime", 1),
    ("Vienna", "Austria", 48.21, 16.37, "维也纳", "continental", 0),
    ("Stockholm", "Sweden", 59.33, 18.07, "斯德哥尔摩", "continental", 1),
    ("Oslo", "Norway", 59.91, 10.75, "奥斯陆", "continental", 0),
    ("Reykjavik", "Iceland", 64.15, -21.94, "雷克雅未克", "maritime", 1),
    ("Athens", "Greece", 37.98, 23.73, "雅典", "maritime", 2),
    ("Lisbon", "Portugal", 38.72, -9.14, "里斯本", "maritime", 2),
    ("Dublin", "Ireland", 53.35, -6.26, "都柏林", "maritime", 1),
    ("Cairo", "Egypt", 30.04, 31.24, "开罗", "desert", 2),
    ("Nairobi", "Kenya", -1.29, 36.82, "内罗毕", "maritime", -9),
    ("Cape Town", "South Africa", -33.92, 18.42, "开普敦", "maritime", 1),
    ("Lagos", "Nigeria", 6.52, 3.38, "拉各斯", "tropical", 0),
    ("New York", "United States", 40.71, -74.01, "纽约", "continental", 0),
    ("Los Angeles", "United States", 34.05, -118.24, "洛杉矶", "maritime", 2),
    ("Chicago", "United States", 41.88, -87.63, "芝加哥", "continental", -2),
    ("Houston", "United States", 29.76, -95.37, "休斯顿", "subtropical", 1),
    ("Miami", "United States", 25.76, -80.19, "迈阿密", "tropical", 0),
    ("San Francisco", "United States", 37.77, -122.42, "旧金山", "maritime", -1),
    ("Seattle", "United States", 47.61, -122.33, "西雅图", "maritime", 0),
    ("Boston", "United States", 42.36, -71.06, "波士顿", "continental", -1),
    ("Washington", "United States", 38.91, -77.04, "华盛顿", "continental", 0),
    ("Denver", "United States", 39.74, -104.99, "丹佛", "continental", -3),
    ("Phoenix", "United States", 33.45, -112.07, "凤凰城", "desert", 4),
    ("Las Vegas", "United States", 36.17, -115.14, "拉斯维加斯", "desert", 2),
    ("Toronto", "Canada", 43.65, -79.38, "多伦多", "continental", -1),
    ("Vancouver", "Canada", 49.28, -123.12, "温哥华", "maritime", 0),
    ("Montreal", "Canada", 45.50, -73.57, "蒙特利尔", "continental", -3),
    ("Mexico City", "Mexico", 19.43, -99.13, "墨西哥城", "maritime", -8),
    ("Sao Paulo", "Brazil", -23.55, -46.63, "圣保罗", "subtropical", -2),
    ("Rio de Janeiro", "Brazil", -22.91, -43.17, "里约热内卢", "tropical", 0),
    ("Buenos Aires", "Argentina", -34.60, -58.38, "布宜诺斯艾利斯", "subtropical", 0),
    ("Lima", "Peru", -12.05, -77.04, "利马", "desert", -5),
    ("Sydney", "Australia", -33.87, 151.21, "悉尼", "subtropical", 0),
    ("Melbourne", "Australia", -37.81, 144.96, "墨尔本", "maritime", 0),
    ("Auckland", "New Zealand", -36.85, 174.76, "奥克兰", "maritime", 0),
    ("Honolulu", "United States", 21.31, -157.86, "檀香山", "tropical", 0),
)
ALIASES: Final = {
    "new york city": "New York",
    "nyc": "New York",
    "washington dc": "Washington",
    "washington, d.c.": "Washington",
    "la": "Los Angeles",
    "sf": "San Francisco",
    "peking": "Beijing",
    "xian": "Xi'an",
    "são paulo": "Sao Paulo",
}
# seasonal amplitude per degree of latitude, and how often each condition starts a spell
AMPLITUDE: Final = {
    "tropical": 0.0,
    "subtropical": 0.30,
    "maritime": 0.12,
    "continental": 0.38,
    "desert": 0.33,
}
CONDITIONS: Final = (
    "Sunny",
    "Partly cloudy",
    "Cloudy",
    "Overcast",
    "Fog",
    "Light rain",
    "Moderate rain",
    "Heavy rain",
    "Thunderstorm",
)
WEIGHTS: Final = {
    "tropical": (3, 4, 2, 1, 0.2, 2, 1.5, 1, 2),
    "subtropical": (3, 3, 2, 2, 0.8, 2, 1, 0.5, 0.5),
    "maritime": (2, 3, 3, 3, 1, 3, 1.5, 0.5, 0.2),
    "continental": (5, 3, 2, 2, 0.8, 1.5, 0.8, 0.3, 0.3),
    "desert": (12, 3, 1, 0.3, 0.1, 0.3, 0.1, 0.05, 0.1),
}
SNOW: Final = {"Light rain": "Light snow", "Moderate rain": "Snow", "Heavy rain": "Heavy snow"}


def _seasonal_mean(lat: float, climate: str, correction: float, day: date) -> float:
    base = 27 - 0.45 * max(0.0, abs(lat) - 12) + correction
    # warmest around 15 July in the north, 15 January in the south
    phase = math.cos(2 * math.pi * (day.timetuple().tm_yday - 196) / 365.25)
    return base + math.copysign(1, lat) * AMPLITUDE[climate] * abs(lat) * phase


class Weather(TevalApp):
    name = "teval_weather"
    teval_tool: ClassVar[str] = "Weather"
    description = "look up weather information in at most 3 days"
    schema = """
    CREATE TABLE teval_weather_cities (
        city_id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        country TEXT NOT NULL,
        name_zh TEXT NOT NULL,
        latitude REAL NOT NULL,
        longitude REAL NOT NULL,
        climate TEXT NOT NULL
    );
    CREATE TABLE teval_weather_daily (
        city_id INTEGER NOT NULL,
        date TEXT NOT NULL,
        overall TEXT NOT NULL,
        avg_temperature REAL NOT NULL,
        min_temperature REAL NOT NULL,
        max_temperature REAL NOT NULL,
        PRIMARY KEY (city_id, date)
    );
    """

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        cities, daily = [], []
        start = clock.date()
        for city_id, (name, country, lat, lon, zh, climate, correction) in enumerate(CITIES, 1):
            cities.append(
                {
                    "city_id": city_id,
                    "name": name,
                    "country": country,
                    "name_zh": zh,
                    "latitude": lat,
                    "longitude": lon,
                    "climate": climate,
                }
            )
            weights = WEIGHTS[climate]
            condition = rng.choices(CONDITIONS, weights)[0]
            anomaly = rng.gauss(0, 2.5)
            for offset in range(HORIZON_DAYS):
                day = start + timedelta(days=offset)
                if rng.random() > 0.5:  # spells: half the days keep yesterday's condition
                    condition = rng.choices(CONDITIONS, weights)[0]
                anomaly = 0.7 * anomaly + rng.gauss(0, 1.8)  # warm and cold spells persist too
                avg = _seasonal_mean(lat, climate, correction, day) + anomaly
                if condition in ("Cloudy", "Overcast", "Fog") or "rain" in condition:
                    avg -= 1.0
                shown = condition
                if avg < 1.0 and condition in SNOW:
                    shown = SNOW[condition]
                elif avg < 16.0 and condition == "Thunderstorm":
                    shown = "Moderate rain" if avg >= 1.0 else "Snow"
                spread = (3.0 if shown in ("Sunny", "Partly cloudy") else 1.8) * (
                    1.6 if climate in ("desert", "continental") else 1.0
                )
                daily.append(
                    {
                        "city_id": city_id,
                        "date": day.isoformat(),
                        "overall": shown,
                        "avg_temperature": round(avg, 1),
                        "min_temperature": round(avg - spread - rng.random(), 1),
                        "max_temperature": round(avg + spread + rng.random(), 1),
                    }
                )
        insert_rows(db, "teval_weather_cities", cities)
        insert_rows(db, "teval_weather_daily", daily)

    # ---- helpers --------------------------------------------------------------------------------
    def _city(self, location: str) -> dict[str, Any]:
        text = norm(location)
        if not text:
            raise bad_request("location must not be empty")
        candidates = [text, text.split(",")[0].strip()]
        for key in list(candidates):
            for suffix in (" city", "市"):
                if key.endswith(suffix) and key != suffix:
                    candidates.append(key[: -len(suffix)].strip())
        for key in candidates:
            key = norm(ALIASES.get(key, key))
            found = self.row(
                "SELECT * FROM teval_weather_cities WHERE lower(name) = ? OR name_zh = ?", (key, key)
            )
            if found is not None:
                return found
        raise not_found("location", location)

    def _days(self, city: dict[str, Any], first: date, count: int) -> list[dict[str, Any]]:
        rows = self.rows(
            "SELECT date, overall, avg_temperature, min_temperature, max_temperature FROM teval_weather_daily"
            " WHERE city_id = ? AND date >= ? ORDER BY date LIMIT ?",
            (city["city_id"], first.isoformat(), count),
        )
        if len(rows) < count or (rows and rows[0]["date"] != first.isoformat()):
            raise unprocessable(f"no weather data for {city['name']} from {first.isoformat()}")
        return rows

    # ---- APIs -----------------------------------------------------------------------------------
    @read
    def get_weather_today(self, location: Annotated[str, Param("the location name")]) -> dict[str, Any]:
        """get today's weather (temperatures in °C)"""
        city = self._city(location)
        today = self._days(city, self.now().date(), 1)[0]
        return ok(overall=today["overall"], **{"avg temperature": today["avg_temperature"]})

    @read
    def forecast_weather(
        self,
        location: Annotated[str, Param("the location name")],
        days: Annotated[int, Param("the N number of days later, maximum N is 3")],
    ) -> dict[str, Any]:
        """forecast weather in the N upcoming days (from tomorrow; temperatures in °C)"""
        if not 1 <= days <= MAX_FORECAST_DAYS:
            raise bad_request(f"days must be between 1 and {MAX_FORECAST_DAYS}, got {days}")
        city = self._city(location)
        rows = self._days(city, self.now().date() + timedelta(days=1), days)
        return ok(
            results=[
                {
                    "date": r["date"],
                    "overall": r["overall"],
                    "temperature": r["avg_temperature"],
                    "min_temperature": r["min_temperature"],
                    "max_temperature": r["max_temperature"],
                }
                for r in rows
            ]
        )
