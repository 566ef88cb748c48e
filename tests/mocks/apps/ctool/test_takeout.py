"""Takeout on real SQLite: stock and wallet move with orders, status follows the clock, cancel
before pickup only, rating once after delivery."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from tests.mocks.apps.ctool import expect_error, ok_call
from toolgym.errors import ErrorKind
from toolgym.mocks.apps.ctool import TakeoutApp
from toolgym.mocks.world import MockWorld

USER = "TU001"


@pytest.fixture
def world() -> Iterator[MockWorld]:
    with MockWorld([TakeoutApp]) as w:
        yield w


def _setup(world: MockWorld) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """An open restaurant, a well-stocked item on its menu and a Home address in its district."""
    ok_call(world, "top_up_wallet", user_id=USER, amount=1000)
    r = next(r for r in world.rows("takeout_restaurants") if r["accepting_orders"])
    item = next(
        i for i in world.rows("takeout_menu_items", {"restaurant_id": r["restaurant_id"]}) if i["stock"] >= 20
    )
    address = ok_call(
        world, "add_delivery_address", user_id=USER, district=r["district"], address="Room 1, 1 Test Road"
    )
    return r, item, address


def _wallet(world: MockWorld) -> int:
    return int(world.rows("takeout_users", {"user_id": USER})[0]["wallet_cents"])


def _stock(world: MockWorld, item_id: str) -> int:
    return int(world.rows("takeout_menu_items", {"item_id": item_id})[0]["stock"])


def _quantity_for(item: dict[str, Any], restaurant: dict[str, Any]) -> int:
    return int(-(-restaurant["min_order_cents"] // item["price_cents"]))  # enough to reach the minimum


def test_order_takes_stock_and_money(world: MockWorld) -> None:
    r, item, address = _setup(world)
    n = _quantity_for(item, r)
    wallet, stock = _wallet(world), _stock(world, item["item_id"])
    order = ok_call(
        world,
        "place_takeout_order",
        user_id=USER,
        restaurant_id=r["restaurant_id"],
        items={item["item_id"]: n},
        address_id=address["address_id"],
    )["order"]
    assert order["order_status"] == "placed"
    assert order["subtotal"] == pytest.approx(n * item["price_cents"] / 100)
    assert order["delivery_fee"] == pytest.approx(r["delivery_fee_cents"] / 100)  # same district
    assert _wallet(world) == wallet - round(order["total"] * 100)
    assert _stock(world, item["item_id"]) == stock - n
    listed = ok_call(world, "list_takeout_orders", user_id=USER, status="placed")["orders"]
    assert [o["order_id"] for o in listed] == [order["order_id"]]


def test_cross_district_costs_more_and_cash_costs_nothing_now(world: MockWorld) -> None:
    r, item, _ = _setup(world)
    other = next(d for d in ("Huangpu", "Xuhui", "Pudong") if d != r["district"])
    far = ok_call(world, "add_delivery_address", user_id=USER, district=other, address="Room 2, 2 Far Road")
    wallet = _wallet(world)
    order = ok_call(
        world,
        "place_takeout_order",
        user_id=USER,
        restaurant_id=r["restaurant_id"],
        items={item["item_id"]: _quantity_for(item, r)},
        address_id=far["address_id"],
        payment_method="cash",
    )["order"]
    assert order["delivery_fee"] == pytest.approx(r["delivery_fee_cents"] / 100 + 3)
    assert _wallet(world) == wallet


def test_status_follows_the_clock_and_cancel_only_before_pickup(world: MockWorld) -> None:
    r, item, address = _setup(world)
    args = {"user_id": USER, "restaurant_id": r["restaurant_id"], "address_id": address["address_id"]}
    items = {item["item_id"]: _quantity_for(item, r)}
    first = ok_call(world, "place_takeout_order", items=items, **args)["order"]
    second = ok_call(world, "place_takeout_order", items=items, **args)["order"]
    wallet, stock = _wallet(world), _stock(world, item["item_id"])

    def status(order_id: str) -> str:
        return str(ok_call(world, "get_takeout_order", order_id=order_id)["order"]["order_status"])

    world.advance_clock(timedelta(minutes=3))
    assert status(first["order_id"]) == "preparing"
    cancelled = ok_call(world, "cancel_takeout_order", order_id=first["order_id"], reason="too slow")
    assert cancelled["refunded"] == first["total"]
    assert _wallet(world) == wallet + round(first["total"] * 100)
    assert _stock(world, item["item_id"]) == stock + sum(items.values())
    expect_error(world, "cancel_takeout_order", code=409, order_id=first["order_id"])
    world.advance_clock(timedelta(minutes=r["prep_minutes"]))
    assert status(second["order_id"]) == "delivering"
    expect_error(world, "cancel_takeout_order", code=409, order_id=second["order_id"])
    expect_error(world, "rate_takeout_order", code=409, order_id=second["order_id"], rating=5)
    world.advance_clock(timedelta(minutes=20))
    assert status(second["order_id"]) == "delivered"
    timeline = ok_call(world, "get_takeout_order", order_id=second["order_id"])["order"]["timeline"]
    assert [t["event"] for t in timeline][-1] == "delivered"


def test_rating_updates_the_restaurant_once(world: MockWorld) -> None:
    order = next(o for o in world.rows("takeout_orders") if o["rating"] is None and o["cancelled_at"] is None)
    r = world.rows("takeout_restaurants", {"restaurant_id": order["restaurant_id"]})[0]
    rated = ok_call(world, "rate_takeout_order", order_id=order["order_id"], rating=1, comment="Cold.")
    n = r["rating_count"]
    assert rated["restaurant_rating_count"] == n + 1
    assert rated["restaurant_rating"] == pytest.approx(round((r["rating"] * n + 1) / (n + 1), 2))
    expect_error(world, "rate_takeout_order", code=409, order_id=order["order_id"], rating=4)
    expect_error(world, "rate_takeout_order", code=400, order_id=order["order_id"], rating=0)
    cancelled = next(o for o in world.rows("takeout_orders") if o["cancelled_at"] is not None)
    expect_error(world, "rate_takeout_order", code=409, order_id=cancelled["order_id"], rating=3)


def test_impossible_orders_change_nothing(world: MockWorld) -> None:
    r, item, address = _setup(world)
    base = {"user_id": USER, "restaurant_id": r["restaurant_id"], "address_id": address["address_id"]}
    enough = _quantity_for(item, r)
    open_ids = {c["restaurant_id"] for c in world.rows("takeout_restaurants") if c["accepting_orders"]}
    scarce = next(
        i for i in world.rows("takeout_menu_items") if 0 < i["stock"] <= 3 and i["restaurant_id"] in open_ids
    )
    expect_error(
        world,
        "place_takeout_order",
        code=409,
        items={scarce["item_id"]: scarce["stock"] + 1},
        **(base | {"restaurant_id": scarce["restaurant_id"]}),
    )
    if item["price_cents"] < r["min_order_cents"]:
        expect_error(world, "place_takeout_order", code=422, items={item["item_id"]: 1}, **base)
    foreign = next(i for i in world.rows("takeout_menu_items") if i["restaurant_id"] != r["restaurant_id"])
    expect_error(
        world, "place_takeout_order", code=422, items={foreign["item_id"]: 1, item["item_id"]: enough}, **base
    )
    expect_error(world, "place_takeout_order", code=404, items={"ITM-99999": 1}, **base)
    expect_error(world, "place_takeout_order", code=422, items={}, **base)
    expect_error(world, "place_takeout_order", code=400, items={item["item_id"]: 0}, **base)
    expect_error(
        world, "place_takeout_order", code=400, items={item["item_id"]: enough}, payment_method="card", **base
    )
    other = world.rows("takeout_addresses", {"user_id": "TU002"})[0]["address_id"]
    expect_error(
        world,
        "place_takeout_order",
        code=403,
        items={item["item_id"]: enough},
        **(base | {"address_id": other}),
    )
    closed = next(c for c in world.rows("takeout_restaurants") if not c["accepting_orders"])
    closed_item = world.rows("takeout_menu_items", {"restaurant_id": closed["restaurant_id"]})[0]
    expect_error(
        world,
        "place_takeout_order",
        code=409,
        items={closed_item["item_id"]: 5},
        **(base | {"restaurant_id": closed["restaurant_id"]}),
    )
    poor = min(world.rows("takeout_users"), key=lambda u: (u["wallet_cents"], u["user_id"]))
    poor_address = world.rows("takeout_addresses", {"user_id": poor["user_id"]})[0]["address_id"]
    # a quantity one past what the wallet can pay for, of an item with enough stock
    pricey, n = next(
        (i, poor["wallet_cents"] // i["price_cents"] + 1)
        for i in world.rows("takeout_menu_items")
        if i["restaurant_id"] in open_ids
        and poor["wallet_cents"] // i["price_cents"] + 1 <= min(i["stock"], 99)
        and (poor["wallet_cents"] // i["price_cents"] + 1) * i["price_cents"] >= 4000
    )
    expect_error(
        world,
        "place_takeout_order",
        code=422,
        user_id=poor["user_id"],
        restaurant_id=pricey["restaurant_id"],
        address_id=poor_address,
        items={pricey["item_id"]: n},
    )
    expect_error(world, "top_up_wallet", code=400, user_id=USER, amount=-5)
    expect_error(world, "place_takeout_order", kind=ErrorKind.ARGUMENT_ERROR, items=[item["item_id"]], **base)


def test_reorder_repeats_a_previous_order(world: MockWorld) -> None:
    ok_call(world, "top_up_wallet", user_id="TU003", amount=2000)
    old = next(
        o
        for o in world.rows("takeout_orders", {"user_id": "TU003"})
        if world.rows("takeout_restaurants", {"restaurant_id": o["restaurant_id"]})[0]["accepting_orders"]
        and all(
            _stock(world, line["item_id"]) >= line["quantity"]
            for line in world.rows("takeout_order_items", {"order_id": o["order_id"]})
        )
    )
    again = ok_call(world, "reorder_takeout_order", order_id=old["order_id"])["order"]
    before = {
        (i["item_id"], i["quantity"])
        for i in world.rows("takeout_order_items", {"order_id": old["order_id"]})
    }
    assert {(i["item_id"], i["quantity"]) for i in again["items"]} == before
    assert again["order_id"] != old["order_id"] and again["address_id"] == old["address_id"]


def test_search_filters_and_sorts(world: MockWorld) -> None:
    found = ok_call(
        world, "search_restaurants", cuisine="sichuan", min_rating=4.0, sort_by="delivery_fee", page_size=50
    )
    rows = found["restaurants"]
    assert rows and all(r["cuisine"] == "sichuan" and r["rating"] >= 4.0 for r in rows)
    fees = [r["delivery_fee"] for r in rows]
    assert fees == sorted(fees)
    dumplings = ok_call(world, "search_restaurants", keyword="dumplings", page_size=50)["restaurants"]
    for r in dumplings:
        names = [
            m["name"].lower() for m in ok_call(world, "get_menu", restaurant_id=r["restaurant_id"])["items"]
        ]
        assert any("dumplings" in n for n in names) or "dumplings" in r["name"].lower()
    menu = ok_call(world, "get_menu", restaurant_id=rows[0]["restaurant_id"], available_only=True)["items"]
    assert all(m["stock"] > 0 for m in menu)
    expect_error(world, "search_restaurants", code=400, cuisine="martian")
    expect_error(world, "get_menu", code=404, restaurant_id="RS-9999")
