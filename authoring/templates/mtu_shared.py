"""What the templates of the `mtu` apps share: days and times as people say them, and small pools.

The MTU apps parse "2024-01-05", "tomorrow", "Friday" and "January 5th" alike, so a query may say a
day in any of those ways while the golden call passes the ISO date: the agent's call is free.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any, Final

from toolgym.authoring.generate import Draft, Skip

# a user who books something names a number of people in words or digits
PEOPLE: Final = (1, 2, 2, 2, 3, 4, 4, 5, 6)
NUMBER_WORDS: Final = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
# new people a user adds to their contacts: names no seeded contact has
NEW_NAMES: Final = (
    "Maya Okafor",
    "Noah Lindqvist",
    "Ines Barros",
    "Tomas Novak",
    "Leila Haddad",
    "Oscar Brennan",
    "Sofia Marchetti",
    "Ravi Iyer",
    "Hugo Laurent",
    "Mei Tanaka",
    "Elif Kaya",
    "Felix Wagner",
    "Amara Nwosu",
    "Jonas Berg",
    "Clara Moreau",
    "Diego Alvarez",
)


def today(d: Draft) -> date:
    """The world's today (its clock's date)."""
    return d.world.start.date()


def future_day(d: Draft, low: int, high: int) -> date:
    """A day `low`..`high` days after today, by the draft's rng."""
    return today(d) + timedelta(days=d.rng.randint(low, high))


def spoken_day(d: Draft, day: date) -> str:
    """How a person says `day`: "today"/"tomorrow" when it is, else "on Friday, January 5",
    "on January 5" or "on 2024-01-05" (by the rng)."""
    delta = (day - today(d)).days
    if delta == 0:
        return "today"
    if delta == 1:
        return "tomorrow"
    month_day = f"{day.strftime('%B')} {day.day}"
    said: str = d.choice(
        [f"on {day.strftime('%A')}, {month_day}", f"on {month_day}", f"on {day.isoformat()}"]
    )
    return said


def bare_day(d: Draft, day: date) -> str:
    """`spoken_day` without its leading "on " ("Friday, January 5", "tomorrow")."""
    said = spoken_day(d, day)
    return said[3:] if said.startswith("on ") else said


def spoken_time(d: Draft, hhmm: str) -> str:
    """ "19:30" as "19:30" or "7:30 pm" (by the rng); "07:00" as "7 am" or "07:00"."""
    hour, minute = (int(x) for x in hhmm.split(":"))
    if d.rng.random() < 0.5:
        return hhmm
    suffix = "am" if hour < 12 else "pm"
    twelve = hour % 12 or 12
    return f"{twelve}:{minute:02d} {suffix}" if minute else f"{twelve} {suffix}"


def people(d: Draft) -> tuple[int, str]:
    """A party size and how the query says it ("4" or "four")."""
    n = d.choice(PEOPLE)
    return n, d.choice([str(n), NUMBER_WORDS[n]])


def one(items: list[dict[str, Any]], what: str) -> dict[str, Any]:
    """The first of a tool's results (Skip when it returned none)."""
    if not items:
        raise Skip(f"no {what}")
    return items[0]


def unique_first(items: list[dict[str, Any]], key: str, what: str) -> dict[str, Any]:
    """The first result when no second one ties it on `key` (a "cheapest" with a tie is no answer)."""
    first = one(items, what)
    if len(items) > 1 and items[1][key] == first[key]:
        raise Skip(f"a tie for the first {what}")
    return first


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
