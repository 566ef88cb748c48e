"""The world changes mid-task: a booking or an order is cancelled, an invitee declines, money lands,
a message changes the plan. The request says what to do if it happens; the golden chain does the
first part, waits, and adapts when the notification comes. Adapting before the change happened
(acting on what the agent could not know yet) is a minefield."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from scripts.dynamic_tasks.common import (
    MONDAY,
    Spec,
    at,
    call,
    dollars,
    done,
    early,
    event,
    hhmm,
    one,
    probe,
    row,
    wait,
)
from toolgym.tasks import StateFact

ADAPT_S = 900.0  # adapting within fifteen simulated minutes of the change


def _room_taken_back(name: str, booking_id: str, moment: datetime) -> Spec:
    apps = ("calendar",)
    booking = one(apps, moment, "calendar_bookings", booking_id=booking_id)
    person = booking["booked_by"]
    who = one(apps, moment, "calendar_people", person_id=person)["name"]
    begins, ends = datetime.fromisoformat(booking["start_at"]), datetime.fromisoformat(booking["end_at"])
    cancel = call("cancel_room_booking", booking_id=booking_id, person_id=person)
    search = call(
        "search_available_rooms",
        start_time=booking["start_at"],
        end_time=booking["end_at"],
        min_capacity=booking["attendee_count"],
    )
    free = probe(apps, moment, cancel, search)[-1]
    backup = next(r for r in free["rooms"] if r["room_id"] != booking["room_id"])
    start = at(moment, minutes=-30)
    return Spec(
        name=name,
        kind="booking_cancelled",
        query=(
            f"I'm {who} ({person}). Facilities are reclaiming rooms for maintenance this morning and may "
            f'cancel my booking {booking_id} (room {booking["room_id"]}, "{booking["title"]}", '
            f"{begins:%A} {hhmm(begins)}-{hhmm(ends)}). Keep an eye on it for the next hour: if it is "
            f"cancelled, book our backup room {backup['room_id']} for the same time and title, "
            f"{booking['attendee_count']} people. If nothing happens, leave it as it is."
        ),
        apps=list(apps),
        clock=start,
        calls=[
            wait(3600),
            call(
                "book_room",
                room_id=backup["room_id"],
                person_id=person,
                start_time=booking["start_at"],
                end_time=booking["end_at"],
                title=booking["title"],
                attendee_count=booking["attendee_count"],
            ),
        ],
        answer=(
            f"Facilities cancelled {booking_id} at {hhmm(moment)}; I booked the backup room {backup['room_id']} "
            f'for "{booking["title"]}", {hhmm(begins)}-{hhmm(ends)}.'
        ),
        whitelist=[[backup["room_id"], backup["name"]], ["cancelled", "canceled"]],
        events=[
            event(
                "reclaimed",
                f"Facilities cancelled your booking {booking_id} (room {booking['room_id']}): maintenance.",
                cancel,
                when_at=moment,
            )
        ],
        state=[
            row(
                "calendar_bookings",
                room_id=backup["room_id"],
                booked_by=person,
                start_at=booking["start_at"],
                end_at=booking["end_at"],
                status="confirmed",
            )
        ],
        milestones=[
            done(
                "rebooked", "book_room", after_event="reclaimed", within_s=ADAPT_S, room_id=backup["room_id"]
            )
        ],
        minefields=[early("double_booked", "book_room", "reclaimed", person_id=person)],
        per_step_s=20.0,
    )


def _order_out_of_stock(name: str, order_id: str, substitute: str, moment: datetime) -> Spec:
    apps = ("shopping",)
    order = one(apps, moment, "shop_orders", order_id=order_id)
    customer = order["customer_id"]
    who = one(apps, moment, "shop_customers", customer_id=customer)["name"]
    product = one(apps, moment, "shop_products", product_id=substitute)
    start = at(moment, minutes=-20)
    return Spec(
        name=name,
        kind="order_cancelled",
        query=(
            f"This is {who} ({customer}). The store warned that my order {order_id} may be out of stock and "
            f"cancelled this morning. Watch it for the next hour: if they cancel it, order one "
            f"{product['name']} ({substitute}) instead, paid from my wallet. If it is not cancelled, do nothing."
        ),
        apps=list(apps),
        clock=start,
        calls=[
            call("get_order", order_id=order_id),
            wait(3600),
            call("add_to_cart", customer_id=customer, product_id=substitute, quantity=1),
            call("place_order", customer_id=customer, payment_method="wallet"),
        ],
        answer="",
        whitelist=[],
        answer_from=lambda results: (
            f"The store cancelled {order_id} (out of stock) and refunded it; I ordered one {product['name']} "
            f"instead: order {results[-1]['order']['order_id']}, {dollars(product['price_cents'])} from your wallet.",
            [[results[-1]["order"]["order_id"]], [product["name"]]],
        ),
        events=[
            event(
                "store_cancels",
                f"Order {order_id} was cancelled by the store: out of stock. The payment was refunded.",
                call("cancel_order", order_id=order_id, reason="out of stock"),
                when_at=moment,
            )
        ],
        state=[
            row(
                "shop_orders",
                customer_id=customer,
                status="placed",
                payment_method="wallet",
                total_cents=product["price_cents"],
            ),
        ],
        milestones=[
            done(
                "substituted",
                "place_order",
                after_event="store_cancels",
                within_s=ADAPT_S,
                customer_id=customer,
            )
        ],
        minefields=[early("ordered_early", "place_order", "store_cancels", customer_id=customer)],
        per_step_s=25.0,
    )


def _refund_lands(
    name: str, customer: str, checking: str, savings: str, cents: int, sender: str, moment: datetime
) -> Spec:
    apps = ("banking",)
    who = one(apps, moment, "bank_customers", customer_id=customer)["name"]
    start = at(moment, minutes=-40)
    amount = cents / 100
    return Spec(
        name=name,
        kind="deposit_lands",
        query=(
            f"I'm {who} ({customer}). A refund from {sender} should land in {checking} this morning; I don't "
            f"know the amount. When it arrives, move exactly that amount to my savings {savings}. Don't move "
            "anything before it has arrived."
        ),
        apps=list(apps),
        clock=start,
        calls=[
            wait(3600),
            call(
                "transfer",
                from_account_id=checking,
                to_account_id=savings,
                amount=amount,
                memo=f"Refund from {sender}",
            ),
        ],
        answer=f"The refund of {dollars(cents)} from {sender} landed at {hhmm(moment)}; I moved {dollars(cents)} to {savings}.",
        whitelist=[[dollars(cents), f"{amount:.2f}"], [savings]],
        events=[
            event(
                "refund",
                f"Deposit received in {checking}: {dollars(cents)} (refund from {sender}).",
                call("deposit", account_id=checking, amount=amount, memo=f"Refund from {sender}"),
                when_at=moment,
            )
        ],
        state=[
            row(
                "bank_transactions",
                account_id=checking,
                kind="transfer_out",
                amount_cents=-cents,
                counterparty=savings,
            )
        ],
        milestones=[done("moved", "transfer", after_event="refund", within_s=ADAPT_S, to_account_id=savings)],
        minefields=[early("moved_early", "transfer", "refund", from_account_id=checking)],
        per_step_s=30.0,
    )


def _invitee_declines(
    name: str, organizer: str, declines: str, stand_in: str, begins: datetime, title: str
) -> Spec:
    apps = ("calendar",)
    start = at(begins, hours=-26)
    who, first, second = (
        one(apps, start, "calendar_people", person_id=p)["name"] for p in (organizer, declines, stand_in)
    )
    ends = at(begins, hours=1)
    created = probe(
        apps,
        start,
        call(
            "create_event",
            organizer_id=organizer,
            title=title,
            start_time=begins.isoformat(),
            end_time=ends.isoformat(),
            attendee_ids=[declines],
        ),
    )[0]
    event_id = created["event_id"]
    return Spec(
        name=name,
        kind="invitee_declines",
        query=(
            f'I\'m {who} ({organizer}). Create "{title}" on {begins:%A} {hhmm(begins)}-{hhmm(ends)} and invite '
            f"{first} ({declines}). I'm offline for the next hour: if {first} declines, invite {second} "
            f"({stand_in}) in their place and take {first} off the invitation."
        ),
        apps=list(apps),
        clock=start,
        calls=[
            call(
                "create_event",
                organizer_id=organizer,
                title=title,
                start_time=begins.isoformat(),
                end_time=ends.isoformat(),
                attendee_ids=[declines],
            ),
            wait(3600),
            call(
                "update_event", event_id=event_id, add_attendee_ids=[stand_in], remove_attendee_ids=[declines]
            ),
        ],
        answer=f'Created "{title}" ({event_id}). {first} declined, so {second} is invited in their place.',
        whitelist=[[event_id], [second]],
        events=[
            event(
                "declined",
                f'{first} declined "{title}".',
                call("respond_to_event", event_id=event_id, person_id=declines, response="declined"),
                when=StateFact(table="calendar_events", where={"organizer_id": organizer, "title": title}),
                delay_s=1500,
            )
        ],
        state=[row("calendar_attendees", event_id=event_id, person_id=stand_in)],
        milestones=[
            done("replaced", "update_event", after_event="declined", within_s=ADAPT_S, event_id=event_id)
        ],
        minefields=[early("replaced_early", "update_event", "declined", event_id=event_id)],
        per_step_s=30.0,
    )


def _courier_cancels(name: str, customer: str, recipient: dict[str, Any], moment_after_s: float) -> Spec:
    apps = ("express",)
    start = at(MONDAY, hours=13)
    who = one(apps, start, "express_customers", customer_id=customer)["name"]
    parcel = dict(
        customer_id=customer,
        recipient_name=recipient["name"],
        recipient_phone=recipient["phone"],
        recipient_city=recipient["city"],
        recipient_address=recipient["address"],
        weight_kg=recipient["kg"],
        item_description=recipient["item"],
    )
    first = probe(apps, start, call("create_shipment", **parcel, service="standard"))[0]["tracking_number"]
    return Spec(
        name=name,
        kind="shipment_cancelled",
        query=(
            f"I'm {who} ({customer}). Book a standard pickup for {recipient['kg']:g} kg of {recipient['item']} to "
            f"{recipient['name']} ({recipient['phone']}), {recipient['address']}, {recipient['city']}. The "
            "couriers are short-staffed today: if the pickup gets cancelled within the hour, book it again "
            "with the express service."
        ),
        apps=list(apps),
        clock=start,
        calls=[
            call("create_shipment", **parcel, service="standard"),
            wait(3600),
            call("create_shipment", **parcel, service="express"),
        ],
        answer="",
        whitelist=[],
        answer_from=lambda results: (
            f"The courier cancelled the standard pickup {first}; I booked it again with express: tracking "
            f"number {results[-1]['tracking_number']}, fee {results[-1]['fee']:g} yuan.",
            [[results[-1]["tracking_number"]], ["express"]],
        ),
        events=[
            event(
                "courier_cancels",
                f"Shipment {first} was cancelled: no courier available for the pickup.",
                call("cancel_shipment", tracking_number=first, reason="no courier available"),
                when=StateFact(
                    table="express_shipments",
                    where={"customer_id": customer, "recipient_name": recipient["name"]},
                ),
                delay_s=moment_after_s,
            )
        ],
        state=[
            row(
                "express_shipments",
                customer_id=customer,
                recipient_name=recipient["name"],
                service="express",
                cancelled_at=None,
            )
        ],
        milestones=[
            done(
                "rebooked",
                "create_shipment",
                after_event="courier_cancels",
                within_s=ADAPT_S,
                service="express",
            )
        ],
        minefields=[early("rebooked_early", "create_shipment", "courier_cancels", service="express")],
        per_step_s=20.0,
    )


def _restaurant_cancels(
    name: str, user: str, address: str, first: tuple[str, str], second: tuple[str, str]
) -> Spec:
    apps = ("takeout",)
    start = at(MONDAY, hours=11, minutes=40)
    who = one(apps, start, "takeout_users", user_id=user)["name"]
    (shop1, item1), (shop2, item2) = first, second
    name1, name2 = (one(apps, start, "takeout_restaurants", restaurant_id=s)["name"] for s in (shop1, shop2))
    dish1, dish2 = (one(apps, start, "takeout_menu_items", item_id=i)["name"] for i in (item1, item2))
    order1 = dict(
        user_id=user, restaurant_id=shop1, items={item1: 1}, address_id=address, payment_method="wallet"
    )
    placed = probe(apps, start, call("place_takeout_order", **order1))[0]["order"]["order_id"]
    return Spec(
        name=name,
        kind="order_cancelled",
        query=(
            f"I'm {who} ({user}). Order one {dish1} from {name1} to {address}, wallet payment. They are often "
            f"swamped at lunch: if they cancel, order one {dish2} from {name2} to the same address instead."
        ),
        apps=list(apps),
        clock=start,
        calls=[
            call("place_takeout_order", **order1),
            wait(3600),
            call(
                "place_takeout_order",
                user_id=user,
                restaurant_id=shop2,
                items={item2: 1},
                address_id=address,
                payment_method="wallet",
            ),
        ],
        answer="",
        whitelist=[],
        answer_from=lambda results: (
            f"{name1} cancelled order {placed} (too busy) and refunded it; I ordered one {dish2} from {name2} "
            f"instead: order {results[-1]['order']['order_id']}.",
            [[results[-1]["order"]["order_id"]], [dish2]],
        ),
        events=[
            event(
                "restaurant_cancels",
                f"{name1} cancelled order {placed}: too busy. The payment was refunded.",
                call("cancel_takeout_order", order_id=placed, reason="restaurant too busy"),
                when=StateFact(table="takeout_orders", where={"order_id": placed}),
                delay_s=420,
            )
        ],
        state=[
            row("takeout_orders", user_id=user, restaurant_id=shop2, address_id=address, cancelled_at=None)
        ],
        milestones=[
            done(
                "reordered",
                "place_takeout_order",
                after_event="restaurant_cancels",
                within_s=ADAPT_S,
                restaurant_id=shop2,
            )
        ],
        minefields=[
            early("reordered_early", "place_takeout_order", "restaurant_cancels", restaurant_id=shop2)
        ],
        per_step_s=25.0,
    )


def _plan_moved(
    name: str, me: str, person: str, friend: str, title: str, begins: datetime, moved: datetime
) -> Spec:
    apps = ("calendar", "messaging")
    start = at(begins, hours=-5)
    who = one(apps, start, "calendar_people", person_id=person)["name"]
    them = one(apps, start, "messaging_users", user_id=friend)["display_name"]
    ends, moved_end = at(begins, hours=1), at(moved, hours=1)
    created = probe(
        apps,
        start,
        call(
            "create_event",
            organizer_id=person,
            title=title,
            start_time=begins.isoformat(),
            end_time=ends.isoformat(),
        ),
    )[0]
    text = f'Can we move "{title}" to {hhmm(moved)}-{hhmm(moved_end)} the same day? Something came up.'
    return Spec(
        name=name,
        kind="message_changes_plan",
        query=(
            f'I\'m {who} (calendar {person}, messaging user {me}). Put "{title}" in my calendar for {begins:%A} '
            f"{hhmm(begins)}-{hhmm(ends)}. {them} may message me within the hour if that time doesn't work: "
            "if so, move the event to the time they ask for."
        ),
        apps=list(apps),
        clock=start,
        calls=[
            call(
                "create_event",
                organizer_id=person,
                title=title,
                start_time=begins.isoformat(),
                end_time=ends.isoformat(),
            ),
            wait(3600),
            call(
                "update_event",
                event_id=created["event_id"],
                start_time=moved.isoformat(),
                end_time=moved_end.isoformat(),
            ),
        ],
        answer=f'Created "{title}"; {them} asked to move it, so it is now {hhmm(moved)}-{hhmm(moved_end)} on {moved:%A}.',
        whitelist=[[hhmm(moved)], [title]],
        events=[
            event(
                "asked_to_move",
                f"New message from {them}: {text}",
                call("send_message", sender_id=friend, to_user_id=me, content=text),
                when_at=at(start, minutes=35),
            )
        ],
        state=[
            row(
                "calendar_events",
                event_id=created["event_id"],
                start_at=moved.isoformat(),
                end_at=moved_end.isoformat(),
            )
        ],
        milestones=[
            done(
                "moved",
                "update_event",
                after_event="asked_to_move",
                within_s=ADAPT_S,
                event_id=created["event_id"],
            )
        ],
        minefields=[early("moved_early", "update_event", "asked_to_move", event_id=created["event_id"])],
        per_step_s=20.0,
    )


def _venue_closed(name: str, me: str, group: str, member: str, first: str, backup: str) -> Spec:
    apps = ("messaging",)
    start = at(MONDAY, hours=16)
    who = one(apps, start, "messaging_users", user_id=me)["display_name"]
    them = one(apps, start, "messaging_users", user_id=member)["display_name"]
    club = one(apps, start, "messaging_groups", group_id=group)["name"]
    invite = f"Dinner tonight at 19:00 at {first}!"
    change = f"Change of plan: dinner moves to {backup}, same time."
    heads_up = f"Heads up: {first} is closed tonight."
    return Spec(
        name=name,
        kind="message_changes_plan",
        query=(
            f'I\'m {who} ({me}). Post "{invite}" to the {club} group ({group}). If anyone there says {first} '
            f'is closed in the next hour, post "{change}" to the group.'
        ),
        apps=list(apps),
        clock=start,
        calls=[
            call("send_message", sender_id=me, group_id=group, content=invite),
            wait(3600),
            call("send_message", sender_id=me, group_id=group, content=change),
        ],
        answer=f"Posted the invitation to {club}; {them} said {first} is closed, so I posted the change to {backup}.",
        whitelist=[[backup], [them]],
        events=[
            event(
                "closed",
                f"New message in {club} from {them}: {heads_up}",
                call("send_message", sender_id=member, group_id=group, content=heads_up),
                when=StateFact(
                    table="messaging_messages",
                    where={"sender_id": me, "conversation_id": group, "content": invite},
                ),
                delay_s=1200,
            )
        ],
        state=[row("messaging_messages", sender_id=me, conversation_id=group, content=change)],
        milestones=[
            done("posted_change", "send_message", after_event="closed", within_s=ADAPT_S, content=change)
        ],
        minefields=[early("changed_early", "send_message", "closed", content=change)],
        per_step_s=15.0,
    )


def _appointment_moved(name: str, appointment_id: str, new_time: str, moment: datetime) -> Spec:
    apps = ("mtu_appointments",)
    booked = one(apps, moment, "mtu_appointments_appointments", appointment_id=appointment_id)
    title, date, address = (
        booked["appointment_name"],
        booked["appointment_date"],
        booked["appointment_address"],
    )
    hours, minutes = (int(part) for part in new_time.split(":"))
    remind = f"{hours - 1:02d}:{minutes:02d}"
    start = at(moment, minutes=-25)
    return Spec(
        name=name,
        kind="appointment_moved",
        query=(
            f'The office may move my "{title}" on {date} (now {booked["appointment_time"]}) this morning. If they '
            "move it, set a reminder one hour before the new time; if not, leave everything as it is."
        ),
        apps=list(apps),
        clock=start,
        calls=[
            wait(3600),
            call(
                "set_appointment_reminder",
                appointment_name=title,
                appointment_date=date,
                appointment_time=new_time,
                appointment_address=address,
                reminder_time=remind,
            ),
        ],
        answer=f'The office moved "{title}" on {date} to {new_time}; a reminder is set for {remind}.',
        whitelist=[[new_time], [remind]],
        events=[
            event(
                "moved",
                f'The office moved your "{title}" on {date} to {new_time}.',
                call(
                    "change_appointment",
                    appointment_name=title,
                    appointment_date=date,
                    new_appointment_time=new_time,
                ),
                when_at=moment,
            )
        ],
        state=[
            row(
                "mtu_appointments_reminders",
                appointment_id=appointment_id,
                remind_at=f"{date}T{remind}:00+00:00",
            )
        ],
        milestones=[
            done(
                "reminded",
                "set_appointment_reminder",
                after_event="moved",
                within_s=ADAPT_S,
                appointment_time=new_time,
            )
        ],
        minefields=[early("reminded_early", "set_appointment_reminder", "moved", appointment_name=title)],
        per_step_s=20.0,
    )


def world_changes() -> list[Spec]:
    tuesday = at(MONDAY, hours=24)
    return [
        _room_taken_back("cal-room-reclaimed", "BKG-000041", at(MONDAY, hours=9, minutes=10)),
        _room_taken_back("cal-room-reclaimed", "BKG-000115", at(MONDAY, hours=14, minutes=45)),
        _order_out_of_stock(
            "shop-order-out-of-stock", "ORD-000026", "PRD-00010", at(MONDAY, hours=10, minutes=30)
        ),
        _order_out_of_stock(
            "shop-order-out-of-stock", "ORD-000028", "PRD-00004", at(tuesday, hours=8, minutes=15)
        ),
        _refund_lands(
            "bank-refund-lands",
            "CUST-0002",
            "ACC-10003",
            "ACC-10004",
            4318,
            "Skyline Mobile",
            at(MONDAY, hours=9, minutes=20),
        ),
        _refund_lands(
            "bank-refund-lands",
            "CUST-0005",
            "ACC-10008",
            "ACC-10009",
            129999,
            "Summit Travel",
            at(tuesday, hours=11, minutes=5),
        ),
        _invitee_declines(
            "cal-invitee-declines", "P012", "P014", "P021", at(tuesday, hours=15), "Contract review"
        ),
        _courier_cancels(
            "express-pickup-cancelled",
            "EC-0005",
            {
                "name": "Zhou Min",
                "phone": "13811112222",
                "city": "Nanjing",
                "address": "88 Zhongshan Road, Building 2",
                "kg": 3.5,
                "item": "clothes",
            },
            900,
        ),
        _restaurant_cancels(
            "takeout-restaurant-cancels",
            "TU004",
            "TA-0006",
            ("RS-0001", "ITM-00004"),
            ("RS-0006", "ITM-00038"),
        ),
        _plan_moved(
            "cal-msg-meeting-moved",
            "U0001",
            "P018",
            "U0005",
            "Roadmap sync",
            at(tuesday, hours=14),
            at(tuesday, hours=16),
        ),
        _venue_closed("msg-venue-closed", "U0003", "GRP-0007", "U0041", "Luigi's Trattoria", "Noodle House"),
        _appointment_moved("mtu-appointment-moved", "APT-001282", "14:30", at(MONDAY, hours=9, minutes=40)),
    ]
