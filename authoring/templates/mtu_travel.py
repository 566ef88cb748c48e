"""Templates of the travel `mtu` apps: flights, hotels and houses, trains, buses, rental cars, rides.

A traveller knows cities, dates, times and how many people travel; never a flight number, train
id, licence plate or booking reference (those come back from searches and bookings).
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from toolgym.authoring.generate import Draft, Skip, Template
from toolgym.authoring.templates.common import money, plain
from toolgym.authoring.templates.mtu_shared import (
    NUMBER_WORDS,
    bare_day,
    best_rated_hotel,
    cheapest_oneway,
    flight_route,
    future_day,
    one,
    people,
    plural,
    reserve_hotel,
    reserve_oneway,
    spoken_day,
    spoken_time,
    unique_first,
)

FLIGHTS = ("mtu_flights",)
HOTELS = ("mtu_hotels",)
TRAINS = ("mtu_trains",)
BUSES = ("mtu_buses",)
CARS = ("mtu_cars",)
RIDES = ("mtu_rides",)
CABINS = ("Economy", "Economy", "Premium Economy", "Business", "First Class")


# ---- flights ------------------------------------------------------------------------------------
def _cheapest_roundtrip(d: Draft, phrasings: list[str]) -> tuple[str, str, date, date, dict[str, Any]]:
    """Draws a route and dates, asks with one of `phrasings` ({o} {t} {a} {b}), finds the cheapest trip."""
    (origin, dest), out = flight_route(d), future_day(d, 2, 35)
    back = out + timedelta(days=d.rng.randint(2, 10))
    d.query(phrasings, o=origin, t=dest, a=spoken_day(d, out), b=spoken_day(d, back))
    trips = d.call(
        "SearchRoundtripFlights",
        origin_city=origin,
        destination_city=dest,
        departure_date=out.isoformat(),
        return_date=back.isoformat(),
    )["flights"]
    return origin, dest, out, back, unique_first(trips, "price", "round trip")


def cheapest_flight(d: Draft) -> None:
    (origin, dest), day = flight_route(d), future_day(d, 2, 45)
    cabin = d.choice(CABINS)
    d.query(
        [
            "What's the cheapest {c} flight from {o} to {t} {w}?",
            "Find me the lowest {c} fare from {o} to {t} {w}.",
            "I need to fly {o} to {t} {w} in {c}. Which flight costs least?",
            "How much is the cheapest one-way {c} ticket from {o} to {t} {w}?",
        ],
        o=origin,
        t=dest,
        w=spoken_day(d, day),
        c={"First Class": "first class", "Business": "business class"}.get(cabin, cabin.lower()),
    )
    f = cheapest_oneway(d, origin, dest, day.isoformat(), seating_class=cabin)
    d.answer(
        f"The cheapest is {f['airlines']} {f['flight_number']}, leaving {f['departure_time']}, at"
        f" ${money(f['price'])}.",
        str(f["airlines"]),
        plain(f["price"]),
    )


def book_cheapest_flight(d: Draft) -> None:
    (origin, dest), day = flight_route(d), future_day(d, 2, 45)
    n, said = people(d)
    d.query(
        [
            "Book the cheapest one-way flight from {o} to {t} {w} for {n} {p}.",
            "Find the lowest fare from {o} to {t} {w} and reserve it for {n} {p}.",
            "We're {n} {p} flying {o} to {t} {w}; book whichever flight is cheapest.",
        ],
        o=origin,
        t=dest,
        w=spoken_day(d, day),
        n=said,
        p="passenger" if n == 1 else "passengers",
    )
    f = cheapest_oneway(d, origin, dest, day.isoformat(), passengers=str(n))
    booked = reserve_oneway(d, origin, dest, f, day.isoformat(), passengers=str(n))
    d.answer(
        f"Booked {f['airlines']} {f['flight_number']} at {f['departure_time']} for {n}; the total is"
        f" ${money(booked['price'])}.",
        str(f["airlines"]),
    )


def cheapest_roundtrip(d: Draft) -> None:
    *_, f = _cheapest_roundtrip(
        d,
        [
            "What's the cheapest round trip from {o} to {t}, leaving {a} and coming back {b}?",
            "I want to go from {o} to {t} {a} and return {b}. Which round trip is cheapest?",
        ],
    )
    d.answer(
        f"The cheapest round trip is with {f['airlines']}: out at {f['outbound_departure_time']}, back at"
        f" {f['inbound_departure_time']}, ${money(f['price'])} in total.",
        str(f["airlines"]),
        plain(f["price"]),
    )


def book_roundtrip(d: Draft) -> None:
    origin, dest, out, back, f = _cheapest_roundtrip(
        d,
        [
            "Book the cheapest round trip from {o} to {t}: out {a}, back {b}.",
            "Please reserve the lowest-priced round-trip flights {o} to {t}, departing {a} and returning {b}.",
        ],
    )
    d.call(
        "ReserveRoundtripFlights",
        origin_city=origin,
        destination_city=dest,
        airlines=f["airlines"],
        departure_date=out.isoformat(),
        return_date=back.isoformat(),
        outbound_departure_time=f["outbound_departure_time"],
        inbound_departure_time=f["inbound_departure_time"],
    )
    d.answer(
        f"Booked the {f['airlines']} round trip (out {f['outbound_departure_time']}, back"
        f" {f['inbound_departure_time']}) for ${money(f['price'])}.",
        str(f["airlines"]),
    )


def earliest_flight(d: Draft) -> None:
    (origin, dest), day = flight_route(d), future_day(d, 1, 45)
    d.query(
        [
            "What's the first flight from {o} to {t} {w}?",
            "When does the earliest flight from {o} to {t} leave {w}?",
            "I need to be in {t} early {w}. What's the first departure from {o}?",
        ],
        o=origin,
        t=dest,
        w=spoken_day(d, day),
    )
    f = one(
        d.call("SearchFlights", fromloc=origin, toloc=dest, depart_date=day.isoformat())["flight_details"],
        "flight",
    )
    d.answer(
        f"The first is {f['airlines']} {f['flight_number']}, departing {f['departure_time']} and arriving"
        f" {f['arrival_time']}.",
        str(f["departure_time"]),
    )


def flight_ask_date(d: Draft) -> None:
    (origin, dest), day = flight_route(d), future_day(d, 2, 45)
    d.query(
        [
            "Book me the cheapest one-way flight from {o} to {t}.",
            "I need a flight from {o} to {t}; reserve the cheapest.",
        ],
        o=origin,
        t=dest,
    )
    said = d.ask(
        "departure_date", day.isoformat(), "Which date do you want to fly?", keywords=["date", "when"]
    )
    f = cheapest_oneway(d, origin, dest, said)
    reserve_oneway(d, origin, dest, f, said)
    d.answer(
        f"Booked {f['airlines']} {f['flight_number']} on {said} for ${money(f['price'])}.", str(f["airlines"])
    )


def refuse_book_flight(d: Draft) -> None:
    (origin, dest), day = flight_route(d), future_day(d, 2, 45)
    d.query(
        ["Book me a flight from {o} to {t} {w}.", "Reserve a one-way ticket {o} to {t} {w}, please."],
        o=origin,
        t=dest,
        w=spoken_day(d, day),
    )
    d.refuse(
        ["ReserveOnewayFlight", "ReserveRoundtripFlights"],
        "I'm sorry, I can search flights but I cannot book one: no booking tool is available to me.",
    )


def refuse_cancel_flight(d: Draft) -> None:
    (origin, dest), day = flight_route(d), future_day(d, 2, 45)
    d.query(
        ["Cancel my flight from {o} to {t} {w}.", "I need to cancel the {o} to {t} flight I booked for {x}."],
        o=origin,
        t=dest,
        w=spoken_day(d, day),
        x=day.isoformat(),
    )
    d.refuse((), "I'm sorry, I can't cancel flights: none of my flight tools cancels a booking.")


# ---- hotels and houses --------------------------------------------------------------------------
def _hotel_city(d: Draft) -> str:
    return str(
        d.pick("SELECT DISTINCT city FROM mtu_hotels_hotels WHERE city != 'Cambridge' ORDER BY city")["city"]
    )


def best_hotel(d: Draft) -> None:
    city = _hotel_city(d)
    stars = d.choice(["dontcare", "3", "4", "5"])
    d.query(
        [
            "What's the best-rated {s}hotel in {c}?",
            "Recommend me the top-rated {s}hotel in {c}.",
            "I'm visiting {c}. Which {s}hotel has the best reviews?",
        ],
        c=city,
        s="" if stars == "dontcare" else f"{stars}-star ",
    )
    h = best_rated_hotel(d, city, **({} if stars == "dontcare" else {"star_rating": stars}))
    d.answer(
        f"{h['hotel_name']} ({h['star_rating']} stars, rated {h['average_rating']}), ${money(h['price_per_night'])} a night.",
        str(h["hotel_name"]),
    )


def cheapest_wifi_hotel(d: Draft) -> None:
    city = _hotel_city(d)
    need = d.choice(
        [("has_wifi", "wifi"), ("pets_welcome", "pets allowed"), ("smoking_allowed", "smoking rooms")]
    )
    d.query(
        [
            "Which hotel in {c} with {n} is the cheapest per night?",
            "Find the least expensive hotel in {c} that has {n}.",
        ],
        c=city,
        n=need[1],
    )
    hotels = d.call("SearchHotel", location=city, **{need[0]: "True"})["hotels"]
    if not hotels:
        raise Skip("no such hotel")
    ranked = sorted(hotels, key=lambda h: (h["price_per_night"], h["hotel_name"]))
    if len(ranked) > 1 and ranked[0]["price_per_night"] == ranked[1]["price_per_night"]:
        raise Skip("a tie")
    h = ranked[0]
    d.answer(f"{h['hotel_name']} at ${money(h['price_per_night'])} a night.", str(h["hotel_name"]))


def book_best_hotel(d: Draft) -> None:
    city, day = _hotel_city(d), future_day(d, 1, 40)
    nights = d.choice([1, 2, 3, 4, 5, 7])
    d.query(
        [
            "Book the best-rated hotel in {c} for {n}, checking in {w}.",
            "Reserve a room at the top-rated hotel in {c} from {f}, {n}.",
            "I arrive in {c} {w} and stay {n}. Book me the highest-rated hotel there.",
        ],
        c=city,
        w=spoken_day(d, day),
        f=bare_day(d, day),
        n=plural(nights, "night"),
    )
    h = best_rated_hotel(d, city)
    booked = reserve_hotel(d, h, city, day.isoformat(), nights)
    d.answer(
        f"Booked {h['hotel_name']} from {booked['check_in_date']} to {booked['check_out_date']}: ${money(booked['price'])}.",
        str(h["hotel_name"]),
        plain(booked["price"]),
    )


def book_hotel_ask_date(d: Draft) -> None:
    city, day = _hotel_city(d), future_day(d, 1, 40)
    nights = d.choice([2, 3, 4])
    d.query(
        ["Book me the best-rated hotel in {c} for {n}.", "I need {n} at the top-rated hotel in {c}."],
        c=city,
        n=plural(nights, "night"),
    )
    said = d.ask(
        "check_in_date", day.isoformat(), "What date do you check in?", keywords=["check in", "date", "when"]
    )
    h = best_rated_hotel(d, city)
    booked = reserve_hotel(d, h, city, said, nights)
    d.answer(
        f"Booked {h['hotel_name']} from {said}, ${money(booked['price'])} in total.", str(h["hotel_name"])
    )


CAMBRIDGE_AREAS = {
    "centre": "in the centre",
    "north": "in the north",
    "east": "on the east side",
    "west": "on the west side",
    "south": "in the south",
}


def _cambridge_kind(d: Draft) -> dict[str, Any]:
    """An area of Cambridge and a kind of lodging (guesthouse, hotel) found there."""
    return d.pick(
        "SELECT DISTINCT area, type FROM mtu_hotels_hotels WHERE city = 'Cambridge' ORDER BY area, type"
    )


def cambridge_guesthouse(d: Draft) -> None:
    row = _cambridge_kind(d)
    parking = d.rng.random() < 0.5
    d.query(
        [
            "Is there a {t} {a} of Cambridge{p}?",
            "I'm looking for a {t} {a} of town{p}. What do you have?",
            "Find me a {t} {a}{p}, please.",
        ],
        t=row["type"],
        a=CAMBRIDGE_AREAS[row["area"]],
        p=" with free parking" if parking else "",
    )
    args = {"area": row["area"], "type": row["type"]} | ({"parking": "yes"} if parking else {})
    hotels = d.call("searchHotel", **args)["hotels"]
    if not hotels:
        raise Skip("none")
    names = ", ".join(str(h["name"]) for h in hotels)
    d.answer(f"{plural(len(hotels), 'place')} match: {names}.", str(hotels[0]["name"]))


def cambridge_book(d: Draft) -> None:
    row = _cambridge_kind(d)
    weekday = d.choice(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])
    n, said = people(d)
    stay = d.choice([1, 2, 3, 4])
    d.query(
        [
            "Book the first {t} you find {a} for {n} people, {s} from {w}.",
            "Please find a {t} {a} of Cambridge and book it for {n} guests, {s} starting {w}.",
        ],
        t=row["type"],
        a=CAMBRIDGE_AREAS[row["area"]],
        n=said,
        s=plural(stay, "night"),
        w=weekday.capitalize(),
    )
    h = one(d.call("searchHotel", area=row["area"], type=row["type"])["hotels"], "hotel")
    booked = d.call("bookHotel", name=h["name"], day=weekday, stay=str(stay), people=str(n))
    d.answer(
        f"Booked {h['name']} from {booked['day']} for {plural(stay, 'night')}; reference {booked['reference']}.",
        str(h["name"]),
    )


def book_house(d: Draft) -> None:
    city, day = _hotel_city(d), future_day(d, 2, 40)
    nights, adults = d.choice([2, 3, 4, 5, 7]), d.choice([1, 2, 2, 3, 4])
    which = d.choice(["best-rated", "cheapest"])
    d.query(
        [
            "Find the {x} house in {c} for {a} and book it from {w} for {n}.",
            "We're {a} going to {c}: book the {x} house there, {n} from {w}.",
        ],
        x=which,
        c=city,
        a=f"{NUMBER_WORDS[adults]} adult{'s' if adults > 1 else ''}",
        w=bare_day(d, day),
        n=plural(nights, "night"),
    )
    houses = d.call("SearchHouse", where_to=city, number_of_adults=str(adults))["houses"]
    key = "rating" if which == "best-rated" else "price_per_night"
    ranked = sorted(houses, key=lambda h: -h["rating"] if key == "rating" else h["price_per_night"])
    house = unique_first(ranked, key, "house")
    out = day + timedelta(days=nights)
    booked = d.call(
        "BookHouse",
        where_to=house["address"],
        number_of_adults=str(adults),
        check_in_date=day.isoformat(),
        check_out_date=out.isoformat(),
    )
    d.answer(
        f"Booked the house at {house['address']} from {day.isoformat()} to {out.isoformat()}: ${money(booked['total_price'])}.",
        str(house["address"]),
    )


def refuse_cancel_hotel(d: Draft) -> None:
    city = _hotel_city(d)
    d.query(
        ["Cancel my hotel booking in {c}.", "I won't make it to {c}; cancel my hotel reservation there."],
        c=city,
    )
    d.refuse((), f"I'm sorry, I can't cancel your hotel in {city}: none of my tools cancels a hotel booking.")


# ---- trains ------------------------------------------------------------------------------------
def _leg(d: Draft) -> dict[str, Any]:
    return d.pick("SELECT DISTINCT departure, destination, day FROM mtu_trains_timetable ORDER BY 1, 2, 3")


def _first_train(d: Draft, leg: dict[str, Any], after: str, fields: list[str]) -> dict[str, Any]:
    """The first train of the leg leaving after `after`, with the `fields` asked for."""
    trains = d.call(
        "SearchTrain",
        departure=leg["departure"],
        destination=leg["destination"],
        day=leg["day"],
        leaveAt=after,
        return_info=fields,
    )["trains"]
    return one(trains, "train")


def first_train(d: Draft) -> None:
    leg = _leg(d)
    after = f"{d.rng.randint(6, 19):02d}:{d.choice(['00', '15', '30', '45'])}"
    d.query(
        [
            "What's the first train from {f} to {t} on {w} leaving after {a}?",
            "I need to get from {f} to {t} on {w}, leaving after {a}. Which train should I take?",
            "When is the next train to {t} from {f} after {a} on {w}, and how much is it?",
        ],
        f=leg["departure"],
        t=leg["destination"],
        w=leg["day"].capitalize(),
        a=spoken_time(d, after),
    )
    t = _first_train(d, leg, after, ["trainID", "leaveAt", "arriveBy", "price"])
    d.answer(
        f"Take {t['trainID']}: it leaves at {t['leaveAt']}, arrives at {t['arriveBy']} and costs {t['ticket_price']}.",
        str(t["trainID"]),
        str(t["leaveAt"]),
    )


def book_first_train(d: Draft) -> None:
    leg = _leg(d)
    after = f"{d.rng.randint(6, 19):02d}:{d.choice(['00', '30'])}"
    n, said = people(d)
    d.query(
        [
            "Book {n} seats on the first train from {f} to {t} after {a} on {w}.",
            "We are {n}. Get us tickets for the earliest train to {t} from {f} leaving after {a} on {w}.",
        ],
        f=leg["departure"],
        t=leg["destination"],
        w=leg["day"].capitalize(),
        a=spoken_time(d, after),
        n=said,
    )
    t = _first_train(d, leg, after, ["trainID", "leaveAt"])
    booked = d.call("BookTrain", people=str(n), trainID=t["trainID"])
    d.answer(
        f"Booked {n} on {t['trainID']} at {t['leaveAt']}; reference {booked['reference']}, total {booked['ticket_total']}.",
        str(t["trainID"]),
    )


def arrive_by_train(d: Draft) -> None:
    leg = _leg(d)
    by = f"{d.rng.randint(9, 22):02d}:00"
    d.query(
        [
            "I have to be in {t} by {b} on {w}. Which trains from {f} get me there in time?",
            "Which trains from {f} arrive in {t} before {b} on {w}?",
        ],
        f=leg["departure"],
        t=leg["destination"],
        w=leg["day"].capitalize(),
        b=spoken_time(d, by),
    )
    trains = d.call(
        "SearchTrain",
        departure=leg["departure"],
        destination=leg["destination"],
        day=leg["day"],
        arriveBy=by,
        return_info=["trainID", "leaveAt", "arriveBy"],
    )["trains"]
    last = trains[-1] if trains else None
    if last is None:
        raise Skip("no train")
    d.answer(
        f"{plural(len(trains), 'train')} arrive in time; the latest leaves at {last['leaveAt']} ({last['trainID']}) and"
        f" arrives at {last['arriveBy']}.",
        str(last["leaveAt"]),
    )


def _intercity(d: Draft) -> dict[str, Any]:
    return d.pick("SELECT DISTINCT from_city, to_city FROM mtu_trains_intercity ORDER BY 1, 2")


def _intercity_trains(d: Draft, pair: dict[str, Any], day: date) -> list[dict[str, Any]]:
    trains: list[dict[str, Any]] = d.call(
        "FindTrains", **{"from": pair["from_city"], "to": pair["to_city"], "date_of_journey": day.isoformat()}
    )["trains"]
    return trains


def intercity_cheapest(d: Draft) -> None:
    pair, day = _intercity(d), future_day(d, 1, 40)
    d.query(
        [
            "What's the cheapest train from {f} to {t} {w}?",
            "Find me the lowest train fare from {f} to {t} {w}.",
        ],
        f=pair["from_city"],
        t=pair["to_city"],
        w=spoken_day(d, day),
    )
    trains = _intercity_trains(d, pair, day)
    ranked = sorted(trains, key=lambda t: t["total"])
    t = unique_first(ranked, "total", "train")
    d.answer(
        f"The {t['journey_start_time']} train is cheapest at ${money(t['total'])}.",
        str(t["journey_start_time"]),
    )


def intercity_book(d: Draft) -> None:
    pair, day = _intercity(d), future_day(d, 1, 40)
    n, said = people(d)
    protection = d.rng.random() < 0.4
    d.query(
        [
            "Book the first train from {f} to {t} {w} for {n} adults{p}.",
            "Get {n} adult tickets on the earliest {f} to {t} train {w}{p}.",
        ],
        f=pair["from_city"],
        t=pair["to_city"],
        w=spoken_day(d, day),
        n=said,
        p=", with trip protection" if protection else "",
    )
    trains = _intercity_trains(d, pair, day)
    t = one(trains, "train")
    booked = d.call(
        "GetTrainTickets",
        **{
            "from": pair["from_city"],
            "to": pair["to_city"],
            "date_of_journey": day.isoformat(),
            "journey_start_time": t["journey_start_time"],
            "number_of_adults": str(n),
            "trip_protection": str(protection),
        },
    )
    d.answer(
        f"Booked {n} on the {t['journey_start_time']} train from {t['from_station']}: ${money(booked['total'])}.",
        str(t["journey_start_time"]),
    )


def refuse_book_train(d: Draft) -> None:
    leg = _leg(d)
    d.query(
        [
            "Book me a seat on the first train from {f} to {t} on {w}.",
            "Reserve a train from {f} to {t} on {w} for me.",
        ],
        f=leg["departure"],
        t=leg["destination"],
        w=leg["day"].capitalize(),
    )
    d.refuse(
        ["BookTrain", "GetTrainTickets"], "I'm sorry, I cannot book trains: I can only search timetables."
    )


# ---- buses --------------------------------------------------------------------------------------
def _bus_route(d: Draft) -> dict[str, Any]:
    return d.pick("SELECT DISTINCT from_city, to_city FROM mtu_buses_departures ORDER BY 1, 2")


def _first_bus(d: Draft, route: dict[str, Any], day: date, **extra: str) -> dict[str, Any]:
    buses = d.call(
        "FindBus",
        from_city=route["from_city"],
        to_city=route["to_city"],
        departure_date=day.isoformat(),
        **extra,
    )["buses"]
    return one(buses, "bus")


def first_bus(d: Draft) -> None:
    route, day = _bus_route(d), future_day(d, 1, 40)
    d.query(
        [
            "When does the first bus from {f} to {t} leave {w}?",
            "Find me a bus from {f} to {t} {w}; what's the earliest?",
            "What's the earliest coach to {t} from {f} {w}, and what's the fare?",
        ],
        f=route["from_city"],
        t=route["to_city"],
        w=spoken_day(d, day),
    )
    b = _first_bus(d, route, day)
    d.answer(
        f"The first bus leaves {b['from_station']} at {b['departure_time']}; the fare is ${money(b['price'])}.",
        str(b["departure_time"]),
    )


def buy_bus(d: Draft) -> None:
    route, day = _bus_route(d), future_day(d, 1, 40)
    n, said = people(d)
    luggage = d.rng.random() < 0.3
    d.query(
        [
            "Buy {n} tickets for the first bus from {f} to {t} {w}{l}.",
            "Get us {n} seats on the earliest bus {f} to {t} {w}{l}.",
        ],
        f=route["from_city"],
        t=route["to_city"],
        w=spoken_day(d, day),
        n=said,
        l=", with extra luggage" if luggage else "",
    )
    b = _first_bus(d, route, day, num_passengers=str(n))
    t = d.call(
        "BuyBusTicket",
        from_city=route["from_city"],
        to_city=route["to_city"],
        departure_date=day.isoformat(),
        departure_time=b["departure_time"],
        num_passengers=str(n),
        additional_luggage=str(luggage),
    )
    d.answer(
        f"Bought {n} tickets on the {b['departure_time']} bus: ${money(t['price'])}.",
        str(b["departure_time"]),
    )


def buy_bus_ask_people(d: Draft) -> None:
    route, day = _bus_route(d), future_day(d, 1, 40)
    n = d.choice([2, 3, 4, 5])
    d.query(
        [
            "Get us tickets for the first bus from {f} to {t} {w}.",
            "Book the earliest bus {f} to {t} {w} for our group.",
        ],
        f=route["from_city"],
        t=route["to_city"],
        w=spoken_day(d, day),
    )
    said = d.ask(
        "num_passengers", NUMBER_WORDS[n], "How many passengers are travelling?", keywords=["how many"]
    )
    b = _first_bus(d, route, day)
    t = d.call(
        "BuyBusTicket",
        from_city=route["from_city"],
        to_city=route["to_city"],
        departure_date=day.isoformat(),
        departure_time=b["departure_time"],
        num_passengers=said,
    )
    d.answer(
        f"Bought {n} tickets on the {b['departure_time']} bus: ${money(t['price'])}.",
        str(b["departure_time"]),
    )


# ---- rental cars --------------------------------------------------------------------------------
def _car_city(d: Draft) -> tuple[str, str]:
    row = d.pick("SELECT DISTINCT city, car_type FROM mtu_cars_cars ORDER BY 1, 2")
    return str(row["city"]), str(row["car_type"])


def _rental(d: Draft) -> tuple[str, str, date, date]:
    """A city, a kind of car found there, and the rental's first and last days."""
    (city, kind), start = _car_city(d), future_day(d, 1, 30)
    return city, kind, start, start + timedelta(days=d.rng.randint(1, 7))


def _cheapest_car(d: Draft, city: str, kind: str, start: date, end: date, at: str) -> dict[str, Any]:
    cars = d.call(
        "GetCarsAvailable",
        city=city,
        start_date=start.isoformat(),
        end_date=end.isoformat(),
        pickup_time=at,
        car_type=kind,
    )["cars"]
    return unique_first(cars, "total_price", "car")


def cheapest_car(d: Draft) -> None:
    city, kind, start, end = _rental(d)
    d.query(
        [
            "What's the cheapest {k} car I can rent in {c} from {a} to {b}?",
            "I need a {k} rental car in {c}, {a} until {b}. What's the lowest price?",
        ],
        k=kind if kind == "SUV" else kind.lower(),
        c=city,
        a=bare_day(d, start),
        b=bare_day(d, end),
    )
    c = _cheapest_car(d, city, kind, start, end, "10:00")
    d.answer(
        f"A {c['car_name']} from {c['pickup_location']}: ${money(c['price_per_day'])} a day, ${money(c['total_price'])} in all.",
        str(c["car_name"]),
        plain(c["total_price"]),
    )


def reserve_car(d: Draft) -> None:
    city, kind, start, end = _rental(d)
    at = f"{d.rng.randint(8, 17):02d}:00"
    insurance = d.rng.random() < 0.4
    d.query(
        [
            "Rent me the cheapest {k} car in {c} from {a} to {b}, pickup at {t}{i}.",
            "Reserve the least expensive {k} car available in {c}, {a} through {b}, picking up at {t}{i}.",
        ],
        k=kind if kind == "SUV" else kind.lower(),
        c=city,
        a=bare_day(d, start),
        b=bare_day(d, end),
        t=spoken_time(d, at),
        i=", with insurance" if insurance else "",
    )
    c = _cheapest_car(d, city, kind, start, end, at)
    booked = d.call(
        "ReserveCar",
        pickup_location=c["pickup_location"],
        pickup_time=at,
        start_date=start.isoformat(),
        end_date=end.isoformat(),
        car_type=kind,
        add_insurance=str(insurance),
    )
    d.answer(
        f"Reserved a {booked['car_name']} at {booked['pickup_location']}: ${money(booked['total_price'])} in total.",
        str(booked["car_name"]),
    )


def refuse_extend_rental(d: Draft) -> None:
    city, _ = _car_city(d)
    days = d.choice([1, 2, 3])
    d.query(
        ["Extend my car rental in {c} by {n}.", "I need to keep my rental car in {c} {n} longer."],
        c=city,
        n=plural(days, "day"),
    )
    d.refuse((), "Sorry, I can't extend a rental: my car tools only search and reserve cars.")


# ---- rides -------------------------------------------------------------------------------------
DESTINATIONS = (
    "the airport",
    "Union Square",
    "the train station",
    "Golden Gate Park",
    "the Ferry Building",
    "City Hall",
    "Pier 39",
    "the convention center",
    "Stanford Hospital",
    "Oracle Park",
    "the Museum of Modern Art",
    "Chinatown",
)
RIDE_TYPES = {"Pool": "shared", "Regular": "regular", "Luxury": "luxury"}


def _ride(d: Draft) -> tuple[str, str, int]:
    """Where to, the kind of ride, and how many seats (a shared ride takes two at most)."""
    dest, kind = d.choice(DESTINATIONS), d.choice(sorted(RIDE_TYPES))
    return dest, kind, d.choice([1, 2] if kind == "Pool" else [1, 2, 3, 4])


def get_ride(d: Draft) -> None:
    dest, kind, seats = _ride(d)
    d.query(
        [
            "Get me a {k} ride to {x} for {n}.",
            "Book a {k} cab to {x}; {n} riding.",
            "I need a {k} car to {x} for {n}, please.",
        ],
        k=RIDE_TYPES[kind],
        x=dest,
        n=plural(seats, "person") if seats == 1 else f"{seats} people",
    )
    r = d.call("GetRide", destination=dest, number_of_seats=str(seats), ride_type=kind)
    d.answer(
        f"Your ride is booked: ${money(r['ride_fare'])}, arriving in {r['wait_time']} minutes, about"
        f" {r['approximate_ride_duration']} minutes to {dest}.",
        plain(r["ride_fare"]),
    )


CAMBRIDGE_SPOTS = (
    "Cambridge station",
    "Kings College",
    "the Fitzwilliam Museum",
    "Trinity College",
    "Addenbrookes Hospital",
    "the Grand Arcade",
    "Parkers Piece",
    "the Botanic Garden",
)


def _taxis(d: Draft, a: str, b: str, at: str) -> list[dict[str, Any]]:
    """The taxis from `a` to `b` at `at`, nearest first."""
    taxis: list[dict[str, Any]] = d.call(
        "searchTaxi", departure=a, destination=b, leaveAt=at, return_info=["all"]
    )["taxis"]
    return taxis


def book_nearest_taxi(d: Draft) -> None:
    a, b = d.rng.sample(CAMBRIDGE_SPOTS, 2)
    at = f"{d.rng.randint(7, 22):02d}:{d.choice(['00', '15', '30', '45'])}"
    n, said = people(d)
    if n > 4:
        raise Skip("too many for one taxi")
    d.query(
        [
            "Book the nearest taxi from {a} to {b} leaving at {t} for {n}.",
            "I need a taxi from {a} to {b} at {t} for {n}. Book whichever is closest.",
        ],
        a=a,
        b=b,
        t=spoken_time(d, at),
        n=said,
    )
    taxis = _taxis(d, a, b, at)
    taxi = next((t for t in taxis if int(t["seats"]) >= n), None)
    if taxi is None:
        raise Skip("no taxi big enough")
    d.call("BookTaxi", people=str(n), license_plate=taxi["license_plate"])
    d.answer(
        f"Booked a {taxi['type']} ({taxi['license_plate']}), {plural(int(taxi['minutes_away']), 'minute')} away; the trip costs"
        f" about ${money(taxi['price'])}.",
        str(taxi["license_plate"]),
    )


def taxi_price(d: Draft) -> None:
    a, b = d.rng.sample(CAMBRIDGE_SPOTS, 2)
    at = f"{d.rng.randint(7, 22):02d}:{d.choice(['00', '30'])}"
    d.query(
        [
            "How much would a taxi from {a} to {b} at {t} cost, and how long is the ride?",
            "Roughly what's the fare for a cab from {a} to {b} leaving {t}?",
        ],
        a=a,
        b=b,
        t=spoken_time(d, at),
    )
    taxi = one(_taxis(d, a, b, at), "taxi")
    d.answer(
        f"The nearest taxi charges ${money(taxi['price'])}; the ride takes {taxi['duration']}.",
        plain(taxi["price"]),
    )


def ride_ask_destination(d: Draft) -> None:
    dest, kind, seats = _ride(d)
    d.query(
        [
            "Get me a {k} ride for {n}.",
            "I need a {k} cab right now for {n}.",
            "Call a {k} car for {n}, please.",
            "Order us a {k} ride, {n}.",
        ],
        k=RIDE_TYPES[kind],
        n="one person" if seats == 1 else f"{NUMBER_WORDS[seats]} people",
    )
    said = d.ask("destination", dest, "Where would you like to go?", keywords=["where"])
    r = d.call("GetRide", destination=said, number_of_seats=str(seats), ride_type=kind)
    d.answer(
        f"Your {RIDE_TYPES[kind]} ride to {dest} is booked: ${money(r['ride_fare'])}.", plain(r["ride_fare"])
    )


def refuse_cancel_ride(d: Draft) -> None:
    dest = d.choice(DESTINATIONS)
    d.query(["Cancel my ride to {x}.", "I don't need the cab to {x} any more; cancel it."], x=dest)
    d.refuse((), f"I'm sorry, I can't cancel the ride to {dest}: none of my tools cancels a ride.")


TEMPLATES = [
    Template("mtu.flights.cheapest", FLIGHTS, cheapest_flight),
    Template("mtu.flights.book_cheapest", FLIGHTS, book_cheapest_flight),
    Template("mtu.flights.cheapest_roundtrip", FLIGHTS, cheapest_roundtrip),
    Template("mtu.flights.book_roundtrip", FLIGHTS, book_roundtrip),
    Template("mtu.flights.earliest", FLIGHTS, earliest_flight),
    Template("mtu.flights.ask_date", FLIGHTS, flight_ask_date),
    Template("mtu.flights.refuse_book", FLIGHTS, refuse_book_flight),
    Template("mtu.flights.refuse_cancel", FLIGHTS, refuse_cancel_flight),
    Template("mtu.hotels.best_rated", HOTELS, best_hotel),
    Template("mtu.hotels.cheapest_with", HOTELS, cheapest_wifi_hotel),
    Template("mtu.hotels.book_best", HOTELS, book_best_hotel),
    Template("mtu.hotels.ask_check_in", HOTELS, book_hotel_ask_date),
    Template("mtu.hotels.cambridge_search", HOTELS, cambridge_guesthouse),
    Template("mtu.hotels.cambridge_book", HOTELS, cambridge_book),
    Template("mtu.hotels.book_house", HOTELS, book_house),
    Template("mtu.hotels.refuse_cancel", HOTELS, refuse_cancel_hotel),
    Template("mtu.trains.first_after", TRAINS, first_train),
    Template("mtu.trains.book_first", TRAINS, book_first_train),
    Template("mtu.trains.arrive_by", TRAINS, arrive_by_train),
    Template("mtu.trains.intercity_cheapest", TRAINS, intercity_cheapest),
    Template("mtu.trains.intercity_book", TRAINS, intercity_book),
    Template("mtu.trains.refuse_book", TRAINS, refuse_book_train),
    Template("mtu.buses.first", BUSES, first_bus),
    Template("mtu.buses.buy_first", BUSES, buy_bus),
    Template("mtu.buses.ask_passengers", BUSES, buy_bus_ask_people),
    Template("mtu.cars.cheapest", CARS, cheapest_car),
    Template("mtu.cars.reserve_cheapest", CARS, reserve_car),
    Template("mtu.cars.refuse_extend", CARS, refuse_extend_rental),
    Template("mtu.rides.get_ride", RIDES, get_ride),
    Template("mtu.rides.book_nearest_taxi", RIDES, book_nearest_taxi),
    Template("mtu.rides.taxi_price", RIDES, taxi_price),
    Template("mtu.rides.ask_destination", RIDES, ride_ask_destination),
    Template("mtu.rides.refuse_cancel", RIDES, refuse_cancel_ride),
]
