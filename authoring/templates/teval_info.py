"""Templates of the teval apps that look things up: arXiv and Google Scholar papers, the web
search, stock prices (PolygonFinance), films (TMDB in English, Douban in Chinese); with chains
(a paper, then its citation; an author, then their top paper's citation; a company's ticker,
then its prices) and across apps (the days until a holiday, the weather in a country's capital).

A user names papers by title, people by name, companies by name or ticker, films by title; never
a result, author or movie id.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from toolgym.authoring.generate import Draft, Skip, Template
from toolgym.authoring.templates.teval_common import (
    ARXIV,
    DOUBAN,
    POLYGON,
    SCHOLAR,
    SEARCH,
    TIME,
    TMDB,
    WEATHER,
    arxiv_paper,
    find_paper,
    human_date,
    human_dates,
    rows_or_skip,
    weather_cities,
)
from toolgym.mocks.apps.teval.google_search import COUNTRIES, LANDMARKS


# ---- arXiv ---------------------------------------------------------------------------------------
def arxiv_authors(d: Draft) -> None:
    paper = arxiv_paper(d)
    d.query(
        [
            'Who wrote the arXiv paper "{t}", and when was it published?',
            'Find "{t}" on arXiv and tell me its authors and publication date.',
            'I\'m looking for the paper "{t}". Who are the authors and when did it come out?',
        ],
        t=paper["title"],
    )
    hit = find_paper(d, paper["title"])
    d.answer(
        f'"{hit["title"]}" is by {hit["authors"]}, published on {hit["published"]}.',
        hit["authors"].split(", ")[0],
        hit["published"],
    )


def arxiv_topic(d: Draft) -> None:
    from toolgym.mocks.apps.teval.corpus import FIELDS

    _, tasks, methods, _ = FIELDS[d.choice(sorted(FIELDS))]
    task, method = d.choice(tasks), d.choice(methods)
    d.query(
        [
            "Search arXiv for {m} for {k} and tell me the title and authors of the top result.",
            "What's the top arXiv hit for papers on {k} using {m}? Title and authors, please.",
            "Find me an arXiv paper about {k} with {m}: who wrote it and what is it called?",
        ],
        k=task,
        m=method,
    )
    hits = rows_or_skip(d.call("get_arxiv_article_information", query=f"{method} {task}")["content"], "paper")
    top = hits[0]
    d.answer(f'The top result is "{top["title"]}" by {top["authors"]} ({top["published"]}).', top["title"])


def arxiv_ask_title(d: Draft) -> None:
    paper = arxiv_paper(d)
    d.query(
        [
            "Can you find a {f} paper on arXiv for me and tell me who wrote it?",
            "I'm reading a {f} paper from arXiv and need its authors.",
            "When was a certain arXiv paper on {f} published? Can you look it up?",
            "Look up an arXiv paper in {f} for me, please: I want its authors and date.",
        ],
        f=paper["field"],
    )
    told = d.ask(
        "title", paper["title"], "Sure, what is the title of the paper?", keywords=["which paper", "called"]
    )
    hit = find_paper(d, told)
    d.answer(
        f'"{hit["title"]}" is by {hit["authors"]}, published on {hit["published"]}.',
        hit["authors"].split(", ")[0],
    )


def arxiv_refuse_download(d: Draft) -> None:
    paper = arxiv_paper(d)
    d.query(
        [
            'Download the PDF of the arXiv paper "{t}" to my computer.',
            'Submit a comment to the authors of "{t}" on arXiv.',
            'Subscribe me to new versions of "{t}".',
        ],
        t=paper["title"],
    )
    d.refuse(
        (), "I'm sorry, I can't do that: my arXiv tool can only search for papers and read their details."
    )


# ---- Google Scholar -----------------------------------------------------------------------------
def _scholar_paper(d: Draft) -> dict[str, Any]:
    paper: dict[str, Any] = d.pick(
        "SELECT * FROM teval_scholar_papers WHERE year <= ? ORDER BY organic_id", d.world.start.year
    )
    return paper


def _scholar_find(d: Draft, title: str) -> tuple[str, int]:
    """The organic id and citation count of the search result titled `title` (Skip if not first)."""
    r = d.call("search_google_scholar", query=title)
    if not r["title"] or r["title"][0] != title:
        raise Skip("the title does not find its paper first")
    return r["organic_id"][0], r["cited_by"][0]


def scholar_citation(d: Draft) -> None:
    paper = _scholar_paper(d)
    d.query(
        [
            'Give me the MLA citation for "{t}".',
            'How do I cite "{t}" in MLA style?',
            'I need to cite the paper "{t}" in my essay. Can you get its MLA format from Google Scholar?',
        ],
        t=paper["title"],
    )
    organic, _ = _scholar_find(d, paper["title"])
    citation = d.call("get_citation_format", q=organic)["citation"]
    d.answer(f"MLA: {citation}", f"pp. {paper['pages']}", paper["venue"])


def scholar_cited_by(d: Draft) -> None:
    paper = _scholar_paper(d)
    d.query(
        [
            'How many times has "{t}" been cited?',
            'What\'s the citation count of the paper "{t}" on Google Scholar?',
            'Is "{t}" a well-cited paper? How many citations does it have?',
        ],
        t=paper["title"],
    )
    _, cited = _scholar_find(d, paper["title"])
    d.answer(f'"{paper["title"]}" has been cited {cited} times.', str(cited))


def _author(d: Draft) -> str:
    name: str = d.pick(
        "SELECT a.name FROM teval_scholar_authors a WHERE EXISTS (SELECT 1 FROM teval_scholar_authorship s"
        " JOIN teval_scholar_papers p USING (organic_id) WHERE s.author_id = a.author_id AND p.year <= ?)"
        " ORDER BY a.author_id",
        d.world.start.year,
    )["name"]
    return name


def _author_info(d: Draft, name: str) -> dict[str, Any]:
    author_id = d.call("get_author_id", mauthors=name)["author_id"]
    info = d.call("get_author_information", author_id=author_id)
    if info["name"] != name or not info["articles"]:
        raise Skip("the name finds someone else")
    return info


def scholar_author(d: Draft) -> None:
    name = _author(d)
    d.query(
        [
            "Where does the researcher {a} work, and what is their most cited paper?",
            "Look up {a} on Google Scholar: what's their affiliation and their best-known paper?",
            "Tell me about {a}: which institution are they at, and which of their papers has the most citations?",
        ],
        a=name,
    )
    info = _author_info(d, name)
    top = info["articles"][0]
    d.answer(
        f'{name} is {info["affliation"]}; their most cited paper is "{top["title"]}" ({top["cited_by"]} citations).',
        info["affliation"].split(", ")[-1],
        top["title"],
    )


def scholar_author_top_citation(d: Draft) -> None:
    name = _author(d)
    d.query(
        [
            "Get me the MLA citation of {a}'s most cited paper.",
            "I want to cite the most influential paper by {a}. What's its MLA citation?",
            "Find {a}'s most cited work on Google Scholar and format it in MLA for me.",
        ],
        a=name,
    )
    info = _author_info(d, name)
    title = info["articles"][0]["title"]
    organic, _ = _scholar_find(d, title)
    citation = d.call("get_citation_format", q=organic)["citation"]
    d.answer(f'{name}\'s most cited paper is "{title}". MLA: {citation}', title)


def scholar_ask_author(d: Draft) -> None:
    name = _author(d)
    field = d.rows("SELECT field FROM teval_scholar_authors WHERE name = ? ORDER BY 1", name)[0]["field"]
    d.query(
        [
            "Which university is a {f} researcher I know at? Can you check Google Scholar?",
            "Find the most cited paper of an author who works on {f}, please.",
            "I'd like to know where a {f} researcher works and what their top paper is.",
        ],
        f=field,
    )
    told = d.ask(
        "author", name, "Which author do you mean? Please give me their name.", keywords=["name", "who"]
    )
    info = _author_info(d, told)
    top = info["articles"][0]
    d.answer(f'{name} is {info["affliation"]}; their most cited paper is "{top["title"]}".', top["title"])


def scholar_refuse_alert(d: Draft) -> None:
    name = _author(d)
    d.query(
        [
            "Create a Google Scholar alert for new papers by {a}.",
            "Follow {a} on Google Scholar for me.",
            "Add {a}'s papers to my Scholar library.",
        ],
        a=name,
    )
    d.refuse(
        (),
        "I'm sorry, I can't do that: my Google Scholar tools can only search papers and authors and format citations.",
    )


# ---- web search ----------------------------------------------------------------------------------
def _country(d: Draft) -> tuple[str, str, str, str, str]:
    row: tuple[str, str, str, str, str] = d.choice(COUNTRIES)
    return row


def _snippets(d: Draft, query: str, needle: str) -> str:
    pages = d.call("serper_search", query=query)["content"]
    hit: str | None = next((str(p["snippet"]) for p in pages if needle in p["snippet"]), None)
    if hit is None:
        raise Skip("the search does not say it")
    return hit


def search_country(d: Draft) -> None:
    country, capital, _, currency, languages = _country(d)
    facet = d.rng.randrange(3)
    if facet == 0:
        d.query(
            [
                "What is the capital of {c}?",
                "Which city is the capital of {c}?",
                "Search the web: what's {c}'s capital?",
            ],
            c=country,
        )
        _snippets(d, f"capital of {country}", capital)
        d.answer(f"The capital of {country} is {capital}.", capital.split(",")[0])
    elif facet == 1:
        d.query(
            [
                "What currency do they use in {c}?",
                "I'm travelling to {c}. What money should I bring?",
                "What's the currency of {c}?",
            ],
            c=country,
        )
        _snippets(d, f"{country} currency", currency)
        d.answer(f"{country} uses the {currency}.", currency)
    else:
        d.query(
            [
                "What language do people speak in {c}?",
                "What are the official languages of {c}?",
                "Which language is spoken in {c}?",
            ],
            c=country,
        )
        _snippets(d, f"{country} official language", languages)
        d.answer(
            f"In {country} the official language(s): {languages}.", languages.split(" and ")[0].split(", ")[0]
        )


# landmarks said without "the"
_BARE = ("Mount Everest", "Stonehenge", "Machu Picchu", "Big Ben", "Christ the Redeemer", "Tokyo Skytree")
# how a landmark page says its year -> the questions that ask for it
_YEAR_QUESTIONS = {
    "completed": (
        "When was {n} completed?",
        "What year was {n} finished?",
        "How old is {n}? When was it finished?",
    ),
    "opened": (
        "When did {n} open?",
        "What year did {n} open?",
        "How long has {n} been open? Since which year?",
    ),
    "dedicated": ("When was {n} dedicated?", "In what year was {n} dedicated?"),
    "built": ("When did construction of {n} start?", "In what year did they start building {n}?"),
    "construction": ("Since when has {n} been under construction?", "When did work on {n} begin?"),
}


def landmark_name(name: str) -> str:
    return name if name in _BARE else f"the {name}"


def search_landmark(d: Draft) -> None:
    name, fact = d.choice(LANDMARKS)
    year = re.search(
        r"(completed|opened|dedicated|built|construction)(?: in| around| from| since)? (\d{3,4}(?: BC)?)",
        fact,
    )
    tall = re.search(r"([\d,]+) metres", fact)
    said = landmark_name(name)
    if tall and (d.rng.random() < 0.5 or year is None):
        d.query(["How tall is {n}?", "What's the height of {n}?", "How high is {n} in metres?"], n=said)
        _snippets(d, f"{name} height metres", tall.group(1))
        d.answer(f"{said[:1].upper()}{said[1:]} is {tall.group(1)} metres tall.", tall.group(1))
    elif year:
        d.query(_YEAR_QUESTIONS[year.group(1)], n=said)
        _snippets(d, f"{name}", year.group(2))
        d.answer(f"{said[:1].upper()}{said[1:]}: {year.group(1)} in {year.group(2)}.", year.group(2))
    else:
        raise Skip("no fact to ask")


def search_opening_hours(d: Draft) -> None:
    # a mountain has no opening hours (the index has a ticket page for every landmark)
    name = d.choice([x[0] for x in LANDMARKS if not x[0].startswith("Mount ")])
    d.query(
        [
            "What are the opening hours of {n}, and how much is a ticket?",
            "When is {n} open to visitors? And what does an adult ticket cost?",
            "I want to visit {n}. When does it open and close?",
        ],
        n=landmark_name(name),
    )
    snippet = _snippets(d, f"{name} tickets opening hours", "open daily")
    found = re.search(r"from (\d+:00) to (\d+:00)\. Adult tickets cost (\d+) USD", snippet)
    if found is None:
        raise Skip("no hours")
    opens, closes, price = found.groups()
    said = landmark_name(name)
    d.answer(
        f"{said[:1].upper()}{said[1:]} is open daily from {opens} to {closes}; an adult ticket costs {price} USD.",
        opens,
        closes,
    )


def _holiday(d: Draft, year: int) -> tuple[str, date]:
    from toolgym.mocks.apps.teval.google_search import holidays

    pair: tuple[str, date] = d.choice(holidays(year))
    return pair


def search_holiday(d: Draft) -> None:
    year = d.choice([d.world.start.year - 1, d.world.start.year])
    holiday, when = _holiday(d, year)
    short = holiday.replace(" (United States)", "")
    d.query(
        [
            "What day of the week is {h} in {y}?",
            "When is {h} {y}?",
            "Which date does {h} fall on in {y}?",
            "Look up the date of {h} {y} for me.",
        ],
        h=short,
        y=year,
    )
    snippet = _snippets(d, f"When is {holiday} {year}", f"{when:%B} {when.day}")
    weekday = snippet.split(" falls on ")[1].split(",")[0]
    d.answer(f"{short} {year} falls on {weekday}, {when:%B} {when.day}.", weekday, f"{when:%B} {when.day}")


def search_days_until(d: Draft) -> None:
    today = d.world.start.date()
    holiday, when = _holiday(d, today.year)
    if when <= today:
        raise Skip("already passed")
    short = holiday.replace(" (United States)", "")
    d.query(
        [
            "How many days are left until {h}?",
            "How long is it until {h} this year, in days?",
            "Count the days from today to {h}.",
        ],
        h=short,
    )
    now = d.call("get_curr_time")["time"]
    _snippets(d, f"When is {holiday} {today.year}", f"{when:%B} {when.day}")
    days = (when - date.fromisoformat(now[:10])).days
    d.answer(
        f"{short} is on {when:%B} {when.day}, {when.year}: {days} days from today ({now[:10]}).", str(days)
    )


def capital_weather(d: Draft) -> None:
    cities = weather_cities(d)
    country, capital = d.choice([(c[0], c[1]) for c in COUNTRIES if c[1] in cities])
    d.query(
        [
            "What's the weather like today in the capital of {c}?",
            "How's the weather in {c}'s capital right now?",
            "Find out what the capital of {c} is and tell me today's weather there.",
        ],
        c=country,
    )
    _snippets(d, f"capital of {country}", capital)
    w = d.call("get_weather_today", location=capital)
    d.answer(
        f"The capital of {country} is {capital}; today it is {w['overall'].lower()}, about {w['avg temperature']} °C.",
        capital,
        w["overall"],
    )


# ---- PolygonFinance -------------------------------------------------------------------------------
_SUFFIXES = (
    " Video Communications",
    " Technology S.A.",
    " Automotive",
    " Company",
    " Incorporated",
    " Group",
    ", Inc.",
    " Inc.",
    " Corporation",
    " Platforms",
    " Technologies",
    " Systems",
    ".com",
    " Holding Limited",
    " Holdings",
    " Class A",
)


def company_name(full: str) -> str:
    """The name a person uses for a company: "Apple Inc." -> "Apple"."""
    name = full
    for _ in range(3):
        for suffix in _SUFFIXES:
            name = name.removesuffix(suffix)
    return name.strip(" ,").removeprefix("The ")


def _company(d: Draft) -> tuple[str, str]:
    row = d.pick("SELECT ticker, name FROM teval_polygon_tickers ORDER BY ticker")
    return row["ticker"], company_name(row["name"])


def _ticker_of(d: Draft, name: str, ticker: str) -> str:
    found = d.call("search_stock_ticker", search=name)["ticker"]
    if found != ticker:
        raise Skip("the name finds another ticker")
    return str(found)


def _trading_day(d: Draft, ticker: str) -> date:
    day = d.pick("SELECT date FROM teval_polygon_daily WHERE ticker = ? ORDER BY date", ticker)["date"]
    return date.fromisoformat(day)


def stock_close(d: Draft) -> None:
    ticker, name = _company(d)
    day = _trading_day(d, ticker)
    d.query(
        [
            "What was {n}'s closing stock price on {d}?",
            "How did {n} stock close on {d}?",
            "What did {n} shares open and close at on {d}?",
            "Look up {n}'s stock price at the close on {d}.",
        ],
        n=name,
        d=human_date(d, day),
    )
    symbol = _ticker_of(d, name, ticker)
    bar = d.call("get_daliy_open_close", ticker=symbol, date=day.isoformat())
    d.answer(
        f"{name} ({symbol}) opened at ${bar['open']:.2f} and closed at ${bar['close']:.2f} on {day.isoformat()}.",
        f"{bar['close']:.2f}",
    )


def stock_move(d: Draft) -> None:
    ticker, _ = _company(d)
    day = _trading_day(d, ticker)
    d.query(
        [
            "Did {t} go up or down on {d}, from open to close?",
            "How much did {t} move during the session on {d}?",
            "Was {d} a good day for {t}? Compare its open and close.",
        ],
        t=ticker,
        d=human_date(d, day),
    )
    bar = d.call("get_daliy_open_close", ticker=ticker, date=day.isoformat())
    change = round((bar["close"] - bar["open"]) / bar["open"] * 100, 2)
    way = "up" if change > 0 else "down" if change < 0 else "flat"
    d.answer(
        f"{ticker} went {way} on {day.isoformat()}: it opened at ${bar['open']:.2f} and closed at ${bar['close']:.2f} ({change:+.2f}%).",
        f"{bar['open']:.2f}",
        f"{bar['close']:.2f}",
    )


def stock_detail(d: Draft) -> None:
    ticker, name = _company(d)
    d.query(
        [
            "Where is {n} headquartered?",
            "What's the address and website of {n}, the listed company?",
            "When did {n} go public, and where are its headquarters?",
        ],
        n=name,
    )
    symbol = _ticker_of(d, name, ticker)
    r = d.call("get_ticker_detail", ticker=symbol)
    d.answer(
        f"{r['name']} ({symbol}) is at {r['address']}; listed on {r['list_date']}; {r['homepage_url']}.",
        r["address"].split(", ")[1],
    )


def stock_news(d: Draft) -> None:
    ticker, name = _company(d)
    d.query(
        [
            "What's the latest news about {n} stock?",
            "Any recent headlines on {n}?",
            "Catch me up on the most recent news story about {n}.",
        ],
        n=name,
    )
    symbol = _ticker_of(d, name, ticker)
    news = rows_or_skip(d.call("get_ticker_news", ticker=symbol)["results"], "news")
    d.answer(f'The latest on {name}: "{news[0]["title"]}" — {news[0]["summary"]}', news[0]["title"])


def stock_range_high(d: Draft) -> None:
    ticker, _ = _company(d)
    days = [
        date.fromisoformat(r["date"])
        for r in d.rows("SELECT date FROM teval_polygon_daily WHERE ticker = ? ORDER BY date", ticker)
    ]
    i = d.rng.randrange(len(days) - 10)
    first, last = days[i], days[i + d.rng.randint(3, 9)]
    a, b = human_dates(d, first, last)
    d.query(
        [
            "What was the highest price {t} traded at between {a} and {b}?",
            "Between {a} and {b}, what were {t}'s high and low?",
            "Give me {t}'s daily bars from {a} to {b}: what was the peak?",
        ],
        t=ticker,
        a=a,
        b=b,
    )
    bars = d.call(
        "aggregate_stock_with_time",
        ticker=ticker,
        multiplier=1,
        timespan="day",
        **{"from": first.isoformat()},
        to=last.isoformat(),
    )["results"]
    high, low = max(x["h"] for x in bars), min(x["l"] for x in bars)
    d.answer(
        f"From {first.isoformat()} to {last.isoformat()} {ticker} peaked at ${high:.2f}; its low was ${low:.2f}.",
        f"{high:.2f}",
    )


def stock_compare(d: Draft) -> None:
    rows = d.rows("SELECT ticker, name FROM teval_polygon_tickers ORDER BY ticker")
    a, b = d.rng.sample(rows, 2)
    day = _trading_day(d, a["ticker"])
    na, nb = company_name(a["name"]), company_name(b["name"])
    d.query(
        [
            "Which closed higher on {d}: {a} or {b}?",
            "Compare the closing prices of {a} and {b} on {d}.",
            "On {d}, was {a}'s or {b}'s share price higher at the close?",
        ],
        a=na,
        b=nb,
        d=human_date(d, day),
    )
    ta, tb = _ticker_of(d, na, a["ticker"]), _ticker_of(d, nb, b["ticker"])
    ca = d.call("get_daliy_open_close", ticker=ta, date=day.isoformat())["close"]
    cb = d.call("get_daliy_open_close", ticker=tb, date=day.isoformat())["close"]
    if ca == cb:
        raise Skip("same close")
    higher = na if ca > cb else nb
    d.answer(
        f"{higher} closed higher on {day.isoformat()}: {na} ${ca:.2f}, {nb} ${cb:.2f}.",
        f"{ca:.2f}",
        f"{cb:.2f}",
    )


def stock_ask_date(d: Draft) -> None:
    ticker, name = _company(d)
    day = _trading_day(d, ticker)
    d.query(
        [
            "What was {n}'s closing price?",
            "Can you look up where {n} stock closed?",
            "I need {n}'s close for a day last year.",
        ],
        n=name,
    )
    told = d.ask(
        "date",
        day.isoformat(),
        "Which date do you need the closing price for?",
        keywords=["which day", "when"],
    )
    symbol = _ticker_of(d, name, ticker)
    bar = d.call("get_daliy_open_close", ticker=symbol, date=told)
    d.answer(f"{name} closed at ${bar['close']:.2f} on {told}.", f"{bar['close']:.2f}")


def stock_refuse_trade(d: Draft) -> None:
    ticker, name = _company(d)
    d.query(
        [
            "Buy {k} shares of {n} for me.",
            "Sell my {k} {t} shares at the market price.",
            "Set a price alert on {t} for me.",
            "Place a limit order for {k} shares of {n}.",
        ],
        k=d.rng.randint(2, 200),
        n=name,
        t=ticker,
    )
    d.refuse((), "I'm sorry, I can't trade or set alerts: my stock tools only read prices, details and news.")


# ---- FilmTMDB ------------------------------------------------------------------------------------
def _movie(d: Draft, released: bool = True) -> dict[str, Any]:
    if released:
        sql = "SELECT * FROM teval_tmdb_movies WHERE release_date <= ? ORDER BY movie_id"
        movie: dict[str, Any] = d.pick(sql, d.world.start.date().isoformat())
    else:
        movie = d.pick("SELECT * FROM teval_tmdb_movies ORDER BY movie_id")
    return movie


def _movie_id(d: Draft, movie: dict[str, Any]) -> int:
    r = d.call("search_movie", query=movie["title"])
    if r["id"] != movie["movie_id"]:
        raise Skip("the title finds another film")
    return int(r["id"])


def tmdb_details(d: Draft) -> None:
    movie = _movie(d, released=False)
    d.query(
        [
            'How long is the movie "{t}", and what genre is it?',
            'What kind of film is "{t}"? And what\'s its runtime?',
            'Tell me about "{t}": genre, release date and length.',
            'Is "{t}" a long movie? What genres does TMDB list for it?',
        ],
        t=movie["title"],
    )
    r = d.call("get_movie_details", movie_id=_movie_id(d, movie))
    d.answer(
        f'"{r["title"]}" ({r["release_date"]}) runs {r["runtime"]} minutes; genres: {", ".join(r["genres"])}.',
        str(r["runtime"]),
        r["genres"][0],
    )


def tmdb_similar(d: Draft) -> None:
    movie = _movie(d)
    d.query(
        [
            'I loved "{t}". Can you recommend a similar movie?',
            'What films are similar to "{t}"?',
            'Suggest something to watch that\'s like "{t}".',
        ],
        t=movie["title"],
    )
    films = rows_or_skip(d.call("get_similar_movies", movie_id=_movie_id(d, movie))["films"], "similar film")
    d.answer(
        f'You might like "{films[0]["title"]}" ({films[0]["release_date"][:4]}); also '
        + ", ".join(f["title"] for f in films[1:3])
        + ".",
        films[0]["title"],
    )


def tmdb_reviews(d: Draft) -> None:
    movie = _movie(d)
    d.query(
        [
            'What do reviewers think of "{t}"?',
            'Are the user reviews of "{t}" any good? Give me the average rating.',
            'How do people rate "{t}" in their reviews?',
        ],
        t=movie["title"],
    )
    reviews = rows_or_skip(d.call("get_movie_reviews", movie_id=_movie_id(d, movie))["reviews"], "review")
    mean = round(sum(r["rating"] for r in reviews) / len(reviews), 1)
    d.answer(
        f'"{movie["title"]}" has {len(reviews)} reviews averaging {mean}/10; e.g. {reviews[0]["author"]}: "{reviews[0]["content"]}"',
        str(mean),
    )


def tmdb_release(d: Draft) -> None:
    movie = _movie(d, released=False)
    coming = movie["release_date"] > d.world.start.date().isoformat()
    past = (
        'When was "{t}" released?',
        'What is the release date of "{t}"?',
        'When did "{t}" come out in cinemas?',
    )
    future = (
        'When does "{t}" come out?',
        'What is the release date of "{t}"?',
        'When will "{t}" be in cinemas?',
    )
    d.query(future if coming else past, t=movie["title"])
    r = d.call("get_movie_details", movie_id=_movie_id(d, movie))
    verb = "comes out" if coming else "was released"
    d.answer(f'"{r["title"]}" {verb} on {r["release_date"]}.', r["release_date"])


def tmdb_lists(d: Draft) -> None:
    kind = d.rng.randrange(3)
    tool, phrasings = [
        (
            "get_now_playing",
            [
                "What's the most popular movie in theatres right now?",
                "Which film currently in cinemas is the most popular?",
                "What's playing in theatres now? Just the top one.",
            ],
        ),
        (
            "get_top_rated_movies",
            [
                "What's the highest-rated movie on TMDB?",
                "Which film has the best rating on TMDB?",
                "Name the top-rated movie of all time according to TMDB.",
            ],
        ),
        (
            "get_popular_movies",
            [
                "What's the most popular movie on TMDB today?",
                "Which movie is trending the most on TMDB?",
                "Tell me the current most popular film.",
            ],
        ),
    ][kind]
    d.query(phrasings)
    films = rows_or_skip(d.call(tool)["films"], "film")
    d.answer(
        f'It\'s "{films[0]["title"]}" ({films[0]["release_date"][:4]}, rated {films[0]["vote_average"]}).',
        films[0]["title"],
    )


def tmdb_now_playing_runtime(d: Draft) -> None:
    d.query(
        [
            "How long is the most popular film in theatres right now?",
            "What genre is the biggest movie in cinemas at the moment, and how long does it run?",
            "I want to see whatever's most popular in theatres now. How long is it?",
        ]
    )
    films = rows_or_skip(d.call("get_now_playing")["films"], "film")
    r = d.call("get_movie_details", movie_id=films[0]["id"])
    d.answer(
        f'The most popular film in theatres is "{r["title"]}", {r["runtime"]} minutes ({", ".join(r["genres"])}).',
        r["title"],
        str(r["runtime"]),
    )


def tmdb_ask_title(d: Draft) -> None:
    movie = _movie(d)
    genre = d.rows(
        "SELECT g.name FROM teval_tmdb_movie_genres m JOIN teval_tmdb_genres g USING (genre_id)"
        " WHERE m.movie_id = ? ORDER BY m.rowid",
        movie["movie_id"],
    )[0]["name"].lower()
    d.query(
        [
            "Can you recommend a movie like {g} film I watched last week?",
            "How long is {g} movie I want to see tonight? And what's similar to it?",
            "Find me films similar to {g} favourite of mine.",
        ],
        g=("an " if genre[0] in "aeiou" else "a ") + genre,
    )
    told = d.ask("movie", movie["title"], "Sure, which movie do you mean?", keywords=["film", "title"])
    r = d.call("search_movie", query=told)
    if r["id"] != movie["movie_id"]:
        raise Skip("the title finds another film")
    films = rows_or_skip(d.call("get_similar_movies", movie_id=r["id"])["films"], "similar film")
    info = d.call("get_movie_details", movie_id=r["id"])
    d.answer(
        f'"{told}" runs {info["runtime"]} minutes; a similar film is "{films[0]["title"]}".',
        films[0]["title"],
    )


def tmdb_refuse_tickets(d: Draft) -> None:
    movie = _movie(d)
    d.query(
        [
            'Buy me two tickets for "{t}" tonight.',
            'Add "{t}" to my watchlist.',
            'Rate "{t}" 8 out of 10 on my TMDB account.',
            'Stream "{t}" on my TV.',
        ],
        t=movie["title"],
    )
    d.refuse(
        (), "Sorry, I can't do that: my TMDB tools can only look up films, their details, reviews and lists."
    )


# ---- FilmDouban (Chinese) ------------------------------------------------------------------------
def _film(d: Draft, released: bool) -> dict[str, Any]:
    op = "<=" if released else ">"
    film: dict[str, Any] = d.pick(
        f"SELECT * FROM teval_douban_films WHERE date {op} ? ORDER BY subject_id",
        d.world.start.date().isoformat(),
    )
    return film


def douban_detail(d: Draft) -> None:
    film = _film(d, released=d.rng.random() < 0.7)
    d.query(
        [
            "《{t}》是谁导演的？豆瓣评分多少？",
            "帮我查一下电影《{t}》的详细信息。",
            "《{t}》讲的是什么？主演有谁？",
            "电影《{t}》什么时候上映？片长多少？",
        ],
        t=film["title"],
    )
    text = d.call("print_detail", film_name=film["title"])["description"]
    d.answer(f"{text}", film["director"], film["date"])


def douban_now_playing(d: Draft) -> None:
    from toolgym.mocks.apps.teval.film_douban import REGIONS

    region = d.choice(REGIONS)
    d.query(
        [
            "现在正在上映的{r}电影里，哪部想看的人最多？",
            "最近院线在映的{r}片，最热门的是哪部？",
            "豆瓣上正在上映的{r}电影有哪些？最火的是哪一部？",
        ],
        r=region,
    )
    films = rows_or_skip(d.call("now_playing_out_filter", region=region, outNum=3)["film"], "film")
    d.answer(
        f"正在上映的{region}电影中，想看人数最多的是《{films[0]['title']}》（{films[0]['wantWatchPeopleNum']}人想看）。",
        films[0]["title"],
    )


def douban_coming(d: Draft) -> None:
    from toolgym.mocks.apps.teval.film_douban import CATES, REGIONS

    cate = d.choice(CATES)
    region = d.choice(REGIONS) if d.rng.random() < 0.5 else None
    what = f"{region}{cate}片" if region else f"{cate}片"
    d.query(["接下来有哪些{w}要上映？", "最近即将上映的{w}有哪些？", "帮我看看快上映的{w}，列几部。"], w=what)
    films = rows_or_skip(
        d.call("coming_out_filter", **({"region": region} if region else {}), cate=cate, outNum=5)["film"],
        "film",
    )
    names = "、".join(f"《{f['title']}》（{f['date']}）" for f in films)
    d.answer(f"即将上映的{what}：{names}。", films[0]["title"])


def douban_coming_director(d: Draft) -> None:
    from toolgym.mocks.apps.teval.film_douban import CATES

    cate = d.choice(CATES)
    d.query(["最近最早上映的一部{c}片是什么？导演是谁？", "下一部要上映的{c}电影叫什么，谁导演的？"], c=cate)
    films = rows_or_skip(d.call("coming_out_filter", cate=cate, outNum=1)["film"], "film")
    title = films[0]["title"]
    text = d.call("print_detail", film_name=title)["description"]
    director = text.split("导演：", 1)[1].split("\n", 1)[0]
    d.answer(f"下一部上映的{cate}片是《{title}》（{films[0]['date']}），导演是{director}。", title, director)


def douban_ask_film(d: Draft) -> None:
    film = _film(d, released=True)
    cate = film["cate"].split("/")[0]
    d.query(
        ["帮我查一部{c}电影的豆瓣评分。", "我想知道一部{c}片是谁导演的。", "帮我看看一部{c}电影的详情。"],
        c=cate,
    )
    told = d.ask("film_name", film["title"], "好的，请问是哪部电影？", keywords=["哪部", "电影名"])
    text = d.call("print_detail", film_name=told)["description"]
    d.answer(text, film["director"])


def douban_refuse_tickets(d: Draft) -> None:
    film = _film(d, released=True)
    d.query(
        ["帮我买两张今晚《{t}》的电影票。", "帮我在豆瓣上给《{t}》打五星。", "把《{t}》加到我的想看清单里。"],
        t=film["title"],
    )
    d.refuse((), "抱歉，我无法完成：现有的豆瓣工具只能查询电影信息。")


T = Template
TEMPLATES = [
    T("teval.arxiv.authors", (ARXIV,), arxiv_authors),
    T("teval.arxiv.topic", (ARXIV,), arxiv_topic),
    T("teval.arxiv.ask_title", (ARXIV,), arxiv_ask_title),
    T("teval.arxiv.refuse_download", (ARXIV,), arxiv_refuse_download),
    T("teval.scholar.citation", (SCHOLAR,), scholar_citation),
    T("teval.scholar.cited_by", (SCHOLAR,), scholar_cited_by),
    T("teval.scholar.author", (SCHOLAR,), scholar_author),
    T("teval.scholar.author_top_citation", (SCHOLAR,), scholar_author_top_citation),
    T("teval.scholar.ask_author", (SCHOLAR,), scholar_ask_author),
    T("teval.scholar.refuse_alert", (SCHOLAR,), scholar_refuse_alert),
    T("teval.search.country", (SEARCH,), search_country),
    T("teval.search.landmark", (SEARCH,), search_landmark),
    T("teval.search.opening_hours", (SEARCH,), search_opening_hours),
    T("teval.search.holiday", (SEARCH,), search_holiday),
    T("teval.search.days_until_holiday", (SEARCH, TIME), search_days_until),
    T("teval.search.capital_weather", (SEARCH, WEATHER), capital_weather),
    T("teval.polygon.close", (POLYGON,), stock_close),
    T("teval.polygon.move", (POLYGON,), stock_move),
    T("teval.polygon.detail", (POLYGON,), stock_detail),
    T("teval.polygon.news", (POLYGON,), stock_news),
    T("teval.polygon.range_high", (POLYGON,), stock_range_high),
    T("teval.polygon.compare", (POLYGON,), stock_compare),
    T("teval.polygon.ask_date", (POLYGON,), stock_ask_date),
    T("teval.polygon.refuse_trade", (POLYGON,), stock_refuse_trade),
    T("teval.tmdb.details", (TMDB,), tmdb_details),
    T("teval.tmdb.similar", (TMDB,), tmdb_similar),
    T("teval.tmdb.reviews", (TMDB,), tmdb_reviews),
    T("teval.tmdb.release", (TMDB,), tmdb_release),
    T("teval.tmdb.lists", (TMDB,), tmdb_lists),
    T("teval.tmdb.now_playing_runtime", (TMDB,), tmdb_now_playing_runtime),
    T("teval.tmdb.ask_title", (TMDB,), tmdb_ask_title),
    T("teval.tmdb.refuse_tickets", (TMDB,), tmdb_refuse_tickets),
    T("teval.douban.detail", (DOUBAN,), douban_detail, lang="zh"),
    T("teval.douban.now_playing", (DOUBAN,), douban_now_playing, lang="zh"),
    T("teval.douban.coming", (DOUBAN,), douban_coming, lang="zh"),
    T("teval.douban.coming_director", (DOUBAN,), douban_coming_director, lang="zh"),
    T("teval.douban.ask_film", (DOUBAN,), douban_ask_film, lang="zh"),
    T("teval.douban.refuse_tickets", (DOUBAN,), douban_refuse_tickets, lang="zh"),
]
