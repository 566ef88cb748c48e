"""Templates of the `shopping` app: search, cart, orders, tracking, cancelling; asks and refusals.

A user knows their own customer id and order numbers, never a product id (they find products by
what they are) or the id of an order the chain places.
"""

from __future__ import annotations

from typing import Any

from toolgym.authoring.generate import Draft, Skip, Template
from toolgym.authoring.templates.common import money, plain

APP = ("shopping",)
REASONS = (
    "I ordered it by mistake",
    "I found a better price elsewhere",
    "I changed my mind",
    "it's no longer needed",
)
# a category as a person names one thing of it: "the cheapest Playfort toy"
THING = {
    "beauty": "beauty product", "books": "book", "clothing": "piece of clothing", "electronics": "gadget",
    "home": "home item", "kitchen": "kitchen tool", "sports": "sports item", "toys": "toy",
}  # fmt: skip
SORTS = {
    "cheapest": ("price", "asc"),
    "best-rated": ("rating", "desc"),
    "most reviewed": ("review_count", "desc"),
}


def _order(d: Draft, status: str) -> dict[str, Any]:
    return d.pick("SELECT * FROM shop_orders WHERE status = ? ORDER BY order_id", status)


def order_status(d: Draft) -> None:
    order = _order(d, d.choice(["placed", "shipped", "delivered", "cancelled"]))["order_id"]
    d.knows(order)
    d.query(
        [
            "What's the status of my order {o}?",
            "Can you check on order {o} for me?",
            "Has my order {o} gone out yet?",
            "I'd like an update on order {o}.",
        ],
        o=order,
    )
    result = d.call("track_order", order_id=order)
    status = result["order_status"]
    d.answer(f"Order {order} is {status}.", status)


def delivery_date(d: Draft) -> None:
    order = d.pick(
        "SELECT order_id FROM shop_orders WHERE status = 'shipped' AND estimated_delivery >= ? ORDER BY order_id",
        d.world.start.isoformat(),
    )["order_id"]
    d.knows(order)
    d.query(
        [
            "When should my order {o} arrive?",
            "What's the estimated delivery date for order {o}?",
            "My order {o} shipped; when will it be delivered?",
        ],
        o=order,
    )
    result = d.call("track_order", order_id=order)
    day = (result["estimated_delivery"] or "")[:10]
    if not day:
        raise Skip("no estimate")
    d.answer(
        f"Order {order} ({result['order_status']}, tracking {result['tracking_number']}) is due on {day}.",
        day,
    )


def _category_and_brand(d: Draft) -> tuple[str, str]:
    row = d.pick(
        "SELECT DISTINCT category, brand FROM shop_products WHERE stock > 0 ORDER BY category, brand"
    )
    return row["category"], row["brand"]


def best_product(d: Draft) -> None:
    category, brand = _category_and_brand(d)
    which = d.choice(sorted(SORTS))
    by_brand = d.rng.random() < 0.5
    d.query(
        [
            "What's the {w} {c} product you have in stock{b}?",
            "Find me the {w} item in {c}{b} that I can buy right now.",
            "Which {c} product{b} is the {w}, among those in stock?",
        ],
        w=which,
        c=category,
        b=f" from {brand}" if by_brand else "",
    )
    sort_by, order = SORTS[which]
    filters: dict[str, Any] = {
        "category": category,
        "in_stock_only": True,
        "sort_by": sort_by,
        "sort_order": order,
    }
    if by_brand:
        filters["brand"] = brand
    products = d.call("search_products", page_size=5, **filters)["products"]
    if not products:
        raise Skip("nothing found")
    top = products[0]
    if len(products) > 1 and products[1][sort_by] == top[sort_by]:
        raise Skip("a tie for first place")
    d.answer(
        f"The {which} is the {top['name']} at ${money(top['price'])} (rated {top['rating']}).", top["name"]
    )


def wallet(d: Draft) -> None:
    customer = d.pick("SELECT customer_id FROM shop_customers ORDER BY customer_id")["customer_id"]
    d.knows(customer)
    d.query(
        [
            "How much is left in my shop wallet? I'm customer {c}.",
            "Customer {c}: what's my wallet balance?",
            "Can you check my store credit? My customer ID is {c}.",
        ],
        c=customer,
    )
    balance = d.call("get_customer", customer_id=customer)["customer"]["wallet_balance"]
    d.answer(f"Your wallet holds ${money(balance)}.", plain(balance))


def cart_total(d: Draft) -> None:
    customer = d.pick("SELECT DISTINCT customer_id FROM shop_cart_items ORDER BY customer_id")["customer_id"]
    d.knows(customer)
    d.query(
        [
            "I'm customer {c}. What's in my cart and what does it come to?",
            "Customer {c} here: how much is my cart worth right now?",
            "What's the total of my shopping cart? Customer ID {c}.",
        ],
        c=customer,
    )
    cart = d.call("view_cart", customer_id=customer)["cart"]
    names = ", ".join(i["name"] for i in cart["items"])
    d.answer(f"Your cart holds {names}, ${money(cart['total'])} in total.", plain(cart["total"]))


def cheapest_in_stock(d: Draft, category: str, brand: str) -> dict[str, Any]:
    """The brand's cheapest in-stock product of the category (Skip when none, or two tie on price)."""
    products = d.call(
        "search_products", category=category, brand=brand, in_stock_only=True, sort_by="price", page_size=5
    )["products"]
    if not products or (len(products) > 1 and products[0]["price"] == products[1]["price"]):
        raise Skip("no single cheapest product")
    product: dict[str, Any] = products[0]
    return product


def add_to_cart(d: Draft) -> None:
    customer = d.pick("SELECT customer_id FROM shop_customers ORDER BY customer_id")["customer_id"]
    category, brand = _category_and_brand(d)
    quantity = d.choice([1, 1, 2, 3])
    d.knows(customer)
    d.query(
        [
            "I'm customer {c}. Put {q} of the cheapest {b} {t} in stock into my cart.",
            "Customer {c}: add {q} of the least expensive in-stock {k} product from {b} to my cart.",
            "Please find the cheapest {t} {b} makes that's in stock and add {q} to my cart; I'm customer {c}.",
        ],
        c=customer,
        q=quantity,
        b=brand,
        k=category,
        t=THING[category],
    )
    product = cheapest_in_stock(d, category, brand)
    cart = d.call("add_to_cart", customer_id=customer, product_id=product["product_id"], quantity=quantity)[
        "cart"
    ]
    d.answer(
        f"Added {quantity} x {product['name']} (${money(product['price'])} each); your cart now comes to"
        f" ${money(cart['total'])}.",
        product["name"],
    )


def buy_product(d: Draft) -> None:
    customer = d.pick(
        "SELECT customer_id FROM shop_customers WHERE wallet_cents > 20000 AND customer_id NOT IN"
        " (SELECT customer_id FROM shop_cart_items) ORDER BY customer_id"
    )["customer_id"]
    category, brand = _category_and_brand(d)
    d.knows(customer)
    d.query(
        [
            "I'm customer {c}. Buy me the cheapest {b} {t} in stock and pay with my wallet.",
            "Customer {c}: order the least expensive {k} product from {b} that's available, paid from my wallet.",
            "Please purchase the cheapest in-stock {b} {k} product for me with my store wallet; customer ID {c}.",
        ],
        c=customer,
        b=brand,
        k=category,
        t=THING[category],
    )
    product = cheapest_in_stock(d, category, brand)
    d.call("add_to_cart", customer_id=customer, product_id=product["product_id"], quantity=1)
    order = d.call("place_order", customer_id=customer, payment_method="wallet")["order"]
    d.answer(
        f"Ordered the {product['name']} for ${money(order['total'])}, paid from your wallet.", product["name"]
    )


def checkout(d: Draft) -> None:
    customer = d.pick("SELECT DISTINCT customer_id FROM shop_cart_items ORDER BY customer_id")["customer_id"]
    method = d.choice(["wallet", "pay_on_delivery"])
    d.knows(customer)
    d.query(
        [
            "I'm customer {c}. Please check out my cart and pay {m}.",
            "Customer {c}: place the order for everything in my cart, {m}.",
        ],
        c=customer,
        m="with my wallet" if method == "wallet" else "on delivery",
    )
    order = d.call("place_order", customer_id=customer, payment_method=method)["order"]
    d.answer(
        f"Your order is placed: {len(order['items'])} items, ${money(order['total'])}.", plain(order["total"])
    )


def cancel_order(d: Draft) -> None:
    order = _order(d, "placed")
    reason = d.choice(REASONS)
    d.knows(order["order_id"])
    d.query(
        [
            "Please cancel my order {o}; {r}.",
            "I need to cancel order {o} because {r}.",
            "Cancel order {o}, please. {R}.",
        ],
        o=order["order_id"],
        r=reason,
        R=reason[:1].upper() + reason[1:],
    )
    result = d.call("cancel_order", order_id=order["order_id"], reason=reason)
    d.answer(
        f"Order {order['order_id']} is cancelled; ${money(result['refunded'])} goes back to your wallet.",
        "cancelled",
    )


def cancel_latest(d: Draft) -> None:
    customer = d.pick(
        "SELECT DISTINCT customer_id FROM shop_orders WHERE status = 'placed' ORDER BY customer_id"
    )["customer_id"]
    reason = d.choice(REASONS)
    d.knows(customer)
    d.query(
        [
            "I'm customer {c}. Cancel my most recent order that hasn't shipped yet; {r}.",
            "Customer {c}: please cancel my latest unshipped order, {r}.",
        ],
        c=customer,
        r=reason,
    )
    orders = d.call("list_orders", customer_id=customer, status="placed")["orders"]
    latest = orders[0]
    result = d.call("cancel_order", order_id=latest["order_id"], reason=reason)
    d.answer(
        f"I cancelled order {latest['order_id']} (${money(latest['total'])}); refunded ${money(result['refunded'])}.",
        latest["order_id"],
    )


def cancel_ask(d: Draft) -> None:
    order = _order(d, "placed")
    reason = d.choice(REASONS)
    d.query(
        ["I want to cancel one of my orders; {r}.", "Please cancel an order of mine, {r}."],
        r=reason,
    )
    order_id = d.ask(
        "order_id",
        order["order_id"],
        "Which order is it? Please give me the order number.",
        keywords=["order number", "which order"],
    )
    d.call("cancel_order", order_id=order_id, reason=reason)
    d.answer(f"Order {order_id} is cancelled.", "cancelled")


def remove_from_cart(d: Draft) -> None:
    line = d.pick(
        "SELECT c.customer_id, p.name FROM shop_cart_items c JOIN shop_products p USING (product_id)"
        " WHERE (SELECT count(*) FROM shop_cart_items c2 JOIN shop_products p2 USING (product_id)"
        " WHERE c2.customer_id = c.customer_id AND p2.name = p.name) = 1 ORDER BY c.customer_id, p.name"
    )
    d.knows(line["customer_id"])
    d.query(
        [
            "I'm customer {c}. Take the {n} out of my cart.",
            "Customer {c}: remove the {n} from my shopping cart, please.",
        ],
        c=line["customer_id"],
        n=line["name"],
    )
    cart = d.call("view_cart", customer_id=line["customer_id"])["cart"]
    item = next(i for i in cart["items"] if i["name"] == line["name"])
    after = d.call("remove_from_cart", customer_id=line["customer_id"], product_id=item["product_id"])["cart"]
    d.answer(
        f"Removed the {line['name']}; your cart now totals ${money(after['total'])}.", plain(after["total"])
    )


def reorder(d: Draft) -> None:
    order = d.pick(
        "SELECT o.order_id, o.customer_id FROM shop_orders o WHERE o.status = 'delivered' AND o.customer_id NOT IN"
        " (SELECT customer_id FROM shop_cart_items) ORDER BY o.order_id"
    )
    method = d.choice(["wallet", "pay_on_delivery"])
    d.knows(order["order_id"], order["customer_id"])
    d.query(
        [
            "I'm customer {c}. Order everything from my order {o} again, same quantities, and pay {m}.",
            "Customer {c}: please put the items of order {o} back in my cart and check out, paying {m}.",
            "Could you repeat my order {o} for me? Same items and amounts, paid {m}. My customer ID is {c}.",
        ],
        c=order["customer_id"],
        o=order["order_id"],
        m="with my wallet" if method == "wallet" else "on delivery",
    )
    items = d.call("get_order", order_id=order["order_id"])["order"]["items"]
    for item in items:
        d.call(
            "add_to_cart",
            customer_id=order["customer_id"],
            product_id=item["product_id"],
            quantity=item["quantity"],
        )
    placed = d.call("place_order", customer_id=order["customer_id"], payment_method=method)["order"]
    d.answer(
        f"Reordered {len(items)} item{'s' if len(items) > 1 else ''} from {order['order_id']}:"
        f" ${money(placed['total'])} in total.",
        plain(placed["total"]),
    )


def refuse_return(d: Draft) -> None:
    order = _order(d, "delivered")["order_id"]
    d.knows(order)
    d.query(
        [
            "I'd like to return order {o} and get my money back.",
            "Order {o} arrived damaged; please start a return and refund.",
        ],
        o=order,
    )
    d.refuse((), f"I'm sorry, I can't start a return for {order}: I have no tool for returns or refunds.")


def refuse_cancel(d: Draft) -> None:
    order = _order(d, "placed")["order_id"]
    d.knows(order)
    d.query(["Please cancel my order {o}.", "Cancel order {o} for me, please."], o=order)
    d.refuse(["cancel_order"], f"I cannot cancel order {order}: no tool to cancel orders is available to me.")


TEMPLATES = [
    Template("shopping.order_status", APP, order_status),
    Template("shopping.delivery_date", APP, delivery_date),
    Template("shopping.best_product", APP, best_product),
    Template("shopping.wallet", APP, wallet),
    Template("shopping.cart_total", APP, cart_total),
    Template("shopping.add_cheapest_to_cart", APP, add_to_cart),
    Template("shopping.buy_cheapest", APP, buy_product),
    Template("shopping.checkout_cart", APP, checkout),
    Template("shopping.cancel_order", APP, cancel_order),
    Template("shopping.cancel_latest_order", APP, cancel_latest),
    Template("shopping.cancel_ask_order", APP, cancel_ask),
    Template("shopping.remove_from_cart", APP, remove_from_cart),
    Template("shopping.reorder_past_order", APP, reorder),
    Template("shopping.refuse_return", APP, refuse_return),
    Template("shopping.refuse_cancel", APP, refuse_cancel),
]
