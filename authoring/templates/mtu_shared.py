"""What the templates of the `mtu` apps share: days and times as people say them, small pools, and
the searches and bookings that several templates (of one module or several) run the same way.

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


# ---- searches and bookings that several templates (and modules) run the same way ----------------
def flight_route(d: Draft) -> tuple[str, str]:
    """An origin and a destination city that a scheduled flight joins."""
    row = d.pick(
        "SELECT DISTINCT o.city AS origin, t.city AS destination FROM mtu_flights_schedules s"
        " JOIN mtu_flights_airports o ON o.code = s.origin_airport"
        " JOIN mtu_flights_airports t ON t.code = s.destination_airport"
        " WHERE o.city != t.city ORDER BY origin, destination"
    )
    return str(row["origin"]), str(row["destination"])


def cheapest_oneway(d: Draft, origin: str, dest: str, when: str, **extra: str) -> dict[str, Any]:
    """The cheapest one-way flight on the date `when`; `extra` narrows the search (cabin, passengers)."""
    flights = d.call(
        "SearchOnewayFlight", origin_city=origin, destination_city=dest, departure_date=when, **extra
    )["flights"]
    return unique_first(flights, "price", "flight")


def reserve_oneway(
    d: Draft, origin: str, dest: str, flight: dict[str, Any], when: str, **extra: str
) -> dict[str, Any]:
    """Books the found flight's airline on the date `when`; `extra` adds the passengers."""
    return d.call(
        "ReserveOnewayFlight",
        origin_city=origin,
        destination_city=dest,
        airlines=flight["airlines"],
        departure_date=when,
        **extra,
    )


def reserve_hotel(d: Draft, hotel: dict[str, Any], city: str, check_in: str, nights: int) -> dict[str, Any]:
    return d.call(
        "ReserveHotel",
        hotel_name=hotel["hotel_name"],
        location=city,
        check_in_date=check_in,
        stay_length=str(nights),
    )


def best_rated_hotel(d: Draft, city: str, **filters: str) -> dict[str, Any]:
    return unique_first(d.call("SearchHotel", location=city, **filters)["hotels"], "average_rating", "hotel")


def reserve_table(d: Draft, name: str, city: str, day: date, at: str, party: str) -> dict[str, Any]:
    """Books a restaurant table; the booking answers with the restaurant's address."""
    return d.call(
        "ReserveRestaurant", restaurant_name=name, city=city, date=day.isoformat(), time=at, party_size=party
    )


def event_kind(d: Draft) -> dict[str, Any]:
    """A city, event type and category with an event still to come."""
    return d.pick(
        "SELECT DISTINCT city, event_type, category FROM mtu_events_events WHERE date >= ? ORDER BY 1, 2, 3",
        today(d).isoformat(),
    )


def next_event(d: Draft, row: dict[str, Any]) -> dict[str, Any]:
    """The soonest event of the row's type and category in its city."""
    events = d.call("FindEvents", event_type=row["event_type"], city=row["city"], category=row["category"])[
        "events"
    ]
    return one(events, "event")


def showing(d: Draft) -> dict[str, Any]:
    """A film and a city where it shows."""
    return d.pick(
        "SELECT DISTINCT m.title, t.city FROM mtu_movies_showtimes s JOIN mtu_movies_movies m USING (movie_id)"
        " JOIN mtu_movies_theaters t USING (theater_id) ORDER BY 2, 1"
    )


def find_showtimes(d: Draft, row: dict[str, Any], day: date) -> list[dict[str, Any]]:
    shows: list[dict[str, Any]] = d.call(
        "GetTimesForMovie", movie_name=row["title"], location=row["city"], show_date=day.isoformat()
    )["showtimes"]
    return shows


def first_show_from(shows: list[dict[str, Any]], hhmm: str, what: str) -> dict[str, Any]:
    """The earliest show at or after `hhmm` (Skip when two theatres tie on it)."""
    later = sorted(
        (s for s in shows if s["show_time"] >= hhmm), key=lambda s: (s["show_time"], s["theater_name"])
    )
    return unique_first(later, "show_time", what)


def buy_movie_tickets(
    d: Draft, row: dict[str, Any], day: date, show: dict[str, Any], n: int
) -> dict[str, Any]:
    return d.call(
        "BuyMovieTickets",
        movie_name=row["title"],
        location=row["city"],
        show_date=day.isoformat(),
        show_time=show["show_time"],
        show_type=show["show_type"],
        number_of_tickets=str(n),
    )


# the BookAppointment argument that names a provider of each kind, and how a user says the kind
PROVIDER_FIELD: Final = {
    "dentist": "dentist_name",
    "doctor": "doctor_name",
    "stylist": "stylist_name",
    "therapist": "therapist_name",
}
PROVIDER_WORDS: Final = {
    "dentist": "dentist",
    "doctor": "doctor",
    "stylist": "hair stylist",
    "therapist": "therapist",
}


def provider_kind(d: Draft) -> dict[str, Any]:
    """A city and a kind of provider (dentist, doctor, ...) found there."""
    return d.pick("SELECT DISTINCT city, kind FROM mtu_appointments_providers ORDER BY 1, 2")


def top_provider_on_workday(d: Draft) -> tuple[dict[str, Any], date, dict[str, Any]]:
    """A kind of provider in a city, a workday, and the best-rated such provider there."""
    row = provider_kind(d)
    day = workday(d)
    return row, day, top_provider(d, row)


def provider_hour(d: Draft, provider: dict[str, Any]) -> int:
    """An hour the provider is open at (its opening_hours read "09:00-17:00")."""
    hours = str(provider["opening_hours"])
    return d.rng.randint(int(hours[:2]), int(hours[6:8]) - 1)


def book_appointment(d: Draft, day: date, at: str, kind: str, provider: str) -> dict[str, Any]:
    return d.call(
        "BookAppointment",
        appointment_date=day.isoformat(),
        appointment_time=at,
        **{PROVIDER_FIELD[kind]: provider},
    )


def workday(d: Draft) -> date:
    """A day in the next three weeks that is not a Sunday (providers close on Sundays)."""
    day = future_day(d, 1, 21)
    return day + timedelta(days=1) if day.weekday() == 6 else day


def top_provider(d: Draft, row: dict[str, Any]) -> dict[str, Any]:
    """The best-rated provider of the row's kind in its city."""
    return unique_first(
        d.call("FindProvider", city=row["city"], type=row["kind"])["providers"], "average_rating", "provider"
    )
