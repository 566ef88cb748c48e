"""T-Eval FilmDouban: films showing now and coming soon in China (Chinese data, Chinese params).

Semantics: ~300 synthetic films with Chinese titles, regions, categories, release dates and
"want to watch" counts. Relative to the simulated clock, a film is now playing from its release
date for 45 days and coming when its release is within the next 120 days. Filters take Chinese
values only (a region or category outside the known lists is a 400 listing them); outNum caps the
list (1-50, default 5). Now-playing films are listed by popularity, coming ones by release date.
print_detail finds a film by exact title, else by a unique part of it (404 / 409 otherwise).
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import read
from toolgym.mocks.apps.teval.common import TevalApp
from toolgym.mocks.responses import bad_request, check_enum, check_range, conflict, not_found, ok
from toolgym.mocks.seeding import insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

PLAYING_DAYS: Final = 45
COMING_DAYS: Final = 120
DEFAULT_OUT: Final = 5
MAX_OUT: Final = 50

REGIONS: Final = (
    "中国大陆",
    "中国香港",
    "中国台湾",
    "美国",
    "日本",
    "韩国",
    "英国",
    "法国",
    "德国",
    "印度",
    "意大利",
    "西班牙",
)
REGION_WEIGHTS: Final = (40, 6, 4, 20, 8, 6, 4, 4, 2, 3, 2, 1)
CATES: Final = (
    "剧情",
    "喜剧",
    "动作",
    "爱情",
    "科幻",
    "动画",
    "悬疑",
    "惊悚",
    "恐怖",
    "犯罪",
    "奇幻",
    "冒险",
    "战争",
    "历史",
    "家庭",
    "纪录片",
    "音乐",
    "传记",
)
HEADS: Final = (
    "长安",
    "星河",
    "归途",
    "孤岛",
    "雪国",
    "南方",
    "北方",
    "春日",
    "深海",
    "烈火",
    "无声",
    "第七",
    "最后的",
    "逆风",
    "远山",
    "夜色",
    "风起",
    "追光",
    "白鹿",
    "落日",
    "天际",
    "海上",
    "边城",
    "银河",
    "迷雾",
)
TAILS: Final = (
    "之恋",
    "往事",
    "行动",
    "少年",
    "回响",
    "迷局",
    "谜案",
    "奇遇",
    "家书",
    "号角",
    "守望者",
    "之夜",
    "记忆",
    "突围",
    "漂流记",
    "物语",
    "传奇",
    "来信",
    "救援",
    "人生",
)
SURNAMES: Final = "王李张刘陈杨赵黄周吴徐孙朱马胡郭林何高罗"
GIVEN: Final = (
    "建国",
    "晓明",
    "子怡",
    "一凡",
    "雪",
    "伟",
    "静",
    "思远",
    "浩然",
    "小雨",
    "嘉欣",
    "志强",
    "丽娟",
    "天宇",
    "若曦",
)
HEROES: Final = (
    "一名退伍军人",
    "一位年轻教师",
    "一对失散多年的兄妹",
    "一个倔强的少女",
    "一名刑警",
    "一位老渔民",
    "一群大学生",
    "一位落魄画家",
    "一名宇航员",
    "一个外卖员",
)
EVENTS: Final = (
    "卷入一桩离奇的案件",
    "踏上寻找亲人的旅程",
    "意外获得穿越时空的能力",
    "在小镇上开了一家面馆",
    "被迫面对尘封多年的秘密",
    "参加一场改变命运的比赛",
    "在灾难中拼命自救",
    "守护一座即将消失的村庄",
)
TWISTS: Final = (
    "最终找到了内心的平静",
    "却发现真相远比想象复杂",
    "也收获了意想不到的友情",
    "在绝境中完成了自我救赎",
    "一家人终于重新团聚",
    "揭开了一段被遗忘的历史",
)


def _person(rng: random.Random) -> str:
    return rng.choice(SURNAMES) + rng.choice(GIVEN)


class FilmDouban(TevalApp):
    name = "teval_douban"
    teval_tool: ClassVar[str] = "FilmDouban"
    description = (
        "Search movie information from douban provided. Useful for when you need to find information about"
        " current movies and upcoming movies in China"
    )
    schema = """
    CREATE TABLE teval_douban_films (
        subject_id INTEGER PRIMARY KEY,
        title TEXT NOT NULL UNIQUE,
        date TEXT NOT NULL,
        cate TEXT NOT NULL,
        region TEXT NOT NULL,
        want_watch INTEGER NOT NULL,
        director TEXT NOT NULL,
        actors TEXT NOT NULL,
        runtime INTEGER NOT NULL,
        score REAL,
        synopsis TEXT NOT NULL
    );
    """

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        today = clock.date()
        titles = [h + t for h in HEADS for t in TAILS]
        rng.shuffle(titles)
        films = []
        for i, title in enumerate(titles[:300]):
            # a third already out of cinemas, a third playing, a third coming
            offset = rng.choice(
                (
                    rng.randint(-900, -PLAYING_DAYS - 1),
                    rng.randint(-PLAYING_DAYS + 1, 0),
                    rng.randint(1, COMING_DAYS),
                )
            )
            released = today + timedelta(days=offset)
            cates = rng.sample(CATES, rng.choice((1, 2, 2, 3)))
            films.append(
                {
                    "subject_id": 35_000_000 + i * 1373 + rng.randint(0, 1000),
                    "title": title,
                    "date": released.isoformat(),
                    "cate": "/".join(cates),
                    "region": rng.choices(REGIONS, REGION_WEIGHTS)[0],
                    "want_watch": int(rng.paretovariate(1.3) * 2000),
                    "director": _person(rng),
                    "actors": "/".join(_person(rng) for _ in range(3)),
                    "runtime": rng.randint(85, 165),
                    "score": round(rng.uniform(4.5, 9.3), 1) if offset <= 0 else None,
                    "synopsis": f"{rng.choice(HEROES)}{rng.choice(EVENTS)}，{rng.choice(TWISTS)}。",
                }
            )
        insert_rows(db, "teval_douban_films", films)

    # ---- helpers --------------------------------------------------------------------------------
    @staticmethod
    def _view(f: dict[str, Any]) -> dict[str, Any]:
        return {
            "date": f["date"],
            "title": f["title"],
            "cate": f["cate"],
            "region": f["region"],
            "wantWatchPeopleNum": f["want_watch"],
            "link": f"https://movie.douban.com/subject/{f['subject_id']}/",
        }

    @staticmethod
    def _out(out_num: int | None) -> int:
        n = DEFAULT_OUT if out_num is None else out_num
        check_range("outNum", n, 1, MAX_OUT)
        return n

    # ---- APIs -----------------------------------------------------------------------------------
    @read
    def coming_out_filter(
        self,
        region: Annotated[
            str | None, Param("the region of search query, and the parameter must in Chinese.")
        ] = None,
        cate: Annotated[
            str | None, Param("the category of search query, and the parameter must in Chinese.")
        ] = None,
        outNum: Annotated[int | None, Param("the number of search query")] = None,
    ) -> dict[str, Any]:
        """prints the details of the filtered [outNum] coming films in China"""
        n = self._out(outNum)
        today = self.now().date()
        sql = "SELECT * FROM teval_douban_films WHERE date > ? AND date <= ?"
        params: list[Any] = [today.isoformat(), (today + timedelta(days=COMING_DAYS)).isoformat()]
        if region:
            sql += " AND region = ?"
            params.append(check_enum("region", region.strip(), REGIONS))
        if cate:
            sql += " AND ('/' || cate || '/') LIKE ?"
            params.append(f"%/{check_enum('cate', cate.strip(), CATES)}/%")
        rows = self.rows(sql + " ORDER BY date, want_watch DESC LIMIT ?", [*params, n])
        return ok(film=[self._view(r) for r in rows])

    @read
    def now_playing_out_filter(
        self,
        region: Annotated[
            str | None, Param("the region of search query, and the parameter must in Chinese.")
        ] = None,
        outNum: Annotated[int | None, Param("the number of search query")] = None,
    ) -> dict[str, Any]:
        """prints the details of the filtered [outNum] playing films now in China"""
        n = self._out(outNum)
        today = self.now().date()
        sql = "SELECT * FROM teval_douban_films WHERE date <= ? AND date > ?"
        params: list[Any] = [today.isoformat(), (today - timedelta(days=PLAYING_DAYS)).isoformat()]
        if region:
            sql += " AND region = ?"
            params.append(check_enum("region", region.strip(), REGIONS))
        rows = self.rows(sql + " ORDER BY want_watch DESC, date DESC LIMIT ?", [*params, n])
        return ok(film=[self._view(r) for r in rows])

    @read
    def print_detail(
        self, film_name: Annotated[str, Param("target movie's name, must be in Chinese")]
    ) -> dict[str, Any]:
        """prints the details of a movie, giving its name"""
        name = "".join(film_name.split()).strip("《》")
        if not name:
            raise bad_request("film_name must not be empty")
        found = self.row("SELECT * FROM teval_douban_films WHERE title = ?", (name,))
        if found is None:
            partial = self.rows(
                "SELECT * FROM teval_douban_films WHERE instr(title, ?) > 0 ORDER BY title", (name,)
            )
            if not partial:
                raise not_found("film", film_name)
            if len(partial) > 1:
                raise conflict(
                    f"{len(partial)} films match {film_name!r}", titles=[p["title"] for p in partial[:10]]
                )
            found = partial[0]
        released = date.fromisoformat(found["date"])
        score = "暂无评分（尚未上映）" if found["score"] is None else f"{found['score']}"
        description = (
            f"{found['title']}（{released.year}）\n导演：{found['director']}\n主演：{found['actors']}\n"
            f"类型：{found['cate']}\n制片国家/地区：{found['region']}\n上映日期：{found['date']}（中国大陆）\n"
            f"片长：{found['runtime']}分钟\n豆瓣评分：{score}\n想看人数：{found['want_watch']}\n"
            f"剧情简介：{found['synopsis']}"
        )
        return ok(description=description)
