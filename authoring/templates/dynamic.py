"""Templates of dynamic tasks (`toolgym generate --category dynamic`): worlds that move while the agent
works (`toolgym.mocks.events`), over banking, shopping and chat.

- act at a time: the user allows a write only from a time on (a reminder notifies then); the
  write before it is a minefield armed until that time (`Draft.not_before`), so the golden chain
  waits (`Draft.wait`) and then acts.
- the world changes mid-task: an event writes through an app's own API while the agent works (a
  salary lands, another customer buys the last units, the store cancels an order) and notifies it;
  the golden chain adapts to what changed.
- wait for a reply: the agent's message makes a `when` fact hold, the friend answers `delay_s`
  later; the golden chain waits, reads the answer and acts on it.

Every task is checked as the generator checks any (`toolgym check`'s replay and oracle, in simulated
time), and an agent that ignores its notifications, or never waits, must fail it
(`TaskChecker.blind_passes`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Final

from toolgym.authoring.generate import Draft, Skip, Template
from toolgym.authoring.templates.categories import POSTS
from toolgym.authoring.templates.common import money
from toolgym.tasks import StateFact

DYNAMIC: Final = "dynamic"
LONG_WAIT: Final = (
    7200  # the golden chain's wait: longer than any event is away, a notification ends it first
)
MINUTES: Final = tuple(range(20, 95, 5))  # how far the allowed time (or the salary) is from the start


def _clock_time(d: Draft, minutes: int) -> str:
    """The simulated time `minutes` after the task's start, as a person writes it ("00:45")."""
    return (d.world.start + timedelta(minutes=minutes)).strftime("%H:%M")


def _wait_for_time(d: Draft, minutes: int, reminder: str, mine: str, tool: str, **arguments: object) -> str:
    """The user allows `tool` from `minutes` after the start: a reminder notifies then, the call
    before it is a minefield; the golden chain waits for the reminder. The time, as written."""
    when = _clock_time(d, minutes)
    d.event("allowed-time", at_s=minutes * 60, notify=reminder.format(t=when), important=True)
    d.not_before(mine, minutes * 60, tool, **arguments)
    return when


def _waited(d: Draft) -> None:
    """The golden wait, which a notification must end (else the event is not where the chain needs it)."""
    if not d.wait(LONG_WAIT)["notified"]:
        raise Skip("no notification ended the wait")


# ---- act at a time --------------------------------------------------------------------------------------
def transfer_at_time(d: Draft) -> None:
    pair = d.pick(
        "SELECT c.customer_id, c.account_id AS checking, c.balance_cents, s.account_id AS savings FROM"
        " bank_accounts c JOIN bank_accounts s ON s.customer_id = c.customer_id AND s.account_type = 'savings'"
        " AND s.status = 'active' WHERE c.account_type = 'checking' AND c.status = 'active'"
        " AND c.balance_cents >= 5000 ORDER BY c.account_id"
    )
    cid, checking, savings = pair["customer_id"], pair["checking"], pair["savings"]
    amount = d.choice([a for a in (25, 40, 50, 75, 100, 150, 200, 250) if a * 100 <= pair["balance_cents"]])
    minutes = d.choice(MINUTES)
    when = _wait_for_time(
        d,
        minutes,
        "Reminder ({t}): the transfer to savings may go now.",
        "transfer-too-early",
        "transfer",
        from_account_id=checking,
        to_account_id=savings,
    )
    d.knows(cid, checking, savings)
    d.query(
        [
            "I'm customer {c}. At {t}, and not a minute before, move ${x} from my checking {k} to my savings {s}.",
            "Customer {c} here: once it is {t} (not earlier), transfer ${x} from checking {k} into savings {s}.",
        ],
        c=cid,
        t=when,
        x=amount,
        k=checking,
        s=savings,
    )
    _waited(d)
    result = d.call("transfer", from_account_id=checking, to_account_id=savings, amount=amount)
    d.answer(
        f"At {when} I moved ${money(amount)} from {checking} to {savings}; checking now holds"
        f" ${money(result['from_balance'])}.",
        [f"{amount:.2f}", money(amount), str(amount)],
        savings,
    )


def message_at_time(d: Draft) -> None:
    pair = d.pick(
        "SELECT f.user_id, f.friend_id, u.display_name FROM messaging_friendships f JOIN messaging_users u"
        " ON u.user_id = f.friend_id ORDER BY f.user_id, f.friend_id"
    )
    user, friend, name = pair["user_id"], pair["friend_id"], pair["display_name"]
    text = d.choice(POSTS)
    minutes = d.choice(MINUTES)
    when = _wait_for_time(
        d,
        minutes,
        "Reminder ({t}): time to send your message to " + name + ".",
        "sent-too-early",
        "send_message",
        sender_id=user,
        to_user_id=friend,
    )
    d.knows(user)
    d.query(
        [
            'I\'m {u} on chat. Send my friend {n} "{m}" at {t}, not before.',
            'At {t} (no earlier, please) message my friend {n} on chat: "{m}". I\'m {u}.',
        ],
        u=user,
        n=name,
        m=text,
        t=when,
    )
    d.call("list_friends", user_id=user)
    _waited(d)
    d.call("send_message", sender_id=user, to_user_id=friend, content=text)
    d.answer(f"At {when} I sent {name} your message.", name)


# ---- the world changes mid-task ---------------------------------------------------------------------------
def pay_after_salary(d: Draft) -> None:
    bill = d.pick(
        "SELECT b.bill_id, b.customer_id, b.amount_cents, p.name AS payee, a.account_id, a.balance_cents"
        " FROM bank_bills b JOIN bank_payees p USING (payee_id) JOIN bank_accounts a ON a.customer_id ="
        " b.customer_id AND a.account_type = 'checking' AND a.status = 'active'"
        " WHERE b.status = 'due' AND a.balance_cents < b.amount_cents ORDER BY b.bill_id"
    )
    bid, cid, account = bill["bill_id"], bill["customer_id"], bill["account_id"]
    short = (bill["amount_cents"] - bill["balance_cents"]) / 100
    salary = 500 * (int(short // 500) + 1) + d.choice([0, 500, 1000])  # a round salary that covers it
    minutes = d.choice(MINUTES)
    d.event(
        "salary",
        at_s=minutes * 60,
        calls=[("deposit", {"account_id": account, "amount": salary, "memo": "Salary"})],
        notify=f"Deposit received in {account}: ${money(salary)} (Salary).",
        important=True,
    )
    d.knows(cid, bid, account)
    d.query(
        [
            "I'm customer {c}. My salary of ${s} is about to land in my checking {k}; as soon as it is in,"
            " pay bill {b} from {k}.",
            "Customer {c}: once my ${s} salary arrives in checking {k} this morning, settle bill {b} from it.",
        ],
        c=cid,
        s=salary,
        k=account,
        b=bid,
    )
    d.blocked("pay_bill", bill_id=bid, from_account_id=account)
    _waited(d)
    d.call("pay_bill", bill_id=bid, from_account_id=account)
    amount = bill["amount_cents"] / 100
    d.answer(
        f"Your salary of ${money(salary)} arrived, and I paid the ${money(amount)} {bill['payee']} bill"
        f" {bid} from {account}.",
        bid,
    )


def sold_out_switch(d: Draft) -> None:
    pair = d.pick(
        "SELECT p.product_id AS wanted, p.name AS wanted_name, p.stock, q.product_id AS other,"
        " q.name AS other_name, q.price_cents FROM shop_products p JOIN shop_products q ON q.category ="
        " p.category AND q.product_id != p.product_id AND q.stock > 0 AND q.name != p.name"
        " WHERE p.stock BETWEEN 1 AND 50 ORDER BY p.product_id, q.product_id"
    )
    customers = d.rows(
        "SELECT customer_id FROM shop_customers c WHERE wallet_cents >= ? AND NOT EXISTS (SELECT 1 FROM"
        " shop_cart_items i WHERE i.customer_id = c.customer_id) ORDER BY customer_id",
        pair["price_cents"],
    )
    buyer, rival = d.choice(customers)["customer_id"], d.choice(customers)["customer_id"]
    if buyer == rival:
        raise Skip("the rival buyer is the user")
    wanted, other = pair["wanted"], pair["other"]
    d.event(
        "sold-out",
        after_step=1,
        calls=[
            ("add_to_cart", {"customer_id": rival, "product_id": wanted, "quantity": pair["stock"]}),
            ("place_order", {"customer_id": rival, "payment_method": "pay_on_delivery"}),
        ],
        notify=f"{pair['wanted_name']} ({wanted}) just sold out.",
    )
    d.knows(buyer, wanted, other)
    d.query(
        [
            "I'm customer {c}. Buy one {w} ({wi}) for me from my wallet; if it is gone, buy one {o} ({oi}) instead.",
            "Customer {c} here: order a {w} ({wi}), paid from my wallet. Should it sell out, get the {o} ({oi}).",
        ],
        c=buyer,
        w=pair["wanted_name"],
        wi=wanted,
        o=pair["other_name"],
        oi=other,
    )
    d.call("get_product", product_id=wanted)
    d.call("add_to_cart", customer_id=buyer, product_id=other, quantity=1)
    order = d.call("place_order", customer_id=buyer, payment_method="wallet")["order"]
    d.answer(
        f"{pair['wanted_name']} sold out while I was on it, so I ordered one {pair['other_name']} instead"
        f" (order {order['order_id']}).",
        [other, pair["other_name"]],
    )


def reorder_cancelled(d: Draft) -> None:
    order = d.pick(
        "SELECT o.order_id, o.customer_id FROM shop_orders o WHERE o.status = 'placed' AND NOT EXISTS"
        " (SELECT 1 FROM shop_cart_items i WHERE i.customer_id = o.customer_id) ORDER BY o.order_id"
    )
    oid, cid = order["order_id"], order["customer_id"]
    items = d.rows(
        "SELECT product_id, quantity FROM shop_order_items WHERE order_id = ? ORDER BY product_id", oid
    )
    if not items or len(items) > 3:
        raise Skip("an order of one to three products")
    reason = d.choice(["payment could not be verified", "warehouse error", "address check failed"])
    d.event(
        "store-cancelled",
        after_step=1,
        delay_s=d.choice([300, 600, 900]),
        calls=[("cancel_order", {"order_id": oid, "reason": reason})],
        notify=f"Your order {oid} was cancelled by the store ({reason}).",
    )
    d.not_before("reordered-before-the-cancellation", "store-cancelled", "place_order", customer_id=cid)
    d.knows(cid, oid)
    d.query(
        [
            "I'm customer {c}. Keep an eye on my order {o}; if the store cancels it, place it again with the"
            " same items, paid on delivery.",
            "Customer {c} here: watch order {o} for me, and should it get cancelled, reorder exactly the same"
            " things with payment on delivery.",
        ],
        c=cid,
        o=oid,
    )
    d.call("get_order", order_id=oid)
    _waited(d)
    for item in items:
        d.call("add_to_cart", customer_id=cid, product_id=item["product_id"], quantity=item["quantity"])
    again = d.call("place_order", customer_id=cid, payment_method="pay_on_delivery")["order"]
    d.answer(
        f"The store cancelled {oid} ({reason}), so I placed the same items again as order"
        f" {again['order_id']}, paid on delivery.",
        again["order_id"],
    )


# ---- wait for a reply -----------------------------------------------------------------------------------
QUESTIONS: Final = (
    ("Are you free for lunch on Friday?", "Friday works, let's meet at noon.", "noon"),
    ("Can you send me the slides from the meeting?", "Sure, I'll email them tonight.", "tonight"),
    ("Which day suits you for the hike?", "Sunday is best for me.", "Sunday"),
    ("Do you still have my umbrella?", "Yes, it's by my door, pick it up any time.", "door"),
    ("What time does the concert start?", "Doors open at 7, the show starts at 8.", "8"),
)


def wait_for_reply(d: Draft) -> None:
    pair = d.pick(
        "SELECT f.user_id, f.friend_id, u.display_name FROM messaging_friendships f JOIN messaging_users u"
        " ON u.user_id = f.friend_id ORDER BY f.user_id, f.friend_id"
    )
    user, friend, name = pair["user_id"], pair["friend_id"], pair["display_name"]
    question, reply, key = d.choice(QUESTIONS)
    thanks = d.choice(["Thanks!", "Great, thank you!", "Perfect, thanks."])
    d.event(
        "reply",
        when=StateFact(table="messaging_messages", where={"sender_id": user, "content": question}),
        delay_s=d.choice([300, 600, 900, 1200]),
        calls=[("send_message", {"sender_id": friend, "to_user_id": user, "content": reply})],
        notify=f"New message from {name}: {reply}",
    )
    d.knows(user)
    d.query(
        [
            'I\'m {u} on chat. Ask my friend {n} "{q}", wait for the answer, tell me what they said and'
            ' reply "{t}".',
            'Message {n} on chat for me ({u}): "{q}" Then wait until they answer, let me know what they'
            ' said, and answer them "{t}".',
        ],
        u=user,
        n=name,
        q=question,
        t=thanks,
    )
    d.call("list_friends", user_id=user)
    sent = d.call("send_message", sender_id=user, to_user_id=friend, content=question)
    _waited(d)
    messages = d.call("get_messages", user_id=user, conversation_id=sent["conversation_id"])["messages"]
    if not messages or messages[0]["content"] != reply:
        raise Skip("the reply is not the newest message")
    d.call("send_message", sender_id=user, to_user_id=friend, content=thanks)
    d.answer(f'{name} answered: "{reply}" I replied "{thanks}"', key)


TEMPLATES = [
    Template("banking.dynamic_transfer_at_time", ("banking",), transfer_at_time, category=DYNAMIC),
    Template("banking.dynamic_pay_after_salary", ("banking",), pay_after_salary, category=DYNAMIC),
    Template("shopping.dynamic_sold_out_switch", ("shopping",), sold_out_switch, category=DYNAMIC),
    Template("shopping.dynamic_reorder_cancelled", ("shopping",), reorder_cancelled, category=DYNAMIC),
    Template("ctool.messaging.dynamic_message_at_time", ("messaging",), message_at_time, category=DYNAMIC),
    Template("ctool.messaging.dynamic_wait_for_reply", ("messaging",), wait_for_reply, category=DYNAMIC),
]
