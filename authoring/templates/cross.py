"""Templates across two or three apps: a shop and a bank, a shop or a courier and a chat app, all
three at once. What one app returns (a cart total, an order's status, a parcel's) decides what the
next app is asked to do (an amount to move, which message to send).

The user is one person with an account in each app: they know their ids there, and their own
order and parcel numbers; they name friends by name, products by what they are.
"""

from __future__ import annotations

from typing import Any

from toolgym.authoring.generate import Draft, Skip, Template
from toolgym.authoring.templates.banking import _account, _customer_with, move_money
from toolgym.authoring.templates.common import money, plain
from toolgym.authoring.templates.ctool import _friend, _message_friend
from toolgym.authoring.templates.shopping import THING, cheapest_in_stock


def _cart_customer(d: Draft) -> str:
    customer: str = d.pick("SELECT DISTINCT customer_id FROM shop_cart_items ORDER BY customer_id")[
        "customer_id"
    ]
    return customer


def _checking_and_savings(d: Draft, banker: str) -> tuple[dict[str, Any], dict[str, Any]]:
    accounts = d.call("list_accounts", customer_id=banker)["accounts"]
    return _account(accounts, "checking"), _account(accounts, "savings")


def cart_affordable(d: Draft) -> None:
    shopper = _cart_customer(d)
    banker = _customer_with(d, "checking")["customer_id"]
    d.knows(shopper, banker)
    d.query(
        [
            "Can my checking account cover what's in my shopping cart? I'm {s} at the shop and {b} at the bank.",
            "Shop customer {s}, bank customer {b}: is my checking balance enough to pay for my cart?",
            "Does my checking account (bank ID {b}) hold enough for everything in my cart (shop ID {s})?",
        ],
        s=shopper,
        b=banker,
    )
    cart = d.call("view_cart", customer_id=shopper)["cart"]
    checking = _account(d.call("list_accounts", customer_id=banker)["accounts"], "checking")
    enough = checking["balance"] >= cart["total"]
    verdict = "yes" if enough else "no"
    d.answer(
        f"{verdict.capitalize()}: your cart comes to ${money(cart['total'])} and your checking account holds"
        f" ${money(checking['balance'])}.",
        verdict,
        plain(cart["total"]),
    )


def buy_and_set_aside(d: Draft) -> None:
    shopper = d.pick(
        "SELECT customer_id FROM shop_customers WHERE customer_id NOT IN (SELECT customer_id FROM shop_cart_items)"
        " ORDER BY customer_id"
    )["customer_id"]
    banker = _customer_with(d, "checking", "savings")["customer_id"]
    row = d.pick(
        "SELECT DISTINCT category, brand FROM shop_products WHERE stock > 0 ORDER BY category, brand"
    )
    d.knows(shopper, banker)
    d.query(
        [
            "Order the cheapest in-stock {b} {t} for me (shop customer {s}), paying on delivery, and move"
            " the order total from my checking to my savings (bank customer {k}) so the money is set aside.",
            "I'm {s} at the shop and {k} at the bank. Buy the least expensive {c} item from {b} that's in stock,"
            " cash on delivery, then transfer exactly its total from checking into savings.",
        ],
        b=row["brand"],
        c=row["category"],
        t=THING[row["category"]],
        s=shopper,
        k=banker,
    )
    product = cheapest_in_stock(d, row["category"], row["brand"])
    d.call("add_to_cart", customer_id=shopper, product_id=product["product_id"], quantity=1)
    order = d.call("place_order", customer_id=shopper, payment_method="pay_on_delivery")["order"]
    checking, savings = _checking_and_savings(d, banker)
    moved = move_money(d, checking, savings, order["total"])
    d.answer(
        f"Ordered the {product['name']} (${money(order['total'])}, pay on delivery) and moved"
        f" ${money(order['total'])} to savings, which now holds ${money(moved['to_balance'])}.",
        product["name"],
        plain(order["total"]),
    )


def order_news_to_friend(d: Draft) -> None:
    order = d.pick("SELECT order_id FROM shop_orders ORDER BY order_id")["order_id"]
    user, name = _friend(d)
    d.knows(order, user)
    shipped, waiting = "Your gift is on the way!", "Your gift hasn't shipped yet."
    d.query(
        [
            'Check my order {o}. If it has shipped or arrived, message my friend {f} "{y}", otherwise "{n}".'
            " My chat user ID is {u}.",
            'I\'m chat user {u}. Look up order {o}: when it has gone out, tell {f} "{y}"; if not, tell them "{n}"',
        ],
        o=order,
        f=name,
        u=user,
        y=shipped,
        n=waiting,
    )
    status = d.call("track_order", order_id=order)["order_status"]
    if status == "cancelled":
        raise Skip("a cancelled order is neither")
    text = shipped if status in ("shipped", "delivered") else waiting
    _message_friend(d, user, name, text)
    d.answer(f'Order {order} is {status}, so I told {name}: "{text}"', status, name)


def parcel_news_to_friend(d: Draft, *, ask: bool = False) -> None:
    parcel = d.pick("SELECT tracking_number FROM express_shipments ORDER BY tracking_number")[
        "tracking_number"
    ]
    user, name = _friend(d)
    arrived, coming = "Your parcel has arrived!", "Your parcel is still on its way."
    d.knows(parcel, *(() if ask else (user,)))
    who = "" if ask else f" I'm user {user} on chat."
    d.query(
        [
            'Has my parcel {p} been delivered? Message my friend {f} "{y}" if it has, or "{n}" if not.{w}',
            'Look up parcel {p} and tell {f} on chat "{y}" when it is delivered, otherwise "{n}"{w}',
        ],
        p=parcel,
        f=name,
        y=arrived,
        n=coming,
        w=who if who else "",
    )
    status = d.call("track_shipment", tracking_number=parcel)["shipment_status"]
    text = arrived if status == "delivered" else coming
    if ask:
        user = d.ask(
            "user_id", user, "What is your user ID on the chat app?", keywords=["user id", "chat id"]
        )
    _message_friend(d, user, name, text)
    d.answer(f'Parcel {parcel} is {status.replace("_", " ")}; I told {name}: "{text}"', name)


def parcel_news_ask(d: Draft) -> None:
    parcel_news_to_friend(d, ask=True)


def cover_cart_and_tell(d: Draft) -> None:
    shopper = _cart_customer(d)
    banker = _customer_with(d, "checking", "savings")["customer_id"]
    user, name = _friend(d)
    note = "Cart is paid for, ordering now."
    d.knows(shopper, banker, user)
    d.query(
        [
            "Top up my checking from my savings by exactly my shopping cart's total, then tell my friend {f}"
            ' "{m}" on chat. I\'m {s} at the shop, {b} at the bank and {u} on chat.',
            "Shop ID {s}, bank ID {b}, chat ID {u}: move the amount my cart comes to from savings into checking,"
            ' and message {f} "{m}"',
        ],
        f=name,
        m=note,
        s=shopper,
        b=banker,
        u=user,
    )
    cart = d.call("view_cart", customer_id=shopper)["cart"]
    checking, savings = _checking_and_savings(d, banker)
    moved = move_money(d, savings, checking, cart["total"])
    _message_friend(d, user, name, note)
    d.answer(
        f"Moved ${money(cart['total'])} into checking (now ${money(moved['to_balance'])}) and told {name}.",
        plain(cart["total"]),
    )


def refuse_pay_cart_by_bank(d: Draft) -> None:
    shopper = _cart_customer(d)
    account: dict[str, Any] = d.pick(
        "SELECT account_id FROM bank_accounts WHERE status = 'active' ORDER BY account_id"
    )
    d.knows(shopper, account["account_id"])
    d.query(
        [
            "Pay for my cart (shop customer {s}) directly with my bank account {a}.",
            "Charge my shopping cart to bank account {a} and check out; I'm customer {s} at the shop.",
        ],
        s=shopper,
        a=account["account_id"],
    )
    d.refuse(
        (),
        "I'm sorry, I can't do that: the shop takes its wallet or payment on delivery, and none of my tools"
        " charges a bank account for it.",
    )


BANK_SHOP = ("banking", "shopping")
TEMPLATES = [
    Template("cross.cart_affordable", BANK_SHOP, cart_affordable),
    Template("cross.buy_and_set_aside", BANK_SHOP, buy_and_set_aside),
    Template("cross.order_news_to_friend", ("shopping", "messaging"), order_news_to_friend),
    Template("cross.parcel_news_to_friend", ("express", "messaging"), parcel_news_to_friend),
    Template("cross.parcel_news_ask_user_id", ("express", "messaging"), parcel_news_ask),
    Template("cross.cover_cart_and_tell", ("banking", "shopping", "messaging"), cover_cart_and_tell),
    Template("cross.refuse_pay_cart_by_bank", BANK_SHOP, refuse_pay_cart_by_bank),
]
