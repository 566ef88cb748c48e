"""MTU trains: SearchTrain / BookTrain (MultiWOZ: a weekly timetable around Cambridge, trains
named by trainID) and FindTrains / GetTrainTickets (SGD: daily intercity trains, with the
published parameter names "from", "to" and "class").

Seats are counted per train and date: 80 on a MultiWOZ train, per fare class on an intercity
train. A full train is a 409, a train that does not exist a 404, a past date a 422.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Query, Volatile, format_id, read, set_counter, write
from toolgym.mocks.apps.mtu._common import (
    WEEKDAYS,
    Count,
    Flag,
    canon,
    choice,
    city_name,
    clock_of,
    count,
    earlier_booking,
    finalize_tools,
    flag,
    minutes,
    parse_clock,
    parse_day,
    select_fields,
    upcoming_day,
)
from toolgym.mocks.responses import bad_request, conflict, from_cents, not_found, ok
from toolgym.mocks.seeding import insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

# MultiWOZ: stations served from Cambridge and the minutes a trip takes
STATIONS: Final = {
    "London Kings Cross": 51,
    "London Liverpool Street": 88,
    "Norwich": 79,
    "Stevenage": 49,
    "Ely": 17,
    "Peterborough": 50,
    "Bishops Stortford": 38,
    "Birmingham New Street": 163,
    "Leicester": 105,
    "Broxbourne": 60,
    "Stansted Airport": 28,
    "Kings Lynn": 48,
}
SEATS_PER_TRAIN: Final = 80
# SGD intercity lines: (city, station) in line order
LINES: Final = (
    (("Boston", "South Station"), ("New York", "Penn Station"), ("Philadelphia", "30th Street Station"),
     ("Washington", "Union Station")),
    (("Seattle", "King Street Station"), ("Portland", "Portland Union Station"),
     ("Sacramento", "Sacramento Valley Station"), ("San Francisco", "Emeryville Station"),
     ("Los Angeles", "Los Angeles Union Station"), ("San Diego", "Santa Fe Depot")),
    (("Chicago", "Chicago Union Station"), ("New York", "Penn Station")),
    (("Chicago", "Chicago Union Station"), ("Los Angeles", "Los Angeles Union Station")),
)  # fmt: skip
CLASSES: Final = ("Value", "Flexible", "Business")
CLASS_SEATS: Final = {"Value": 150, "Flexible": 60, "Business": 30}
CLASS_FACTOR: Final = {"Value": 1.0, "Flexible": 1.4, "Business": 2.2}
PROTECTION_CENTS: Final = 1000  # per adult


class TrainsApp(App):
    name = "mtu_trains"
    description = "Train timetables and tickets (MTU-Bench train APIs)."
    version = "1"
    schema = """
    CREATE TABLE mtu_trains_timetable (
        trainID TEXT PRIMARY KEY,
        departure TEXT NOT NULL,
        destination TEXT NOT NULL,
        day TEXT NOT NULL,
        leaveAt TEXT NOT NULL,
        arriveBy TEXT NOT NULL,
        duration_minutes INTEGER NOT NULL,
        price_cents INTEGER NOT NULL
    );
    CREATE INDEX mtu_trains_timetable_route ON mtu_trains_timetable(departure, destination, day);
    CREATE TABLE mtu_trains_bookings (
        reference TEXT PRIMARY KEY,
        trainID TEXT NOT NULL REFERENCES mtu_trains_timetable(trainID),
        travel_date TEXT NOT NULL,
        people INTEGER NOT NULL CHECK (people > 0),
        total_cents INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('confirmed', 'cancelled')),
        created_at TEXT NOT NULL
    );
    CREATE TABLE mtu_trains_intercity (
        train_id TEXT PRIMARY KEY,
        from_city TEXT NOT NULL,
        to_city TEXT NOT NULL,
        from_station TEXT NOT NULL,
        to_station TEXT NOT NULL,
        journey_start_time TEXT NOT NULL,
        duration_minutes INTEGER NOT NULL,
        base_fare_cents INTEGER NOT NULL
    );
    CREATE TABLE mtu_trains_tickets (
        ticket_id TEXT PRIMARY KEY,
        train_id TEXT NOT NULL REFERENCES mtu_trains_intercity(train_id),
        date_of_journey TEXT NOT NULL,
        number_of_adults INTEGER NOT NULL CHECK (number_of_adults > 0),
        class TEXT NOT NULL,
        trip_protection INTEGER NOT NULL,
        total_cents INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('confirmed', 'cancelled')),
        created_at TEXT NOT NULL
    );
    """
    volatile: ClassVar[Volatile] = {
        "mtu_trains_bookings": ["created_at"],
        "mtu_trains_tickets": ["created_at"],
    }

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        timetable: list[dict[str, Any]] = []
        ids: set[str] = set()
        for station, minutes_away in STATIONS.items():
            for frm, to in (("Cambridge", station), (station, "Cambridge")):
                offset = rng.choice((1, 11, 21, 32, 40, 50, 59))
                for day in WEEKDAYS:
                    for hour in range(5, 24):
                        if rng.random() < 0.45:
                            continue
                        train_id = f"TR{rng.randint(1000, 9999)}"
                        while train_id in ids:
                            train_id = f"TR{rng.randint(1000, 9999)}"
                        ids.add(train_id)
                        leave = hour * 60 + offset
                        timetable.append(
                            {
                                "trainID": train_id,
                                "departure": frm,
                                "destination": to,
                                "day": day,
                                "leaveAt": clock_of(leave),
                                "arriveBy": clock_of(leave + minutes_away),
                                "duration_minutes": minutes_away,
                                # weekend fares are lower, as on the real timetable
                                "price_cents": int(minutes_away * 20 * (0.8 if day in WEEKDAYS[5:] else 1.0)),
                            }
                        )
        insert_rows(db, "mtu_trains_timetable", timetable)
        intercity: list[dict[str, Any]] = []
        for line in LINES:
            for i, (a_city, a_station) in enumerate(line):
                for j, (b_city, b_station) in enumerate(line):
                    if i == j:
                        continue
                    hours = abs(j - i) * rng.uniform(1.5, 3.5)
                    for start in sorted(rng.sample(range(5, 22), rng.randint(3, 7))):
                        intercity.append(
                            {
                                "train_id": format_id("ICT", len(intercity) + 1, 4),
                                "from_city": a_city,
                                "to_city": b_city,
                                "from_station": a_station,
                                "to_station": b_station,
                                "journey_start_time": f"{start:02d}:{rng.choice((0, 15, 30, 45)):02d}",
                                "duration_minutes": int(hours * 60),
                                "base_fare_cents": int(hours * rng.uniform(15, 22)) * 100,
                            }
                        )
        insert_rows(db, "mtu_trains_intercity", intercity)
        today = clock.date()
        bookings = []
        for i in range(1, 401):
            t = rng.choice(timetable)
            run = today + timedelta(
                days=(WEEKDAYS.index(t["day"]) - today.weekday()) % 7 + 7 * rng.randint(0, 2)
            )
            party = SEATS_PER_TRAIN if rng.random() < 0.03 else rng.randint(1, 4)
            row = {
                "reference": format_id("TRB", i),
                "trainID": t["trainID"],
                "travel_date": run.isoformat(),
                "people": party,
                "total_cents": party * t["price_cents"],
            }
            bookings.append(earlier_booking(row, rng, clock, days_ago=(1, 30)))
        insert_rows(db, "mtu_trains_bookings", bookings)
        tickets = []
        for i in range(1, 401):
            t = rng.choice(intercity)
            cls = rng.choices(CLASSES, weights=(6, 2, 1))[0]
            party = CLASS_SEATS[cls] if rng.random() < 0.03 else rng.randint(1, 4)
            row = {
                "ticket_id": format_id("TT", i),
                "train_id": t["train_id"],
                "date_of_journey": (today + timedelta(days=rng.randint(0, 21))).isoformat(),
                "number_of_adults": party,
                "class": cls,
                "trip_protection": 0,
                "total_cents": party * t["base_fare_cents"],
            }
            tickets.append(earlier_booking(row, rng, clock, days_ago=(1, 30)))
        insert_rows(db, "mtu_trains_tickets", tickets)
        set_counter(db, "TRB", len(bookings))
        set_counter(db, "TT", len(tickets))

    # ---- MultiWOZ --------------------------------------------------------------------------------
    @staticmethod
    def _station(param: str, value: str) -> str:
        key = canon(value).replace("'", "").replace("st ", "street ").removesuffix(" station")
        for s in ("Cambridge", *STATIONS):
            if canon(s) == key or canon(s) == canon(value):
                return s
        raise not_found("station", value)

    def _seats_left(self, train_id: str, day: date) -> int:
        taken = self.scalar(
            "SELECT coalesce(sum(people), 0) FROM mtu_trains_bookings"
            " WHERE trainID = ? AND travel_date = ? AND status = 'confirmed'",
            (train_id, day.isoformat()),
        )
        return SEATS_PER_TRAIN - int(taken)

    def _next_run(self, train: dict[str, Any]) -> date:
        """The next date this weekly train runs that it has not yet left on."""
        now = self.now()
        ahead = (WEEKDAYS.index(train["day"]) - now.weekday()) % 7
        if ahead == 0 and train["leaveAt"] <= f"{now.hour:02d}:{now.minute:02d}":
            ahead = 7
        return now.date() + timedelta(days=ahead)

    @staticmethod
    def _train_view(t: dict[str, Any]) -> dict[str, Any]:
        return {
            "trainID": t["trainID"],
            "departure": t["departure"],
            "destination": t["destination"],
            "day": t["day"].capitalize(),
            "leaveAt": t["leaveAt"],
            "arriveBy": t["arriveBy"],
            "duration": f"{t['duration_minutes']} minutes",
            "ticket_price": f"{from_cents(t['price_cents']):.2f} pounds",
        }

    @read(name="SearchTrain")
    def search_train(
        self,
        departure: Annotated[str, Param("station to leave from")],
        destination: Annotated[str, Param("station to go to")],
        return_info: Annotated[
            tuple[str, ...], Param("fields: all, trainID, Ticket, ArriveBy, leaveAt, ...")
        ],
        day: Annotated[str | None, Param("day of travel: a weekday or a date; default today")] = None,
        leaveAt: Annotated[str | None, Param("leave at or after, HH:MM")] = None,
        arriveBy: Annotated[str | None, Param("arrive at or before, HH:MM")] = None,
        trainID: Annotated[str | None, Param("a train's id, e.g. TR1234")] = None,
    ) -> dict[str, Any]:
        """Search trains: price, schedule and duration; earliest departure first."""
        weekday = WEEKDAYS[parse_day("day", day, self.now().date()).weekday()] if day else None
        weekday = weekday or WEEKDAYS[self.now().weekday()]
        query = Query(
            "SELECT * FROM mtu_trains_timetable WHERE departure = ? AND destination = ? AND day = ?",
            self._station("departure", departure),
            self._station("destination", destination),
            weekday,
        )
        if leaveAt:
            query.where("leaveAt >= ?", parse_clock("leaveAt", leaveAt))
        if arriveBy:
            query.where("arriveBy <= ? AND arriveBy >= leaveAt", parse_clock("arriveBy", arriveBy))
        if trainID:
            query.where("trainID = ?", trainID.upper())
        rows = query.rows(self, "leaveAt, trainID")
        trains = [select_fields(self._train_view(r), return_info) for r in rows]
        return ok(count=len(trains), trains=trains)

    @write(name="BookTrain")
    def book_train(
        self,
        people: Annotated[Count, Param("number of passengers")],
        trainID: Annotated[str, Param("the train's id, e.g. TR1234")],
        return_info: Annotated[
            tuple[str, ...] | None, Param("fields: all, isSuccess, reference, Ticket")
        ] = None,
    ) -> dict[str, Any]:
        """Book seats on a train (its next run)."""
        train = self.get_or_404("mtu_trains_timetable", "trainID", trainID.upper(), what="train")
        party = count("people", people, hi=SEATS_PER_TRAIN)
        day = self._next_run(train)
        left = self._seats_left(train["trainID"], day)
        if left < party:
            raise conflict(f"{train['trainID']} on {day.isoformat()} has {left} seats left, {party} needed")
        reference = self.next_id("TRB")
        total = party * int(train["price_cents"])
        self.execute(
            "INSERT INTO mtu_trains_bookings VALUES (?, ?, ?, ?, ?, 'confirmed', ?)",
            (reference, train["trainID"], day.isoformat(), party, total, self.now_iso()),
        )
        details = {
            "isSuccess": True,
            "reference": reference,
            "ticket_total": f"{from_cents(total):.2f} pounds",
            "trainID": train["trainID"],
            "travel_date": day.isoformat(),
            "leaveAt": train["leaveAt"],
            "people": party,
        }
        return ok(**select_fields(details, return_info))

    # ---- SGD -------------------------------------------------------------------------------------
    def _intercity(self, frm: str, to: str) -> list[dict[str, Any]]:
        a, b = city_name(frm), city_name(to)
        if a is None:
            raise not_found("train city", frm)
        if b is None:
            raise not_found("train city", to)
        return self.rows(
            "SELECT * FROM mtu_trains_intercity WHERE from_city = ? AND to_city = ?"
            " ORDER BY journey_start_time, train_id",
            (a, b),
        )

    def _class_seats_left(self, train_id: str, day: date, cls: str) -> int:
        taken = self.scalar(
            "SELECT coalesce(sum(number_of_adults), 0) FROM mtu_trains_tickets WHERE train_id = ?"
            " AND date_of_journey = ? AND class = ? AND status = 'confirmed'",
            (train_id, day.isoformat(), cls),
        )
        return CLASS_SEATS[cls] - int(taken)

    @staticmethod
    def _fare(t: dict[str, Any], cls: str, adults: int, protection: bool) -> int:
        per_adult = int(t["base_fare_cents"] * CLASS_FACTOR[cls] / 100) * 100
        return adults * (per_adult + (PROTECTION_CENTS if protection else 0))

    def _intercity_view(
        self, t: dict[str, Any], day: date, cls: str, adults: int, protection: bool
    ) -> dict[str, Any]:
        return {
            "train_id": t["train_id"],
            "from": t["from_city"],
            "to": t["to_city"],
            "from_station": t["from_station"],
            "to_station": t["to_station"],
            "date_of_journey": day.isoformat(),
            "journey_start_time": t["journey_start_time"],
            "arrival_time": clock_of(minutes(t["journey_start_time"]) + t["duration_minutes"]),
            "number_of_adults": adults,
            "class": cls,
            "trip_protection": protection,
            "total": from_cents(self._fare(t, cls, adults, protection)),
            "seats_left": self._class_seats_left(t["train_id"], day, cls),
        }

    @read(name="FindTrains")
    def find_trains(
        self,
        from_: Annotated[str, Param("city to leave from")],
        to: Annotated[str, Param("city to go to")],
        date_of_journey: Annotated[str, Param("date of travel, YYYY-MM-DD")],
        class_: Annotated[str, Param("fare class", enum=CLASSES)] = "Value",
        number_of_adults: Annotated[Count, Param("number of adults")] = "1",
    ) -> dict[str, Any]:
        """Find trains to a given destination city; earliest first."""
        day = upcoming_day("date_of_journey", date_of_journey, self.now().date())
        adults = count("number_of_adults", number_of_adults, hi=20)
        trains = [self._intercity_view(t, day, class_, adults, False) for t in self._intercity(from_, to)]
        trains = [t for t in trains if t["seats_left"] >= adults]
        return ok(count=len(trains), trains=trains)

    @write(name="GetTrainTickets")
    def get_train_tickets(
        self,
        from_: Annotated[str, Param("city to leave from")],
        to: Annotated[str, Param("city to go to")],
        date_of_journey: Annotated[str, Param("date of travel, YYYY-MM-DD")],
        journey_start_time: Annotated[str, Param("departure time, HH:MM")],
        number_of_adults: Annotated[Count, Param("number of adults")],
        trip_protection: Annotated[Flag, Param("True to add trip protection")],
        class_: Annotated[str, Param("fare class", enum=CLASSES)] = "Value",
    ) -> dict[str, Any]:
        """Reserve tickets for a train journey."""
        day = upcoming_day("date_of_journey", date_of_journey, self.now().date())
        adults = count("number_of_adults", number_of_adults, hi=20)
        protection = flag("trip_protection", trip_protection)
        if protection is None:
            raise bad_request("trip_protection must be True or False")
        cls = choice("class", class_, CLASSES)
        at = parse_clock("journey_start_time", journey_start_time)
        found = [t for t in self._intercity(from_, to) if t["journey_start_time"] == at]
        if not found:
            raise not_found("train", f"{from_} -> {to} at {at}")
        t = found[0]
        left = self._class_seats_left(t["train_id"], day, cls)
        if left < adults:
            raise conflict(
                f"the {at} train on {day.isoformat()} has {left} {cls} seats left, {adults} needed"
            )
        ticket_id = self.next_id("TT")
        total = self._fare(t, cls, adults, protection)
        self.execute(
            "INSERT INTO mtu_trains_tickets VALUES (?, ?, ?, ?, ?, ?, ?, 'confirmed', ?)",
            (ticket_id, t["train_id"], day.isoformat(), adults, cls, int(protection), total, self.now_iso()),
        )
        view = self._intercity_view(t, day, cls, adults, protection)
        return ok(ticket_id=ticket_id, **view)


finalize_tools(
    TrainsApp,
    {
        "FindTrains": {"from_": "from", "class_": "class"},
        "GetTrainTickets": {"from_": "from", "class_": "class"},
    },
)
