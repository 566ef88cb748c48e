"""Templates of the teval apps about places: weather and time, the US map (BINGMap), the China
map (GaodeMap, asked in Chinese) and Airbnb; with chains across them (the weather where a map
search landed, a listing's weather).

A user names places, dates and what they want; never a property id (a search gives it).
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from toolgym.authoring.generate import Draft, Skip, Template
from toolgym.authoring.templates.teval_common import (
    AIRBNB,
    BING,
    GAODE,
    SEARCH,
    TIME,
    WEATHER,
    day_words,
    future_day,
    human_date,
    human_dates,
    rows_or_skip,
    the,
    weather_cities,
    weather_cities_zh,
)

WET = ("rain", "snow", "thunderstorm")


# ---- weather and time ---------------------------------------------------------------------------
def _city(d: Draft) -> str:
    name: str = d.pick("SELECT name FROM teval_weather_cities ORDER BY city_id")["name"]
    return name


def weather_today(d: Draft) -> None:
    city = _city(d)
    d.query(
        [
            "What's the weather like in {c} today?",
            "How's the weather in {c} right now?",
            "Can you check today's weather in {c} for me?",
            "What's it like outside in {c} today, and how warm is it?",
            "I'm in {c} today. What's the weather doing?",
        ],
        c=city,
    )
    r = d.call("get_weather_today", location=city)
    temp = r["avg temperature"]
    d.answer(
        f"Today in {city} it is {r['overall'].lower()}, about {temp} °C on average.", r["overall"], str(temp)
    )


def weather_forecast(d: Draft) -> None:
    city, offset = _city(d), d.rng.randint(1, 3)
    d.query(
        [
            "What will the weather be like in {c} {w}?",
            "What's the forecast for {c} {w}?",
            "Is it going to be warm in {c} {w}? Give me the high and the low.",
            "I'm travelling to {c}; how will the weather be there {w}?",
        ],
        c=city,
        w=day_words(offset),
    )
    day = d.call("forecast_weather", location=city, days=offset)["results"][offset - 1]
    d.answer(
        f"On {day['date']} {city} will be {day['overall'].lower()}, from {day['min_temperature']} to"
        f" {day['max_temperature']} °C.",
        day["overall"],
        str(day["max_temperature"]),
    )


def weather_warmer(d: Draft) -> None:
    cities = sorted(weather_cities(d))
    a, b = d.rng.sample(cities, 2)
    d.query(
        [
            "Which will be warmer tomorrow, {a} or {b}?",
            "Tomorrow: is it warmer in {a} or in {b}?",
            "Compare tomorrow's temperatures in {a} and {b}: which city is warmer?",
        ],
        a=a,
        b=b,
    )
    ta = d.call("forecast_weather", location=a, days=1)["results"][0]["temperature"]
    tb = d.call("forecast_weather", location=b, days=1)["results"][0]["temperature"]
    if ta == tb:
        raise Skip("same temperature")
    warmer = a if ta > tb else b
    d.answer(
        f"{warmer} will be warmer tomorrow: {a} about {ta} °C, {b} about {tb} °C.", warmer, str(ta), str(tb)
    )


def weather_umbrella(d: Draft) -> None:
    city, days = _city(d), d.rng.randint(2, 3)
    d.query(
        [
            "Will I need an umbrella in {c} over the next {n} days?",
            "Is any rain or snow expected in {c} in the next {n} days?",
            "I'm in {c} for the next {n} days. Should I pack an umbrella?",
        ],
        c=city,
        n=days,
    )
    results = d.call("forecast_weather", location=city, days=days)["results"]
    wet = [r for r in results if any(w in r["overall"].lower() for w in WET)]
    if wet:
        first = wet[0]
        d.answer(
            f"Yes: {first['overall'].lower()} is forecast in {city} on {first['date']}.",
            first["overall"],
            first["date"],
        )
    else:
        said = ", ".join(f"{r['overall'].lower()} on {r['date']}" for r in results)
        d.answer(f"No umbrella needed: the forecast for {city} is {said}.", *(r["overall"] for r in results))


def weather_ask_city(d: Draft) -> None:
    city, offset = _city(d), d.rng.randint(0, 3)
    when = "today" if offset == 0 else day_words(offset)
    d.query(
        [
            "What will the weather be like {w}?",
            "Can you give me the weather for {w}?",
            "How warm will it be {w}?",
            "I'd like the weather report for {w}, please.",
        ],
        w=when,
    )
    told = d.ask("city", city, "Sure, which city are you asking about?", keywords=["where", "location"])
    if offset == 0:
        r = d.call("get_weather_today", location=told)
        overall, temp = r["overall"], r["avg temperature"]
    else:
        day = d.call("forecast_weather", location=told, days=offset)["results"][offset - 1]
        overall, temp = day["overall"], day["temperature"]
    d.answer(f"{when.capitalize()} {city} will be {overall.lower()}, around {temp} °C.", overall, str(temp))


def weather_refuse_history(d: Draft) -> None:
    city = _city(d)
    d.query(
        [
            "What was the weather in {c} last {w}?",
            "How cold was it in {c} a week ago?",
            "Can you tell me how much it rained in {c} last month?",
        ],
        c=city,
        w=d.choice(["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "week"]),
    )
    d.refuse(
        (),
        f"Sorry, I can't look up past weather for {city}: my tools only give today's weather and a short forecast.",
    )


def weather_refuse_forecast(d: Draft) -> None:
    city = _city(d)
    d.query(
        [
            "What's the forecast for {c} for the next three days?",
            "Give me the weather in {c} for the rest of the week.",
            "Will it rain in {c} tomorrow?",
        ],
        c=city,
    )
    d.refuse(
        ["forecast_weather"],
        f"I'm sorry, I cannot give a forecast for {city}: I can only see today's weather.",
    )


def weekday(d: Draft) -> None:
    d.query(
        [
            "What day of the week is it today?",
            "Which weekday is today?",
            "Quick question: what day is it today?",
            "Is today a weekend day or a weekday? Which day is it?",
        ]
    )
    w = d.call("get_weekday")["weekday"]
    d.answer(f"Today is {w}.", w)


def date_and_weather(d: Draft) -> None:
    city = _city(d)
    d.query(
        [
            "What's today's date, and what's the weather in {c}?",
            "Tell me the date and time, and how the weather looks in {c} today.",
            "What day is it today, and is it nice out in {c}?",
        ],
        c=city,
    )
    now = d.call("get_curr_time")["time"]
    r = d.call("get_weather_today", location=city)
    d.answer(
        f"It is {now}; in {city} it is {r['overall'].lower()} at about {r['avg temperature']} °C.",
        now[:10],
        r["overall"],
    )


# ---- BINGMap (United States) ---------------------------------------------------------------------
def _places(d: Draft, n: int, kind: str | None = None) -> list[str]:
    sql = (
        "SELECT name FROM teval_bing_map_locations"
        + (" WHERE kind = ?" if kind else "")
        + " ORDER BY location_id"
    )
    names = [r["name"] for r in d.rows(sql, *([kind] if kind else []))]
    return list(d.rng.sample(names, n))


def bing_distance(d: Draft) -> None:
    a, b = _places(d, 2)
    d.query(
        [
            "How far is it from {a} to {b}?",
            "What's the driving distance between {a} and {b}?",
            "How many kilometres is it from {a} to {b} by road?",
            "I'm going from {a} to {b}. How far is that?",
        ],
        a=the(a),
        b=the(b),
    )
    km = d.call("get_distance", start=a, end=b)["distance"]
    d.answer(f"It is about {km} km from {a} to {b}.", str(km))


def bing_route(d: Draft) -> None:
    a, b = _places(d, 2, "city")
    d.query(
        [
            "How do I drive from {a} to {b}?",
            "Give me directions from {a} to {b}.",
            "What route should I take to drive from {a} to {b}, and how long is it?",
        ],
        a=the(a),
        b=the(b),
    )
    route = d.call("get_route", start=a, end=b)["route"]
    total = route[-1].rsplit("Total distance: ", 1)[-1].removesuffix(" km.")
    d.answer("Route: " + " ".join(route), total)


def bing_coordinates(d: Draft) -> None:
    (a,) = _places(d, 1)
    d.query(
        [
            "What are the coordinates of {a}?",
            "Give me the latitude and longitude of {a}.",
            "Where exactly is {a}? I need its GPS coordinates.",
        ],
        a=the(a),
    )
    r = d.call("get_coordinates", location=a)
    d.answer(
        f"{a} is at latitude {r['latitude']}, longitude {r['longitude']}.",
        str(r["latitude"]),
        str(r["longitude"]),
    )


BING_KINDS = (
    "restaurant",
    "coffee shop",
    "hotel",
    "gas station",
    "pharmacy",
    "grocery store",
    "park",
    "museum",
    "hospital",
    "bank",
    "parking garage",
)


def _nearby(d: Draft, kind: str, place: str) -> dict[str, Any]:
    found = rows_or_skip(d.call("search_nearby", search_term=kind, places=place)["places"], "place nearby")
    first: dict[str, Any] = found[0]
    return first


def bing_nearby(d: Draft) -> None:
    (a,) = _places(d, 1)
    kind = d.choice(BING_KINDS)
    d.query(
        [
            "Is there a {k} near {a}?",
            "Find me the closest {k} to {a}.",
            "I'm at {a}. Where's the nearest {k}?",
            "Can you search for a {k} around {a}?",
        ],
        k=kind,
        a=the(a),
    )
    first = _nearby(d, kind, a)
    d.answer(
        f"The nearest {kind} to {a} is {first['name']}, at {first['address']}.",
        first["name"],
        first["address"],
    )


def bing_closer(d: Draft) -> None:
    a, b, c = _places(d, 3)
    d.query(
        [
            "Which is closer to {a}: {b} or {c}?",
            "From {a}, is {b} or {c} nearer?",
            "I'm at {a}. Which is a shorter trip, {b} or {c}?",
        ],
        a=the(a),
        b=the(b),
        c=the(c),
    )
    kb = d.call("get_distance", start=a, end=b)["distance"]
    kc = d.call("get_distance", start=a, end=c)["distance"]
    if kb == kc:
        raise Skip("same distance")
    near = b if kb < kc else c
    d.answer(f"{near} is closer to {a}: {b} is {kb} km away and {c} is {kc} km.", near, str(min(kb, kc)))


def bing_ask_start(d: Draft) -> None:
    start, end = _places(d, 2)
    d.query(
        [
            "How far is it to {b}?",
            "I want to drive to {b}. How many kilometres is that?",
            "What's the distance to {b} from where I am?",
            "Can you work out how far I am from {b}?",
        ],
        b=the(end),
    )
    told = d.ask("start", start, "Where will you be starting from?", keywords=["starting", "where are you"])
    km = d.call("get_distance", start=told, end=end)["distance"]
    d.answer(f"From {start} to {end} is about {km} km.", str(km))


def bing_nearby_weather(d: Draft) -> None:
    cities = weather_cities(d)
    spots = [
        r["name"]
        for r in d.rows(
            "SELECT name, city FROM teval_bing_map_locations WHERE kind != 'city' ORDER BY location_id"
        )
        if r["city"] in cities
    ]
    spot, kind = d.choice(spots), d.choice(BING_KINDS)
    d.query(
        [
            "I'm staying near {a}. Find me a {k} close by, and tell me what the weather is like in that city today.",
            "Where's the nearest {k} to {a}? Also, how's the weather there today?",
            "Look up a {k} around {a} and check today's weather in the city it's in.",
        ],
        a=the(spot),
        k=kind,
    )
    first = _nearby(d, kind, spot)
    city = first["address"].split(", ")[-2]
    if city not in cities:
        raise Skip("the place's city has no weather")
    w = d.call("get_weather_today", location=city)
    d.answer(
        f"{first['name']} ({first['address']}) is the nearest {kind}; {city} is {w['overall'].lower()} today,"
        f" about {w['avg temperature']} °C.",
        first["name"],
        w["overall"],
    )


def bing_refuse_taxi(d: Draft) -> None:
    a, b = _places(d, 2)
    d.query(
        [
            "Book me a taxi from {a} to {b}.",
            "Call me an Uber to go from {a} to {b}.",
            "Reserve a rental car for the trip from {a} to {b}.",
        ],
        a=the(a),
        b=the(b),
    )
    d.refuse((), "Sorry, I can't book rides: my tools only look up places, distances and routes.")


def bing_refuse_route(d: Draft) -> None:
    a, b = _places(d, 2, "city")
    d.query(
        [
            "Give me turn-by-turn driving directions from {a} to {b}.",
            "Which highways do I take from {a} to {b}?",
        ],
        a=the(a),
        b=the(b),
    )
    d.refuse(
        ["get_route"], f"I'm unable to give directions from {a} to {b}: no routing tool is available to me."
    )


# ---- GaodeMap (China, in Chinese) ---------------------------------------------------------------
GAODE_KINDS = ("餐厅", "咖啡厅", "酒店", "银行", "超市", "地铁站", "加油站", "公园", "停车场", "医院", "学校")


def _gaode_places(d: Draft, n: int, same_city: bool = False) -> list[dict[str, Any]]:
    rows = d.rows("SELECT name, city, kind FROM teval_gaode_map_locations ORDER BY location_id")
    if same_city:
        city = d.choice(sorted({r["city"] for r in rows if r["kind"] != "city"}))
        rows = [r for r in rows if r["city"] == city and r["kind"] != "city"]
    if len(rows) < n:
        raise Skip("too few places")
    return list(d.rng.sample(rows, n))


def _coord(d: Draft, name: str) -> str:
    coordinate: str = d.call("get_coordinate", address=name)["coordinate"]
    return coordinate


def gaode_distance(d: Draft) -> None:
    a, b = (p["name"] for p in _gaode_places(d, 2, same_city=d.rng.random() < 0.6))
    d.query(
        [
            "从{a}开车到{b}有多远？大概要开多久？",
            "帮我查一下{a}到{b}的驾车距离和时间。",
            "我要从{a}去{b}，开车要多长时间？",
            "{a}离{b}有多少公里？",
        ],
        a=a,
        b=b,
    )
    r = d.call("get_distance", origins=_coord(d, a), destination=_coord(d, b))
    d.answer(
        f"从{a}到{b}驾车约{r['distance']}公里，大约需要{r['duration']}分钟。",
        str(r["distance"]),
        str(r["duration"]),
    )


def gaode_distance_en(d: Draft) -> None:
    a, b = (p["name"] for p in _gaode_places(d, 2, same_city=True))
    if a == b:
        raise Skip("one place")
    d.query(
        [
            "How far is the drive from {a} to {b}, and how long will it take?",
            "I'm going from {a} to {b} by car. How many km is that and how many minutes?",
            "Check the driving distance and time between {a} and {b} for me.",
        ],
        a=a,
        b=b,
    )
    r = d.call("get_distance", origins=_coord(d, a), destination=_coord(d, b))
    d.answer(
        f"The drive from {a} to {b} is about {r['distance']} km, roughly {r['duration']} minutes.",
        str(r["distance"]),
        str(r["duration"]),
    )


def gaode_route(d: Draft) -> None:
    a, b = (p["name"] for p in _gaode_places(d, 2))
    d.query(
        ["从{a}到{b}怎么开车？", "帮我规划一条从{a}到{b}的驾车路线。", "请告诉我从{a}去{b}的行车路线。"],
        a=a,
        b=b,
    )
    route = d.call("get_route", origin=_coord(d, a), destination=_coord(d, b))["route"]
    total = route[-1].rsplit("全程约", 1)[-1].removesuffix("公里")
    d.answer("路线：" + "，".join(route) + "。", total)


def gaode_nearby(d: Draft) -> None:
    (place,) = _gaode_places(d, 1)
    kind = d.choice(GAODE_KINDS)
    d.query(
        ["{a}附近有{k}吗？", "帮我找一下{a}附近最近的{k}。", "我在{a}，最近的{k}在哪里？"],
        a=place["name"],
        k=kind,
    )
    found = d.call("search_nearby", location=_coord(d, place["name"]), keywords=kind)["places"]
    first = rows_or_skip(found, "place nearby")[0]
    d.answer(f"离{place['name']}最近的{kind}是{first['name']}，地址：{first['address']}。", first["name"])


def gaode_nearby_weather(d: Draft) -> None:
    cities = weather_cities_zh(d)
    spots = [
        r
        for r in d.rows(
            "SELECT name, city FROM teval_gaode_map_locations WHERE kind != 'city' ORDER BY location_id"
        )
        if r["city"] in cities
    ]
    spot, kind = d.choice(spots), d.choice(GAODE_KINDS)
    d.query(
        [
            "我在{a}，帮我找一家附近的{k}，再告诉我这座城市今天的天气。",
            "{a}附近最近的{k}在哪？那边今天天气怎么样？",
        ],
        a=spot["name"],
        k=kind,
    )
    found = d.call("search_nearby", location=_coord(d, spot["name"]), keywords=kind)["places"]
    first = rows_or_skip(found, "place nearby")[0]
    city = first["address"].split("市", 1)[0]
    w = d.call("get_weather_today", location=city)
    d.answer(
        f"最近的{kind}是{first['name']}（{first['address']}）；{city}今天{w['overall']}，平均气温{w['avg temperature']}°C。",
        first["name"],
        str(w["avg temperature"]),
    )


def gaode_ask_origin(d: Draft) -> None:
    a, b = (p["name"] for p in _gaode_places(d, 2))
    d.query(["帮我算一下开车去{b}要多久。", "去{b}有多远？", "我想开车去{b}，大概多少公里？"], b=b)
    told = d.ask("origin", a, "请问您从哪里出发？", keywords=["出发", "起点"])
    r = d.call("get_distance", origins=_coord(d, told), destination=_coord(d, b))
    d.answer(f"从{a}到{b}驾车约{r['distance']}公里，大约{r['duration']}分钟。", str(r["distance"]))


def gaode_refuse_taxi(d: Draft) -> None:
    a, b = (p["name"] for p in _gaode_places(d, 2))
    d.query(
        ["帮我叫一辆从{a}到{b}的出租车。", "帮我订一张从{a}去{b}的火车票。", "帮我在{b}附近订个酒店房间。"],
        a=a,
        b=b,
    )
    d.refuse((), "抱歉，我无法帮您预订：现有工具只能查询位置、距离和路线。")


# ---- Airbnb -------------------------------------------------------------------------------------
def _stay_place(d: Draft) -> str:
    row = d.pick(
        "SELECT DISTINCT city, neighbourhood FROM teval_airbnb_properties ORDER BY city, neighbourhood"
    )
    return row["city"] if d.rng.random() < 0.5 else f"{row['neighbourhood']}, {row['city']}"


def _top(d: Draft, place: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = d.call("search_property_by_place", place=place)["property"]
    top: dict[str, Any] = rows_or_skip(found, "property")[0]
    return top


def airbnb_best(d: Draft) -> None:
    place = _stay_place(d)
    d.query(
        [
            "What's the best-rated Airbnb in {p}?",
            "Find me the top Airbnb in {p}.",
            "I'm looking for a place to stay in {p}. Which Airbnb has the best rating?",
            "Search Airbnb for {p} and tell me the highest-rated listing.",
        ],
        p=place,
    )
    top = _top(d, place)
    d.answer(f'The best-rated Airbnb in {place} is "{top["name"]}" ({top["address"]}).', top["name"])


def airbnb_details(d: Draft) -> None:
    place = _stay_place(d)
    d.query(
        [
            "How many guests can the best-rated Airbnb in {p} host, and what kind of place is it?",
            "I'm travelling with friends to {p}. How many people fit in the top-rated Airbnb there?",
            "What's the capacity and rating of the best Airbnb in {p}?",
        ],
        p=place,
    )
    top = _top(d, place)
    r = d.call("get_property_details", propertyId=top["id"])
    d.answer(
        f'"{r["title"]}" is a {r["propertyType"].lower()} for up to {r["personCapacity"]} guests, rated {r["rating"]}.',
        str(r["personCapacity"]),
        str(r["rating"]),
    )


def airbnb_reviews(d: Draft) -> None:
    place = _stay_place(d)
    d.query(
        [
            "What are recent guests saying about the top-rated Airbnb in {p}?",
            "Show me the latest review of the best Airbnb in {p}.",
            "Before I book in {p}: what do the reviews of the best-rated Airbnb say?",
        ],
        p=place,
    )
    top = _top(d, place)
    latest = rows_or_skip(d.call("get_property_reviews", propertyId=top["id"])["reviews"], "review")[0]
    d.answer(
        f'The latest review of "{top["name"]}" ({latest["date"]}, {latest["rating"]} stars): "{latest["comment"]}"',
        latest["comment"],
    )


def airbnb_price(d: Draft) -> None:
    place = _stay_place(d)
    stay_in = future_day(d, 3, 150)
    nights = d.rng.randint(2, 6)
    stay_out = stay_in + timedelta(days=nights)
    said_in, said_out = human_dates(d, stay_in, stay_out)
    d.query(
        [
            "How much would it cost to stay at the best-rated Airbnb in {p} from {a} to {b}?",
            "What's the total price for the top Airbnb in {p}, checking in {a} and out {b}?",
            "I'd like to stay in {p} from {a} to {b}. What would the best-rated Airbnb cost?",
        ],
        p=place,
        a=said_in,
        b=said_out,
    )
    top = _top(d, place)
    _check_free(d, top["id"], stay_in, stay_out)
    cost = d.call(
        "get_property_checkout_price",
        propertyId=top["id"],
        checkIn=stay_in.isoformat(),
        checkOut=stay_out.isoformat(),
    )
    total = cost["accommodationCost"]
    d.answer(f'"{top["name"]}" would cost ${total:,.2f} for those {nights} nights.', f"{total:.2f}")


def _check_free(d: Draft, property_id: int, first: date, last: date) -> None:
    clash = d.rows(
        "SELECT 1 FROM teval_airbnb_reservations WHERE property_id = ? AND check_in < ? AND check_out > ? ORDER BY 1",
        property_id,
        last.isoformat(),
        first.isoformat(),
    )
    need = d.rows(
        "SELECT min_nights FROM teval_airbnb_properties WHERE property_id = ? ORDER BY 1", property_id
    )
    if clash or not need or (last - first).days < need[0]["min_nights"]:
        raise Skip("the stay is not free")


def airbnb_available(d: Draft) -> None:
    place, day = _stay_place(d), future_day(d, 1, 60)
    d.query(
        [
            "Is the best-rated Airbnb in {p} free on {a}?",
            "Can I get the top Airbnb in {p} for the night of {a}?",
            "Check whether the highest-rated Airbnb in {p} is available on {a}.",
        ],
        p=place,
        a=human_date(d, day),
    )
    top = _top(d, place)
    free = d.call("check_availability", propertyId=top["id"], date=day.isoformat())["availability"][0][
        "available"
    ]
    if free:
        d.answer(f'Yes, "{top["name"]}" is available on {day.isoformat()}.', ["available", "free", "yes"])
    else:
        d.answer(
            f'No, "{top["name"]}" is already booked on {day.isoformat()}.',
            ["booked", "not available", "unavailable", "no"],
        )


def airbnb_ask_dates(d: Draft) -> None:
    place = _stay_place(d)
    stay_in = future_day(d, 3, 150)
    stay_out = stay_in + timedelta(days=d.rng.randint(2, 6))
    d.query(
        [
            "How much would the best-rated Airbnb in {p} cost for my trip?",
            "I want to book the top Airbnb in {p}. What's the total price?",
            "Price out a stay at the highest-rated Airbnb in {p} for me.",
        ],
        p=place,
    )
    top = _top(d, place)
    _check_free(d, top["id"], stay_in, stay_out)
    a = d.ask(
        "check_in", stay_in.isoformat(), "Which date will you check in?", keywords=["check-in", "arrive"]
    )
    b = d.ask(
        "check_out",
        stay_out.isoformat(),
        "And which date will you check out?",
        keywords=["check-out", "leave"],
    )
    total = d.call("get_property_checkout_price", propertyId=top["id"], checkIn=a, checkOut=b)[
        "accommodationCost"
    ]
    d.answer(f'"{top["name"]}" would cost ${total:,.2f} from {a} to {b}.', f"{total:.2f}")


def airbnb_refuse_book(d: Draft) -> None:
    place, stay_in = _stay_place(d), future_day(d, 3, 90)
    d.query(
        [
            "Book the best-rated Airbnb in {p} for me from {a}, three nights.",
            "Please reserve the top Airbnb in {p} starting {a}.",
            "Go ahead and book a place in {p} for {a}.",
        ],
        p=place,
        a=human_date(d, stay_in),
    )
    d.refuse(
        (),
        "I'm sorry, I can't make bookings: my Airbnb tools can only search, check availability and price a stay.",
    )


def airbnb_weather(d: Draft) -> None:
    both = sorted(
        weather_cities(d)
        & {r["city"] for r in d.rows("SELECT DISTINCT city FROM teval_airbnb_properties ORDER BY city")}
    )
    city = d.choice(both)
    d.query(
        [
            "I'm heading to {c}. What's the best-rated Airbnb there, and how's the weather today?",
            "Find me the top Airbnb in {c} and check today's weather in {c}.",
            "Thinking about a trip to {c}: which Airbnb is rated best, and what's the weather like there right now?",
        ],
        c=city,
    )
    top = _top(d, city)
    w = d.call("get_weather_today", location=city)
    d.answer(
        f'The best-rated Airbnb in {city} is "{top["name"]}"; today it is {w["overall"].lower()}, about {w["avg temperature"]} °C.',
        top["name"],
        w["overall"],
    )


def capital_airbnb(d: Draft) -> None:
    from toolgym.mocks.apps.teval.google_search import COUNTRIES

    cities = {r["city"] for r in d.rows("SELECT DISTINCT city FROM teval_airbnb_properties ORDER BY city")}
    country, capital = d.choice([(c[0], c[1]) for c in COUNTRIES if c[1] in cities])
    d.query(
        [
            "Find me the best-rated Airbnb in the capital of {c}.",
            "I'm visiting the capital of {c}. Which Airbnb there is rated best?",
            "What's the top Airbnb in {c}'s capital city?",
        ],
        c=country,
    )
    pages = d.call("serper_search", query=f"capital of {country}")["content"]
    if not any(capital in p["snippet"] for p in pages):
        raise Skip("the search does not say the capital")
    top = _top(d, capital)
    d.answer(
        f'The capital of {country} is {capital}; its best-rated Airbnb is "{top["name"]}".',
        capital,
        top["name"],
    )


def capital_stay_weather(d: Draft) -> None:
    from toolgym.mocks.apps.teval.google_search import COUNTRIES

    cities = weather_cities(d) & {
        r["city"] for r in d.rows("SELECT DISTINCT city FROM teval_airbnb_properties ORDER BY city")
    }
    country, capital = d.choice([(c[0], c[1]) for c in COUNTRIES if c[1] in cities])
    d.query(
        [
            "I'm flying to the capital of {c} today. Which Airbnb there is rated best, and what's the weather like?",
            "Plan my trip to {c}'s capital: find the top-rated Airbnb and check today's weather there.",
            "What's the best Airbnb in the capital of {c}, and should I expect rain today?",
        ],
        c=country,
    )
    pages = d.call("serper_search", query=f"capital of {country}")["content"]
    if not any(capital in p["snippet"] for p in pages):
        raise Skip("the search does not say the capital")
    top = _top(d, capital)
    w = d.call("get_weather_today", location=capital)
    d.answer(
        f'The capital of {country} is {capital}. Its best-rated Airbnb is "{top["name"]}"; today it is'
        f" {w['overall'].lower()}, about {w['avg temperature']} °C.",
        top["name"],
        w["overall"],
    )


T = Template
TEMPLATES = [
    T("teval.weather.today", (WEATHER,), weather_today),
    T("teval.weather.forecast", (WEATHER,), weather_forecast),
    T("teval.weather.warmer_city", (WEATHER,), weather_warmer),
    T("teval.weather.umbrella", (WEATHER,), weather_umbrella),
    T("teval.weather.ask_city", (WEATHER,), weather_ask_city),
    T("teval.weather.refuse_history", (WEATHER,), weather_refuse_history),
    T("teval.weather.refuse_forecast", (WEATHER,), weather_refuse_forecast),
    T("teval.time.weekday", (TIME,), weekday),
    T("teval.time.date_and_weather", (TIME, WEATHER), date_and_weather),
    T("teval.bing.distance", (BING,), bing_distance),
    T("teval.bing.route", (BING,), bing_route),
    T("teval.bing.coordinates", (BING,), bing_coordinates),
    T("teval.bing.nearby", (BING,), bing_nearby),
    T("teval.bing.closer", (BING,), bing_closer),
    T("teval.bing.ask_start", (BING,), bing_ask_start),
    T("teval.bing.nearby_weather", (BING, WEATHER), bing_nearby_weather),
    T("teval.bing.refuse_taxi", (BING,), bing_refuse_taxi),
    T("teval.bing.refuse_route", (BING,), bing_refuse_route),
    T("teval.gaode.distance", (GAODE,), gaode_distance, lang="zh"),
    T("teval.gaode.distance_en", (GAODE,), gaode_distance_en),
    T("teval.gaode.route", (GAODE,), gaode_route, lang="zh"),
    T("teval.gaode.nearby", (GAODE,), gaode_nearby, lang="zh"),
    T("teval.gaode.nearby_weather", (GAODE, WEATHER), gaode_nearby_weather, lang="zh"),
    T("teval.gaode.ask_origin", (GAODE,), gaode_ask_origin, lang="zh"),
    T("teval.gaode.refuse_booking", (GAODE,), gaode_refuse_taxi, lang="zh"),
    T("teval.airbnb.best", (AIRBNB,), airbnb_best),
    T("teval.airbnb.details", (AIRBNB,), airbnb_details),
    T("teval.airbnb.reviews", (AIRBNB,), airbnb_reviews),
    T("teval.airbnb.price", (AIRBNB,), airbnb_price),
    T("teval.airbnb.available", (AIRBNB,), airbnb_available),
    T("teval.airbnb.ask_dates", (AIRBNB,), airbnb_ask_dates),
    T("teval.airbnb.refuse_book", (AIRBNB,), airbnb_refuse_book),
    T("teval.airbnb.weather", (AIRBNB, WEATHER), airbnb_weather),
    T("teval.search.capital_airbnb", (SEARCH, AIRBNB), capital_airbnb),
    T("teval.search.capital_stay_weather", (SEARCH, AIRBNB, WEATHER), capital_stay_weather),
]
