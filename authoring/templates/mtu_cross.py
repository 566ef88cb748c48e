"""Templates across two or three `mtu` apps: what one app returns decides or fills the next call
(the forecast decides the alarm, the restaurant's address is where the ride goes or what a friend
is sent, a booked show goes into the calendar)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from toolgym.authoring.generate import Draft, Skip, Template
from toolgym.authoring.templates.common import money
from toolgym.authoring.templates.mtu_shared import (
    PROVIDER_WORDS,
    bare_day,
    best_rated_hotel,
    book_appointment,
    buy_movie_tickets,
    cheapest_oneway,
    event_kind,
    find_showtimes,
    first_show_from,
    flight_route,
    future_day,
    next_event,
    one,
    people,
    plural,
    provider_hour,
    reserve_hotel,
    reserve_oneway,
    reserve_table,
    showing,
    spoken_day,
    spoken_time,
    today,
    top_provider_on_workday,
)

WET = frozenset({"showers", "rain", "thunderstorms", "snow"})
RIDE_WORDS = {"Pool": "shared", "Regular": "regular", "Luxury": "luxury"}


def _clock(d: Draft, low: int, high: int, minutes: tuple[int, ...] = (0, 15, 30, 45)) -> str:
    return f"{d.rng.randint(low, high):02d}:{d.choice(minutes):02d}"


def _place(d: Draft) -> str:
    return str(d.pick("SELECT name FROM mtu_weather_places WHERE kind = 'city' ORDER BY place_id")["name"])


# ---- weather decides ---------------------------------------------------------------------------
def weather_alarm(d: Draft) -> None:
    place, day = _place(d), future_day(d, 1, 6)
    early = _clock(d, 5, 6)
    late = f"{int(early[:2]) + 1:02d}:{early[3:]}"
    label = d.choice(["Commute", "Leave for work", "Wake up early", "Morning run"])
    d.query(
        [
            "If it's going to rain or snow in {p} {w}, set a {l} alarm at {e} that day; otherwise at {t}.",
            "Check the weather in {p} for {b}. Wet weather means I need a {l} alarm at {e}, dry means {t}.",
        ],
        p=place,
        w=spoken_day(d, day),
        b=bare_day(d, day),
        l=label,
        e=spoken_time(d, early),
        t=spoken_time(d, late),
    )
    w = d.call("GetWeather", city=place, date=day.isoformat())
    wet = w["conditions"] in WET
    at = early if wet else late
    d.call("set_alarm", time=at, label=label, recurrence=[day.isoformat()])
    d.answer(
        f"{place} expects {w['conditions']} on {day.isoformat()}, so your {label} alarm is set for {at}.",
        at,
        w["conditions"],
    )


def weather_thermostat(d: Draft) -> None:
    room = d.pick("SELECT location FROM mtu_smart_home_rooms WHERE outdoor = 0 ORDER BY location")["location"]
    threshold = d.choice([38, 40, 42, 45, 48, 50])
    warm, cool = d.choice([70, 71, 72, 73]), d.choice([65, 66, 67, 68])
    d.query(
        [
            "If tonight's low in San Francisco drops below {x} F, set the {r} to {w}; otherwise to {c}.",
            "Look at today's forecast for San Francisco: a low under {x} degrees means the {r} should be {w} F, else {c} F.",
        ],
        x=threshold,
        r=room,
        w=warm,
        c=cool,
    )
    weather = d.call("GetWeather", city="San Francisco", date=today(d).isoformat())
    target = warm if weather["temperature_low"] < threshold else cool
    d.call("adjust_room_temperature", location=room, temperature=target)
    d.answer(f"The low is {weather['temperature_low']} F, so I set the {room} to {target} F.", str(target))


def trip_weather(d: Draft) -> None:
    row = d.pick(
        "SELECT DISTINCT o.city AS origin, t.city AS destination FROM mtu_flights_schedules s"
        " JOIN mtu_flights_airports o ON o.code = s.origin_airport JOIN mtu_flights_airports t"
        " ON t.code = s.destination_airport WHERE o.city != t.city AND t.city IN (SELECT name FROM mtu_weather_places)"
        " ORDER BY 1, 2"
    )
    day = future_day(d, 2, 25)
    d.query(
        [
            "I'm flying from {o} to {t} {w}. What's the cheapest flight, and what weather should I expect there?",
            "Find the lowest fare from {o} to {t} {w} and tell me the forecast for {t} that day.",
        ],
        o=row["origin"],
        t=row["destination"],
        w=spoken_day(d, day),
    )
    f = cheapest_oneway(d, row["origin"], row["destination"], day.isoformat())
    w = d.call("GetWeather", city=row["destination"], date=day.isoformat())
    d.answer(
        f"The cheapest is {f['airlines']} at {f['departure_time']} for ${money(f['price'])}; {row['destination']} expects"
        f" {w['conditions']}, high {w['temperature']} F.",
        str(f["airlines"]),
        w["conditions"],
    )


# ---- a booking, then what follows from it -------------------------------------------------------
def _venue(d: Draft, city: str | None = None) -> dict[str, Any]:
    where = "city = ?" if city else "city != 'Cambridge'"
    return d.pick(
        f"SELECT * FROM mtu_restaurants_venues v WHERE {where} AND (SELECT count(*) FROM mtu_restaurants_venues o"
        " WHERE o.restaurant_name = v.restaurant_name AND o.city = v.city) = 1 ORDER BY restaurant_id",
        *([city] if city else []),
    )


def _table_time(d: Draft, venue: dict[str, Any], earliest: int = 0) -> str:
    first, last = max(earliest, int(venue["opens"][:2]) + 1), int(venue["closes"][:2]) - 2
    if last < first:
        raise Skip("short opening hours")
    return f"{d.rng.randint(first, last):02d}:{d.choice(['00', '30'])}"


def dinner_and_ride(d: Draft) -> None:
    venue = _venue(d, "San Francisco")
    at = _table_time(d, venue, earliest=17)  # "tonight"
    n, said = people(d)
    kind = d.choice(["Regular", "Luxury"] if n > 2 else ["Pool", "Regular", "Luxury"])
    d.query(
        [
            "Reserve a table for {n} at {r} tonight at {t}, then get us a {k} ride there.",
            "Book {r} for {n} people at {t} today and order a {k} car to take us to it.",
            "We're {n}: make a reservation at {r} for {t} tonight and call a {k} ride to the restaurant.",
        ],
        n=said,
        r=venue["restaurant_name"],
        t=spoken_time(d, at),
        k=RIDE_WORDS[kind],
    )
    booked = reserve_table(d, venue["restaurant_name"], venue["city"], today(d), at, str(n))
    ride = d.call("GetRide", destination=booked["address"], number_of_seats=str(n), ride_type=kind)
    d.answer(
        f"Your table at {venue['restaurant_name']} is booked for {at}, and a {RIDE_WORDS[kind]} ride to {booked['address']}"
        f" is on its way (${money(ride['ride_fare'])}).",
        str(booked["address"]).split(",")[0],
    )


def _contact(d: Draft) -> str:
    return str(
        d.pick(
            "SELECT c.contact_name FROM mtu_contacts_contacts c WHERE EXISTS (SELECT 1 FROM mtu_contacts_phones p"
            " WHERE p.contact_id = c.contact_id) ORDER BY c.contact_name"
        )["contact_name"]
    )


def dinner_and_share(d: Draft) -> None:
    venue = _venue(d)
    day, at = future_day(d, 1, 20), _table_time(d, venue)
    n, said = people(d)
    friend = _contact(d)
    d.query(
        [
            "Book a table for {n} at {r} in {c} {w} at {t}, and send {f} the address.",
            "Reserve {r} ({c}) for {n} {w}, {t}, then share the restaurant's location with {f}.",
        ],
        n=said,
        r=venue["restaurant_name"],
        c=venue["city"],
        w=spoken_day(d, day),
        t=spoken_time(d, at),
        f=friend,
    )
    booked = reserve_table(d, venue["restaurant_name"], venue["city"], day, at, str(n))
    d.call("ShareLocation", contact_name=friend, location=booked["address"])
    d.answer(
        f"Booked {venue['restaurant_name']} for {at} on {day.isoformat()} and sent {friend} {booked['address']}.",
        friend,
    )


def dinner_share_ask_friend(d: Draft) -> None:
    venue = _venue(d)
    day, at = future_day(d, 1, 20), _table_time(d, venue)
    friend = _contact(d)
    d.query(
        [
            "Book a table for two at {r} in {c} {w} at {t} and send the address to the friend I'm meeting.",
            "Reserve {r} ({c}) for two {w}, {t}, and share its location with my date.",
        ],
        r=venue["restaurant_name"],
        c=venue["city"],
        w=spoken_day(d, day),
        t=spoken_time(d, at),
    )
    booked = reserve_table(d, venue["restaurant_name"], venue["city"], day, at, "2")
    said = d.ask(
        "contact_name", friend, "Who should I send the address to?", keywords=["who", "contact", "name"]
    )
    d.call("ShareLocation", contact_name=said, location=booked["address"])
    d.answer(f"Booked {venue['restaurant_name']} and sent {friend} the address, {booked['address']}.", friend)


def appointment_to_calendar(d: Draft) -> None:
    row, day, p = top_provider_on_workday(d)
    at = f"{provider_hour(d, p):02d}:00"
    d.query(
        [
            "Book me with the best-rated {k} in {c} {w} at {t} and put it in my calendar.",
            "Find the top {k} in {c}, make an appointment {w} at {t}, and add it to my calendar with the address.",
        ],
        k=PROVIDER_WORDS[row["kind"]],
        c=row["city"],
        w=spoken_day(d, day),
        t=spoken_time(d, at),
    )
    booked = book_appointment(d, day, at, row["kind"], p["provider_name"])
    d.call(
        "AddEvent",
        event_name=booked["appointment_name"],
        event_date=day.isoformat(),
        event_time=at,
        event_location=booked["address"],
    )
    d.answer(
        f"Booked {p['provider_name']} on {day.isoformat()} at {at} and added it to your calendar.",
        str(p["provider_name"]),
    )


def _to_calendar(d: Draft, e: dict[str, Any]) -> None:
    """Puts a found event (its name, date, time and venue) into the calendar."""
    d.call(
        "AddEvent",
        event_name=e["event_name"],
        event_date=e["date"],
        event_time=e["time"],
        event_location=e["venue"],
    )


EVENT_NOUN = {"Music": "concert", "Sports": "game", "Theater": "show"}


def concert_to_calendar(d: Draft) -> None:
    row = event_kind(d)
    n, said = people(d)
    d.query(
        [
            "Buy {n} tickets for the next {g} {k} in {c} and add it to my calendar.",
            "Get {n} tickets to the soonest {g} {k} in {c}, then put it on my calendar with the venue.",
        ],
        n=said,
        g=row["category"].lower(),
        k=EVENT_NOUN[row["event_type"]],
        c=row["city"],
    )
    e = next_event(d, row)
    d.call(
        "BuyEventTickets",
        event_name=e["event_name"],
        number_of_tickets=str(n),
        date=e["date"],
        city=row["city"],
    )
    _to_calendar(d, e)
    d.answer(
        f"Bought {n} tickets for {e['event_name']} on {e['date']} at {e['time']} and added it to your calendar.",
        str(e["event_name"]),
    )


def concert_calendar_share(d: Draft) -> None:
    row = event_kind(d)
    friend = _contact(d)
    d.query(
        [
            "Get two tickets to the next {g} {k} in {c}, put it in my calendar, and send {f} the venue's address.",
            "Buy 2 tickets for the soonest {g} {k} in {c}; add it to my calendar and share the location with {f}.",
        ],
        g=row["category"].lower(),
        k=EVENT_NOUN[row["event_type"]],
        c=row["city"],
        f=friend,
    )
    e = next_event(d, row)
    d.call(
        "BuyEventTickets", event_name=e["event_name"], number_of_tickets="2", date=e["date"], city=row["city"]
    )
    _to_calendar(d, e)
    d.call("ShareLocation", contact_name=friend, location=e["venue_address"])
    d.answer(
        f"Two tickets for {e['event_name']} ({e['date']}, {e['time']}) are bought, it's in your calendar, and {friend} has"
        f" the address {e['venue_address']}.",
        str(e["event_name"]),
    )


def movie_to_calendar(d: Draft) -> None:
    row = showing(d)
    day = future_day(d, 0, 10)
    n, said = people(d)
    d.query(
        [
            "Buy {n} tickets for the first evening showing of {m} in {c} {w} and add it to my calendar.",
            "Get {n} seats for {m} in {c} {w}, the earliest show from 6 pm, and put it in my calendar.",
        ],
        n=said,
        m=row["title"],
        c=row["city"],
        w=spoken_day(d, day),
    )
    s = first_show_from(find_showtimes(d, row, day), "18:00", "evening show")
    bought = buy_movie_tickets(d, row, day, s, n)
    d.call(
        "AddEvent",
        event_name=f"{row['title']} (movie)",
        event_date=day.isoformat(),
        event_time=s["show_time"],
        event_location=s["theater_name"],
    )
    d.answer(
        f"Bought {n} tickets for the {s['show_time']} show at {s['theater_name']} (${money(bought['price'])}) and added it to your calendar.",
        str(s["show_time"]),
    )


def flight_and_hotel(d: Draft) -> None:
    origin, dest = flight_route(d)
    day = future_day(d, 2, 30)
    nights = d.choice([2, 3, 4, 5])
    d.query(
        [
            "Book the cheapest flight from {o} to {t} {w}, and the best-rated hotel in {t} for {n} from that day.",
            "I'm going to {t} from {o} {w} for {n}. Book the lowest fare and the top-rated hotel there.",
        ],
        o=origin,
        t=dest,
        w=spoken_day(d, day),
        n=plural(nights, "night"),
    )
    f = cheapest_oneway(d, origin, dest, day.isoformat())
    check_in = day + timedelta(days=1) if f["arrives_next_day"] else day
    reserve_oneway(d, origin, dest, f, day.isoformat())
    h = best_rated_hotel(d, dest)
    reserve_hotel(d, h, dest, check_in.isoformat(), nights)
    d.answer(
        f"Booked {f['airlines']} {f['flight_number']} (${money(f['price'])}) and {h['hotel_name']} from {check_in.isoformat()}"
        f" for {plural(nights, 'night')}.",
        str(f["airlines"]),
        str(h["hotel_name"]),
    )


def train_then_taxi(d: Draft) -> None:
    leg = d.pick(
        "SELECT DISTINCT departure, destination, day FROM mtu_trains_timetable WHERE destination = 'Cambridge' ORDER BY 1, 2, 3"
    )
    after = f"{d.rng.randint(7, 18):02d}:00"
    spot = d.choice(
        [
            "Kings College",
            "the Fitzwilliam Museum",
            "Trinity College",
            "the Grand Arcade",
            "Addenbrookes Hospital",
        ]
    )
    d.query(
        [
            "Book me on the first train from {f} to Cambridge after {a} on {w}, and a taxi from Cambridge station to {s} when it arrives.",
            "I'm taking the earliest train after {a} from {f} to Cambridge on {w}. Book it, then book the nearest taxi from the station to {s} for its arrival time.",
        ],
        f=leg["departure"],
        a=spoken_time(d, after),
        w=leg["day"].capitalize(),
        s=spot,
    )
    t = one(
        d.call(
            "SearchTrain",
            departure=leg["departure"],
            destination="Cambridge",
            day=leg["day"],
            leaveAt=after,
            return_info=["trainID", "leaveAt", "arriveBy"],
        )["trains"],
        "train",
    )
    d.call("BookTrain", people="1", trainID=t["trainID"])
    taxi = one(
        d.call(
            "searchTaxi",
            departure="Cambridge station",
            destination=spot,
            leaveAt=t["arriveBy"],
            return_info=["all"],
        )["taxis"],
        "taxi",
    )
    d.call("BookTaxi", people="1", license_plate=taxi["license_plate"])
    d.answer(
        f"Booked {t['trainID']} ({t['leaveAt']}, arriving {t['arriveBy']}) and a {taxi['type']} ({taxi['license_plate']})"
        f" from the station at {t['arriveBy']}.",
        str(t["trainID"]),
        str(taxi["license_plate"]),
    )


TEMPLATES = [
    Template("mtu.cross.weather_alarm", ("mtu_weather", "mtu_alarms"), weather_alarm),
    Template("mtu.cross.weather_thermostat", ("mtu_weather", "mtu_smart_home"), weather_thermostat),
    Template("mtu.cross.trip_weather", ("mtu_flights", "mtu_weather"), trip_weather),
    Template("mtu.cross.dinner_and_ride", ("mtu_restaurants", "mtu_rides"), dinner_and_ride),
    Template("mtu.cross.dinner_and_share", ("mtu_restaurants", "mtu_contacts"), dinner_and_share),
    Template(
        "mtu.cross.dinner_share_ask_friend", ("mtu_restaurants", "mtu_contacts"), dinner_share_ask_friend
    ),
    Template(
        "mtu.cross.appointment_to_calendar", ("mtu_appointments", "mtu_calendar"), appointment_to_calendar
    ),
    Template("mtu.cross.concert_to_calendar", ("mtu_events", "mtu_calendar"), concert_to_calendar),
    Template(
        "mtu.cross.concert_calendar_share",
        ("mtu_events", "mtu_calendar", "mtu_contacts"),
        concert_calendar_share,
    ),
    Template("mtu.cross.movie_to_calendar", ("mtu_movies", "mtu_calendar"), movie_to_calendar),
    Template("mtu.cross.flight_and_hotel", ("mtu_flights", "mtu_hotels"), flight_and_hotel),
    Template("mtu.cross.train_then_taxi", ("mtu_trains", "mtu_rides"), train_then_taxi),
]
