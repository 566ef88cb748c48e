"""MTU Creative works app (toolgym.mocks.apps.mtu.creative) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.mtu import fails, make_world


def test_search_and_rate_books() -> None:
    world = make_world("mtu_creative")
    found = world.call("SearchCreativeWork", object_name="switched", object_type="tv show")[
        "creative_work_info"
    ]
    assert [w["title"] for w in found] == ["Switched"]
    assert world.call("SearchCreativeWork", object_name="zzz")["creative_work_info"] == []
    work = world.rows("mtu_creative_works", {"title": "The Adventures of Augie March"})[0]
    rated = world.call(
        "RateBook", rating_value="one", object_name="the adventures of augie march", best_rating="6"
    )
    assert rated["rating_count"] == work["rating_count"] + 1
    again = world.call("RateBook", rating_value="5", object_name="The Adventures of Augie March")
    assert again["rating_count"] == rated["rating_count"]  # a new rating replaces the old one
    assert world.rows("mtu_creative_ratings", {"work_id": work["work_id"]})[0]["rating_value"] == 5
    fails(world, "RateBook", 400, rating_value="9", object_name="Moby Dick")
    fails(world, "RateBook", 400, rating_value="3", object_name="Switched", object_type="tv show")
    fails(world, "RateBook", 404, rating_value="3", object_name="Unwritten Book")
    current = world.call(
        "RateBook", rating_value="four", object_select="this textbook", object_type="textbook"
    )
    assert current["object_type"] == "textbook"
