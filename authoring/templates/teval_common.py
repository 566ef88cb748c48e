"""What the templates of the teval apps share: the app names, dates as people write them, the
people the user writes to, the cities two apps both know, and the arxiv paper that teval_info and
teval_office both pick and search for.

The teval apps (toolgym.mocks.apps.teval) are T-Eval's tools on seeded worlds. A user knows what a
person would: place, film, company and paper names, their own file paths and the addresses they
write to; never a property, movie, author or result id (those come from calls).
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any, Final

from toolgym.authoring.generate import Draft, Skip
from toolgym.mocks.apps.teval.email import CONTACTS

WEATHER: Final = "teval_weather"
TIME: Final = "teval_time"
BING: Final = "teval_bing_map"
GAODE: Final = "teval_gaode_map"
AIRBNB: Final = "teval_airbnb"
ARXIV: Final = "teval_arxiv"
SCHOLAR: Final = "teval_scholar"
SEARCH: Final = "teval_google_search"
POLYGON: Final = "teval_polygon"
TMDB: Final = "teval_tmdb"
DOUBAN: Final = "teval_douban"
EMAIL: Final = "teval_email"
FILES: Final = "teval_file"
PPT: Final = "teval_ppt"
MEETING: Final = "teval_meeting"

# people the user writes to (the mailbox's contacts that are people, not services)
PEOPLE: Final[tuple[tuple[str, str], ...]] = tuple((name, address) for name, address, _ in CONTACTS[:12])


def today(d: Draft) -> date:
    return d.world.start.date()


def human_dates(d: Draft, *days: date) -> list[str]:
    """Dates as a person types them, all in one style chosen by d.rng: "2024-01-05",
    "January 5, 2024" or "Jan 5, 2024"."""
    style = d.rng.randrange(3)
    if style == 0:
        return [day.isoformat() for day in days]
    return [
        f"{day:%B} {day.day}, {day.year}" if style == 1 else f"{day:%b} {day.day}, {day.year}" for day in days
    ]


def human_date(d: Draft, day: date) -> str:
    return human_dates(d, day)[0]


# landmarks whose names take "the" in a sentence
_THE = (
    "Statue",
    "Empire",
    "Golden",
    "Space",
    "Hollywood",
    "Santa",
    "White",
    "Lincoln",
    "United",
    "Willis",
    "Navy",
    "Las Vegas Strip",
    "Hoover",
    "Liberty",
    "Gateway",
    "French",
    "Griffith",
    "Alamo",
)


def the(name: str) -> str:
    """A landmark as a sentence names it: "the White House"; cities and "The Alamo" as they are."""
    if name.startswith("The "):
        return name
    return f"the {name}" if name.startswith(_THE) else name


def day_words(offset: int) -> str:
    """How a person says a day 1-3 days ahead."""
    return {1: "tomorrow", 2: "the day after tomorrow", 3: "in three days"}[offset]


def person(d: Draft) -> tuple[str, str]:
    """A contact's (first name, address)."""
    name, address = d.choice(PEOPLE)
    return name.split()[0], address


def rows_or_skip(found: list[Any], what: str) -> list[Any]:
    if not found:
        raise Skip(f"no {what}")
    return found


def future_day(d: Draft, low: int, high: int) -> date:
    return today(d) + timedelta(days=d.rng.randint(low, high))


# the names the weather app knows that another app also uses for a place
def weather_cities(d: Draft) -> set[str]:
    return {r["name"] for r in d.rows("SELECT name FROM teval_weather_cities ORDER BY city_id")}


def weather_cities_zh(d: Draft) -> set[str]:
    return {r["name_zh"] for r in d.rows("SELECT name_zh FROM teval_weather_cities ORDER BY city_id")}


def arxiv_paper(d: Draft) -> dict[str, Any]:
    """A paper of the world published by its today."""
    paper = d.pick(
        "SELECT * FROM teval_arxiv_papers WHERE published <= ? ORDER BY arxiv_id",
        d.world.start.date().isoformat(),
    )
    return paper


def find_paper(d: Draft, title: str) -> dict[str, Any]:
    """The arxiv search result for a title (Skip when the paper is not the first hit)."""
    hits = d.call("get_arxiv_article_information", query=title)["content"]
    if not hits or hits[0]["title"] != title:
        raise Skip("the title does not find its paper first")
    first: dict[str, Any] = hits[0]
    return first
