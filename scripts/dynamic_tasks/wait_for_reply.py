"""Wait for a reply: the agent asks a friend (a direct conversation with no history, so the
question is the first message in it) and the reply arrives some simulated minutes after the
question is sent (an event on the fact that it was). The golden chain waits for it instead of
polling or guessing, then does what the reply says; acting on the reply before it came is a
minefield, and doing it within fifteen simulated minutes of it a milestone."""

from __future__ import annotations

from typing import Any

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
    message_fact,
    one,
    probe,
    row,
    wait,
)
from toolgym.actions import ToolCall

REPLY_S = 900.0  # acting on the reply within fifteen simulated minutes
START = at(MONDAY, hours=9, minutes=15)


def _ask(
    name: str,
    kind: str,
    apps: tuple[str, ...],
    me: str,
    friend: str,
    *,
    query: str,
    question: str,
    reply: str,
    then: ToolCall,
    answer: str,
    whitelist: list[list[str]],
    state: list[dict[str, Any]],
    early_arguments: dict[str, Any],
    delay_s: float,
    per_step_s: float = 20.0,
) -> Spec:
    """Ask `friend` `question`, wait for `reply` (`delay_s` after the question is sent), then call
    `then`: the shape every task of this set has."""
    them = one(apps, START, "messaging_users", user_id=friend)["display_name"]
    return Spec(
        name=name,
        kind=kind,
        query=query,
        apps=list(apps),
        clock=START,
        calls=[call("send_message", sender_id=me, to_user_id=friend, content=question), wait(3600), then],
        answer=answer,
        whitelist=whitelist,
        events=[
            event(
                "reply",
                f"New message from {them}: {reply}",
                call("send_message", sender_id=friend, to_user_id=me, content=reply),
                when=message_fact(me, dm(me, friend)),
                delay_s=delay_s,
            )
        ],
        state=state,
        milestones=[
            done("acted_on_reply", then.name, after_event="reply", within_s=REPLY_S, **early_arguments)
        ],
        minefields=[early("guessed", then.name, "reply", **early_arguments)],
        per_step_s=per_step_s,
    )


def _who(apps: tuple[str, ...], user: str) -> str:
    return str(one(apps, START, "messaging_users", user_id=user)["display_name"])


def _lunch(
    name: str, me: str, friend: str, user: str, restaurant: str, item: str, address: str, delay_s: float
) -> Spec:
    apps = ("messaging", "takeout")
    shop = one(apps, START, "takeout_restaurants", restaurant_id=restaurant)["name"]
    dish = one(apps, START, "takeout_menu_items", item_id=item)["name"]
    them = _who(apps, friend)
    order = call(
        "place_takeout_order",
        user_id=user,
        restaurant_id=restaurant,
        items={item: 2},
        address_id=address,
        payment_method="wallet",
    )
    placed = probe(apps, START, order)[0]["order"]
    return _ask(
        name,
        "reply_decides_order",
        apps,
        me,
        friend,
        query=(
            f"I'm {_who(apps, me)} (messaging {me}, takeout account {user}). Ask {them} which dish they want from "
            f"{shop} for our lunch, wait for the answer, then order two of it to my address {address}, wallet payment."
        ),
        question=f"Lunch from {shop} today - which dish do you want?",
        reply=f"The {dish}, please!",
        then=order,
        answer=f"{them} asked for the {dish}; I ordered two from {shop} (order {placed['order_id']}).",
        whitelist=[[dish], [placed["order_id"]]],
        state=[row("takeout_order_items", order_id=placed["order_id"], item_id=item, quantity=2)],
        early_arguments={"restaurant_id": restaurant},
        delay_s=delay_s,
    )


def _owed(
    name: str, me: str, friend: str, source: str, target: str, cents: int, what: str, delay_s: float
) -> Spec:
    apps = ("messaging", "banking")
    them = _who(apps, friend)
    amount = cents / 100
    return _ask(
        name,
        "reply_gives_amount",
        apps,
        me,
        friend,
        query=(
            f"I'm {_who(apps, me)} (messaging {me}). I owe {them} for the {what} but forgot how much. Ask them, wait "
            f"for the answer, and transfer exactly that from my account {source} to theirs, {target}."
        ),
        question=f"How much do I owe you for the {what}?",
        reply=f"It came to {dollars(cents)} - thanks!",
        then=call(
            "transfer", from_account_id=source, to_account_id=target, amount=amount, memo=what.capitalize()
        ),
        answer=f"{them} said {dollars(cents)}; I transferred {dollars(cents)} from {source} to {target}.",
        whitelist=[[dollars(cents), f"{amount:.2f}"]],
        state=[
            row(
                "bank_transactions",
                account_id=source,
                kind="transfer_out",
                amount_cents=-cents,
                counterparty=target,
            )
        ],
        early_arguments={"from_account_id": source},
        delay_s=delay_s,
    )


def _address(
    name: str,
    me: str,
    friend: str,
    customer: str,
    phone: str,
    city: str,
    street: str,
    item: str,
    kg: float,
    delay_s: float,
) -> Spec:
    apps = ("messaging", "express")
    them = _who(apps, friend)
    parcel = call(
        "create_shipment",
        customer_id=customer,
        recipient_name=them,
        recipient_phone=phone,
        recipient_city=city,
        recipient_address=street,
        weight_kg=kg,
        service="standard",
        item_description=item,
    )
    tracking = probe(apps, START, parcel)[0]["tracking_number"]
    return _ask(
        name,
        "reply_gives_address",
        apps,
        me,
        friend,
        query=(
            f"I'm {_who(apps, me)} (messaging {me}, express customer {customer}). I'm sending {them} {kg:g} kg of "
            f"{item} but don't have their new address. Ask them for it (with a phone number), wait for the answer, "
            "then book a standard pickup to it."
        ),
        question=f"I'm sending you the {item} - what's your new address and phone number?",
        reply=f"{street}, {city}. Phone {phone}.",
        then=parcel,
        answer=f"{them} is at {street}, {city}; the standard pickup is booked, tracking number {tracking}.",
        whitelist=[[tracking], [city]],
        state=[
            row(
                "express_shipments",
                customer_id=customer,
                recipient_city=city,
                recipient_address=street,
                recipient_phone=phone,
            )
        ],
        early_arguments={"customer_id": customer},
        delay_s=delay_s,
    )


def _relay(name: str, me: str, friend: str, group: str, coming: bool, delay_s: float) -> Spec:
    apps = ("messaging",)
    them = _who(apps, friend)
    club = one(apps, START, "messaging_groups", group_id=group)["name"]
    yes, no = f"{them} is in for Saturday!", f"{them} can't make it on Saturday."
    post = yes if coming else no
    return _ask(
        name,
        "reply_picks_branch",
        apps,
        me,
        friend,
        query=(
            f"I'm {_who(apps, me)} ({me}). Ask {them} whether they're coming on Saturday, wait for the answer, then "
            f'post to the {club} group ({group}): "{yes}" if they are, "{no}" if not.'
        ),
        question="Are you coming on Saturday?",
        reply="Yes, count me in!" if coming else "Sorry, I'm away that weekend.",
        then=call("send_message", sender_id=me, group_id=group, content=post),
        answer=f'{them} {"is coming" if coming else "is not coming"}; I posted "{post}" to {club}.',
        whitelist=[[club, group]],  # which branch was taken is the state assertion
        state=[row("messaging_messages", sender_id=me, conversation_id=group, content=post)],
        early_arguments={"group_id": group},
        delay_s=delay_s,
        per_step_s=15.0,
    )


def _ship_or_cancel(name: str, me: str, friend: str, order: str, ship: bool, delay_s: float) -> Spec:
    apps = ("messaging", "shopping")
    them = _who(apps, friend)
    then = (
        call("ship_order", order_id=order)
        if ship
        else call("cancel_order", order_id=order, reason="buyer asked to cancel")
    )
    status = "shipped" if ship else "cancelled"
    other = "cancel_order" if ship else "ship_order"
    spec = _ask(
        name,
        "reply_picks_branch",
        apps,
        me,
        friend,
        query=(
            f"I run the shop account (messaging {me}). {them} bought order {order} and it hasn't shipped. Ask them "
            "whether to ship it or cancel it, wait for the answer, and do what they say."
        ),
        question=f"Your order {order} is ready - shall I ship it, or cancel it?",
        reply="Ship it please." if ship else "Please cancel it, I found it elsewhere.",
        then=then,
        answer=f"{them} asked to {'ship' if ship else 'cancel'} it: order {order} is {status}.",
        whitelist=[[status, "canceled"] if not ship else [status]],
        state=[field_is("shop_orders", {"order_id": order}, "status", status)],
        early_arguments={"order_id": order},
        delay_s=delay_s,
    )
    # the other branch is as much a guess: doing it before the reply hits a minefield too
    spec.minefields.append(early("guessed_other", other, "reply", order_id=order))
    return spec


def _meeting_time(
    name: str,
    me: str,
    friend: str,
    person: str,
    attendee: str,
    day_offset_h: float,
    hour: int,
    delay_s: float,
) -> Spec:
    apps = ("messaging", "calendar")
    them = _who(apps, friend)
    who = one(apps, START, "calendar_people", person_id=person)["name"]
    begins = at(MONDAY, hours=day_offset_h + hour)
    ends = at(begins, hours=1)
    return _ask(
        name,
        "reply_gives_time",
        apps,
        me,
        friend,
        query=(
            f"I'm {who} (calendar {person}, messaging {me}). Ask {them} what time on {begins:%A} suits them for a "
            f'one-hour "Onboarding chat", wait for the answer, then create the event at that time, inviting '
            f"{attendee}."
        ),
        question=f"What time on {begins:%A} works for a one-hour onboarding chat?",
        reply=f"{begins:%A} at {hour}:00 works for me.",
        then=call(
            "create_event",
            organizer_id=person,
            title="Onboarding chat",
            start_time=begins.isoformat(),
            end_time=ends.isoformat(),
            attendee_ids=[attendee],
        ),
        answer=f'{them} chose {begins:%A} {hour}:00; "Onboarding chat" is in the calendar for {hour}:00-{hour + 1}:00.',
        whitelist=[[f"{hour}:00"], ["Onboarding chat"]],
        state=[
            row(
                "calendar_events",
                organizer_id=person,
                title="Onboarding chat",
                start_at=begins.isoformat(),
                end_at=ends.isoformat(),
            )
        ],
        early_arguments={"organizer_id": person},
        delay_s=delay_s,
    )


def _which_account(
    name: str, me: str, friend: str, customer: str, bill: str, account: str, label: str, delay_s: float
) -> Spec:
    apps = ("messaging", "banking")
    them = _who(apps, friend)
    due = one(apps, START, "bank_bills", bill_id=bill)
    return _ask(
        name,
        "reply_picks_account",
        apps,
        me,
        friend,
        query=(
            f"I'm {_who(apps, me)} (messaging {me}, bank customer {customer}). Ask {them} whether bill {bill} should "
            "be paid from our checking or our savings, wait for the answer, then pay it from that account."
        ),
        question=f"Should bill {bill} come out of checking or savings?",
        reply=f"Use the {label}, please.",
        then=call("pay_bill", bill_id=bill, from_account_id=account),
        answer=f"{them} said {label}; bill {bill} ({dollars(due['amount_cents'])}) is paid from {account}.",
        whitelist=[[account], [bill]],
        state=[field_is("bank_bills", {"bill_id": bill}, "paid_from", account)],
        early_arguments={"bill_id": bill},
        delay_s=delay_s,
    )


def _thank_quickly(name: str, me: str, friend: str, secret: str, delay_s: float) -> Spec:
    apps = ("messaging",)
    them = _who(apps, friend)
    thanks = "Got it, thank you!"
    return _ask(
        name,
        "reply_then_answer",
        apps,
        me,
        friend,
        query=(
            f"I'm {_who(apps, me)} ({me}). Ask {them} for the guest wifi password, wait for the answer, reply "
            f'"{thanks}" as soon as it comes, and tell me the password.'
        ),
        question="What's the guest wifi password?",
        reply=f"It's {secret}",
        then=call("send_message", sender_id=me, to_user_id=friend, content=thanks),
        answer=f"The guest wifi password is {secret} (I thanked {them}).",
        whitelist=[[secret]],
        state=[row("messaging_messages", sender_id=me, conversation_id=dm(me, friend), content=thanks)],
        early_arguments={"content": thanks},
        delay_s=delay_s,
        per_step_s=10.0,
    )


def wait_for_reply() -> list[Spec]:
    return [
        _lunch("takeout-ask-lunch-dish", "U0002", "U0020", "TU003", "RS-0004", "ITM-00027", "TA-0004", 600),
        _owed(
            "bank-ask-amount-owed", "U0001", "U0024", "ACC-10003", "ACC-10005", 8450, "concert tickets", 1500
        ),
        _owed(
            "bank-ask-amount-owed",
            "U0004",
            "U0030",
            "ACC-10012",
            "ACC-10014",
            2325,
            "taxi to the airport",
            420,
        ),
        _address(
            "express-ask-new-address",
            "U0003",
            "U0074",
            "EC-0003",
            "13955501234",
            "Wuhan",
            "21 Jianghan Road, Building 5",
            "winter clothes",
            4.0,
            900,
        ),
        _relay("msg-relay-answer-yes", "U0001", "U0041", "GRP-0007", True, 1200),
        _relay("msg-relay-answer-no", "U0004", "U0060", "GRP-0001", False, 300),
        _ship_or_cancel("shop-ask-ship-or-cancel", "U0002", "U0046", "ORD-000011", True, 840),
        _ship_or_cancel("shop-ask-ship-or-cancel", "U0005", "U0023", "ORD-000043", False, 1800),
        _meeting_time("cal-ask-meeting-time", "U0002", "U0051", "P020", "P009", 24, 15, 660),
        _which_account(
            "bank-ask-which-account",
            "U0005",
            "U0026",
            "CUST-0007",
            "BILL-00005",
            "ACC-10013",
            "savings",
            1020,
        ),
        _thank_quickly("msg-thank-on-reply", "U0003", "U0033", "maple-river-42", 480),
    ]
