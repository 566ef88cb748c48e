"""The T-Eval apps against T-Eval's own documentation (api_descrip.json): tools, API names, required
and optional parameters with their types, return fields; plus declaration and seeding rules."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.mocks.apps.teval import CLOCK, call, make_world
from tests.shared_data import TEVAL_API_DOC
from toolgym.mocks.app import App, app_apis, validate_app
from toolgym.mocks.apps.teval import (
    TEVAL_APP_BY_NAME,
    TEVAL_APPS,
    TEVAL_TOOL_NAMES,
    resolve_app_names,
    teval_prefixes,
)
from toolgym.mocks.store import TemplateCache
from toolgym.mocks.world import MockWorld

# T-Eval's documentation, from the shared reference data (the tests that need it skip without it)
DOC_PATHS = (TEVAL_API_DOC,)
TYPES = {"STRING": {"text"}, "NUMBER": {"int", "float"}, "FLOAT": {"float"}, "BOOLEAN": {"bool"}}


def _doc() -> list[dict[str, Any]]:
    for path in DOC_PATHS:
        if path.exists():
            data: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
            return data
    pytest.skip("T-Eval's api_descrip.json is not available here")


def _apps_by_tool() -> dict[str, type[App]]:
    return {TEVAL_TOOL_NAMES[c.name]: c for c in TEVAL_APPS}


def test_fifteen_tools_fifty_apis() -> None:
    doc = _doc()
    assert len(TEVAL_APPS) == 15 == len(doc)
    assert sum(len(app_apis(c)) for c in TEVAL_APPS) == 50
    assert [t["name"] for t in doc] == [TEVAL_TOOL_NAMES[c.name] for c in TEVAL_APPS]
    assert set(TEVAL_APP_BY_NAME) == {c.name for c in TEVAL_APPS}


def test_apis_and_parameters_match_the_documentation() -> None:
    by_tool = _apps_by_tool()
    for tool in _doc():
        apis = {a.name: a for a in app_apis(by_tool[tool["name"]])}
        assert set(apis) == {a["name"] for a in tool["api_list"]}, tool["name"]
        for doc_api in tool["api_list"]:
            t = apis[doc_api["name"]].tool
            required = [p["name"] for p in doc_api["required_parameters"]]
            optional = [p["name"] for p in doc_api["optional_parameters"]]
            assert [p.name for p in t.params] == required + optional, doc_api["name"]
            specs = {p.name: p for p in t.params}
            for p in doc_api["required_parameters"]:
                assert not specs[p["name"]].optional and specs[p["name"]].type in TYPES[p["type"]], p
            for p in doc_api["optional_parameters"]:
                assert specs[p["name"]].optional and specs[p["name"]].type in TYPES[p["type"]], p
            assert t.parameters_schema()["required"] == required


def _sample_calls(world: MockWorld) -> dict[str, dict[str, Any]]:
    """One valid call per API (on seed 0), ids taken from the seeded rows."""
    conn = world.store.conn
    prop = conn.execute("SELECT property_id FROM teval_airbnb_properties LIMIT 1").fetchone()[0]
    movie = conn.execute("SELECT movie_id FROM teval_tmdb_movies LIMIT 1").fetchone()[0]
    author = conn.execute("SELECT author_id FROM teval_scholar_authors LIMIT 1").fetchone()[0]
    paper = conn.execute("SELECT organic_id FROM teval_scholar_papers LIMIT 1").fetchone()[0]
    film = conn.execute("SELECT title FROM teval_douban_films LIMIT 1").fetchone()[0]
    bar_day = conn.execute("SELECT max(date) FROM teval_polygon_daily").fetchone()[0]
    beijing, summer_palace = "116.397477,39.908692", "116.275179,39.999617"
    return {
        "search_property_by_place": {"place": "Paris"},
        "get_property_details": {"propertyId": prop},
        "check_availability": {"propertyId": prop},
        "get_property_reviews": {"propertyId": prop},
        "get_property_checkout_price": {
            "propertyId": prop,
            "checkIn": "2024-09-01",
            "checkOut": "2024-09-05",
        },
        "get_arxiv_article_information": {"query": "transformers"},
        "get_distance": {"start": "Seattle", "end": "Portland"},
        "get_route": {"start": "Seattle", "end": "Portland"},
        "get_coordinates": {"location": "Seattle"},
        "search_nearby": {"search_term": "coffee", "places": "Seattle"},
        "send": {"address": "a@example.com", "title": "hi"},
        "show": {"only_unread": True},
        "write_file": {"file_path": "/tmp/a.txt", "text": "x"},
        "read_file": {"file_path": "/home/user/desktop/todo.txt"},
        "coming_out_filter": {},
        "now_playing_out_filter": {},
        "print_detail": {"film_name": film},
        "search_movie": {"query": "the"},
        "get_movie_details": {"movie_id": movie},
        "get_similar_movies": {"movie_id": movie},
        "get_movie_reviews": {"movie_id": movie},
        "get_now_playing": {},
        "get_top_rated_movies": {},
        "get_popular_movies": {},
        "gaode_get_distance": {"origins": beijing, "destination": summer_palace},
        "gaode_get_route": {"origin": beijing, "destination": summer_palace},
        "gaode_get_coordinate": {"address": "天安门"},
        "gaode_search_nearby": {"location": beijing, "keywords": "餐厅"},
        "search_google_scholar": {"query": "deep learning"},
        "get_author_information": {"author_id": author},
        "get_citation_format": {"q": paper},
        "get_author_id": {
            "mauthors": conn.execute("SELECT name FROM teval_scholar_authors LIMIT 1").fetchone()[0]
        },
        "serper_search": {"query": "capital of France"},
        "get_room_status": {},
        "get_empty_room_with_time": {"start_time": "20:00", "end_time": "21:00"},
        "reserve": {"room_id": "101", "start_time": "20:00", "end_time": "21:00"},
        "get_curr_time": {},
        "get_weekday": {},
        "create_file": {"theme": "Default", "abs_location": "/home/user/a.pptx"},
        "get_image": {"keywords": "cat"},
        "add_text_page": {"title": "t", "bullet_items": "a[SPAN]b"},
        "add_text_image_page": {"title": "t", "bullet_items": "a", "image": "/images/library/cat_photo.png"},
        "save_file": {},
        "get_weather_today": {"location": "Paris"},
        "forecast_weather": {"location": "Paris", "days": 2},
        "search_stock_ticker": {"search": "Apple"},
        "aggregate_stock_with_time": {
            "ticker": "AAPL",
            "multiplier": 1,
            "timespan": "day",
            "from": bar_day,
            "to": bar_day,
        },
        "get_daliy_open_close": {"ticker": "AAPL", "date": bar_day},
        "get_ticker_news": {"ticker": "AAPL"},
        "get_ticker_detail": {"ticker": "AAPL"},
    }


def test_every_api_returns_its_documented_fields() -> None:
    apps = [c.name for c in TEVAL_APPS]
    world = make_world(*apps)
    prefixes = teval_prefixes(apps)
    assert prefixes == {"teval_gaode_map": "gaode_"}
    samples = _sample_calls(world)
    by_tool = _apps_by_tool()
    seen = 0
    for tool in _doc():
        prefix = prefixes.get(by_tool[tool["name"]].name, "")
        for doc_api in tool["api_list"]:
            name = prefix + doc_api["name"]
            result = call(world, name, **samples[name])
            for field in doc_api["return_data"]:
                assert field["name"] in result, (name, field["name"], result)
            seen += 1
    assert seen == 50


def test_the_keyword_parameter_from_is_published_as_is() -> None:
    world = make_world("teval_polygon")
    schema = world.tools.get("aggregate_stock_with_time").parameters_schema()
    assert list(schema["properties"]) == ["ticker", "multiplier", "timespan", "from", "to"]
    assert schema["properties"]["timespan"]["enum"] == ["day", "hour", "week"]


def test_the_two_maps_need_a_prefix_only_together() -> None:
    with pytest.raises(ValueError, match="get_distance"):
        MockWorld(resolve_app_names(["teval_bing_map", "teval_gaode_map"]))
    assert teval_prefixes(["teval_gaode_map", "teval_weather"]) == {}
    world = make_world("teval_bing_map", "teval_gaode_map")
    names = {t.name for t in world.tools}
    assert {"get_distance", "gaode_get_distance", "search_nearby", "gaode_search_nearby"} <= names


def test_resolve_app_names() -> None:
    assert resolve_app_names(["teval_weather", "shopping"])[0] is TEVAL_APP_BY_NAME["teval_weather"]
    with pytest.raises(KeyError, match="no mock app 'nope'"):
        resolve_app_names(["nope"])


@pytest.mark.parametrize("cls", TEVAL_APPS, ids=lambda c: c.name)
def test_app_declaration(cls: type[App]) -> None:
    assert validate_app(cls) == []
    assert cls.name.startswith("teval_")
    with make_world(cls.name) as world:
        tables = world.table_names
        assert tables and all(t.startswith(cls.name + "_") for t in tables), tables


@pytest.mark.parametrize("cls", TEVAL_APPS, ids=lambda c: c.name)
def test_seeding_is_deterministic_and_quick(cls: type[App]) -> None:
    # separate caches: the seeder really runs each time
    start = time.perf_counter()
    a = MockWorld([cls], seed=0, clock=CLOCK, cache=TemplateCache())
    elapsed = time.perf_counter() - start
    b = MockWorld([cls], seed=0, clock=CLOCK, cache=TemplateCache())
    c = MockWorld([cls], seed=1, clock=CLOCK, cache=TemplateCache())
    assert a.state_hash() == b.state_hash() == a.store.full_hash()
    if cls.name != "teval_time":  # the time tool seeds settings only: nothing random
        assert a.state_hash() != c.state_hash()
    assert elapsed < 1.0  # seeding targets ~50 ms; this only catches gross regressions
