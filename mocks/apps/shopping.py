"""Shopping: a product catalogue, carts, orders, a customer wallet, shipping.

Semantics: searching searches the seeded rows (filters, sorting, pagination); placing an order
takes the customer's cart, checks and decrements stock and charges the wallet (or nothing, for
pay-on-delivery); a placed order can be cancelled (stock and wallet are given back) or shipped; a
cancelled order cannot ship and a shipped order cannot be cancelled. Money is stored in cents and
shown in dollars.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Volatile, format_id, read, set_counter, write
from toolgym.mocks.clock import format_time
from toolgym.mocks.responses import (
    bad_request,
    check_range,
    conflict,
    from_cents,
    not_found,
    ok,
    to_cents,
    unprocessable,
)
from toolgym.mocks.seeding import insert_rows, pick_name
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

CATALOGUE: Final[dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[int, int]]]] = {
    # category: (brands, product nouns, price range in cents)
    "electronics": (
        ("Voltix", "Nimbus", "Arcadia", "Quanta"),
        ("Headphones", "Bluetooth Speaker", "USB-C Charger", "Smartwatch", "E-Reader", "Webcam"),
        (1500, 45000),
    ),
    "home": (
        ("Hearth", "Lumen", "Oakline"),
        ("Table Lamp", "Throw Blanket", "Wall Clock", "Storage Basket", "Doormat"),
        (900, 12000),
    ),
    "kitchen": (
        ("ChefMate", "Copperleaf", "Brewster"),
        ("Chef Knife", "Cast Iron Skillet", "Coffee Grinder", "Cutting Board", "Kettle", "Blender"),
        (1200, 25000),
    ),
    "books": (
        ("Penwright Press", "Northstar Books"),
        ("Cookbook", "Mystery Novel", "Travel Guide", "Poetry Collection", "Science Primer"),
        (700, 4500),
    ),
    "toys": (
        ("Tinker", "Bloomkid", "Playfort"),
        ("Building Blocks", "Puzzle", "Plush Bear", "Toy Train", "Board Game"),
        (800, 9000),
    ),
    "sports": (
        ("Stride", "Peakform", "Aquafin"),
        ("Yoga Mat", "Running Shoes", "Water Bottle", "Dumbbell Set", "Tennis Racket"),
        (1000, 20000),
    ),
    "clothing": (
        ("Fernweave", "Urbanthread", "Kestrel"),
        ("Rain Jacket", "Wool Socks", "Denim Jeans", "Hoodie", "Sun Hat"),
        (900, 18000),
    ),
    "beauty": (
        ("Petalwise", "Dermalux"),
        ("Face Cream", "Shampoo", "Lip Balm", "Sunscreen", "Hair Dryer"),
        (500, 9000),
    ),
}
CATEGORIES: Final = tuple(sorted(CATALOGUE))
ADJECTIVES: Final = ("Classic", "Compact", "Deluxe", "Eco", "Pro", "Travel", "Ultra", "Everyday", "Premium")
FEATURES: Final = (
    "lightweight and durable",
    "easy to clean",
    "award-winning design",
    "great for gifts",
    "built to last",
    "made from recycled materials",
    "a customer favourite",
)
FIRST_NAMES: Final = (
    "Ava",
    "Ben",
    "Chloe",
    "Diego",
    "Emma",
    "Farah",
    "Gus",
    "Hana",
    "Ivan",
    "Jade",
    "Kai",
    "Lena",
)
LAST_NAMES: Final = (
    "Nguyen",
    "Smith",
    "Garcia",
    "Okafor",
    "Muller",
    "Rossi",
    "Tanaka",
    "Kowalski",
    "Silva",
    "Brown",
)
CITIES: Final = ("Springfield", "Riverton", "Lakeside", "Hillview", "Brookfield")

SORT_KEYS: Final = ("relevance", "price", "rating", "review_count", "name", "newest")
ORDER_STATUSES: Final = ("placed", "shipped", "delivered", "cancelled")
PAYMENT_METHODS: Final = ("wallet", "pay_on_delivery")
DELIVERY_DAYS: Final = 3

N_PRODUCTS: Final = 300
N_CUSTOMERS: Final = 40
N_ORDERS: Final = 150


class ShoppingApp(App):
    name = "shopping"
    description = "An online shop: search products, manage a cart, place, track, ship and cancel orders."
    version = "1"
    schema = f"""
    CREATE TABLE shop_products (
        product_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        category TEXT NOT NULL,
        brand TEXT NOT NULL,
        price_cents INTEGER NOT NULL CHECK (price_cents > 0),
        rating REAL NOT NULL,
        review_count INTEGER NOT NULL,
        stock INTEGER NOT NULL CHECK (stock >= 0),
        description TEXT NOT NULL,
        listed_at TEXT NOT NULL
    );
    CREATE INDEX shop_products_category ON shop_products(category);
    CREATE TABLE shop_customers (
        customer_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        email TEXT NOT NULL UNIQUE,
        city TEXT NOT NULL,
        wallet_cents INTEGER NOT NULL CHECK (wallet_cents >= 0)
    );
    CREATE TABLE shop_cart_items (
        customer_id TEXT NOT NULL,
        product_id TEXT NOT NULL,
        quantity INTEGER NOT NULL CHECK (quantity > 0),
        added_at TEXT NOT NULL,
        PRIMARY KEY (customer_id, product_id)
    );
    CREATE TABLE shop_orders (
        order_id TEXT PRIMARY KEY,
        customer_id TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ({", ".join(f"'{s}'" for s in ORDER_STATUSES)})),
        payment_method TEXT NOT NULL,
        total_cents INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        shipped_at TEXT,
        estimated_delivery TEXT,
        tracking_number TEXT UNIQUE,
        cancel_reason TEXT
    );
    CREATE INDEX shop_orders_customer ON shop_orders(customer_id);
    CREATE TABLE shop_order_items (
        order_id TEXT NOT NULL,
        product_id TEXT NOT NULL,
        quantity INTEGER NOT NULL CHECK (quantity > 0),
        unit_price_cents INTEGER NOT NULL,
        PRIMARY KEY (order_id, product_id)
    );
    """
    # bookkeeping timestamps: an episode that does the right thing at another moment still matches
    volatile: ClassVar[Volatile] = {"shop_orders": ["updated_at"], "shop_cart_items": ["added_at"]}

    # ---- seed data ---------------------------------------------------------------------------
    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        products: list[dict[str, Any]] = []
        for i in range(1, N_PRODUCTS + 1):
            category = CATEGORIES[(i - 1) % len(CATEGORIES)]
            brands, nouns, (lo, hi) = CATALOGUE[category]
            brand, noun, adjective = rng.choice(brands), rng.choice(nouns), rng.choice(ADJECTIVES)
            name = f"{brand} {adjective} {noun}"
            products.append(
                {
                    "product_id": format_id("PRD", i, 5),
                    "name": name,
                    "category": category,
                    "brand": brand,
                    "price_cents": rng.randrange(lo, hi, 100) + 99,
                    "rating": round(rng.uniform(2.5, 5.0), 1),
                    "review_count": rng.randint(0, 4000),
                    "stock": 0 if rng.random() < 0.08 else rng.randint(1, 60),
                    "description": f"{name}: {rng.choice(FEATURES)}, {rng.choice(FEATURES)}.",
                    "listed_at": format_time(clock - timedelta(days=rng.randint(1, 720))),
                }
            )
        insert_rows(db, "shop_products", products)

        customers: list[dict[str, Any]] = []
        for i in range(1, N_CUSTOMERS + 1):
            first, last = pick_name(rng, FIRST_NAMES, LAST_NAMES)
            customers.append(
                {
                    "customer_id": format_id("CUS", i, 5),
                    "name": f"{first} {last}",
                    "email": f"{first.lower()}.{last.lower()}{i}@example.com",
                    "city": rng.choice(CITIES),
                    "wallet_cents": rng.randrange(0, 60000, 50),
                }
            )
        insert_rows(db, "shop_customers", customers)

        orders, items = [], []
        tracking = 0
        weights = (0.2, 0.2, 0.5, 0.1)
        for i in range(1, N_ORDERS + 1):
            order_id = format_id("ORD", i)
            created = clock - timedelta(days=rng.randint(1, 60), minutes=rng.randint(0, 1439))
            status = rng.choices(ORDER_STATUSES, weights)[0]
            picks = rng.sample(products, rng.randint(1, 3))
            total = 0
            for p in picks:
                quantity = rng.randint(1, 3)
                total += quantity * p["price_cents"]
                items.append(
                    {
                        "order_id": order_id,
                        "product_id": p["product_id"],
                        "quantity": quantity,
                        "unit_price_cents": p["price_cents"],
                    }
                )
            shipped_at = estimated = tracking_number = cancel_reason = None
            if status in ("shipped", "delivered"):
                tracking += 1
                tracking_number = format_id("TRK", tracking)
                shipped = created + timedelta(days=1)
                shipped_at, estimated = (
                    format_time(shipped),
                    format_time(shipped + timedelta(days=DELIVERY_DAYS)),
                )
            if status == "cancelled":
                cancel_reason = rng.choice(("changed my mind", "found a better price", "ordered by mistake"))
            orders.append(
                {
                    "order_id": order_id,
                    "customer_id": rng.choice(customers)["customer_id"],
                    "status": status,
                    "payment_method": rng.choice(PAYMENT_METHODS),
                    "total_cents": total,
                    "created_at": format_time(created),
                    "updated_at": format_time(created),
                    "shipped_at": shipped_at,
                    "estimated_delivery": estimated,
                    "tracking_number": tracking_number,
                    "cancel_reason": cancel_reason,
                }
            )
        insert_rows(db, "shop_orders", orders)
        insert_rows(db, "shop_order_items", items)
        set_counter(db, "ORD", N_ORDERS)
        set_counter(db, "TRK", tracking)

        cart = {}
        for c in rng.sample(customers, 12):
            for p in rng.sample(products, rng.randint(1, 3)):
                if p["stock"] > 0:
                    cart[(c["customer_id"], p["product_id"])] = {
                        "customer_id": c["customer_id"],
                        "product_id": p["product_id"],
                        "quantity": 1,
                        "added_at": format_time(clock - timedelta(hours=rng.randint(1, 72))),
                    }
        insert_rows(db, "shop_cart_items", cart.values())

    # ---- helpers -----------------------------------------------------------------------------
    @staticmethod
    def _product_view(p: dict[str, Any]) -> dict[str, Any]:
        return {
            "product_id": p["product_id"],
            "name": p["name"],
            "category": p["category"],
            "brand": p["brand"],
            "price": from_cents(p["price_cents"]),
            "rating": p["rating"],
            "review_count": p["review_count"],
            "stock": p["stock"],
            "in_stock": p["stock"] > 0,
        }

    def _customer(self, customer_id: str) -> dict[str, Any]:
        return self.get_or_404("shop_customers", "customer_id", customer_id, what="customer")

    def _order(self, order_id: str) -> dict[str, Any]:
        return self.get_or_404("shop_orders", "order_id", order_id, what="order")

    def _order_view(self, order: dict[str, Any]) -> dict[str, Any]:
        items = self.rows(
            "SELECT i.product_id, p.name, i.quantity, i.unit_price_cents FROM shop_order_items i"
            " JOIN shop_products p USING (product_id) WHERE i.order_id = ? ORDER BY i.rowid",
            (order["order_id"],),
        )
        return {
            "order_id": order["order_id"],
            "customer_id": order["customer_id"],
            "status": order["status"],
            "payment_method": order["payment_method"],
            "total": from_cents(order["total_cents"]),
            "created_at": order["created_at"],
            "shipped_at": order["shipped_at"],
            "tracking_number": order["tracking_number"],
            "items": [
                {
                    "product_id": i["product_id"],
                    "name": i["name"],
                    "quantity": i["quantity"],
                    "unit_price": from_cents(i["unit_price_cents"]),
                }
                for i in items
            ],
        }

    def _cart_view(self, customer_id: str) -> dict[str, Any]:
        lines = self.rows(
            "SELECT c.product_id, p.name, p.price_cents, c.quantity, p.stock FROM shop_cart_items c"
            " JOIN shop_products p USING (product_id) WHERE c.customer_id = ? ORDER BY c.rowid",
            (customer_id,),
        )
        total = sum(line["price_cents"] * line["quantity"] for line in lines)
        return {
            "customer_id": customer_id,
            "items": [
                {
                    "product_id": line["product_id"],
                    "name": line["name"],
                    "unit_price": from_cents(line["price_cents"]),
                    "quantity": line["quantity"],
                    "line_total": from_cents(line["price_cents"] * line["quantity"]),
                }
                for line in lines
            ],
            "item_count": sum(line["quantity"] for line in lines),
            "total": from_cents(total),
        }

    # ---- catalogue -----------------------------------------------------------------------------
    @read
    def search_products(
        self,
        query: Annotated[str, Param("words to look for in name, brand and description; empty = all")] = "",
        category: Annotated[str | None, Param("only this category", enum=CATEGORIES)] = None,
        brand: Annotated[str | None, Param("only this brand (exact, case-insensitive)")] = None,
        min_price: Annotated[float | None, Param("lowest price in dollars")] = None,
        max_price: Annotated[float | None, Param("highest price in dollars")] = None,
        min_rating: Annotated[float | None, Param("lowest average rating, 0-5")] = None,
        in_stock_only: Annotated[bool, Param("hide products that are out of stock")] = False,
        sort_by: Annotated[str, Param("sort key", enum=SORT_KEYS)] = "relevance",
        sort_order: Annotated[
            str | None, Param("asc or desc; default: the natural order of the key", enum=("asc", "desc"))
        ] = None,
        page: Annotated[int, Param("1-based page number")] = 1,
        page_size: Annotated[int, Param("results per page, 1-50")] = 10,
    ) -> dict[str, Any]:
        """Search the product catalogue with filters, sorting and pagination."""
        check_range("page", page, 1)
        check_range("page_size", page_size, 1, 50)
        if min_rating is not None:
            check_range("min_rating", min_rating, 0, 5)
        where: list[str] = []
        params: list[Any] = []
        terms = [t.lower() for t in query.split()]
        for term in terms:
            where.append("instr(lower(name || ' ' || brand || ' ' || description), ?) > 0")
            params.append(term)
        if category is not None:
            where.append("category = ?")
            params.append(category)
        if brand is not None:
            where.append("lower(brand) = lower(?)")
            params.append(brand)
        if min_price is not None:
            where.append("price_cents >= ?")
            params.append(to_cents("min_price", min_price))
        if max_price is not None:
            where.append("price_cents <= ?")
            params.append(to_cents("max_price", max_price))
        if min_price is not None and max_price is not None and min_price > max_price:
            raise bad_request("min_price is greater than max_price")
        if min_rating is not None:
            where.append("rating >= ?")
            params.append(min_rating)
        if in_stock_only:
            where.append("stock > 0")
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        total = int(self.scalar(f"SELECT count(*) FROM shop_products{clause}", params))

        # a term in the name counts twice, in the brand once; no query: most reviewed first
        relevance = " + ".join(
            ["0"] + ["2 * (instr(lower(name), ?) > 0) + (instr(lower(brand), ?) > 0)"] * len(terms)
        )
        columns = {
            "relevance": ("relevance", "desc"),
            "price": ("price_cents", "asc"),
            "rating": ("rating", "desc"),
            "review_count": ("review_count", "desc"),
            "name": ("name", "asc"),
            "newest": ("listed_at", "desc"),
        }
        column, natural = columns[sort_by]
        direction = (sort_order or natural).upper()
        order = f"{column} {direction}"
        if sort_by == "relevance":
            order += f", review_count {direction}"
        rows = self.rows(
            f"SELECT *, {relevance} AS relevance FROM shop_products{clause}"
            f" ORDER BY {order}, product_id LIMIT ? OFFSET ?",
            [*[t for t in terms for _ in range(2)], *params, page_size, (page - 1) * page_size],
        )
        return ok(
            total=total,
            page=page,
            page_size=page_size,
            products=[self._product_view(r) for r in rows],
        )

    @read
    def get_product(self, product_id: Annotated[str, Param("product id, e.g. PRD-00042")]) -> dict[str, Any]:
        """Details of one product: price, rating, stock and description."""
        p = self.get_or_404("shop_products", "product_id", product_id, what="product")
        return ok(
            product={**self._product_view(p), "description": p["description"], "listed_at": p["listed_at"]}
        )

    @read
    def list_categories(self) -> dict[str, Any]:
        """The product categories and how many products each has."""
        rows = self.rows(
            "SELECT category, count(*) AS product_count FROM shop_products"
            " GROUP BY category ORDER BY category"
        )
        return ok(categories=rows)

    @read
    def get_customer(
        self, customer_id: Annotated[str, Param("customer id, e.g. CUS-00001")]
    ) -> dict[str, Any]:
        """A customer's profile and wallet balance."""
        c = self._customer(customer_id)
        return ok(
            customer={
                "customer_id": c["customer_id"],
                "name": c["name"],
                "email": c["email"],
                "city": c["city"],
                "wallet_balance": from_cents(c["wallet_cents"]),
            }
        )

    # ---- cart ------------------------------------------------------------------------------------
    @read
    def view_cart(self, customer_id: Annotated[str, Param("customer id")]) -> dict[str, Any]:
        """The customer's cart: items, quantities and total."""
        self._customer(customer_id)
        return ok(cart=self._cart_view(customer_id))

    @write
    def add_to_cart(
        self,
        customer_id: Annotated[str, Param("customer id")],
        product_id: Annotated[str, Param("product id")],
        quantity: Annotated[int, Param("how many to add, at least 1")] = 1,
    ) -> dict[str, Any]:
        """Add a product to the customer's cart (more of it if it is there already)."""
        check_range("quantity", quantity, 1)
        self._customer(customer_id)
        p = self.get_or_404("shop_products", "product_id", product_id, what="product")
        have = self.scalar(
            "SELECT quantity FROM shop_cart_items WHERE customer_id = ? AND product_id = ?",
            (customer_id, product_id),
        )
        wanted = (have or 0) + quantity
        if wanted > p["stock"]:
            raise conflict(
                f"only {p['stock']} of {product_id} in stock; the cart would hold {wanted}",
                product_id=product_id,
                stock=p["stock"],
            )
        self.execute(
            "INSERT INTO shop_cart_items(customer_id, product_id, quantity, added_at) VALUES(?, ?, ?, ?)"
            " ON CONFLICT(customer_id, product_id) DO UPDATE SET quantity = excluded.quantity",
            (customer_id, product_id, wanted, self.now_iso()),
        )
        return ok(cart=self._cart_view(customer_id))

    @write
    def remove_from_cart(
        self,
        customer_id: Annotated[str, Param("customer id")],
        product_id: Annotated[str, Param("product id")],
        quantity: Annotated[int | None, Param("how many to remove; default: all of them")] = None,
    ) -> dict[str, Any]:
        """Remove a product (or some of it) from the customer's cart."""
        self._customer(customer_id)
        have = self.scalar(
            "SELECT quantity FROM shop_cart_items WHERE customer_id = ? AND product_id = ?",
            (customer_id, product_id),
        )
        if have is None:
            raise not_found("cart item", product_id)
        if quantity is not None:
            check_range("quantity", quantity, 1)
        if quantity is None or quantity >= have:
            self.execute(
                "DELETE FROM shop_cart_items WHERE customer_id = ? AND product_id = ?",
                (customer_id, product_id),
            )
        else:
            self.execute(
                "UPDATE shop_cart_items SET quantity = quantity - ? WHERE customer_id = ? AND product_id = ?",
                (quantity, customer_id, product_id),
            )
        return ok(cart=self._cart_view(customer_id))

    # ---- orders ----------------------------------------------------------------------------------
    @write
    def place_order(
        self,
        customer_id: Annotated[str, Param("customer id")],
        payment_method: Annotated[
            str, Param("wallet (charged now) or pay_on_delivery", enum=PAYMENT_METHODS)
        ] = "wallet",
    ) -> dict[str, Any]:
        """Order everything in the customer's cart: stock is taken, the wallet charged, the cart emptied."""
        customer = self._customer(customer_id)
        lines = self.rows(
            "SELECT c.product_id, c.quantity, p.price_cents, p.stock FROM shop_cart_items c"
            " JOIN shop_products p USING (product_id) WHERE c.customer_id = ? ORDER BY c.rowid",
            (customer_id,),
        )
        if not lines:
            raise unprocessable("the cart is empty")
        short = [line["product_id"] for line in lines if line["quantity"] > line["stock"]]
        if short:
            raise conflict(f"not enough stock for {', '.join(short)}", product_ids=short)
        total = sum(line["quantity"] * line["price_cents"] for line in lines)
        if payment_method == "wallet":
            if customer["wallet_cents"] < total:
                raise unprocessable(
                    "insufficient wallet balance:"
                    f" {from_cents(customer['wallet_cents'])} < {from_cents(total)}"
                )
            self.execute(
                "UPDATE shop_customers SET wallet_cents = wallet_cents - ? WHERE customer_id = ?",
                (total, customer_id),
            )
        order_id, now = self.next_id("ORD"), self.now_iso()
        self.execute(
            "INSERT INTO shop_orders(order_id, customer_id, status, payment_method, total_cents, created_at,"
            " updated_at) VALUES(?, ?, 'placed', ?, ?, ?, ?)",
            (order_id, customer_id, payment_method, total, now, now),
        )
        for line in lines:
            self.execute(
                "INSERT INTO shop_order_items(order_id, product_id, quantity, unit_price_cents)"
                " VALUES(?, ?, ?, ?)",
                (order_id, line["product_id"], line["quantity"], line["price_cents"]),
            )
            self.execute(
                "UPDATE shop_products SET stock = stock - ? WHERE product_id = ?",
                (line["quantity"], line["product_id"]),
            )
        self.execute("DELETE FROM shop_cart_items WHERE customer_id = ?", (customer_id,))
        return ok(order=self._order_view(self._order(order_id)))

    @read
    def get_order(self, order_id: Annotated[str, Param("order id, e.g. ORD-000123")]) -> dict[str, Any]:
        """An order's status, items and total."""
        return ok(order=self._order_view(self._order(order_id)))

    @read
    def list_orders(
        self,
        customer_id: Annotated[str, Param("customer id")],
        status: Annotated[str | None, Param("only orders with this status", enum=ORDER_STATUSES)] = None,
    ) -> dict[str, Any]:
        """The customer's orders, newest first."""
        self._customer(customer_id)
        sql = "SELECT order_id, status, total_cents, created_at FROM shop_orders WHERE customer_id = ?"
        params: list[Any] = [customer_id]
        if status is not None:
            sql += " AND status = ?"
            params.append(status)
        rows = self.rows(sql + " ORDER BY created_at DESC, order_id DESC", params)
        return ok(
            orders=[
                {
                    "order_id": r["order_id"],
                    "status": r["status"],
                    "total": from_cents(r["total_cents"]),
                    "created_at": r["created_at"],
                }
                for r in rows
            ]
        )

    @write
    def cancel_order(
        self,
        order_id: Annotated[str, Param("order id")],
        reason: Annotated[str, Param("why the order is cancelled")] = "",
    ) -> dict[str, Any]:
        """Cancel an order that has not shipped: stock goes back and a wallet payment is refunded."""
        order = self._order(order_id)
        if order["status"] == "cancelled":
            raise conflict(f"order {order_id} is already cancelled")
        if order["status"] in ("shipped", "delivered"):
            raise conflict(f"order {order_id} has already {order['status']}; it can no longer be cancelled")
        self.execute(
            "UPDATE shop_orders SET status = 'cancelled', cancel_reason = ?, updated_at = ?"
            " WHERE order_id = ?",
            (reason, self.now_iso(), order_id),
        )
        self.execute(
            "UPDATE shop_products SET stock = stock + i.quantity FROM shop_order_items i"
            " WHERE i.order_id = ? AND shop_products.product_id = i.product_id",
            (order_id,),
        )
        refunded = 0
        if order["payment_method"] == "wallet":
            refunded = order["total_cents"]
            self.execute(
                "UPDATE shop_customers SET wallet_cents = wallet_cents + ? WHERE customer_id = ?",
                (refunded, order["customer_id"]),
            )
        return ok(order_id=order_id, order_status="cancelled", refunded=from_cents(refunded))

    @write
    def ship_order(self, order_id: Annotated[str, Param("order id")]) -> dict[str, Any]:
        """Hand a placed order to the carrier; it gets a tracking number and a delivery estimate."""
        order = self._order(order_id)
        if order["status"] == "cancelled":
            raise conflict(f"order {order_id} is cancelled and cannot ship")
        if order["status"] != "placed":
            raise conflict(f"order {order_id} has already {order['status']}")
        now = self.now()
        tracking = self.next_id("TRK")
        self.execute(
            "UPDATE shop_orders SET status = 'shipped', shipped_at = ?, estimated_delivery = ?,"
            " tracking_number = ?, updated_at = ? WHERE order_id = ?",
            (
                format_time(now),
                format_time(now + timedelta(days=DELIVERY_DAYS)),
                tracking,
                format_time(now),
                order_id,
            ),
        )
        return ok(order_id=order_id, order_status="shipped", tracking_number=tracking)

    @read
    def track_order(self, order_id: Annotated[str, Param("order id")]) -> dict[str, Any]:
        """Where an order is: status, tracking number, estimated delivery."""
        order = self._order(order_id)
        delivered = order["status"] == "delivered" or (
            order["status"] == "shipped"
            and order["estimated_delivery"] is not None
            and datetime.fromisoformat(order["estimated_delivery"]) <= self.now()
        )
        return ok(
            order_id=order_id,
            order_status="delivered" if delivered else order["status"],
            tracking_number=order["tracking_number"],
            shipped_at=order["shipped_at"],
            estimated_delivery=order["estimated_delivery"],
        )
