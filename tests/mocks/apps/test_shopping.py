"""The shopping app's behaviour on its seeded data (real SQLite)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from toolgym.actions import ToolCall
from toolgym.errors import ErrorKind
from toolgym.mocks.apps.shopping import CATEGORIES, N_CUSTOMERS, N_ORDERS, N_PRODUCTS
from toolgym.mocks.responses import AppError
from toolgym.mocks.world import MockWorld

CLOCK = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def world() -> MockWorld:
    return MockWorld(["shopping"], seed=0, clock=CLOCK)


def search(world: MockWorld, **args: Any) -> dict[str, Any]:
    result: dict[str, Any] = world.call("search_products", **args)
    return result


def stock_of(world: MockWorld, product_id: str) -> int:
    return int(world.rows("shop_products", {"product_id": product_id})[0]["stock"])


def wallet_of(world: MockWorld, customer_id: str) -> int:
    return int(world.rows("shop_customers", {"customer_id": customer_id})[0]["wallet_cents"])


def in_stock_product(world: MockWorld, minimum: int = 5) -> str:
    return str(
        world.store.conn.execute(
            "SELECT product_id FROM shop_products WHERE stock >= ? ORDER BY product_id LIMIT 1", (minimum,)
        ).fetchone()[0]
    )


def rich_customer(world: MockWorld) -> str:
    return str(
        world.store.conn.execute(
            "SELECT customer_id FROM shop_customers ORDER BY wallet_cents DESC LIMIT 1"
        ).fetchone()[0]
    )


def test_seed_size_and_determinism(world: MockWorld) -> None:
    assert len(world.rows("shop_products")) == N_PRODUCTS
    assert len(world.rows("shop_customers")) == N_CUSTOMERS
    assert len(world.rows("shop_orders")) == N_ORDERS
    assert len(world.rows("shop_order_items")) >= N_ORDERS
    again = MockWorld(["shopping"], seed=0, clock=CLOCK)
    assert again.rows("shop_products") == world.rows("shop_products")
    other = MockWorld(["shopping"], seed=1, clock=CLOCK)
    assert other.rows("shop_products") != world.rows("shop_products")


def test_filters_filter(world: MockWorld) -> None:
    result = search(world, category="kitchen", min_price=20, max_price=80, min_rating=4, page_size=50)
    assert result["status"] == "success" and result["total"] > 0
    for p in result["products"]:
        assert p["category"] == "kitchen" and 20 <= p["price"] <= 80 and p["rating"] >= 4
    expected = world.store.conn.execute(
        "SELECT count(*) FROM shop_products WHERE category = 'kitchen' AND price_cents BETWEEN 2000 AND 8000"
        " AND rating >= 4"
    ).fetchone()[0]
    assert result["total"] == expected
    in_stock = search(world, in_stock_only=True, page_size=50)
    assert all(p["in_stock"] for p in in_stock["products"])
    assert in_stock["total"] < N_PRODUCTS  # some seeded products are sold out
    brand = search(world, brand="voltix", page_size=50)
    assert brand["total"] > 0 and all(p["brand"] == "Voltix" for p in brand["products"])


def test_text_query_matches_and_ranks(world: MockWorld) -> None:
    result = search(world, query="table lamp", page_size=50)
    assert result["total"] > 0
    assert all("table lamp" in p["name"].lower() for p in result["products"])
    assert search(world, query="zzzz-nothing")["total"] == 0


@pytest.mark.parametrize(
    ("sort_by", "sort_order", "field", "descending"),
    [
        ("price", None, "price", False),
        ("price", "desc", "price", True),
        ("rating", None, "rating", True),
        ("review_count", "asc", "review_count", False),
        ("name", None, "name", False),
    ],
)
def test_sorting_sorts(
    world: MockWorld, sort_by: str, sort_order: str | None, field: str, descending: bool
) -> None:
    result = search(world, sort_by=sort_by, sort_order=sort_order, page_size=50)
    values = [p[field] for p in result["products"]]
    assert values == sorted(values, reverse=descending)


def test_pagination_walks_the_whole_result(world: MockWorld) -> None:
    seen: list[str] = []
    page = 1
    while True:
        result = search(world, category="books", sort_by="price", page=page, page_size=7)
        if not result["products"]:
            break
        seen += [p["product_id"] for p in result["products"]]
        page += 1
    assert len(seen) == len(set(seen)) == search(world, category="books")["total"]


@pytest.mark.parametrize(
    "args",
    [
        {"sort_by": "popularity"},
        {"sort_order": "sideways"},
        {"category": "weapons"},
        {"page": 0},
        {"page_size": 500},
        {"min_rating": 7},
        {"min_price": 50, "max_price": 10},
        {"min_price": 1.001},
    ],
)
def test_bad_search_input_is_a_400(world: MockWorld, args: dict[str, Any]) -> None:
    obs = world.step(ToolCall(name="search_products", arguments=args))
    assert obs.error_kind == ErrorKind.TOOL_ERROR
    assert obs.content["status"] == "error" and obs.content["code"] == 400


def test_categories_and_product_details(world: MockWorld) -> None:
    cats = world.call("list_categories")["categories"]
    assert [c["category"] for c in cats] == sorted(CATEGORIES)
    assert sum(c["product_count"] for c in cats) == N_PRODUCTS
    product = world.call("get_product", product_id="PRD-00001")["product"]
    assert product["product_id"] == "PRD-00001" and "description" in product
    with pytest.raises(AppError) as err:
        world.call("get_product", product_id="PRD-99999")
    assert err.value.code == 404


def test_cart_add_remove_view(world: MockWorld) -> None:
    customer, product = "CUS-00001", in_stock_product(world)
    start = world.call("view_cart", customer_id=customer)["cart"]["items"]
    world.call("add_to_cart", customer_id=customer, product_id=product, quantity=2)
    cart = world.call("add_to_cart", customer_id=customer, product_id=product)["cart"]
    line = next(i for i in cart["items"] if i["product_id"] == product)
    assert line["quantity"] == 3 and line["line_total"] == pytest.approx(3 * line["unit_price"])
    cart = world.call("remove_from_cart", customer_id=customer, product_id=product, quantity=1)["cart"]
    assert next(i for i in cart["items"] if i["product_id"] == product)["quantity"] == 2
    cart = world.call("remove_from_cart", customer_id=customer, product_id=product)["cart"]
    assert cart["items"] == start
    with pytest.raises(AppError) as err:
        world.call("remove_from_cart", customer_id=customer, product_id=product)
    assert err.value.code == 404


def test_cannot_put_more_in_the_cart_than_in_stock(world: MockWorld) -> None:
    product = in_stock_product(world)
    stock = stock_of(world, product)
    before = world.state_hash()
    obs = world.step(
        ToolCall(
            name="add_to_cart",
            arguments={"customer_id": "CUS-00002", "product_id": product, "quantity": stock + 1},
        )
    )
    assert obs.content["code"] == 409 and obs.content["details"]["stock"] == stock
    assert world.state_hash() == before


def test_order_takes_stock_charges_wallet_and_empties_cart(world: MockWorld) -> None:
    customer, product = rich_customer(world), in_stock_product(world)
    for item in world.call("view_cart", customer_id=customer)["cart"]["items"]:
        world.call("remove_from_cart", customer_id=customer, product_id=item["product_id"])
    stock, wallet = stock_of(world, product), wallet_of(world, customer)
    world.call("add_to_cart", customer_id=customer, product_id=product, quantity=2)
    order = world.call("place_order", customer_id=customer, payment_method="wallet")["order"]
    assert order["order_id"] == f"ORD-{N_ORDERS + 1:06d}" and order["status"] == "placed"
    assert stock_of(world, product) == stock - 2
    assert wallet_of(world, customer) == wallet - round(order["total"] * 100)
    assert world.call("view_cart", customer_id=customer)["cart"]["items"] == []
    assert world.call("get_order", order_id=order["order_id"])["order"]["items"][0]["quantity"] == 2
    listed = world.call("list_orders", customer_id=customer, status="placed")["orders"]
    assert order["order_id"] in [o["order_id"] for o in listed]


def test_pay_on_delivery_charges_nothing(world: MockWorld) -> None:
    customer, product = "CUS-00004", in_stock_product(world)
    wallet = wallet_of(world, customer)
    world.call("add_to_cart", customer_id=customer, product_id=product)
    world.call("place_order", customer_id=customer, payment_method="pay_on_delivery")
    assert wallet_of(world, customer) == wallet


def test_order_errors_leave_state_alone(world: MockWorld) -> None:
    poor = str(
        world.store.conn.execute("SELECT customer_id FROM shop_customers ORDER BY wallet_cents").fetchone()[0]
    )
    pricey = str(
        world.store.conn.execute(
            "SELECT product_id FROM shop_products WHERE stock > 0 ORDER BY price_cents DESC"
        ).fetchone()[0]
    )
    for item in world.call("view_cart", customer_id=poor)["cart"]["items"]:
        world.call("remove_from_cart", customer_id=poor, product_id=item["product_id"])
    before = world.state_hash()
    empty = world.step(ToolCall(name="place_order", arguments={"customer_id": poor}))
    assert empty.content["code"] == 422 and world.state_hash() == before
    world.call("add_to_cart", customer_id=poor, product_id=pricey)
    before = world.state_hash()
    broke = world.step(
        ToolCall(name="place_order", arguments={"customer_id": poor, "payment_method": "wallet"})
    )
    assert broke.content["code"] == 422 and "insufficient" in broke.content["message"]
    bad_method = world.step(
        ToolCall(name="place_order", arguments={"customer_id": poor, "payment_method": "iou"})
    )
    assert bad_method.content["code"] == 400
    unknown = world.step(ToolCall(name="place_order", arguments={"customer_id": "CUS-00000"}))
    assert unknown.content["code"] == 404
    wrong_type = world.step(ToolCall(name="place_order", arguments={"customer_id": ["CUS-00001"]}))
    assert wrong_type.error_kind == ErrorKind.ARGUMENT_ERROR
    assert world.state_hash() == before


def test_stock_conflict_when_someone_else_bought_it_first(world: MockWorld) -> None:
    product = in_stock_product(world, minimum=1)
    stock = stock_of(world, product)
    world.call("add_to_cart", customer_id="CUS-00005", product_id=product, quantity=stock)
    world.call("add_to_cart", customer_id="CUS-00006", product_id=product, quantity=stock)
    world.call("place_order", customer_id="CUS-00005", payment_method="pay_on_delivery")
    assert stock_of(world, product) == 0
    obs = world.step(
        ToolCall(name="place_order", arguments={"customer_id": "CUS-00006", "payment_method": "wallet"})
    )
    assert obs.content["code"] == 409 and product in obs.content["details"]["product_ids"]


def _new_order(world: MockWorld, payment: str = "wallet") -> str:
    customer = rich_customer(world)
    for item in world.call("view_cart", customer_id=customer)["cart"]["items"]:
        world.call("remove_from_cart", customer_id=customer, product_id=item["product_id"])
    world.call("add_to_cart", customer_id=customer, product_id=in_stock_product(world), quantity=1)
    return str(world.call("place_order", customer_id=customer, payment_method=payment)["order"]["order_id"])


def test_cancel_gives_back_stock_and_money_and_cancelled_orders_cannot_ship(world: MockWorld) -> None:
    customer, product = rich_customer(world), in_stock_product(world)
    stock, wallet = stock_of(world, product), wallet_of(world, customer)
    order_id = _new_order(world)
    result = world.call("cancel_order", order_id=order_id, reason="changed my mind")
    assert result["order_status"] == "cancelled" and result["refunded"] > 0
    assert stock_of(world, product) == stock and wallet_of(world, customer) == wallet
    before = world.state_hash()
    ship = world.step(ToolCall(name="ship_order", arguments={"order_id": order_id}))
    assert ship.content["code"] == 409 and "cancelled" in ship.content["message"]
    again = world.step(ToolCall(name="cancel_order", arguments={"order_id": order_id}))
    assert again.content["code"] == 409 and "already cancelled" in again.content["message"]
    assert world.state_hash() == before


def test_shipped_orders_cannot_be_cancelled_and_tracking_follows_the_clock(world: MockWorld) -> None:
    order_id = _new_order(world)
    shipped = world.call("ship_order", order_id=order_id)
    assert shipped["tracking_number"].startswith("TRK-")
    track = world.call("track_order", order_id=order_id)
    assert track["order_status"] == "shipped"
    assert track["estimated_delivery"] == (CLOCK + timedelta(days=3)).isoformat()
    before = world.state_hash()
    obs = world.step(ToolCall(name="cancel_order", arguments={"order_id": order_id}))
    assert obs.content["code"] == 409 and world.state_hash() == before
    assert world.step(ToolCall(name="ship_order", arguments={"order_id": order_id})).content["code"] == 409
    world.advance_clock(timedelta(days=4))
    assert world.call("track_order", order_id=order_id)["order_status"] == "delivered"
    delivered = world.rows("shop_orders", {"status": "delivered"})[0]["order_id"]
    assert world.step(ToolCall(name="cancel_order", arguments={"order_id": delivered})).content["code"] == 409


def test_order_ids_are_deterministic_across_worlds_and_resets(world: MockWorld) -> None:
    first = _new_order(world)
    world.reset(seed=0, clock=CLOCK)
    assert _new_order(world) == first
    assert _new_order(MockWorld(["shopping"], seed=0, clock=CLOCK)) == first
