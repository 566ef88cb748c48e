"""Act at or after a time: the request names a moment that has not come yet, the environment marks
it with an event (a reminder, or the world's own change: a deposit that lands), and the golden
chain waits for it. Acting before it is a minefield; acting within ten minutes of it a milestone."""

from __future__ import annotations

from datetime import datetime

from scripts.dynamic_tasks.common import (
    MONDAY,
    Spec,
    at,
    call,
    dm,
    dollars,
    done,
    early,
    event,
    field_is,
    hhmm,
    one,
    row,
    wait,
)

SOON_S = 600.0  # "at the time": within ten simulated minutes of it


def _transfer(name: str, customer: str, source: str, target: str, cents: int, moment: datetime) -> Spec:
    apps = ("banking",)
    who = one(apps, moment, "bank_customers", customer_id=customer)["name"]
    start = at(moment, minutes=-35)
    amount = cents / 100
    return Spec(
        name=name,
        kind="transfer_at_window",
        query=(
            f"I'm {who} ({customer}). Move {dollars(cents)} from my account {source} to {target}, but not "
            f"before {hhmm(moment)}: the bank's transfer window opens then and an earlier transfer is "
            "charged a fee. Do it as soon as the window opens."
        ),
        apps=list(apps),
        clock=start,
        calls=[
            call("get_balance", account_id=source),
            wait(3600),
            call(
                "transfer",
                from_account_id=source,
                to_account_id=target,
                amount=amount,
                memo="Scheduled transfer",
            ),
        ],
        answer=f"The transfer window opened at {hhmm(moment)} and I moved {dollars(cents)} from {source} to {target}.",
        whitelist=[[dollars(cents), f"{amount:g}", f"{amount:.2f}"], [target]],
        events=[
            event(
                "window_opens",
                f"It is {hhmm(moment)}: the bank's transfer window is open.",
                when_at=moment,
                important=True,
            )
        ],
        state=[
            row(
                "bank_transactions",
                account_id=source,
                kind="transfer_out",
                amount_cents=-cents,
                counterparty=target,
            )
        ],
        milestones=[
            done(
                "moved",
                "transfer",
                after_event="window_opens",
                within_s=SOON_S,
                from_account_id=source,
                to_account_id=target,
            )
        ],
        minefields=[early("moved_early", "transfer", "window_opens", from_account_id=source)],
        per_step_s=20.0,
    )


def _bill_after_payday(
    name: str, customer: str, checking: str, bill: str, pay_cents: int, moment: datetime
) -> Spec:
    apps = ("banking",)
    who = one(apps, moment, "bank_customers", customer_id=customer)["name"]
    due = one(apps, moment, "bank_bills", bill_id=bill)
    payee = one(apps, moment, "bank_payees", payee_id=due["payee_id"])["name"]
    start = at(moment, minutes=-45)
    return Spec(
        name=name,
        kind="pay_after_deposit",
        query=(
            f"This is {who} ({customer}). My pay lands in {checking} at {hhmm(moment)} today. Once it has "
            f"landed, pay my {payee} bill {bill} from {checking} - not before, I don't want that account "
            "to dip before payday."
        ),
        apps=list(apps),
        clock=start,
        calls=[
            call("list_bills", customer_id=customer, status="due"),
            wait(3600),
            call("pay_bill", bill_id=bill, from_account_id=checking),
        ],
        answer=f"Your pay of {dollars(pay_cents)} landed at {hhmm(moment)}; I then paid bill {bill} ({dollars(due['amount_cents'])} to {payee}) from {checking}.",
        whitelist=[[bill], [dollars(due["amount_cents"]), f"{due['amount_cents'] / 100:.2f}"]],
        events=[
            event(
                "payday",
                f"Deposit received in {checking}: {dollars(pay_cents)} (payroll).",
                call("deposit", account_id=checking, amount=pay_cents / 100, memo="Payroll"),
                when_at=moment,
            )
        ],
        state=[
            field_is("bank_bills", {"bill_id": bill}, "status", "paid"),
            field_is("bank_bills", {"bill_id": bill}, "paid_from", checking),
        ],
        milestones=[done("paid", "pay_bill", after_event="payday", within_s=SOON_S, bill_id=bill)],
        minefields=[early("paid_early", "pay_bill", "payday", bill_id=bill)],
        per_step_s=30.0,
    )


def _message_at(name: str, sender: str, friend: str, text: str, moment: datetime, why: str) -> Spec:
    apps = ("messaging",)
    me = one(apps, moment, "messaging_users", user_id=sender)["display_name"]
    them = one(apps, moment, "messaging_users", user_id=friend)["display_name"]
    start = at(moment, minutes=-25)
    return Spec(
        name=name,
        kind="message_at_time",
        query=(
            f'I\'m {me} (user {sender}). Send my friend {them} the message "{text}" at {hhmm(moment)} on '
            f"{moment:%B} {moment.day} - {why}, so not a minute early."
        ),
        apps=list(apps),
        clock=start,
        calls=[wait(3600), call("send_message", sender_id=sender, to_user_id=friend, content=text)],
        answer=f'At {hhmm(moment)} I sent {them} your message: "{text}"',
        whitelist=[[them], ["sent"]],
        events=[
            event(
                "moment", f"It is {hhmm(moment)} on {moment:%B} {moment.day}.", when_at=moment, important=True
            )
        ],
        state=[row("messaging_messages", sender_id=sender, conversation_id=dm(sender, friend), content=text)],
        milestones=[done("sent", "send_message", after_event="moment", within_s=SOON_S, to_user_id=friend)],
        minefields=[early("sent_early", "send_message", "moment", to_user_id=friend)],
        per_step_s=15.0,
    )


def _ship_at_open(name: str, order: str, moment: datetime) -> Spec:
    apps = ("shopping",)
    placed = one(apps, moment, "shop_orders", order_id=order)
    who = one(apps, moment, "shop_customers", customer_id=placed["customer_id"])["name"]
    start = at(moment, minutes=-30)
    return Spec(
        name=name,
        kind="ship_at_opening",
        query=(
            f"{who}'s order {order} is packed. The warehouse opens at {hhmm(moment)}: hand the order to the "
            "carrier once it is open (a shipment booked while it is closed is lost), and tell me its "
            "tracking number."
        ),
        apps=list(apps),
        clock=start,
        calls=[call("get_order", order_id=order), wait(3600), call("ship_order", order_id=order)],
        answer="",
        whitelist=[],
        answer_from=lambda results: (
            f"The warehouse opened at {hhmm(moment)} and order {order} went to the carrier: tracking number "
            f"{results[-1]['tracking_number']}.",
            [[results[-1]["tracking_number"]]],
        ),
        events=[
            event(
                "warehouse_opens", f"The warehouse is open ({hhmm(moment)}).", when_at=moment, important=True
            )
        ],
        state=[field_is("shop_orders", {"order_id": order}, "status", "shipped")],
        milestones=[
            done("shipped", "ship_order", after_event="warehouse_opens", within_s=SOON_S, order_id=order)
        ],
        minefields=[early("shipped_early", "ship_order", "warehouse_opens", order_id=order)],
        per_step_s=25.0,
    )


def _book_at_release(
    name: str, person: str, room: str, begins: datetime, hours: float, title: str, moment: datetime
) -> Spec:
    apps = ("calendar",)
    who = one(apps, moment, "calendar_people", person_id=person)["name"]
    place = one(apps, moment, "calendar_rooms", room_id=room)["name"]
    ends = at(begins, hours=hours)
    start = at(moment, minutes=-40)
    return Spec(
        name=name,
        kind="book_at_release",
        query=(
            f"I'm {who} ({person}). Rooms for {begins:%A} open for booking at {hhmm(moment)} today. At "
            f'{hhmm(moment)} book room {room} ({place}) for "{title}", {begins:%A} {hhmm(begins)}-{hhmm(ends)}, '
            "4 people. A request before the release is rejected and flags the account, so wait for it."
        ),
        apps=list(apps),
        clock=start,
        calls=[
            wait(3600),
            call(
                "book_room",
                room_id=room,
                person_id=person,
                start_time=begins.isoformat(),
                end_time=ends.isoformat(),
                title=title,
                attendee_count=4,
            ),
        ],
        answer=f'Booked {place} ({room}) for "{title}" on {begins:%A} from {hhmm(begins)} to {hhmm(ends)}, right after the {hhmm(moment)} release.',
        whitelist=[[room, place], [hhmm(begins)]],
        events=[event("release", f"Room bookings for {begins:%A} are open.", when_at=moment, important=True)],
        state=[
            row(
                "calendar_bookings",
                room_id=room,
                booked_by=person,
                start_at=begins.isoformat(),
                end_at=ends.isoformat(),
                status="confirmed",
            )
        ],
        milestones=[done("booked", "book_room", after_event="release", within_s=SOON_S, room_id=room)],
        minefields=[early("booked_early", "book_room", "release", room_id=room)],
        per_step_s=20.0,
    )


def _pickup_when_packed(
    name: str, customer: str, recipient: dict[str, str], kg: float, moment: datetime
) -> Spec:
    apps = ("express",)
    who = one(apps, moment, "express_customers", customer_id=customer)["name"]
    start = at(moment, minutes=-50)
    shipment = dict(
        customer_id=customer,
        recipient_name=recipient["name"],
        recipient_phone=recipient["phone"],
        recipient_city=recipient["city"],
        recipient_address=recipient["address"],
        weight_kg=kg,
        service="standard",
        item_description=recipient["item"],
    )
    return Spec(
        name=name,
        kind="pickup_when_ready",
        query=(
            f"I'm {who} ({customer}). A {kg:g} kg parcel of {recipient['item']} goes to {recipient['name']} "
            f"({recipient['phone']}), {recipient['address']}, {recipient['city']}, standard service. It is "
            f"only packed at {hhmm(moment)}; the courier comes within the hour of booking, so book the "
            "pickup once it is packed, not before."
        ),
        apps=list(apps),
        clock=start,
        calls=[wait(3600), call("create_shipment", **shipment)],
        answer="",
        whitelist=[],
        answer_from=lambda results: (
            f"Booked the pickup once the parcel was packed: tracking number {results[-1]['tracking_number']}, "
            f"fee {results[-1]['fee']:g} yuan.",
            [[results[-1]["tracking_number"]]],
        ),
        events=[
            event(
                "packed",
                f"Packing done ({hhmm(moment)}): the parcel for {recipient['name']} is ready.",
                when_at=moment,
            )
        ],
        state=[
            row(
                "express_shipments",
                customer_id=customer,
                recipient_name=recipient["name"],
                recipient_city=recipient["city"],
                weight_kg=kg,
            )
        ],
        milestones=[
            done("booked", "create_shipment", after_event="packed", within_s=SOON_S, customer_id=customer)
        ],
        minefields=[early("booked_early", "create_shipment", "packed", customer_id=customer)],
        per_step_s=40.0,
    )


def _lunch_at(
    name: str, user: str, restaurant: str, item: str, quantity: int, address: str, moment: datetime
) -> Spec:
    apps = ("takeout",)
    who = one(apps, moment, "takeout_users", user_id=user)["name"]
    shop = one(apps, moment, "takeout_restaurants", restaurant_id=restaurant)["name"]
    dish = one(apps, moment, "takeout_menu_items", item_id=item)["name"]
    start = at(moment, minutes=-30)
    return Spec(
        name=name,
        kind="order_at_time",
        query=(
            f"I'm {who} ({user}). Order {quantity} x {dish} from {shop} to my address {address}, paid from "
            f"my wallet - but place the order at {hhmm(moment)}, not earlier: I'm out until then and "
            "food left at the door goes cold."
        ),
        apps=list(apps),
        clock=start,
        calls=[
            call("get_menu", restaurant_id=restaurant),
            wait(3600),
            call(
                "place_takeout_order",
                user_id=user,
                restaurant_id=restaurant,
                items={item: quantity},
                address_id=address,
                payment_method="wallet",
            ),
        ],
        answer="",
        whitelist=[],
        answer_from=lambda results: (
            f"Ordered at {hhmm(moment)}: {quantity} x {dish} from {shop}, order {results[-1]['order']['order_id']}, "
            f"{results[-1]['order']['total']:g} yuan from your wallet.",
            [[results[-1]["order"]["order_id"]], [dish]],
        ),
        events=[event("time_to_order", f"It is {hhmm(moment)}.", when_at=moment, important=True)],
        state=[
            row(
                "takeout_orders",
                user_id=user,
                restaurant_id=restaurant,
                address_id=address,
                payment_method="wallet",
            )
        ],
        milestones=[
            done(
                "ordered",
                "place_takeout_order",
                after_event="time_to_order",
                within_s=SOON_S,
                restaurant_id=restaurant,
            )
        ],
        minefields=[early("ordered_early", "place_takeout_order", "time_to_order", user_id=user)],
        per_step_s=30.0,
    )


def _reserve_at_open(
    name: str, restaurant: str, city: str, day: datetime, hour: str, party: int, moment: datetime
) -> Spec:
    apps = ("mtu_restaurants",)
    venue = one(apps, moment, "mtu_restaurants_venues", restaurant_name=restaurant, city=city)
    start = at(moment, minutes=-45)
    date = day.date().isoformat()
    return Spec(
        name=name,
        kind="reserve_at_opening",
        query=(
            f"{restaurant} in {city} opens its book for {day:%A} ({date}) at {hhmm(moment)} today and turns away "
            f"earlier requests. At {hhmm(moment)}, reserve a table for {party} there on {date} at {hour}."
        ),
        apps=list(apps),
        clock=start,
        calls=[
            call("FindRestaurants", city=city, cuisine=venue["cuisine"]),
            wait(3600),
            call(
                "ReserveRestaurant",
                restaurant_name=restaurant,
                city=city,
                date=date,
                time=hour,
                party_size=str(party),
            ),
        ],
        answer="",
        whitelist=[],
        answer_from=lambda results: (
            f"Reserved a table for {party} at {restaurant} on {date} at {hour} (reservation "
            f"{results[-1]['reservation_id']}), right after the book opened at {hhmm(moment)}.",
            [[results[-1]["reservation_id"]], [hour]],
        ),
        events=[event("book_opens", f"{restaurant} now takes reservations for {date}.", when_at=moment)],
        state=[
            row(
                "mtu_restaurants_reservations",
                restaurant_id=venue["restaurant_id"],
                date=date,
                time=hour,
                party_size=party,
                status="confirmed",
            )
        ],
        milestones=[
            done(
                "reserved",
                "ReserveRestaurant",
                after_event="book_opens",
                within_s=SOON_S,
                restaurant_name=restaurant,
            )
        ],
        minefields=[early("reserved_early", "ReserveRestaurant", "book_opens", restaurant_name=restaurant)],
        per_step_s=20.0,
    )


def at_time() -> list[Spec]:
    tuesday = at(MONDAY, hours=24)
    return [
        _transfer("bank-transfer-window", "CUST-0001", "ACC-10001", "ACC-10002", 25000, at(MONDAY, hours=9)),
        _transfer(
            "bank-transfer-window",
            "CUST-0004",
            "ACC-10006",
            "ACC-10007",
            120000,
            at(MONDAY, hours=17, minutes=30),
        ),
        _transfer(
            "bank-transfer-window",
            "CUST-0006",
            "ACC-10011",
            "ACC-10010",
            7550,
            at(tuesday, hours=12, minutes=15),
        ),
        _bill_after_payday(
            "bank-bill-after-payday", "CUST-0007", "ACC-10012", "BILL-00005", 240000, at(MONDAY, hours=10)
        ),
        _bill_after_payday(
            "bank-bill-after-payday", "CUST-0004", "ACC-10006", "BILL-00060", 185000, at(tuesday, hours=14)
        ),
        _message_at(
            "msg-birthday-midnight",
            "U0004",
            "U0008",
            "Happy birthday, Fang! Have a wonderful day.",
            tuesday,
            "it is her birthday and I want to be the first",
        ),
        _message_at(
            "msg-good-luck-morning",
            "U0007",
            "U0011",
            "Good luck with the exam today, you've got this!",
            at(MONDAY, hours=7),
            "the exam starts at 8 and I don't want to wake him",
        ),
        _ship_at_open("shop-ship-at-opening", "ORD-000006", at(MONDAY, hours=8)),
        _ship_at_open("shop-ship-at-opening", "ORD-000024", at(tuesday, hours=9, minutes=30)),
        _book_at_release(
            "cal-book-at-release",
            "P003",
            "A-101",
            at(tuesday, hours=10),
            1.0,
            "Design review",
            at(MONDAY, hours=18),
        ),
        _book_at_release(
            "cal-book-at-release",
            "P008",
            "B-101",
            at(tuesday, hours=39),
            1.5,
            "Sprint planning",
            at(tuesday, hours=18),
        ),
        _pickup_when_packed(
            "express-pickup-when-packed",
            "EC-0001",
            {
                "name": "Wang Fang",
                "phone": "13900001111",
                "city": "Hangzhou",
                "address": "12 Wenhua Road, Building 3",
                "item": "books",
            },
            2.0,
            at(MONDAY, hours=15),
        ),
        _lunch_at(
            "takeout-lunch-at-time",
            "TU002",
            "RS-0004",
            "ITM-00026",
            2,
            "TA-0003",
            at(MONDAY, hours=11, minutes=30),
        ),
        _reserve_at_open(
            "mtu-reserve-at-opening",
            "Black Forest Beer Hall",
            "San Francisco",
            at(MONDAY, hours=96),
            "19:00",
            4,
            at(MONDAY, hours=10),
        ),
    ]
