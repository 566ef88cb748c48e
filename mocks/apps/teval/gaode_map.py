"""T-Eval GaodeMap: coordinates, driving distance, routes and nearby search in China.

Semantics: coordinates are "lon,lat" strings (GCJ-02 style, 6 decimals). get_coordinate resolves
~50 seeded Chinese place names (cities and landmarks, real approximate coordinates; optionally
within a city) and is a 404 for unknown ones. Driving distance is the great-circle distance times
a road factor of 1.3; duration assumes 30 km/h in town (< 20 km) and 80 km/h beyond. A route names
the nearest known places at both ends and roads picked deterministically from the two points, with
legs summing to the distance. search_nearby filters ~700 seeded places by keyword (Chinese or
English category words, or part of the name) within 5 km, nearest first, at most 5. Coordinates
that are malformed are a 400; coordinates outside China a 422 (Gaode covers China only).
"""

from __future__ import annotations

import math
import random
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import read
from toolgym.mocks.apps.teval.common import (
    COMPASS_ZH,
    TevalApp,
    bearing_deg,
    compass_index,
    places_near,
    stable_int,
)
from toolgym.mocks.responses import bad_request, not_found, ok, unprocessable
from toolgym.mocks.seeding import haversine_km, insert_rows, point_near
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

ROAD_FACTOR: Final = 1.3
SEARCH_RADIUS_KM: Final = 5.0
MAX_PLACES: Final = 5

# name, city, district, longitude, latitude, kind
LOCATIONS: Final[tuple[tuple[str, str, str, float, float, str], ...]] = (
    ("北京", "北京", "东城区", 116.407526, 39.904030, "city"),
    ("上海", "上海", "黄浦区", 121.473701, 31.230416, "city"),
    ("广州", "广州", "越秀区", 113.264385, 23.129112, "city"),
    ("深圳", "深圳", "福田区", 114.057868, 22.543099, "city"),
    ("杭州", "杭州", "上城区", 120.155070, 30.274084, "city"),
    ("成都", "成都", "锦江区", 104.066541, 30.572269, "city"),
    ("西安", "西安", "碑林区", 108.940174, 34.341568, "city"),
    ("南京", "南京", "玄武区", 118.796877, 32.060255, "city"),
    ("武汉", "武汉", "江岸区", 114.305392, 30.593098, "city"),
    ("重庆", "重庆", "渝中区", 106.551556, 29.563009, "city"),
    ("天津", "天津", "和平区", 117.200983, 39.084158, "city"),
    ("苏州", "苏州", "姑苏区", 120.585315, 31.298886, "city"),
    ("长沙", "长沙", "芙蓉区", 112.938814, 28.228209, "city"),
    ("青岛", "青岛", "市南区", 120.382639, 36.067082, "city"),
    ("厦门", "厦门", "思明区", 118.089425, 24.479833, "city"),
    ("昆明", "昆明", "五华区", 102.832891, 24.880095, "city"),
    ("哈尔滨", "哈尔滨", "道里区", 126.534967, 45.803775, "city"),
    ("大连", "大连", "中山区", 121.614682, 38.914003, "city"),
    ("天安门", "北京", "东城区", 116.397477, 39.908692, "landmark"),
    ("故宫博物院", "北京", "东城区", 116.397029, 39.917839, "landmark"),
    ("颐和园", "北京", "海淀区", 116.275179, 39.999617, "landmark"),
    ("北京大学", "北京", "海淀区", 116.310316, 39.992810, "university"),
    ("清华大学", "北京", "海淀区", 116.326836, 40.003955, "university"),
    ("北京南站", "北京", "丰台区", 116.378992, 39.865042, "station"),
    ("北京首都国际机场", "北京", "顺义区", 116.603039, 40.080111, "airport"),
    ("外滩", "上海", "黄浦区", 121.490317, 31.236305, "landmark"),
    ("东方明珠", "上海", "浦东新区", 121.499740, 31.239853, "landmark"),
    ("上海虹桥站", "上海", "闵行区", 121.320487, 31.194329, "station"),
    ("复旦大学", "上海", "杨浦区", 121.503584, 31.297535, "university"),
    ("豫园", "上海", "黄浦区", 121.492497, 31.227203, "landmark"),
    ("人民广场", "上海", "黄浦区", 121.475164, 31.232465, "landmark"),
    ("广州塔", "广州", "海珠区", 113.324553, 23.106414, "landmark"),
    ("白云山", "广州", "白云区", 113.302365, 23.184942, "landmark"),
    ("深圳湾公园", "深圳", "南山区", 113.951580, 22.500633, "landmark"),
    ("华强北", "深圳", "福田区", 114.085947, 22.545418, "landmark"),
    ("西湖", "杭州", "西湖区", 120.148732, 30.250396, "landmark"),
    ("灵隐寺", "杭州", "西湖区", 120.101101, 30.240986, "landmark"),
    ("杭州东站", "杭州", "上城区", 120.212600, 30.290851, "station"),
    ("宽窄巷子", "成都", "青羊区", 104.055561, 30.669807, "landmark"),
    ("春熙路", "成都", "锦江区", 104.080989, 30.657689, "landmark"),
    ("成都大熊猫繁育研究基地", "成都", "成华区", 104.146469, 30.735163, "landmark"),
    ("钟楼", "西安", "碑林区", 108.947024, 34.260939, "landmark"),
    ("大雁塔", "西安", "雁塔区", 108.964188, 34.218670, "landmark"),
    ("秦始皇兵马俑博物馆", "西安", "临潼区", 109.278517, 34.384957, "landmark"),
    ("夫子庙", "南京", "秦淮区", 118.788634, 32.020497, "landmark"),
    ("中山陵", "南京", "玄武区", 118.848533, 32.064305, "landmark"),
    ("黄鹤楼", "武汉", "武昌区", 114.302527, 30.544803, "landmark"),
    ("解放碑", "重庆", "渝中区", 106.577057, 29.557122, "landmark"),
    ("洪崖洞", "重庆", "渝中区", 106.579201, 29.563051, "landmark"),
    ("鼓浪屿", "厦门", "思明区", 118.067400, 24.447100, "landmark"),
)
ALIASES: Final = {"故宫": "故宫博物院", "兵马俑": "秦始皇兵马俑博物馆", "熊猫基地": "成都大熊猫繁育研究基地"}
# category: (keywords, name pool)
CATEGORIES: Final[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    "餐厅": (
        ("餐厅", "餐馆", "饭店", "美食", "吃饭", "restaurant", "restaurants", "food"),
        (
            "老张家常菜",
            "川味小馆",
            "粤式茶餐厅",
            "兰州牛肉拉面",
            "江南小厨",
            "东北饺子馆",
            "湘味轩",
            "海底捞火锅",
        ),
    ),
    "咖啡厅": (
        ("咖啡", "咖啡厅", "咖啡馆", "coffee", "cafe"),
        ("街角咖啡", "慢时光咖啡", "瑞幸咖啡", "漫咖啡"),
    ),
    "酒店": (
        ("酒店", "宾馆", "住宿", "hotel", "hotels"),
        ("如家酒店", "锦江之星", "全季酒店", "城市便捷酒店", "汉庭酒店"),
    ),
    "学校": (
        ("学校", "中学", "小学", "school", "schools"),
        ("实验小学", "第一中学", "外国语学校", "第二中学"),
    ),
    "医院": (
        ("医院", "诊所", "hospital", "clinic"),
        ("人民医院", "中医医院", "妇幼保健院", "社区卫生服务中心"),
    ),
    "银行": (
        ("银行", "atm", "bank"),
        ("中国银行", "工商银行", "建设银行", "招商银行", "农业银行"),
    ),
    "超市": (
        ("超市", "便利店", "supermarket", "store"),
        ("华润万家", "永辉超市", "全家便利店", "物美超市"),
    ),
    "地铁站": (
        ("地铁", "地铁站", "subway", "metro"),
        ("地铁站",),
    ),
    "加油站": (
        ("加油站", "加油", "gas", "gas station"),
        ("中国石化加油站", "中国石油加油站"),
    ),
    "公园": (
        ("公园", "park"),
        ("滨江公园", "人民公园", "湿地公园", "中心公园"),
    ),
    "停车场": (
        ("停车场", "停车", "parking"),
        ("公共停车场", "地下停车场"),
    ),
}
ROADS: Final = (
    "中山路",
    "人民路",
    "解放路",
    "建设路",
    "和平路",
    "长江路",
    "滨江大道",
    "南京路",
    "科技路",
    "环城高速",
    "东风路",
    "新华路",
    "迎宾大道",
    "学院路",
)
HIGHWAYS: Final = (
    "京港澳高速",
    "沪昆高速",
    "京沪高速",
    "沈海高速",
    "连霍高速",
    "包茂高速",
    "福银高速",
    "沪蓉高速",
)


def parse_lonlat(param: str, value: str) -> tuple[float, float]:
    """'lon,lat' (parentheses and spaces tolerated) or a 400; outside China a 422."""
    text = value.strip().strip("()（）").replace("，", ",")
    parts = [p.strip() for p in text.split(",")]
    try:
        lon, lat = float(parts[0]), float(parts[1])
        if len(parts) != 2:
            raise ValueError
    except (ValueError, IndexError):
        raise bad_request(
            f"{param} must be a coordinate 'lon,lat', e.g. '116.397477,39.908692', got {value!r}"
        ) from None
    if not (-180 <= lon <= 180 and -90 <= lat <= 90):
        raise bad_request(f"{param}: longitude must be in [-180, 180] and latitude in [-90, 90]")
    if not (73 <= lon <= 136 and 3 <= lat <= 54):
        raise unprocessable(f"{param} ({lon},{lat}) is outside China; this map only covers China")
    return lon, lat


def _fmt(lon: float, lat: float) -> str:
    return f"{lon:.6f},{lat:.6f}"


class GaodeMap(TevalApp):
    name = "teval_gaode_map"
    teval_tool: ClassVar[str] = "GaodeMap"
    description = "Plugin for look up map information only in China"
    schema = """
    CREATE TABLE teval_gaode_map_locations (
        location_id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        city TEXT NOT NULL,
        district TEXT NOT NULL,
        longitude REAL NOT NULL,
        latitude REAL NOT NULL,
        kind TEXT NOT NULL
    );
    CREATE TABLE teval_gaode_map_places (
        place_id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        category TEXT NOT NULL,
        address TEXT NOT NULL,
        longitude REAL NOT NULL,
        latitude REAL NOT NULL
    );
    """

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        insert_rows(
            db,
            "teval_gaode_map_locations",
            [
                {
                    "location_id": i,
                    "name": n,
                    "city": c,
                    "district": d,
                    "longitude": lo,
                    "latitude": la,
                    "kind": k,
                }
                for i, (n, c, d, lo, la, k) in enumerate(LOCATIONS, 1)
            ],
        )
        places: list[dict[str, Any]] = []
        categories = sorted(CATEGORIES)
        for name, city, district, lon, lat, kind in LOCATIONS:
            branch = name if kind != "city" else district
            for _ in range(20 if kind == "city" else 10):
                category = rng.choice(categories)
                plat, plon = point_near(rng, lat, lon, 4.0)
                base = rng.choice(CATEGORIES[category][1])
                road = rng.choice(ROADS)
                label = f"{road}{base}" if category == "地铁站" else f"{base}({branch}店)"
                if category in ("学校", "医院", "公园"):
                    label = f"{district}{base}"
                places.append(
                    {
                        "place_id": len(places) + 1,
                        "name": label,
                        "category": category,
                        "address": f"{city}市{district}{road}{rng.randint(1, 399)}号",
                        "longitude": round(plon, 6),
                        "latitude": round(plat, 6),
                    }
                )
        insert_rows(db, "teval_gaode_map_places", places)

    # ---- helpers --------------------------------------------------------------------------------
    def _nearest(self, lon: float, lat: float) -> dict[str, Any]:
        rows = self.rows("SELECT * FROM teval_gaode_map_locations")
        return min(rows, key=lambda r: haversine_km(lat, lon, r["latitude"], r["longitude"]))

    @staticmethod
    def _drive(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, int]:
        km = haversine_km(a[1], a[0], b[1], b[0]) * ROAD_FACTOR
        speed = 30.0 if km < 20 else 80.0
        return round(km, 1), math.ceil(km / speed * 60)

    # ---- APIs -----------------------------------------------------------------------------------
    @read
    def get_distance(
        self,
        origins: Annotated[str, Param("coordinate of the start location, format with 'lon,lat'")],
        destination: Annotated[str, Param("coordinate of the end location, format with 'lon,lat'")],
    ) -> dict[str, Any]:
        """Get the distance between two locations in km (and the expected driving time in minutes)."""
        a, b = parse_lonlat("origins", origins), parse_lonlat("destination", destination)
        km, minutes = self._drive(a, b)
        return ok(distance=km, duration=minutes)

    @read
    def get_route(
        self,
        origin: Annotated[str, Param("coordinate of the start location, format with 'lon,lat'")],
        destination: Annotated[str, Param("coordinate of the end location, format with 'lon,lat'")],
    ) -> dict[str, Any]:
        """Get the route between two locations in km."""
        a, b = parse_lonlat("origin", origin), parse_lonlat("destination", destination)
        km, _ = self._drive(a, b)
        start, end = self._nearest(*a), self._nearest(*b)
        if km == 0:
            return ok(route=[f"起点与终点相同（{end['name']}附近）"])
        heading = COMPASS_ZH[compass_index(bearing_deg(a[1], a[0], b[1], b[0]))]
        pick = stable_int(origin, destination)
        road1, road2 = ROADS[pick % len(ROADS)], ROADS[(pick // 7) % len(ROADS)]
        if road2 == road1:
            road2 = ROADS[(pick + 1) % len(ROADS)]
        route = [f"从{start['name']}附近出发，向{heading}方向行驶"]
        if km < 20:
            first = round(km * (0.3 + (pick % 40) / 100), 1)
            route += [f"沿{road1}行驶{first}公里", f"右转进入{road2}，继续行驶{round(km - first, 1)}公里"]
        else:
            town = round(min(8.0, km * 0.1), 1)
            highway = HIGHWAYS[pick % len(HIGHWAYS)]
            route += [
                f"沿{road1}行驶{town}公里，驶入{highway}",
                f"沿{highway}行驶{round(km - 2 * town, 1)}公里",
                f"下高速后沿{road2}行驶{town}公里",
            ]
        route.append(f"到达{end['name']}附近，全程约{km}公里")
        return ok(route=route)

    @read
    def get_coordinate(
        self,
        address: Annotated[str, Param("the location need to get coordinates. Param must be in Chinese")],
        city: Annotated[str | None, Param("specify the city to search")] = None,
    ) -> dict[str, Any]:
        """Get the coordinate of a location. Param must be in Chinese"""
        text = "".join(address.split())
        if not text:
            raise bad_request("address must not be empty")
        wanted_city = None if city is None else "".join(city.split()).removesuffix("市")
        rows = self.rows("SELECT * FROM teval_gaode_map_locations")
        if wanted_city:
            rows = [r for r in rows if r["city"] == wanted_city]
        text = ALIASES.get(text, text)
        exact = [r for r in rows if r["name"] in (text, text.removesuffix("市"))]
        # "北京市故宫博物院" or "故宫博物院东门": the longest known name inside the address
        inside = sorted((r for r in rows if r["name"] in text), key=lambda r: -len(r["name"]))
        alias = [r for r in rows if any(k in text and v == r["name"] for k, v in ALIASES.items())]
        found = next(iter(exact or inside or alias), None)
        if found is None:
            raise not_found("address", address if city is None else f"{address} ({city})")
        return ok(coordinate=_fmt(found["longitude"], found["latitude"]))

    @read
    def search_nearby(
        self,
        location: Annotated[str, Param("The coordinate of the location, format with 'lon,lat'")],
        keywords: Annotated[str, Param("The search type, e.g., restaurant, school")],
    ) -> dict[str, Any]:
        """Search for places nearby a location, within a given radius, and return the results into a list. Put the location name at the end of the query."""
        lon, lat = parse_lonlat("location", location)
        key = keywords.strip().lower()
        if not key:
            raise bad_request("keywords must not be empty")
        wanted = {c for c, (keys, _) in CATEGORIES.items() if key in keys or any(k in key for k in keys)}
        found = places_near(
            self, "teval_gaode_map_places", (lat, lon), SEARCH_RADIUS_KM, wanted, key, MAX_PLACES
        )
        return ok(places=found)
