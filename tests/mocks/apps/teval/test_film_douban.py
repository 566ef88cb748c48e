"""T-Eval’s FilmDouban (toolgym.mocks.apps.teval.film_douban) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.teval import CLOCK, call, fails
from toolgym.errors import ErrorKind
from toolgym.mocks.world import MockWorld


def test_douban_coming_and_playing_filter_and_sort(world: MockWorld) -> None:
    today = CLOCK.date().isoformat()
    coming = call(world, "coming_out_filter", region="中国大陆", outNum=10)["film"]
    assert 1 <= len(coming) <= 10
    assert all(f["region"] == "中国大陆" and f["date"] > today for f in coming)
    assert [f["date"] for f in coming] == sorted(f["date"] for f in coming)
    comedies = call(world, "coming_out_filter", cate="喜剧", outNum=50)["film"]
    assert comedies and all("喜剧" in f["cate"].split("/") for f in comedies)
    playing = call(world, "now_playing_out_filter", outNum=50)["film"]
    assert all(f["date"] <= today for f in playing)
    want = [f["wantWatchPeopleNum"] for f in playing]
    assert want == sorted(want, reverse=True)
    assert len(call(world, "now_playing_out_filter")["film"]) == 5  # the default outNum
    detail = call(world, "print_detail", film_name=f"《{playing[0]['title']}》")["description"]
    assert detail.startswith(playing[0]["title"]) and playing[0]["date"] in detail


def test_douban_errors(world: MockWorld) -> None:
    fails(world, "coming_out_filter", 400, region="USA")
    fails(world, "coming_out_filter", 400, cate="comedy")
    fails(world, "now_playing_out_filter", 400, outNum=0)
    fails(world, "print_detail", 404, film_name="不存在的电影")
    fails(world, "print_detail", 409, film_name="长安")  # a part of several titles
    fails(world, "coming_out_filter", kind=ErrorKind.ARGUMENT_ERROR, outNum="many")
