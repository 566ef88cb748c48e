"""T-Eval PolygonFinance: tickers, daily bars, aggregates and news in the style of polygon.io.

Semantics: ~30 listed companies (real names, tickers and headquarters; prices are a synthetic
random walk, not market data). Daily bars exist for the NYSE trading days of the 180 calendar
days before the simulated clock's date (weekends and US market holidays have none: a 404 from
get_daliy_open_close, like polygon's NOT_FOUND). Aggregates group the bars into windows of
`multiplier` days (from `from`) or weeks (starting on Sunday), or of hours of the 09:30-16:00
session (stamped as UTC, windows aligned on the epoch); an hour bar comes from a deterministic
intraday path between the day's open and close. News is written
from the seeded prices (the biggest daily moves) plus dated company announcements.
"""

from __future__ import annotations

import math
import random
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import read
from toolgym.mocks.apps.teval.common import TevalApp, norm, parse_day, stable_int
from toolgym.mocks.responses import AppError, bad_request, check_range, not_found, ok
from toolgym.mocks.seeding import insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

HISTORY_DAYS: Final = 180
MAX_WINDOWS: Final = 500
NEWS_LIMIT: Final = 5
TIMESPANS: Final = ("day", "hour", "week")
SESSION_HOURS: Final = (9, 10, 11, 12, 13, 14, 15)  # the 09:30-16:00 session as hour bars
HOLIDAYS: Final = frozenset(
    date.fromisoformat(d)
    for d in (
        "2023-01-02",
        "2023-01-16",
        "2023-02-20",
        "2023-04-07",
        "2023-05-29",
        "2023-06-19",
        "2023-07-04",
        "2023-09-04",
        "2023-11-23",
        "2023-12-25",
        "2024-01-01",
        "2024-01-15",
        "2024-02-19",
        "2024-03-29",
        "2024-05-27",
        "2024-06-19",
        "2024-07-04",
        "2024-09-02",
        "2024-11-28",
        "2024-12-25",
        "2025-01-01",
        "2025-01-20",
        "2025-02-17",
        "2025-04-18",
        "2025-05-26",
        "2025-06-19",
        "2025-07-04",
        "2025-09-01",
        "2025-11-27",
        "2025-12-25",
    )
)
# ticker, name, address, homepage, list date, sector, reference price (USD)
COMPANIES: Final = (
    (
        "AAPL",
        "Apple Inc.",
        "One Apple Park Way, Cupertino, CA 95014",
        "https://www.apple.com",
        "1980-12-12",
        "consumer electronics",
        190.0,
    ),
    (
        "MSFT",
        "Microsoft Corporation",
        "One Microsoft Way, Redmond, WA 98052",
        "https://www.microsoft.com",
        "1986-03-13",
        "software",
        375.0,
    ),
    (
        "AMZN",
        "Amazon.com, Inc.",
        "410 Terry Avenue North, Seattle, WA 98109",
        "https://www.amazon.com",
        "1997-05-15",
        "e-commerce and cloud computing",
        150.0,
    ),
    (
        "GOOGL",
        "Alphabet Inc. Class A",
        "1600 Amphitheatre Parkway, Mountain View, CA 94043",
        "https://abc.xyz",
        "2004-08-19",
        "internet search and advertising",
        140.0,
    ),
    (
        "META",
        "Meta Platforms, Inc.",
        "1 Meta Way, Menlo Park, CA 94025",
        "https://investor.atmeta.com",
        "2012-05-18",
        "social media",
        350.0,
    ),
    (
        "TSLA",
        "Tesla, Inc.",
        "1 Tesla Road, Austin, TX 78725",
        "https://www.tesla.com",
        "2010-06-29",
        "electric vehicles",
        250.0,
    ),
    (
        "NVDA",
        "NVIDIA Corporation",
        "2788 San Tomas Expressway, Santa Clara, CA 95051",
        "https://www.nvidia.com",
        "1999-01-22",
        "semiconductors",
        490.0,
    ),
    (
        "NFLX",
        "Netflix, Inc.",
        "121 Albright Way, Los Gatos, CA 95032",
        "https://www.netflix.com",
        "2002-05-23",
        "streaming entertainment",
        480.0,
    ),
    (
        "ORCL",
        "Oracle Corporation",
        "2300 Oracle Way, Austin, TX 78741",
        "https://www.oracle.com",
        "1986-03-12",
        "database software",
        105.0,
    ),
    (
        "CSCO",
        "Cisco Systems, Inc.",
        "170 West Tasman Drive, San Jose, CA 95134",
        "https://www.cisco.com",
        "1990-02-16",
        "networking equipment",
        50.0,
    ),
    (
        "ADBE",
        "Adobe Inc.",
        "345 Park Avenue, San Jose, CA 95110",
        "https://www.adobe.com",
        "1986-08-13",
        "creative software",
        600.0,
    ),
    (
        "SBUX",
        "Starbucks Corporation",
        "2401 Utah Avenue South, Seattle, WA 98134",
        "https://www.starbucks.com",
        "1992-06-26",
        "coffeehouses",
        96.0,
    ),
    (
        "NKE",
        "Nike, Inc.",
        "One Bowerman Drive, Beaverton, OR 97005",
        "https://www.nike.com",
        "1980-12-02",
        "athletic footwear and apparel",
        108.0,
    ),
    (
        "UBER",
        "Uber Technologies, Inc.",
        "1515 3rd Street, San Francisco, CA 94158",
        "https://www.uber.com",
        "2019-05-10",
        "ride-hailing and delivery",
        61.0,
    ),
    (
        "ABNB",
        "Airbnb, Inc.",
        "888 Brannan Street, San Francisco, CA 94103",
        "https://www.airbnb.com",
        "2020-12-10",
        "short-term rentals",
        136.0,
    ),
    (
        "SNAP",
        "Snap Inc.",
        "3000 31st Street, Santa Monica, CA 90405",
        "https://www.snap.com",
        "2017-03-02",
        "camera and social media",
        17.0,
    ),
    (
        "PYPL",
        "PayPal Holdings, Inc.",
        "2211 North First Street, San Jose, CA 95131",
        "https://www.paypal.com",
        "2015-07-20",
        "digital payments",
        61.0,
    ),
    (
        "ZM",
        "Zoom Video Communications, Inc.",
        "55 Almaden Boulevard, San Jose, CA 95113",
        "https://zoom.us",
        "2019-04-18",
        "video communications",
        72.0,
    ),
    (
        "LYFT",
        "Lyft, Inc.",
        "185 Berry Street, San Francisco, CA 94107",
        "https://www.lyft.com",
        "2019-03-29",
        "ride-hailing",
        15.0,
    ),
    (
        "SPOT",
        "Spotify Technology S.A.",
        "Regeringsgatan 19, Stockholm, Sweden",
        "https://www.spotify.com",
        "2018-04-03",
        "audio streaming",
        188.0,
    ),
    (
        "PINS",
        "Pinterest, Inc.",
        "651 Brannan Street, San Francisco, CA 94107",
        "https://www.pinterest.com",
        "2019-04-18",
        "visual discovery",
        37.0,
    ),
    (
        "BABA",
        "Alibaba Group Holding Limited",
        "969 West Wen Yi Road, Hangzhou, China",
        "https://www.alibabagroup.com",
        "2014-09-19",
        "e-commerce",
        77.0,
    ),
    (
        "RIVN",
        "Rivian Automotive, Inc.",
        "14600 Myford Road, Irvine, CA 92606",
        "https://www.rivian.com",
        "2021-11-10",
        "electric vehicles",
        23.0,
    ),
    (
        "DASH",
        "DoorDash, Inc.",
        "303 2nd Street, San Francisco, CA 94107",
        "https://www.doordash.com",
        "2020-12-09",
        "food delivery",
        99.0,
    ),
    (
        "PLTR",
        "Palantir Technologies Inc.",
        "1200 17th Street, Denver, CO 80202",
        "https://www.palantir.com",
        "2020-09-30",
        "data analytics software",
        17.0,
    ),
    (
        "RBLX",
        "Roblox Corporation",
        "970 Park Place, San Mateo, CA 94403",
        "https://www.roblox.com",
        "2021-03-10",
        "online games",
        45.0,
    ),
    (
        "CRM",
        "Salesforce, Inc.",
        "415 Mission Street, San Francisco, CA 94105",
        "https://www.salesforce.com",
        "2004-06-23",
        "customer relationship software",
        263.0,
    ),
    (
        "GM",
        "General Motors Company",
        "300 Renaissance Center, Detroit, MI 48243",
        "https://www.gm.com",
        "2010-11-18",
        "automobiles",
        36.0,
    ),
    (
        "V",
        "Visa Inc.",
        "900 Metro Center Boulevard, Foster City, CA 94404",
        "https://www.visa.com",
        "2008-03-19",
        "payment networks",
        260.0,
    ),
    (
        "MA",
        "Mastercard Incorporated",
        "2000 Purchase Street, Purchase, NY 10577",
        "https://www.mastercard.com",
        "2006-05-25",
        "payment networks",
        425.0,
    ),
    (
        "GS",
        "The Goldman Sachs Group, Inc.",
        "200 West Street, New York, NY 10282",
        "https://www.goldmansachs.com",
        "1999-05-04",
        "investment banking",
        385.0,
    ),
)
REPORTERS: Final = ("Maya Chen", "Tom Rivera", "Priya Nair", "Lukas Berg", "Grace Okoye", "Daniel Weiss")
ANNOUNCEMENTS: Final = (
    (
        "{name} announces new {sector} product line",
        "{name} unveiled a new range of products, aiming to grow its {sector} business next year.",
    ),
    (
        "{name} to report quarterly earnings",
        "{name} will publish quarterly results; analysts expect revenue growth in {sector}.",
    ),
    (
        "Analysts raise price target on {ticker}",
        "Several analysts lifted their targets for {name}, citing momentum in {sector}.",
    ),
    ("{name} expands share buyback", "The board of {name} approved an expanded share repurchase program."),
)


def trading_days(first: date, last: date) -> list[date]:
    days, d = [], first
    while d <= last:
        if d.weekday() < 5 and d not in HOLIDAYS:
            days.append(d)
        d += timedelta(days=1)
    return days


def _ms(when: datetime) -> int:
    return int(when.timestamp() * 1000)


class PolygonFinance(TevalApp):
    name = "teval_polygon"
    teval_tool: ClassVar[str] = "PolygonFinance"
    description = "polygon.io stocks API tools"
    schema = """
    CREATE TABLE teval_polygon_tickers (
        ticker TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        address TEXT NOT NULL,
        homepage_url TEXT NOT NULL,
        description TEXT NOT NULL,
        list_date TEXT NOT NULL
    );
    CREATE TABLE teval_polygon_daily (
        ticker TEXT NOT NULL,
        date TEXT NOT NULL,
        open REAL NOT NULL,
        high REAL NOT NULL,
        low REAL NOT NULL,
        close REAL NOT NULL,
        after_hours REAL NOT NULL,
        volume INTEGER NOT NULL,
        PRIMARY KEY (ticker, date)
    );
    CREATE TABLE teval_polygon_news (
        news_id INTEGER PRIMARY KEY,
        ticker TEXT NOT NULL,
        published TEXT NOT NULL,
        title TEXT NOT NULL,
        summary TEXT NOT NULL,
        author TEXT NOT NULL
    );
    CREATE INDEX teval_polygon_news_ticker ON teval_polygon_news(ticker, published);
    """

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        today = clock.date()
        days = trading_days(today - timedelta(days=HISTORY_DAYS), today - timedelta(days=1))
        tickers: list[dict[str, Any]] = []
        bars: list[dict[str, Any]] = []
        news: list[dict[str, Any]] = []
        for ticker, name, address, homepage, listed, sector, ref in COMPANIES:
            tickers.append(
                {
                    "ticker": ticker,
                    "name": name,
                    "address": address,
                    "homepage_url": homepage,
                    "description": f"{name} is a company in {sector}, listed since {listed[:4]} under {ticker}.",
                    "list_date": listed,
                }
            )
            vol = rng.uniform(0.01, 0.03)
            close = ref * rng.uniform(0.7, 1.1)
            moves: list[tuple[float, date, float]] = []
            for d in days:
                open_ = close * math.exp(rng.gauss(0, vol / 3))
                ret = rng.gauss(0.0004, vol)
                new_close = open_ * math.exp(ret)
                high = max(open_, new_close) * (1 + abs(rng.gauss(0, vol / 2)))
                low = min(open_, new_close) * (1 - abs(rng.gauss(0, vol / 2)))
                bars.append(
                    {
                        "ticker": ticker,
                        "date": d.isoformat(),
                        "open": round(open_, 2),
                        "high": round(high, 2),
                        "low": round(low, 2),
                        "close": round(new_close, 2),
                        "after_hours": round(new_close * math.exp(rng.gauss(0, vol / 4)), 2),
                        "volume": int(rng.uniform(2e6, 9e7) * (1 + 20 * abs(ret))),
                    }
                )
                moves.append((new_close / close - 1, d, new_close))
                close = new_close
            # the news follows the prices: the three largest daily moves get a story each
            for change, d, level in sorted(moves, key=lambda m: -abs(m[0]))[:3]:
                verb = "jump" if change > 0 else "slide"
                news.append(
                    {
                        "ticker": ticker,
                        "published": f"{d.isoformat()}T21:{rng.randint(0, 59):02d}:00Z",
                        "title": f"{name} shares {verb} {abs(change) * 100:.1f}% on {d:%B} {d.day}",
                        "summary": f"{ticker} closed at ${level:.2f} on {d.isoformat()},"
                        f" {'up' if change > 0 else 'down'} {abs(change) * 100:.1f}% on the day.",
                        "author": rng.choice(REPORTERS),
                    }
                )
            for _ in range(3):
                title, summary = rng.choice(ANNOUNCEMENTS)
                when = today - timedelta(days=rng.randint(1, HISTORY_DAYS), minutes=rng.randint(0, 1439))
                fields = {"name": name, "ticker": ticker, "sector": sector}
                news.append(
                    {
                        "ticker": ticker,
                        "published": when.strftime("%Y-%m-%dT%H:%M:00Z"),
                        "title": title.format(**fields),
                        "summary": summary.format(**fields),
                        "author": rng.choice(REPORTERS),
                    }
                )
        news.sort(key=lambda n: (n["published"], n["ticker"]))
        for i, n in enumerate(news, 1):
            n["news_id"] = i
        insert_rows(db, "teval_polygon_tickers", tickers)
        insert_rows(db, "teval_polygon_daily", bars)
        insert_rows(db, "teval_polygon_news", news)

    # ---- helpers --------------------------------------------------------------------------------
    def _ticker(self, ticker: str) -> dict[str, Any]:
        symbol = ticker.strip().upper()
        if not symbol:
            raise bad_request("ticker must not be empty")
        return self.get_or_404("teval_polygon_tickers", "ticker", symbol, what="ticker")

    @staticmethod
    def _hour_bars(bar: dict[str, Any]) -> list[dict[str, Any]]:
        """Hourly bars of one day: a Brownian bridge from open to close seeded by (ticker, date)."""
        rng = random.Random(stable_int(bar["ticker"], bar["date"]))
        n = len(SESSION_HOURS)
        steps = [rng.gauss(0, 1) for _ in range(n)]
        walk = [sum(steps[: i + 1]) for i in range(n)]
        span = max(bar["high"] - bar["low"], 0.01)
        levels = [bar["open"]]
        for i in range(1, n + 1):
            drift = bar["open"] + (bar["close"] - bar["open"]) * i / n
            bridge = walk[i - 1] - walk[-1] * i / n
            levels.append(min(bar["high"], max(bar["low"], drift + bridge * span / 6)))
        levels[-1] = bar["close"]
        day = date.fromisoformat(bar["date"])
        out = []
        for i, hour in enumerate(SESSION_HOURS):
            start = datetime(day.year, day.month, day.day, hour, 30 if hour == 9 else 0, tzinfo=UTC)
            o, c = round(levels[i], 2), round(levels[i + 1], 2)
            out.append(
                {"o": o, "c": c, "h": max(o, c), "l": min(o, c), "v": bar["volume"] // n, "t": _ms(start)}
            )
        return out

    # ---- APIs -----------------------------------------------------------------------------------
    @read
    def search_stock_ticker(
        self, search: Annotated[str, Param("search for terms within the ticker and/or company name")]
    ) -> dict[str, Any]:
        """get the stock ticker given the company name"""
        key = norm(search)
        if not key:
            raise bad_request("search must not be empty")
        rows = self.rows("SELECT ticker, name FROM teval_polygon_tickers ORDER BY ticker")
        by_ticker = [r for r in rows if r["ticker"].lower() == key]
        by_name = [r for r in rows if key in r["name"].lower()]
        by_words = [r for r in rows if all(w in r["name"].lower() for w in key.split())]
        found = next(iter(by_ticker or by_name or by_words), None)
        if found is None:
            raise not_found("ticker matching", search)
        return ok(ticker=found["ticker"], name=found["name"])

    @read
    def aggregate_stock_with_time(
        self,
        ticker: Annotated[str, Param("The ticker symbol of the stock/equity")],
        multiplier: Annotated[int, Param("The size of the timespan multiplier")],
        timespan: Annotated[
            str, Param("The size of the time window, supported 'day', 'hour', 'week'", enum=TIMESPANS)
        ],
        from_: Annotated[
            str, Param("The start of the aggregate time window with the format YYYY-MM-DD", alias="from")
        ],
        to: Annotated[str, Param("The end of the aggregate time window with the format YYYY-MM-DD")],
    ) -> dict[str, Any]:
        """get aggregate bars for a stock over a given date range in custom time window sizes"""
        t = self._ticker(ticker)
        check_range("multiplier", multiplier, 1, 365)
        first, last = parse_day("from", from_), parse_day("to", to)
        if last < first:
            raise bad_request("'to' must not be before 'from'")
        bars = self.rows(
            "SELECT * FROM teval_polygon_daily WHERE ticker = ? AND date BETWEEN ? AND ? ORDER BY date",
            (t["ticker"], first.isoformat(), last.isoformat()),
        )
        results: list[dict[str, Any]] = []
        if timespan == "hour":
            # windows of `multiplier` hours aligned on the epoch, as polygon does
            width_ms = multiplier * 3_600_000
            by_window: dict[int, list[dict[str, Any]]] = {}
            for hour in (h for b in bars for h in self._hour_bars(b)):
                by_window.setdefault(hour["t"] // width_ms, []).append(hour)
            results = [self._merge(group, key * width_ms) for key, group in sorted(by_window.items())]
        else:
            width = multiplier * (7 if timespan == "week" else 1)
            # polygon aligns weeks on Sunday; day windows start at `from`
            origin = first - timedelta(days=(first.weekday() + 1) % 7) if timespan == "week" else first
            windows: dict[int, list[dict[str, Any]]] = {}
            for b in bars:
                index = (date.fromisoformat(b["date"]) - origin).days // width
                windows.setdefault(index, []).append(
                    {"o": b["open"], "c": b["close"], "h": b["high"], "l": b["low"], "v": b["volume"]}
                )
            for index, group in sorted(windows.items()):
                start = origin + timedelta(days=index * width)
                results.append(
                    self._merge(group, _ms(datetime(start.year, start.month, start.day, tzinfo=UTC)))
                )
        if len(results) > MAX_WINDOWS:
            raise bad_request(
                f"{len(results)} windows; at most {MAX_WINDOWS}: narrow the range or raise multiplier"
            )
        return ok(results=results)

    @staticmethod
    def _merge(group: list[dict[str, Any]], start_ms: int) -> dict[str, Any]:
        return {
            "o": group[0]["o"],
            "c": group[-1]["c"],
            "h": max(g["h"] for g in group),
            "l": min(g["l"] for g in group),
            "v": sum(g["v"] for g in group),
            "t": start_ms,
        }

    @read
    def get_daliy_open_close(
        self,
        ticker: Annotated[str, Param("The exchange symbol that this item is traded under")],
        date: Annotated[str, Param("The date of the requested open/close in the format YYYY-MM-DD")],
    ) -> dict[str, Any]:
        """get the open, close and afterhours prices of a stock symbol on a certain date"""
        t = self._ticker(ticker)
        day = parse_day("date", date)
        bar = self.row(
            "SELECT * FROM teval_polygon_daily WHERE ticker = ? AND date = ?", (t["ticker"], day.isoformat())
        )
        if bar is None:
            why = (
                "the market was closed" if day.weekday() >= 5 or day in HOLIDAYS else "no data for that date"
            )
            raise AppError(404, f"no open/close for {t['ticker']} on {day.isoformat()}: {why}")
        return ok(close=bar["close"], open=bar["open"], afterHours=bar["after_hours"])

    @read
    def get_ticker_news(
        self, ticker: Annotated[str | None, Param("Return results that contain this ticker")] = None
    ) -> dict[str, Any]:
        """get the most recent news articles relating to a stock ticker symbol"""
        now = self.now().strftime("%Y-%m-%dT%H:%M:%SZ")
        if ticker:
            t = self._ticker(ticker)
            rows = self.rows(
                "SELECT title, summary, author FROM teval_polygon_news WHERE ticker = ? AND published <= ?"
                " ORDER BY published DESC LIMIT ?",
                (t["ticker"], now, NEWS_LIMIT),
            )
        else:
            rows = self.rows(
                "SELECT title, summary, author FROM teval_polygon_news WHERE published <= ?"
                " ORDER BY published DESC LIMIT ?",
                (now, NEWS_LIMIT),
            )
        return ok(results=rows)

    @read
    def get_ticker_detail(self, ticker: Annotated[str, Param("the ticker symbol")]) -> dict[str, Any]:
        """Get a single ticker supported by Polygon.io, with detailed information about the ticker and the company behind it"""
        t = self._ticker(ticker)
        return ok(
            address=t["address"],
            homepage_url=t["homepage_url"],
            description=t["description"],
            list_date=t["list_date"],
            name=t["name"],
        )
