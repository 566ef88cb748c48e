"""T-Eval’s AirbnbSearch (toolgym.mocks.apps.teval.airbnb) on its seeded data (real SQLite)."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from tests.mocks.apps.teval import CLOCK, call, fails, make_world
from toolgym.errors import ErrorKind
from toolgym.mocks.world import MockWorld


@pytest.fixture(scope="module")
def airbnb() -> MockWorld:
    return make_world("teval_airbnb")


def _booked(world: MockWorld, property_id: int) -> set[date]:
    nights = set()
    for r in world.rows("teval_airbnb_reservations", {"property_id": property_id}):
        d = date.fromisoformat(r["check_in"])
        while d < date.fromisoformat(r["check_out"]):
            nights.add(d)
            d += timedelta(days=1)
    return nights


def test_airbnb_search_filters_and_ranks(airbnb: MockWorld) -> None:
    found = call(airbnb, "search_property_by_place", place="tokyo")["property"]
    assert 1 <= len(found) <= 3
    assert all(p["address"].endswith("Tokyo, Japan") for p in found)
    ratings = [airbnb.rows("teval_airbnb_properties", {"property_id": p["id"]})[0]["rating"] for p in found]
    assert ratings == sorted(ratings, reverse=True)
    best = max(r["rating"] for r in airbnb.rows("teval_airbnb_properties", {"city": "Tokyo"}))
    assert ratings[0] == best
    hood = call(airbnb, "search_property_by_place", place="Shinjuku, Tokyo")["property"]
    assert hood and all(p["address"].startswith("Shinjuku") for p in hood)
    assert call(airbnb, "search_property_by_place", place="Atlantis")["property"] == []


def test_airbnb_rating_is_the_mean_of_the_reviews(airbnb: MockWorld) -> None:
    prop = airbnb.rows("teval_airbnb_properties")[7]
    stars = [r["rating"] for r in airbnb.rows("teval_airbnb_reviews", {"property_id": prop["property_id"]})]
    details = call(airbnb, "get_property_details", propertyId=prop["property_id"])
    assert details["rating"] == round(sum(stars) / len(stars), 2)
    reviews = call(airbnb, "get_property_reviews", propertyId=prop["property_id"])["reviews"]
    assert len(reviews) == min(3, len(stars))
    assert [r["date"] for r in reviews] == sorted((r["date"] for r in reviews), reverse=True)


def test_airbnb_availability_follows_the_reservations(airbnb: MockWorld) -> None:
    prop = next(
        p["property_id"]
        for p in airbnb.rows("teval_airbnb_properties")
        if any(d < CLOCK.date() + timedelta(days=10) for d in _booked(airbnb, p["property_id"]))
    )
    booked = _booked(airbnb, prop)
    window = call(airbnb, "check_availability", propertyId=prop)["availability"]
    assert len(window) == 10 and window[0]["date"] == CLOCK.date().isoformat()
    for day in window:
        assert day["available"] == (date.fromisoformat(day["date"]) not in booked)
    night = min(d for d in booked if d >= CLOCK.date())
    assert call(airbnb, "check_availability", propertyId=prop, date=night.isoformat())["availability"] == [
        {"date": night.isoformat(), "available": False}
    ]
    # a stay over a booked night cannot be priced
    fails(airbnb, "get_property_checkout_price", 409, propertyId=prop, checkIn=night.isoformat(),
          checkOut=(night + timedelta(days=3)).isoformat())  # fmt: skip


def test_airbnb_checkout_price_adds_nights_weekend_uplift_and_cleaning(airbnb: MockWorld) -> None:
    first = date(2024, 9, 6)  # a Friday, past the seeded reservations
    prop = next(p for p in airbnb.rows("teval_airbnb_properties") if p["min_nights"] <= 3)
    cost = call(airbnb, "get_property_checkout_price", propertyId=prop["property_id"],
                checkIn=first.isoformat(), checkOut=(first + timedelta(days=3)).isoformat())  # fmt: skip
    rate = prop["nightly_price_cents"]
    cents = 2 * round(rate * 1.15) + rate + prop["cleaning_fee_cents"]  # Fri, Sat, Sun nights
    assert cost["accommodationCost"] == round(cents / 100, 2)


def test_airbnb_errors(airbnb: MockWorld) -> None:
    fails(airbnb, "get_property_details", 404, propertyId=1)
    fails(airbnb, "get_property_details", kind=ErrorKind.ARGUMENT_ERROR, propertyId="abc")
    pid = airbnb.rows("teval_airbnb_properties")[0]["property_id"]
    fails(airbnb, "check_availability", 400, propertyId=pid, date="01/02/2024")
    fails(airbnb, "check_availability", 422, propertyId=pid, date="2023-12-31")
    fails(
        airbnb,
        "get_property_checkout_price",
        400,
        propertyId=pid,
        checkIn="2024-05-03",
        checkOut="2024-05-01",
    )
    fails(
        airbnb,
        "get_property_checkout_price",
        422,
        propertyId=pid,
        checkIn="2023-05-01",
        checkOut="2023-05-03",
    )
    strict = next(p for p in airbnb.rows("teval_airbnb_properties") if p["min_nights"] == 3)
    fails(airbnb, "get_property_checkout_price", 422, propertyId=strict["property_id"], checkIn="2024-09-02",
          checkOut="2024-09-03")  # fmt: skip
