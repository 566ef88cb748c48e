"""Express delivery on real SQLite: fees, timelines that follow the clock, cancel and redirect rules."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from tests.mocks.apps.ctool import expect_error, ok_call
from toolgym.errors import ErrorKind
from toolgym.mocks.apps.ctool import ExpressApp
from toolgym.mocks.world import MockWorld

RECIPIENT: dict[str, Any] = {
    "recipient_name": "Li Na",
    "recipient_phone": "13800138000",
    "recipient_city": "Shanghai",
    "recipient_address": "12 Xinhua Road",
}


@pytest.fixture
def world() -> Iterator[MockWorld]:
    with MockWorld([ExpressApp]) as w:
        yield w


def _sender_city(world: MockWorld, customer_id: str) -> str:
    return str(world.rows("express_customers", {"customer_id": customer_id})[0]["city"])


def test_fee_grows_with_weight_distance_and_speed(world: MockWorld) -> None:
    def fee(**kw: object) -> float:
        args = {"from_city": "Beijing", "to_city": "Shanghai", "weight_kg": 1.0, "service": "standard"} | kw
        return float(ok_call(world, "estimate_shipping_fee", **args)["fee"])

    assert fee(weight_kg=3.0) > fee(weight_kg=1.0)
    assert fee(to_city="Guangzhou") > fee(to_city="Nanjing")  # about 1900 km vs 900 km
    assert fee(to_city="Beijing") < fee(to_city="Nanjing")  # same city: no distance surcharge
    assert fee(service="express") > fee(service="standard") > fee(service="economy")
    # express is faster too
    fast = ok_call(
        world, "estimate_shipping_fee", from_city="Beijing", to_city="Chengdu", weight_kg=1, service="express"
    )
    slow = ok_call(
        world, "estimate_shipping_fee", from_city="Beijing", to_city="Chengdu", weight_kg=1, service="economy"
    )
    assert fast["estimated_hours"] < slow["estimated_hours"]


def test_created_shipment_is_priced_like_the_quote_and_listed(world: MockWorld) -> None:
    city = _sender_city(world, "EC-0001")
    quote = ok_call(world, "estimate_shipping_fee", from_city=city, to_city="Shanghai", weight_kg=2.4)
    made = ok_call(world, "create_shipment", customer_id="EC-0001", weight_kg=2.4, **RECIPIENT)
    assert made["fee"] == quote["fee"] and made["estimated_delivery"] == quote["estimated_delivery"]
    listed = ok_call(world, "list_shipments", customer_id="EC-0001", status="created")["shipments"]
    assert made["tracking_number"] in [s["tracking_number"] for s in listed]
    assert all(s["shipment_status"] == "created" for s in listed)


def test_tracking_advances_with_the_clock(world: MockWorld) -> None:
    tn = ok_call(world, "create_shipment", customer_id="EC-0002", weight_kg=1.0, **RECIPIENT)[
        "tracking_number"
    ]
    seen = []
    for _ in range(40):
        track = ok_call(world, "track_shipment", tracking_number=tn)
        seen.append(track["shipment_status"])
        if track["shipment_status"] == "delivered":
            break
        world.advance_clock(timedelta(hours=2))
    statuses = list(dict.fromkeys(seen))
    expected = [
        "created",
        "picked_up",
        "in_transit",
        "arrived_at_destination",
        "out_for_delivery",
        "delivered",
    ]
    assert [s for s in expected if s in statuses] == statuses  # never goes backwards
    assert statuses[0] == "created" and statuses[-1] == "delivered"
    events = ok_call(world, "track_shipment", tracking_number=tn)["events"]
    assert [e["status"] for e in events] == expected
    assert [e["time"] for e in events] == sorted(e["time"] for e in events)


def test_cancel_only_before_pickup(world: MockWorld) -> None:
    tn = ok_call(world, "create_shipment", customer_id="EC-0003", weight_kg=1.0, **RECIPIENT)[
        "tracking_number"
    ]
    other = ok_call(world, "create_shipment", customer_id="EC-0003", weight_kg=1.0, **RECIPIENT)[
        "tracking_number"
    ]
    done = ok_call(world, "cancel_shipment", tracking_number=tn, reason="changed plans")
    assert done["shipment_status"] == "cancelled"
    assert ok_call(world, "track_shipment", tracking_number=tn)["events"][-1]["status"] == "cancelled"
    expect_error(world, "cancel_shipment", code=409, tracking_number=tn)
    expect_error(world, "change_delivery_address", code=409, tracking_number=tn, new_address="1 Other Road")
    world.advance_clock(timedelta(hours=3))  # the courier has been
    assert ok_call(world, "track_shipment", tracking_number=other)["shipment_status"] == "picked_up"
    expect_error(world, "cancel_shipment", code=409, tracking_number=other)


def test_redirect_before_dispatch_reprices_and_is_logged(world: MockWorld) -> None:
    made = ok_call(
        world, "create_shipment", customer_id="EC-0004", weight_kg=5.0, service="express", **RECIPIENT
    )
    tn = made["tracking_number"]
    moved = ok_call(
        world, "change_delivery_address", tracking_number=tn, new_address="9 Renmin Road", new_city="Chengdu"
    )
    quote = ok_call(
        world,
        "estimate_shipping_fee",
        from_city=_sender_city(world, "EC-0004"),
        to_city="Chengdu",
        weight_kg=5.0,
        service="express",
    )
    assert moved["fee"] == quote["fee"]
    assert moved["fee_difference"] == pytest.approx(moved["fee"] - made["fee"])
    row = world.rows("express_shipments", {"tracking_number": tn})[0]
    assert (row["recipient_city"], row["recipient_address"]) == ("Chengdu", "9 Renmin Road")
    assert len(world.rows("express_address_changes", {"tracking_number": tn})) == 1
    world.advance_clock(timedelta(hours=4))  # express leaves the sorting center after 3 hours
    expect_error(world, "change_delivery_address", code=409, tracking_number=tn, new_address="10 Renmin Road")


def test_invalid_input_is_a_typed_error_and_changes_nothing(world: MockWorld) -> None:
    expect_error(world, "track_shipment", code=404, tracking_number="EXP-99999999")
    expect_error(world, "create_shipment", code=404, customer_id="EC-9999", weight_kg=1.0, **RECIPIENT)
    expect_error(
        world,
        "create_shipment",
        code=400,
        customer_id="EC-0001",
        weight_kg=1.0,
        service="teleport",
        **RECIPIENT,
    )
    expect_error(
        world,
        "create_shipment",
        code=400,
        customer_id="EC-0001",
        weight_kg=1.0,
        **(RECIPIENT | {"recipient_city": "Paris"}),
    )
    expect_error(
        world,
        "create_shipment",
        code=400,
        customer_id="EC-0001",
        weight_kg=1.0,
        **(RECIPIENT | {"recipient_phone": "12345"}),
    )
    expect_error(world, "create_shipment", code=422, customer_id="EC-0001", weight_kg=80.0, **RECIPIENT)
    expect_error(world, "create_shipment", code=400, customer_id="EC-0001", weight_kg=0.0, **RECIPIENT)
    expect_error(world, "list_shipments", code=400, customer_id="EC-0001", status="lost")
    expect_error(world, "create_shipment", kind=ErrorKind.ARGUMENT_ERROR, customer_id="EC-0001", **RECIPIENT)
    expect_error(world, "track_shipment", kind=ErrorKind.ARGUMENT_ERROR, tracking_number="EXP-1", extra=1)


def test_address_book_and_service_points(world: MockWorld) -> None:
    before = len(ok_call(world, "list_saved_addresses", customer_id="EC-0005")["addresses"])
    args: dict[str, Any] = {
        "customer_id": "EC-0005",
        "name": "Wu Lei",
        "phone": "13912345678",
        "city": "Wuhan",
        "address": "5 Jianshe Road",
    }
    ok_call(world, "save_address", **args)
    assert len(ok_call(world, "list_saved_addresses", customer_id="EC-0005")["addresses"]) == before + 1
    expect_error(world, "save_address", code=409, **args)
    points = ok_call(world, "find_service_points", city="Wuhan", dropoff_only=True)["service_points"]
    assert points and all(p["city"] == "Wuhan" and p["accepts_dropoff"] for p in points)


def test_seeded_shipments_cover_every_stage(world: MockWorld) -> None:
    customers = [r["customer_id"] for r in world.rows("express_customers")]
    statuses = {
        s["shipment_status"]
        for c in customers
        for s in ok_call(world, "list_shipments", customer_id=c, page_size=50)["shipments"]
    }
    assert statuses >= {"created", "picked_up", "in_transit", "delivered", "cancelled"}
