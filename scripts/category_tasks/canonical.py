"""Canonicalization: relative dates and times ("tomorrow at 3 pm", "next Monday"), units ("$1.2k",
"800 grams", "20 °C", "a dozen") and names ("my phone bill", "Peking", a friend's first name) that
the tools take only in their canonical form. The golden chain uses the canonical arguments; the
spec's metadata keeps what was said and what it means."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Final

from scripts.category_tasks.common import Spec, Step, call, row, rows, world

# the canonical tasks' "now": a Wednesday morning, so "tomorrow", "this Friday" and "next Monday"
# are three different days, and a leap-year February lies just behind it
NOW: Final = datetime(2024, 3, 13, 9, 30, tzinfo=UTC)


def _succeeds(apps: Sequence[str], step: Step, clock: datetime = NOW, seed: int = 0) -> bool:
    """Whether a call succeeds on the seeded world (tried on a fork of it)."""
    other = world(tuple(apps), seed, clock).fork()
    try:
        return other.step(step.call).error is None
    finally:
        other.close()


# what the user says, the first and last minute it means (UTC, on NOW's calendar), what for
ROOM_TIMES: Final = (
    ("tomorrow from 3 pm to half past four", "2024-03-14T15:00:00Z", "2024-03-14T16:30:00Z", "Design review"),
    (
        "next Monday from 9 to 10:30 in the morning",
        "2024-03-18T09:00:00Z",
        "2024-03-18T10:30:00Z",
        "Sprint planning",
    ),
    (
        "this Friday at noon, for 45 minutes",
        "2024-03-15T12:00:00Z",
        "2024-03-15T12:45:00Z",
        "Lunch and learn",
    ),
    (
        "the day after tomorrow at quarter past two, for an hour",
        "2024-03-15T14:15:00Z",
        "2024-03-15T15:15:00Z",
        "Customer call",
    ),
)


def room_bookings() -> list[Spec]:
    """Relative days and spoken times to ISO 8601 date-times (the calendar takes nothing else)."""
    people = rows(["calendar"], "SELECT person_id FROM calendar_people ORDER BY person_id", clock=NOW)
    rooms = rows(["calendar"], "SELECT room_id, name FROM calendar_rooms ORDER BY room_id", clock=NOW)
    specs = []
    for number, (said, start, end, title) in enumerate(ROOM_TIMES):
        person = people[7 * number + 3]["person_id"]
        room = next(
            r
            for r in rooms[5 * number :]
            if _succeeds(
                ["calendar"],
                call(
                    "book_room",
                    room_id=r["room_id"],
                    person_id=person,
                    start_time=start,
                    end_time=end,
                    title=title,
                ),
            )
        )
        specs.append(
            Spec(
                name="room-relative-time",
                kind="relative_datetime",
                apps=["calendar"],
                query=f"I'm {person}. Book room {room['room_id']} for our {title.lower()} {said} (times in UTC).",
                steps=[
                    call(
                        "book_room",
                        room_id=room["room_id"],
                        person_id=person,
                        start_time=start,
                        end_time=end,
                        title=title,
                    )
                ],
                answer=f"Booked {room['room_id']} ({room['name']}) for the {title.lower()} from {start} to {end}.",
                clock=NOW,
                extra={"said": said, "canonical": {"start_time": start, "end_time": end}},
            )
        )
    return specs


MEETING_ROOMS: Final = ("101", "102", "103")
# (what the user says, the 24-hour start and end) for T-Eval's meeting rooms, booked for today
MEETING_TIMES: Final = (
    ("from half past two to four in the afternoon", "14:30", "16:00"),
    ("from a quarter to eleven until noon", "10:45", "12:00"),
    ("from 5 pm for an hour and a half", "17:00", "18:30"),
)


def meeting_rooms() -> list[Spec]:
    """Spoken times of day to 24-hour HH:MM (T-Eval's ReserveMeeting refuses anything else)."""
    specs = []
    for number, (said, start, end) in enumerate(MEETING_TIMES):
        room = next(
            r
            for r in (*MEETING_ROOMS[number:], *MEETING_ROOMS[:number])
            if _succeeds(["teval_meeting"], call("reserve", room_id=r, start_time=start, end_time=end))
        )
        specs.append(
            Spec(
                name="meeting-spoken-time",
                kind="time_of_day",
                apps=["teval_meeting"],
                query=f"Reserve meeting room {room} for me today {said}.",
                steps=[call("reserve", room_id=room, start_time=start, end_time=end)],
                answer=f"Room {room} is booked for today from {start} to {end}.",
                clock=NOW,
                extra={"said": said, "canonical": {"start_time": start, "end_time": end}},
            )
        )
    return specs


# (what the user says, the dollars it means)
AMOUNTS: Final = (
    ("$1.2k", 1200.0),
    ("two hundred and fifty dollars", 250.0),
    ("fifteen hundred bucks", 1500.0),
    ("a grand and a half", 1500.0),
)


def spoken_amounts() -> list[Spec]:
    """Shorthand and spelled-out money to a number of dollars."""
    pairs = rows(
        ["banking"],
        "SELECT c.account_id AS checking, s.account_id AS savings FROM bank_accounts c JOIN bank_accounts s ON"
        " s.customer_id = c.customer_id AND s.account_type = 'savings' AND s.status = 'active' WHERE"
        " c.account_type = 'checking' AND c.status = 'active' AND c.balance_cents >= 200000 ORDER BY c.account_id",
        clock=NOW,
    )
    specs = []
    for number, (said, amount) in enumerate(AMOUNTS):
        pair = pairs[2 * number + 1]
        source, target = (
            (pair["checking"], pair["savings"]) if number % 2 == 0 else (pair["savings"], pair["checking"])
        )
        specs.append(
            Spec(
                name="spoken-amount",
                kind="currency",
                apps=["banking"],
                query=f"Move {said} from my account {source} to my account {target}.",
                steps=[call("transfer", from_account_id=source, to_account_id=target, amount=amount)],
                answer=f"Moved ${amount:,.2f} from {source} to {target}.",
                clock=NOW,
                extra={"said": said, "canonical": {"amount": amount}},
            )
        )
    return specs


# (what the user says, the first and last day it means on NOW's calendar: 2024 is a leap year)
PERIODS: Final = (
    ("in February", "2024-02-01", "2024-02-29"),
    ("in the first half of January", "2024-01-01", "2024-01-15"),
    ("between New Year's Day and Valentine's Day", "2024-01-01", "2024-02-14"),
)


def date_ranges() -> list[Spec]:
    """Named months and holidays to YYYY-MM-DD bounds; the answer is what the bounds select (the
    account with the most card purchases then, so the count says something)."""
    specs = []
    for said, first, last in PERIODS:
        busiest = row(
            ["banking"],
            "SELECT account_id, count(*) AS n FROM bank_transactions WHERE kind = 'card_purchase' AND"
            " substr(posted_at, 1, 10) BETWEEN ? AND ? GROUP BY account_id ORDER BY n DESC, account_id LIMIT 1",
            first,
            last,
            clock=NOW,
        )
        account, count = busiest["account_id"], busiest["n"]
        specs.append(
            Spec(
                name="relative-date-range",
                kind="relative_date",
                apps=["banking"],
                query=f"How many card purchases were there on my account {account} {said}?",
                steps=[
                    call(
                        "get_transactions",
                        account_id=account,
                        kind="card_purchase",
                        start_date=first,
                        end_date=last,
                    )
                ],
                answer=f"{account} had {count} card purchases from {first} to {last}.",
                whitelist=[[str(count)]],
                clock=NOW,
                extra={"said": said, "canonical": {"start_date": first, "end_date": last}},
            )
        )
    return specs


# (weight as said, kg, city as said, the city's canonical name)
PARCELS: Final = (
    ("800 grams", 0.8, "Hangzhou", "Hangzhou"),
    ("one and a half kilos", 1.5, "Xian", "Xi'an"),
    ("2,500 g", 2.5, "Peking", "Beijing"),
)


def parcel_units() -> list[Spec]:
    """Grams and spelled-out kilos to weight_kg, and a city's other spellings to the name the
    courier's list has."""
    senders = rows(
        ["express"], "SELECT customer_id, city FROM express_customers ORDER BY customer_id", clock=NOW
    )
    specs = []
    for number, (said, kg, city_said, city) in enumerate(PARCELS):
        sender = next(s for s in senders[4 * number + 1 :] if s["city"] != city)
        name, phone, street = (
            ("Chen Jing", "Wang Lei", "Li Na")[number],
            f"1380013{number:04d}",
            f"{12 + number} Renmin Road",
        )
        specs.append(
            Spec(
                name="parcel-units",
                kind="unit",
                apps=["express"],
                query=f"I'm {sender['customer_id']}. Send a parcel of {said} to {name} at {street}, {city_said},"
                f" phone {phone}, standard service.",
                steps=[
                    call(
                        "create_shipment",
                        customer_id=sender["customer_id"],
                        recipient_name=name,
                        recipient_phone=phone,
                        recipient_city=city,
                        recipient_address=street,
                        weight_kg=kg,
                        service="standard",
                    )
                ],
                answer=f"A standard parcel of {kg} kg to {name}, {street}, {city} is booked for pickup.",
                clock=NOW,
                extra={"said": [said, city_said], "canonical": {"weight_kg": kg, "recipient_city": city}},
            )
        )
    return specs


# (what the user says, check-in, check-out) on NOW's calendar
STAYS: Final = (
    ("checking in this Saturday and leaving on Monday", "2024-03-16", "2024-03-18"),
    ("for three nights starting Friday of next week", "2024-03-22", "2024-03-25"),
    ("arriving a week from today for four nights", "2024-03-20", "2024-03-24"),
)


def stay_prices() -> list[Spec]:
    """A stay said in words to check-in and check-out dates; the answer is the price of those dates."""
    specs = []
    listings = rows(
        ["teval_airbnb"], "SELECT property_id FROM teval_airbnb_properties ORDER BY property_id", clock=NOW
    )
    for number, (said, check_in, check_out) in enumerate(STAYS):
        step = None
        for listing in listings[6 * number + 2 :]:
            candidate = call(
                "get_property_checkout_price",
                propertyId=listing["property_id"],
                checkIn=check_in,
                checkOut=check_out,
            )
            if _succeeds(["teval_airbnb"], candidate):
                step = candidate
                break
        assert step is not None, said
        price = (
            world(("teval_airbnb",), 0, NOW)
            .fork()
            .call(step.call.name, **step.call.arguments)["accommodationCost"]
        )
        pid = step.call.arguments["propertyId"]
        specs.append(
            Spec(
                name="stay-dates",
                kind="relative_date",
                apps=["teval_airbnb"],
                query=f"What would Airbnb property {pid} cost me {said}?",
                steps=[step],
                answer=f"Property {pid} costs ${price:,.2f} from {check_in} to {check_out}.",
                whitelist=[sorted({f"{price:.2f}", f"{price:,.2f}"})],
                clock=NOW,
                extra={"said": said, "canonical": {"checkIn": check_in, "checkOut": check_out}},
            )
        )
    return specs


# (room, the temperature said, in degrees Celsius, in degrees Fahrenheit: whole numbers both ways)
TEMPERATURES: Final = (
    ("bedroom", "20 °C", 20, 68),
    ("living room", "25 degrees Celsius", 25, 77),
    ("office", "15C", 15, 59),
)


def celsius_rooms() -> list[Spec]:
    """Celsius to the thermostat's Fahrenheit (the app takes 50-90 F only)."""
    return [
        Spec(
            name="celsius-thermostat",
            kind="unit",
            apps=["mtu_smart_home"],
            query=f"Set the {room} thermostat to {said}.",
            steps=[call("adjust_room_temperature", temperature=fahrenheit, location=room)],
            answer=f"The {room} is set to {fahrenheit} °F, which is {celsius} °C.",
            clock=NOW,
            extra={"said": said, "canonical": {"temperature": fahrenheit}},
        )
        for room, said, celsius, fahrenheit in TEMPERATURES
    ]


QUANTITIES: Final = (("a dozen", 12), ("half a dozen", 6), ("a pair of", 2))


def cart_quantities() -> list[Spec]:
    """Counting words to a quantity."""
    customers = rows(["shopping"], "SELECT customer_id FROM shop_customers ORDER BY customer_id", clock=NOW)
    products = rows(
        ["shopping"],
        "SELECT product_id, name FROM shop_products WHERE stock >= 20 ORDER BY product_id",
        clock=NOW,
    )
    specs = []
    for number, (said, quantity) in enumerate(QUANTITIES):
        customer, product = customers[5 * number + 2]["customer_id"], products[9 * number + 4]
        specs.append(
            Spec(
                name="cart-quantity",
                kind="count",
                apps=["shopping"],
                query=f"I'm {customer}. Put {said} {product['name']} ({product['product_id']}) in my cart.",
                steps=[
                    call(
                        "add_to_cart",
                        customer_id=customer,
                        product_id=product["product_id"],
                        quantity=quantity,
                    )
                ],
                answer=f"Added {quantity} x {product['name']} to your cart.",
                clock=NOW,
                extra={"said": said, "canonical": {"quantity": quantity}},
            )
        )
    return specs


TOP_UPS: Final = (("¥1.5k", 1500), ("two thousand yuan", 2000))


def wallet_amounts() -> list[Spec]:
    users = rows(["takeout"], "SELECT user_id FROM takeout_users ORDER BY user_id", clock=NOW)
    return [
        Spec(
            name="wallet-amount",
            kind="currency",
            apps=["takeout"],
            query=f"I'm {users[11 * number + 6]['user_id']}. Add {said} to my takeout wallet.",
            steps=[call("top_up_wallet", user_id=users[11 * number + 6]["user_id"], amount=amount)],
            answer=f"Added {amount} yuan to your wallet.",
            clock=NOW,
            extra={"said": said, "canonical": {"amount": amount}},
        )
        for number, (said, amount) in enumerate(TOP_UPS)
    ]


# (what the user calls the bill, the payee's name in the bank's list)
BILL_NAMES: Final = (
    ("phone bill", "Skyline Mobile"),
    ("electricity bill", "City Power & Light"),
    ("internet bill", "FiberNet Internet"),
)


def bills_by_nickname() -> list[Spec]:
    """What people call a bill to the payee it is from, and so to its bill id."""
    specs = []
    for said, payee in BILL_NAMES:
        bill = row(
            ["banking"],
            "SELECT b.bill_id, b.customer_id, a.account_id FROM bank_bills b JOIN bank_payees p USING (payee_id)"
            " JOIN bank_accounts a ON a.customer_id = b.customer_id AND a.account_type = 'checking' AND"
            " a.status = 'active' AND a.balance_cents >= b.amount_cents WHERE b.status = 'due' AND p.name = ?"
            " AND (SELECT count(*) FROM bank_bills o WHERE o.customer_id = b.customer_id AND o.status = 'due'"
            " AND o.payee_id = b.payee_id) = 1 ORDER BY b.bill_id DESC",
            payee,
            clock=NOW,
        )
        cid = bill["customer_id"]
        specs.append(
            Spec(
                name="bill-nickname",
                kind="name",
                apps=["banking"],
                query=f"I'm customer {cid}. Pay my {said} from my checking account {bill['account_id']}.",
                steps=[
                    call("list_bills", customer_id=cid, status="due"),
                    call("pay_bill", bill_id=bill["bill_id"], from_account_id=bill["account_id"]),
                ],
                answer=f"Your {said} is the {payee} bill {bill['bill_id']}; it is paid from {bill['account_id']}.",
                clock=NOW,
                extra={"said": said, "canonical": {"payee": payee, "bill_id": bill["bill_id"]}},
            )
        )
    return specs


def friends_by_first_name() -> list[Spec]:
    """A friend's first name to their user id (the first name no other friend of the user shares)."""
    specs = []
    for number, text in enumerate(("Are we still on for tonight?", "Landed safely, see you soon!")):
        user = rows(["messaging"], "SELECT user_id FROM messaging_users ORDER BY user_id", clock=NOW)[
            31 * number + 9
        ]["user_id"]
        friends = rows(
            ["messaging"],
            "SELECT u.user_id, u.display_name FROM messaging_friendships f JOIN"
            " messaging_users u ON u.user_id = f.friend_id WHERE f.user_id = ? ORDER BY u.user_id",
            user,
            clock=NOW,
        )
        firsts = [f["display_name"].split()[0] for f in friends]
        friend = next(f for f, first in zip(friends, firsts, strict=True) if firsts.count(first) == 1)
        first = friend["display_name"].split()[0]
        specs.append(
            Spec(
                name="friend-first-name",
                kind="name",
                apps=["messaging"],
                query=f'I\'m {user} on chat. Text {first}: "{text}"',
                steps=[
                    call("list_friends", user_id=user),
                    call("send_message", sender_id=user, content=text, to_user_id=friend["user_id"]),
                ],
                answer=f"Sent your message to {friend['display_name']} ({friend['user_id']}).",
                clock=NOW,
                extra={"said": first, "canonical": {"to_user_id": friend["user_id"]}},
            )
        )
    return specs


def canonicalization() -> list[Spec]:
    return [
        *room_bookings(),
        *meeting_rooms(),
        *spoken_amounts(),
        *date_ranges(),
        *parcel_units(),
        *stay_prices(),
        *celsius_rooms(),
        *cart_quantities(),
        *wallet_amounts(),
        *bills_by_nickname(),
        *friends_by_first_name(),
    ]
