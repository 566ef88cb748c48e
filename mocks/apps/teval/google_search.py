"""T-Eval GoogleSearch: a small web index (~220 pages) searched by keyword.

Semantics: pages about ~50 countries (capital, currency, languages), ~25 landmarks and public
holidays of the years around the simulated clock (dates computed, e.g. Easter by the Gregorian
computus). A page scores 2 per query word in its title and 1 per word in its snippet, plus 3 when
it holds every query word; the 3 best come back (earlier pages first on ties). Pages published
after the simulated clock are not indexed yet. No match is a success with an empty list.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import read
from toolgym.mocks.apps.teval.common import WEEKDAYS, TevalApp, word_hits, words
from toolgym.mocks.responses import bad_request, ok
from toolgym.mocks.seeding import insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

MAX_RESULTS: Final = 3

# country, capital, continent, currency, languages
COUNTRIES: Final = (
    ("France", "Paris", "Europe", "euro", "French"),
    ("Germany", "Berlin", "Europe", "euro", "German"),
    ("Italy", "Rome", "Europe", "euro", "Italian"),
    ("Spain", "Madrid", "Europe", "euro", "Spanish"),
    ("Portugal", "Lisbon", "Europe", "euro", "Portuguese"),
    ("United Kingdom", "London", "Europe", "pound sterling", "English"),
    ("Ireland", "Dublin", "Europe", "euro", "Irish and English"),
    ("Netherlands", "Amsterdam", "Europe", "euro", "Dutch"),
    ("Belgium", "Brussels", "Europe", "euro", "Dutch, French and German"),
    ("Switzerland", "Bern", "Europe", "Swiss franc", "German, French, Italian and Romansh"),
    ("Austria", "Vienna", "Europe", "euro", "German"),
    ("Sweden", "Stockholm", "Europe", "Swedish krona", "Swedish"),
    ("Norway", "Oslo", "Europe", "Norwegian krone", "Norwegian"),
    ("Denmark", "Copenhagen", "Europe", "Danish krone", "Danish"),
    ("Finland", "Helsinki", "Europe", "euro", "Finnish and Swedish"),
    ("Poland", "Warsaw", "Europe", "Polish zloty", "Polish"),
    ("Greece", "Athens", "Europe", "euro", "Greek"),
    ("Turkey", "Ankara", "Asia", "Turkish lira", "Turkish"),
    ("Russia", "Moscow", "Europe", "Russian ruble", "Russian"),
    ("Ukraine", "Kyiv", "Europe", "Ukrainian hryvnia", "Ukrainian"),
    ("China", "Beijing", "Asia", "renminbi (yuan)", "Mandarin Chinese"),
    ("Japan", "Tokyo", "Asia", "Japanese yen", "Japanese"),
    ("South Korea", "Seoul", "Asia", "South Korean won", "Korean"),
    ("India", "New Delhi", "Asia", "Indian rupee", "Hindi and English"),
    ("Indonesia", "Jakarta", "Asia", "Indonesian rupiah", "Indonesian"),
    ("Thailand", "Bangkok", "Asia", "Thai baht", "Thai"),
    ("Vietnam", "Hanoi", "Asia", "Vietnamese dong", "Vietnamese"),
    ("Philippines", "Manila", "Asia", "Philippine peso", "Filipino and English"),
    ("Malaysia", "Kuala Lumpur", "Asia", "Malaysian ringgit", "Malay"),
    ("Singapore", "Singapore", "Asia", "Singapore dollar", "English, Malay, Mandarin and Tamil"),
    ("Pakistan", "Islamabad", "Asia", "Pakistani rupee", "Urdu and English"),
    ("Saudi Arabia", "Riyadh", "Asia", "Saudi riyal", "Arabic"),
    ("United Arab Emirates", "Abu Dhabi", "Asia", "UAE dirham", "Arabic"),
    ("Egypt", "Cairo", "Africa", "Egyptian pound", "Arabic"),
    ("Nigeria", "Abuja", "Africa", "Nigerian naira", "English"),
    ("Kenya", "Nairobi", "Africa", "Kenyan shilling", "Swahili and English"),
    ("South Africa", "Pretoria", "Africa", "South African rand", "English, Zulu, Xhosa and others"),
    ("Morocco", "Rabat", "Africa", "Moroccan dirham", "Arabic and Berber"),
    ("Ethiopia", "Addis Ababa", "Africa", "Ethiopian birr", "Amharic"),
    ("United States", "Washington, D.C.", "North America", "US dollar", "English"),
    ("Canada", "Ottawa", "North America", "Canadian dollar", "English and French"),
    ("Mexico", "Mexico City", "North America", "Mexican peso", "Spanish"),
    ("Brazil", "Brasilia", "South America", "Brazilian real", "Portuguese"),
    ("Argentina", "Buenos Aires", "South America", "Argentine peso", "Spanish"),
    ("Chile", "Santiago", "South America", "Chilean peso", "Spanish"),
    ("Peru", "Lima", "South America", "Peruvian sol", "Spanish"),
    ("Colombia", "Bogota", "South America", "Colombian peso", "Spanish"),
    ("Australia", "Canberra", "Oceania", "Australian dollar", "English"),
    ("New Zealand", "Wellington", "Oceania", "New Zealand dollar", "English and Maori"),
)
# landmark, the sentence its encyclopedia page opens with
LANDMARKS: Final = (
    ("Eiffel Tower", "a wrought-iron lattice tower in Paris, France, completed in 1889 and 330 metres tall"),
    (
        "Statue of Liberty",
        "a copper statue on Liberty Island in New York, dedicated in 1886, 93 metres tall"
        " including its pedestal",
    ),
    (
        "Big Ben",
        "the nickname of the great bell of the clock tower at the Palace of Westminster in London,"
        " completed in 1859; the tower is 96 metres tall",
    ),
    ("Colosseum", "an ancient amphitheatre in the centre of Rome, Italy, completed in 80 AD"),
    ("Sydney Opera House", "a performing arts centre on Sydney Harbour, Australia, opened in 1973"),
    ("Burj Khalifa", "a skyscraper in Dubai, United Arab Emirates, opened in 2010 and 828 metres tall"),
    (
        "Empire State Building",
        "a skyscraper in Midtown Manhattan, New York, completed in 1931, 443 metres tall to its tip",
    ),
    (
        "Golden Gate Bridge",
        "a suspension bridge over the Golden Gate strait in San Francisco, opened in 1937",
    ),
    ("Taj Mahal", "an ivory-white marble mausoleum in Agra, India, completed around 1653"),
    ("Tokyo Skytree", "a broadcasting tower in Sumida, Tokyo, Japan, completed in 2012 and 634 metres tall"),
    ("CN Tower", "a communications tower in Toronto, Canada, completed in 1976 and 553 metres tall"),
    (
        "Leaning Tower of Pisa",
        "the bell tower of Pisa Cathedral, Italy, completed in 1372 and about 56 metres tall",
    ),
    (
        "Sagrada Familia",
        "a basilica in Barcelona, Spain, designed by Antoni Gaudi and under construction since 1882",
    ),
    ("Petronas Towers", "twin skyscrapers in Kuala Lumpur, Malaysia, completed in 1998 and 452 metres tall"),
    (
        "Christ the Redeemer",
        "a statue of Jesus above Rio de Janeiro, Brazil, completed in 1931 and 30 metres tall",
    ),
    ("Machu Picchu", "a 15th-century Inca citadel in the Andes of southern Peru"),
    ("Mount Everest", "the highest mountain above sea level, 8,849 metres, on the border of Nepal and China"),
    ("Shanghai Tower", "a skyscraper in Pudong, Shanghai, China, completed in 2015 and 632 metres tall"),
    ("Brandenburg Gate", "an 18th-century neoclassical monument in Berlin, Germany, completed in 1791"),
    ("Parthenon", "a former temple on the Acropolis of Athens, Greece, completed in 432 BC"),
    (
        "Forbidden City",
        "the imperial palace complex in the centre of Beijing, China, built from 1406 to 1420",
    ),
    (
        "Space Needle",
        "an observation tower in Seattle, United States, built for the 1962 World's Fair, 184 metres tall",
    ),
    ("Louvre Museum", "the world's most-visited art museum, in Paris, France, opened in 1793"),
    (
        "Stonehenge",
        "a prehistoric monument on Salisbury Plain in Wiltshire, England, built from about 3000 BC",
    ),
    (
        "Great Wall of China",
        "a series of fortifications across northern China, built and rebuilt from the"
        " 7th century BC to the 17th century",
    ),
)


def _slug(text: str) -> str:
    return "_".join(text.replace(",", "").replace(".", "").split())


def easter(year: int) -> date:
    """Western Easter Sunday (the anonymous Gregorian algorithm)."""
    a, b, c = year % 19, year // 100, year % 100
    d, e = b // 4, b % 4
    f = (b + 8) // 25
    g = (b - f + 1) // 3
    h = (19 * a + b - d - g + 15) % 30
    i, k = c // 4, c % 4
    ell = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 22 * ell) // 451
    month = (h + ell - 7 * m + 114) // 31
    day = (h + ell - 7 * m + 114) % 31 + 1
    return date(year, month, day)


def nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    """The n-th given weekday (0 = Monday) of a month; n = -1 is the last one."""
    if n > 0:
        first = date(year, month, 1)
        return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))
    last = (date(year, month % 12 + 1, 1) if month < 12 else date(year + 1, 1, 1)) - timedelta(days=1)
    return last - timedelta(days=(last.weekday() - weekday) % 7)


def holidays(year: int) -> list[tuple[str, date]]:
    return [
        ("New Year's Day", date(year, 1, 1)),
        ("Easter Sunday", easter(year)),
        ("Mother's Day (United States)", nth_weekday(year, 5, 6, 2)),
        ("Independence Day (United States)", date(year, 7, 4)),
        ("Labor Day (United States)", nth_weekday(year, 9, 0, 1)),
        ("Thanksgiving (United States)", nth_weekday(year, 11, 3, 4)),
        ("Christmas Day", date(year, 12, 25)),
    ]


class GoogleSearch(TevalApp):
    name = "teval_google_search"
    teval_tool: ClassVar[str] = "GoogleSearch"
    description = "A google search tool using serper search API"
    schema = """
    CREATE TABLE teval_google_search_pages (
        page_id INTEGER PRIMARY KEY,
        title TEXT NOT NULL,
        link TEXT NOT NULL UNIQUE,
        snippet TEXT NOT NULL,
        published TEXT NOT NULL
    );
    """

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        pages: list[dict[str, Any]] = []
        today = clock.date()

        def page(title: str, link: str, snippet: str, published: date) -> None:
            pages.append(
                {
                    "page_id": len(pages) + 1,
                    "title": title,
                    "link": link,
                    "snippet": snippet,
                    "published": published.isoformat(),
                }
            )

        def old() -> date:
            return today - timedelta(days=rng.randint(30, 3000))

        for country, capital, continent, currency, languages in COUNTRIES:
            slug = _slug(country)
            page(
                f"{country} - Wikipedia",
                f"https://en.wikipedia.org/wiki/{slug}",
                f"{country} is a country in {continent}. Its capital is {capital}. The currency is the"
                f" {currency} and the official {'languages are' if ' and ' in languages else 'language is'} {languages}.",
                old(),
            )
            page(
                f"What is the capital of {country}? - World Atlas",
                f"https://www.worldatlas.example.com/capital-of-{slug.lower()}",
                f"The capital of {country} is {capital}.",
                old(),
            )
            page(
                f"{country} travel guide: money, language and tips",
                f"https://travel.example.com/guides/{slug.lower()}",
                f"Travelling to {country}? Pay in {currency}, learn a few words of {languages.split(' and ')[0]}"
                f" and start in {capital}.",
                old(),
            )
        for name, fact in LANDMARKS:
            slug = _slug(name)
            page(
                f"{name} - Wikipedia",
                f"https://en.wikipedia.org/wiki/{slug}",
                f"The {name} is {fact}.",
                old(),
            )
            opens, closes = rng.choice((8, 9, 10)), rng.choice((17, 18, 20, 22))
            page(
                f"Visiting the {name}: tickets and opening hours",
                f"https://tickets.example.com/{slug.lower()}",
                f"The {name} is open daily from {opens}:00 to {closes}:00. Adult tickets cost"
                f" {rng.randint(10, 40)} USD; book online to skip the queue.",
                old(),
            )
        for year in (today.year - 1, today.year, today.year + 1):
            for holiday, when in holidays(year):
                page(
                    f"When is {holiday} {year}?",
                    f"https://calendar.example.com/{year}/{_slug(holiday).lower()}",
                    f"{holiday} {year} falls on {WEEKDAYS[when.weekday()]}, {when:%B} {when.day}, {year}.",
                    date(year - 1, 10, 1),
                )
        insert_rows(db, "teval_google_search_pages", pages)

    @read
    def serper_search(self, query: Annotated[str, Param("the content of search query")]) -> dict[str, Any]:
        """A google search API. You can use it when you want to get answer about specific questions."""
        terms = list(dict.fromkeys(words(query)))
        if not terms:
            raise bad_request("query must contain at least one word")
        rows = self.rows(
            "SELECT page_id, title, link, snippet FROM teval_google_search_pages WHERE published <= ?",
            (self.now().date().isoformat(),),
        )
        scored = []
        for r in rows:
            in_title, in_snippet = word_hits(terms, r["title"]), word_hits(terms, r["snippet"])
            if not in_title and not in_snippet:
                continue
            every = word_hits(terms, r["title"] + " " + r["snippet"]) == len(terms)
            scored.append((2 * in_title + in_snippet + (3 if every else 0), r["page_id"], r))
        scored.sort(key=lambda s: (-s[0], s[1]))
        return ok(
            content=[
                {"title": r["title"], "link": r["link"], "snippet": r["snippet"]}
                for _, _, r in scored[:MAX_RESULTS]
            ]
        )
