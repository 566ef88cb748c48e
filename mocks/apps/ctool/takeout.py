"""Food delivery (takeout): restaurants in Shanghai, menus with stock, orders, delivery, ratings.

Semantics: an order takes items from one restaurant's menu, decrements their stock, must reach the
restaurant's minimum order and is paid from the wallet up front (or in cash on delivery). Its
progress is a timeline fixed at placing time: accepted 2 minutes later, handed to the rider after
the restaurant's preparation time, delivered after the ride (longer across districts); the status
is whatever part of that timeline lies before the simulated clock. An order can be cancelled only
before the rider picks it up (stock and wallet are given back), and rated once, after delivery;
ratings move the restaurant's average. Money is stored in fen and shown in yuan.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Volatile, format_id, read, set_counter, write
from toolgym.mocks.apps.ctool._common import FIRST_NAMES, LAST_NAMES, app_now, iso, utc
from toolgym.mocks.responses import (
    AppError,
    bad_request,
    check_range,
    conflict,
    from_cents,
    ok,
    paginate,
    to_cents,
    unprocessable,
)
from toolgym.mocks.seeding import insert_rows, person_name
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

CITY: Final = "Shanghai"
DISTRICTS: Final = ("Huangpu", "Xuhui", "Jing'an", "Pudong", "Changning", "Hongkou")
# cuisine: (name words, [(dish, menu category, price in fen)])
CUISINES: Final[dict[str, tuple[tuple[str, ...], tuple[tuple[str, str, int], ...]]]] = {
    "sichuan": (
        ("Chengdu", "Red Pepper", "Spice Route", "Panda"),
        (
            ("Mapo Tofu", "mains", 2800),
            ("Kung Pao Chicken", "mains", 3600),
            ("Twice-Cooked Pork", "mains", 3900),
            ("Fish in Chili Oil", "mains", 6800),
            ("Dan Dan Noodles", "staples", 1800),
            ("Spicy Wontons", "staples", 1600),
            ("Dry-Fried Green Beans", "sides", 2200),
            ("Steamed Rice", "staples", 300),
            ("Sour Plum Drink", "drinks", 800),
        ),
    ),
    "cantonese": (
        ("Pearl River", "Golden Dragon", "Harbor", "Jade Garden"),
        (
            ("Char Siu Rice", "mains", 3200),
            ("Roast Goose", "mains", 7800),
            ("Shrimp Dumplings", "dim_sum", 2600),
            ("Pineapple Bun", "dim_sum", 1200),
            ("Wonton Noodle Soup", "staples", 2400),
            ("Congee with Century Egg", "staples", 1800),
            ("Steamed Greens", "sides", 1800),
            ("Lemon Tea", "drinks", 1200),
        ),
    ),
    "shanghainese": (
        ("Old Bund", "Lane House", "Jing'an", "Shikumen"),
        (
            ("Xiaolongbao", "dim_sum", 2200),
            ("Shengjian Bao", "dim_sum", 1800),
            ("Braised Pork Belly", "mains", 4800),
            ("Drunken Chicken", "mains", 3800),
            ("Scallion Oil Noodles", "staples", 1600),
            ("Sweet and Sour Ribs", "mains", 4200),
            ("Soy Milk", "drinks", 500),
        ),
    ),
    "japanese": (
        ("Sakura", "Kyoto", "Umami", "Blue Wave"),
        (
            ("Salmon Sushi Set", "mains", 6800),
            ("Chicken Katsu Curry", "mains", 4200),
            ("Tonkotsu Ramen", "staples", 3800),
            ("Beef Don", "mains", 3900),
            ("Gyoza", "sides", 1800),
            ("Miso Soup", "sides", 800),
            ("Matcha Latte", "drinks", 2200),
        ),
    ),
    "western": (
        ("Brick Oven", "Liberty", "Urban Grill", "Corner"),
        (
            ("Cheeseburger", "mains", 4500),
            ("Margherita Pizza", "mains", 6800),
            ("Spaghetti Bolognese", "mains", 5200),
            ("Caesar Salad", "sides", 3800),
            ("French Fries", "sides", 1800),
            ("Cola", "drinks", 800),
        ),
    ),
    "noodles": (
        ("Lanzhou", "Silk Road", "Hand-Pulled", "Uncle Ma's"),
        (
            ("Lanzhou Beef Noodles", "staples", 2200),
            ("Biang Biang Noodles", "staples", 2600),
            ("Braised Beef Noodles", "staples", 2800),
            ("Cold Sesame Noodles", "staples", 1800),
            ("Marinated Egg", "sides", 400),
            ("Cucumber Salad", "sides", 1200),
        ),
    ),
    "bubble_tea": (
        ("Tea Time", "Boba Lab", "Fresh Leaf", "Cloud Cup"),
        (
            ("Brown Sugar Milk Tea", "drinks", 1800),
            ("Taro Milk Tea", "drinks", 1600),
            ("Mango Pomelo Sago", "drinks", 2200),
            ("Jasmine Green Tea", "drinks", 1200),
            ("Cheese Foam Oolong", "drinks", 2000),
            ("Egg Tart", "desserts", 900),
        ),
    ),
}
CUISINE_NAMES: Final = tuple(CUISINES)
ROADS: Final = ("Nanjing", "Huaihai", "Hengshan", "Century", "Siping")
STATUSES: Final = ("placed", "preparing", "delivering", "delivered", "cancelled")
PAYMENT_METHODS: Final = ("wallet", "cash")
SORT_KEYS: Final = ("rating", "delivery_fee", "min_order", "rating_count", "name")
ACCEPT_AFTER: Final = timedelta(minutes=2)
RIDE_SAME_DISTRICT: Final = timedelta(minutes=20)
RIDE_OTHER_DISTRICT: Final = timedelta(minutes=35)
CROSS_DISTRICT_FEE: Final = 300
MAX_TOP_UP: Final = 500000

N_RESTAURANTS: Final = 60
N_USERS: Final = 40
N_ORDERS: Final = 320


def order_timeline(placed: datetime, prep_minutes: int, same_district: bool) -> dict[str, datetime]:
    accepted = placed + ACCEPT_AFTER
    dispatched = accepted + timedelta(minutes=prep_minutes)
    ride = RIDE_SAME_DISTRICT if same_district else RIDE_OTHER_DISTRICT
    return {"accepted_at": accepted, "dispatched_at": dispatched, "delivered_at": dispatched + ride}


class TakeoutApp(App):
    name = "takeout"
    description = (
        "A food delivery app in Shanghai: search restaurants, read menus, order food for delivery, "
        "follow the order, cancel it before pickup and rate it after delivery."
    )
    version = "1"
    schema = """
    CREATE TABLE takeout_restaurants (
        restaurant_id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        cuisine TEXT NOT NULL,
        district TEXT NOT NULL,
        address TEXT NOT NULL,
        rating REAL NOT NULL,
        rating_count INTEGER NOT NULL,
        delivery_fee_cents INTEGER NOT NULL,
        min_order_cents INTEGER NOT NULL,
        prep_minutes INTEGER NOT NULL,
        accepting_orders INTEGER NOT NULL
    );
    CREATE TABLE takeout_menu_items (
        item_id TEXT PRIMARY KEY,
        restaurant_id TEXT NOT NULL,
        name TEXT NOT NULL,
        category TEXT NOT NULL,
        price_cents INTEGER NOT NULL CHECK (price_cents > 0),
        stock INTEGER NOT NULL CHECK (stock >= 0)
    );
    CREATE INDEX takeout_menu_restaurant ON takeout_menu_items(restaurant_id);
    CREATE TABLE takeout_users (
        user_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        phone TEXT NOT NULL,
        wallet_cents INTEGER NOT NULL CHECK (wallet_cents >= 0)
    );
    CREATE TABLE takeout_addresses (
        address_id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL,
        label TEXT NOT NULL,
        district TEXT NOT NULL,
        address TEXT NOT NULL
    );
    CREATE TABLE takeout_orders (
        order_id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL,
        restaurant_id TEXT NOT NULL,
        address_id TEXT NOT NULL,
        subtotal_cents INTEGER NOT NULL,
        delivery_fee_cents INTEGER NOT NULL,
        total_cents INTEGER NOT NULL,
        payment_method TEXT NOT NULL CHECK (payment_method IN ('wallet', 'cash')),
        note TEXT NOT NULL,
        placed_at TEXT NOT NULL,
        accepted_at TEXT NOT NULL,
        dispatched_at TEXT NOT NULL,
        delivered_at TEXT NOT NULL,
        cancelled_at TEXT,
        cancel_reason TEXT,
        refunded_cents INTEGER NOT NULL DEFAULT 0,
        rating INTEGER CHECK (rating BETWEEN 1 AND 5),
        review TEXT,
        rated_at TEXT
    );
    CREATE INDEX takeout_orders_user ON takeout_orders(user_id, placed_at);
    CREATE TABLE takeout_order_items (
        order_id TEXT NOT NULL,
        item_id TEXT NOT NULL,
        name TEXT NOT NULL,
        quantity INTEGER NOT NULL CHECK (quantity > 0),
        unit_price_cents INTEGER NOT NULL,
        PRIMARY KEY (order_id, item_id)
    );
    """
    volatile: ClassVar[Volatile] = {"takeout_orders": ["rated_at"]}

    # ---- seed data ---------------------------------------------------------------------------
    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        now = utc(clock)
        restaurants: list[dict[str, Any]] = []
        items: list[dict[str, Any]] = []
        names: set[str] = set()
        while len(restaurants) < N_RESTAURANTS:
            cuisine = CUISINE_NAMES[len(restaurants) % len(CUISINE_NAMES)]
            words, dishes = CUISINES[cuisine]
            district = rng.choice(DISTRICTS)
            name = f"{rng.choice(words)} {cuisine.replace('_', ' ').title()} ({district})"
            if name in names:
                name = f"{rng.choice(words)} {rng.choice(('Kitchen', 'House', 'Express'))} ({district})"
            if name in names:
                continue
            names.add(name)
            restaurant_id = format_id("RS", len(restaurants) + 1, 4)
            restaurants.append(
                {
                    "restaurant_id": restaurant_id,
                    "name": name,
                    "cuisine": cuisine,
                    "district": district,
                    "address": f"{rng.randint(1, 999)} {rng.choice(ROADS)} Road, {district}, {CITY}",
                    "rating": round(rng.uniform(3.6, 4.9), 1),
                    "rating_count": rng.randint(20, 5000),
                    "delivery_fee_cents": rng.choice((0, 300, 500, 600, 800)),
                    "min_order_cents": rng.choice((1500, 2000, 3000, 4000)),
                    "prep_minutes": rng.choice((10, 15, 20, 25, 30)),
                    "accepting_orders": int(rng.random() < 0.9),
                }
            )
            for dish, category, price in dishes:
                roll = rng.random()
                stock = 0 if roll < 0.07 else rng.randint(1, 3) if roll < 0.15 else rng.randint(20, 150)
                items.append(
                    {
                        "item_id": format_id("ITM", len(items) + 1, 5),
                        "restaurant_id": restaurant_id,
                        "name": dish,
                        "category": category,
                        # each kitchen prices a little differently, rounded to 50 fen
                        "price_cents": max(100, round(price * rng.uniform(0.85, 1.25) / 50) * 50),
                        "stock": stock,
                    }
                )

        users: list[dict[str, Any]] = []
        addresses: list[dict[str, Any]] = []
        for i in range(1, N_USERS + 1):
            user_id = f"TU{i:03d}"
            users.append(
                {
                    "user_id": user_id,
                    "name": person_name(rng, FIRST_NAMES, LAST_NAMES, family_first=True),
                    "phone": "13" + "".join(rng.choice("0123456789") for _ in range(9)),
                    "wallet_cents": rng.randrange(0, 60000, 100),
                }
            )
            for label in rng.sample(("Home", "Office", "Gym"), rng.randint(1, 2)):
                addresses.append(
                    {
                        "address_id": format_id("TA", len(addresses) + 1, 4),
                        "user_id": user_id,
                        "label": label,
                        "district": rng.choice(DISTRICTS),
                        "address": f"Room {rng.randint(101, 2808)}, {rng.randint(1, 888)} "
                        f"{rng.choice(('Wanhangdu', 'Zhaojiabang', 'Xinzha', 'Dongfang'))} Road",
                    }
                )

        by_restaurant: dict[str, list[dict[str, Any]]] = {}
        for it in items:
            by_restaurant.setdefault(it["restaurant_id"], []).append(it)
        orders: list[dict[str, Any]] = []
        lines: list[dict[str, Any]] = []
        for i in range(1, N_ORDERS + 1):
            user = rng.choice(users)
            address = rng.choice([a for a in addresses if a["user_id"] == user["user_id"]])
            r = rng.choice(restaurants)
            picks = rng.sample(by_restaurant[r["restaurant_id"]], rng.randint(1, 3))
            order_id = format_id("TO", i)
            subtotal = 0
            for it in picks:
                quantity = rng.randint(1, 3)
                subtotal += quantity * it["price_cents"]
                lines.append(
                    {
                        "order_id": order_id,
                        "item_id": it["item_id"],
                        "name": it["name"],
                        "quantity": quantity,
                        "unit_price_cents": it["price_cents"],
                    }
                )
            while subtotal < r["min_order_cents"]:  # the app never accepted orders below the minimum
                lines[-1]["quantity"] += 1
                subtotal += lines[-1]["unit_price_cents"]
            same = address["district"] == r["district"]
            fee = r["delivery_fee_cents"] + (0 if same else CROSS_DISTRICT_FEE)
            # most orders are days old; the last few are still on their way
            age = timedelta(
                minutes=rng.randint(60, 30 * 24 * 60) if i <= N_ORDERS - 12 else rng.randint(1, 50)
            )
            placed = now - age
            times = order_timeline(placed, r["prep_minutes"], same)
            cancelled = i <= N_ORDERS - 12 and rng.random() < 0.06
            delivered = not cancelled and times["delivered_at"] <= now
            rating = rng.randint(3, 5) if delivered and rng.random() < 0.4 else None
            orders.append(
                {
                    "order_id": order_id,
                    "user_id": user["user_id"],
                    "restaurant_id": r["restaurant_id"],
                    "address_id": address["address_id"],
                    "subtotal_cents": subtotal,
                    "delivery_fee_cents": fee,
                    "total_cents": subtotal + fee,
                    "payment_method": rng.choice(PAYMENT_METHODS),
                    "note": rng.choice(("", "", "no cilantro", "extra spicy", "please call on arrival")),
                    "placed_at": iso(placed),
                    **{k: iso(v) for k, v in times.items()},
                    "cancelled_at": iso(placed + timedelta(minutes=1)) if cancelled else None,
                    "cancel_reason": "ordered by mistake" if cancelled else None,
                    "refunded_cents": 0,
                    "rating": rating,
                    "review": rng.choice(("Tasty!", "Arrived warm.", "A bit salty.")) if rating else None,
                    "rated_at": iso(times["delivered_at"] + timedelta(hours=1)) if rating else None,
                }
            )
        for o in orders:
            if o["cancelled_at"] and o["payment_method"] == "wallet":
                o["refunded_cents"] = o["total_cents"]
        insert_rows(db, "takeout_restaurants", restaurants)
        insert_rows(db, "takeout_menu_items", items)
        insert_rows(db, "takeout_users", users)
        insert_rows(db, "takeout_addresses", addresses)
        insert_rows(db, "takeout_orders", orders)
        insert_rows(db, "takeout_order_items", lines)
        set_counter(db, "TO", len(orders))
        set_counter(db, "TA", len(addresses))

    # ---- helpers -----------------------------------------------------------------------------
    def _user(self, user_id: str) -> dict[str, Any]:
        return self.get_or_404("takeout_users", "user_id", user_id, what="user")

    def _restaurant(self, restaurant_id: str) -> dict[str, Any]:
        return self.get_or_404("takeout_restaurants", "restaurant_id", restaurant_id, what="restaurant")

    def _order(self, order_id: str) -> dict[str, Any]:
        return self.get_or_404("takeout_orders", "order_id", order_id, what="order")

    @staticmethod
    def _restaurant_view(r: dict[str, Any]) -> dict[str, Any]:
        return {
            "restaurant_id": r["restaurant_id"],
            "name": r["name"],
            "cuisine": r["cuisine"],
            "district": r["district"],
            "address": r["address"],
            "rating": r["rating"],
            "rating_count": r["rating_count"],
            "delivery_fee": from_cents(r["delivery_fee_cents"]),
            "min_order": from_cents(r["min_order_cents"]),
            "prep_minutes": r["prep_minutes"],
            "accepting_orders": bool(r["accepting_orders"]),
        }

    def _status(self, o: dict[str, Any]) -> str:
        if o["cancelled_at"]:
            return "cancelled"
        now = iso(app_now(self))
        if now >= o["delivered_at"]:
            return "delivered"
        if now >= o["dispatched_at"]:
            return "delivering"
        if now >= o["accepted_at"]:
            return "preparing"
        return "placed"

    def _order_view(self, o: dict[str, Any]) -> dict[str, Any]:
        status = self._status(o)
        now = iso(app_now(self))
        steps = [
            ("placed", o["placed_at"]),
            ("accepted by the restaurant", o["accepted_at"]),
            ("picked up by the rider", o["dispatched_at"]),
            ("delivered", o["delivered_at"]),
        ]
        limit = o["cancelled_at"] or now
        timeline = [{"event": e, "time": t} for e, t in steps if t <= min(limit, now)]
        if o["cancelled_at"]:
            timeline.append({"event": "cancelled", "time": o["cancelled_at"]})
        items = self.rows(
            "SELECT item_id, name, quantity, unit_price_cents FROM takeout_order_items WHERE order_id = ?"
            " ORDER BY rowid",
            (o["order_id"],),
        )
        restaurant = self.scalar(
            "SELECT name FROM takeout_restaurants WHERE restaurant_id = ?", (o["restaurant_id"],)
        )
        return {
            "order_id": o["order_id"],
            "order_status": status,
            "restaurant_id": o["restaurant_id"],
            "restaurant_name": restaurant,
            "address_id": o["address_id"],
            "items": [
                {
                    "item_id": i["item_id"],
                    "name": i["name"],
                    "quantity": i["quantity"],
                    "unit_price": from_cents(i["unit_price_cents"]),
                }
                for i in items
            ],
            "subtotal": from_cents(o["subtotal_cents"]),
            "delivery_fee": from_cents(o["delivery_fee_cents"]),
            "total": from_cents(o["total_cents"]),
            "payment_method": o["payment_method"],
            "note": o["note"],
            "placed_at": o["placed_at"],
            "estimated_delivery": None if status == "cancelled" else o["delivered_at"],
            "timeline": timeline,
            "refunded": from_cents(o["refunded_cents"]),
            "rating": o["rating"],
            "review": o["review"],
        }

    def _place(
        self,
        user_id: str,
        restaurant_id: str,
        items: dict[str, int],
        address_id: str,
        payment_method: str,
        note: str,
    ) -> dict[str, Any]:
        user = self._user(user_id)
        r = self._restaurant(restaurant_id)
        address = self.get_or_404("takeout_addresses", "address_id", address_id, what="address")
        if address["user_id"] != user_id:
            raise AppError(403, f"address {address_id} belongs to another user")
        if not r["accepting_orders"]:
            raise conflict(f"{r['name']} is not accepting orders right now")
        if not items:
            raise unprocessable("the order has no items")
        subtotal, lines = 0, []
        for item_id, quantity in items.items():
            check_range(f"quantity of {item_id}", quantity, 1, 99)
            it = self.get_or_404("takeout_menu_items", "item_id", item_id, what="menu item")
            if it["restaurant_id"] != restaurant_id:
                raise unprocessable(f"{item_id} ({it['name']}) is not on the menu of {restaurant_id}")
            if it["stock"] < quantity:
                raise conflict(f"only {it['stock']} x {it['name']} left", item_id=item_id, stock=it["stock"])
            subtotal += quantity * it["price_cents"]
            lines.append((it, quantity))
        if subtotal < r["min_order_cents"]:
            raise unprocessable(
                f"the minimum order at {r['name']} is {from_cents(r['min_order_cents'])} yuan;"
                f" this order is {from_cents(subtotal)}"
            )
        same = address["district"] == r["district"]
        fee = r["delivery_fee_cents"] + (0 if same else CROSS_DISTRICT_FEE)
        total = subtotal + fee
        if payment_method == "wallet":
            if user["wallet_cents"] < total:
                raise unprocessable(
                    f"insufficient wallet balance: {from_cents(user['wallet_cents'])} < {from_cents(total)}"
                )
            self.execute(
                "UPDATE takeout_users SET wallet_cents = wallet_cents - ? WHERE user_id = ?", (total, user_id)
            )
        order_id, now = self.next_id("TO"), app_now(self)
        times = order_timeline(now, r["prep_minutes"], same)
        self.execute(
            "INSERT INTO takeout_orders(order_id, user_id, restaurant_id, address_id, subtotal_cents,"
            " delivery_fee_cents, total_cents, payment_method, note, placed_at, accepted_at, dispatched_at,"
            " delivered_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                order_id,
                user_id,
                restaurant_id,
                address_id,
                subtotal,
                fee,
                total,
                payment_method,
                note,
                iso(now),
                *(iso(times[k]) for k in ("accepted_at", "dispatched_at", "delivered_at")),
            ),
        )
        for it, quantity in lines:
            self.execute(
                "INSERT INTO takeout_order_items VALUES (?, ?, ?, ?, ?)",
                (order_id, it["item_id"], it["name"], quantity, it["price_cents"]),
            )
            self.execute(
                "UPDATE takeout_menu_items SET stock = stock - ? WHERE item_id = ?", (quantity, it["item_id"])
            )
        return self._order_view(self._order(order_id))

    # ---- restaurants and menus ------------------------------------------------------------------
    @read
    def search_restaurants(
        self,
        keyword: Annotated[str, Param("words in the restaurant name or a dish; empty = all")] = "",
        cuisine: Annotated[str | None, Param("only this cuisine", enum=CUISINE_NAMES)] = None,
        district: Annotated[str | None, Param("only this district", enum=DISTRICTS)] = None,
        min_rating: Annotated[float | None, Param("lowest rating, 0-5")] = None,
        max_delivery_fee: Annotated[float | None, Param("highest base delivery fee in yuan")] = None,
        open_only: Annotated[bool, Param("only restaurants accepting orders now")] = False,
        sort_by: Annotated[str, Param("sort key", enum=SORT_KEYS)] = "rating",
        page: Annotated[int, Param("1-based page")] = 1,
        page_size: Annotated[int, Param("results per page, 1-50")] = 10,
    ) -> dict[str, Any]:
        """Search restaurants with filters and sorting."""
        where: list[str] = ["1"]
        params: list[Any] = []
        for term in keyword.lower().split():
            where.append(
                "(instr(lower(r.name), ?) > 0 OR EXISTS (SELECT 1 FROM takeout_menu_items m"
                " WHERE m.restaurant_id = r.restaurant_id AND instr(lower(m.name), ?) > 0))"
            )
            params += [term, term]
        if min_rating is not None:
            check_range("min_rating", min_rating, 0, 5)
        for clause, value in (
            ("r.cuisine = ?", cuisine),
            ("r.district = ?", district),
            ("r.rating >= ?", min_rating),
            (
                "r.delivery_fee_cents <= ?",
                None if max_delivery_fee is None else to_cents("max_delivery_fee", max_delivery_fee),
            ),
        ):
            if value is not None:
                where.append(clause)
                params.append(value)
        if open_only:
            where.append("r.accepting_orders = 1")
        order = {
            "rating": "r.rating DESC, r.rating_count DESC",
            "delivery_fee": "r.delivery_fee_cents ASC, r.rating DESC",
            "min_order": "r.min_order_cents ASC, r.rating DESC",
            "rating_count": "r.rating_count DESC",
            "name": "r.name ASC",
        }[sort_by]
        rows = self.rows(
            f"SELECT r.* FROM takeout_restaurants r WHERE {' AND '.join(where)}"
            f" ORDER BY {order}, r.restaurant_id",
            params,
        )
        return ok(
            total=len(rows),
            page=page,
            restaurants=[self._restaurant_view(r) for r in paginate(rows, page, page_size, max_page_size=50)],
        )

    @read
    def get_restaurant(
        self, restaurant_id: Annotated[str, Param("restaurant id, e.g. RS-0012")]
    ) -> dict[str, Any]:
        """A restaurant's details: rating, fees, minimum order, preparation time."""
        return ok(restaurant=self._restaurant_view(self._restaurant(restaurant_id)))

    @read
    def get_menu(
        self,
        restaurant_id: Annotated[str, Param("restaurant id")],
        category: Annotated[str | None, Param("only this menu section, e.g. mains, drinks")] = None,
        available_only: Annotated[bool, Param("hide sold-out items")] = False,
    ) -> dict[str, Any]:
        """A restaurant's menu with prices and how many of each item are left."""
        r = self._restaurant(restaurant_id)
        sql, params = "SELECT * FROM takeout_menu_items WHERE restaurant_id = ?", [restaurant_id]
        if category is not None:
            sql += " AND category = ?"
            params.append(category)
        if available_only:
            sql += " AND stock > 0"
        rows = self.rows(sql + " ORDER BY item_id", params)
        return ok(
            restaurant_id=restaurant_id,
            restaurant_name=r["name"],
            items=[
                {
                    "item_id": m["item_id"],
                    "name": m["name"],
                    "category": m["category"],
                    "price": from_cents(m["price_cents"]),
                    "stock": m["stock"],
                    "sold_out": m["stock"] == 0,
                }
                for m in rows
            ],
        )

    # ---- account ---------------------------------------------------------------------------------
    @read
    def get_takeout_account(self, user_id: Annotated[str, Param("user id, e.g. TU001")]) -> dict[str, Any]:
        """The user's profile, wallet balance and delivery addresses."""
        u = self._user(user_id)
        addresses = self.rows(
            "SELECT address_id, label, district, address FROM takeout_addresses WHERE user_id = ?"
            " ORDER BY address_id",
            (user_id,),
        )
        return ok(
            user_id=user_id,
            name=u["name"],
            phone=u["phone"],
            wallet_balance=from_cents(u["wallet_cents"]),
            addresses=addresses,
        )

    @write
    def add_delivery_address(
        self,
        user_id: Annotated[str, Param("user id")],
        district: Annotated[str, Param("district of Shanghai", enum=DISTRICTS)],
        address: Annotated[str, Param("street address with room number")],
        label: Annotated[str, Param("e.g. Home, Office")] = "Home",
    ) -> dict[str, Any]:
        """Add a delivery address to the user's account."""
        self._user(user_id)
        if not address.strip():
            raise bad_request("address must not be empty")
        address_id = self.next_id("TA", 4)
        self.execute(
            "INSERT INTO takeout_addresses VALUES (?, ?, ?, ?, ?)",
            (address_id, user_id, label, district, address.strip()),
        )
        return ok(address_id=address_id)

    @write
    def top_up_wallet(
        self,
        user_id: Annotated[str, Param("user id")],
        amount: Annotated[float, Param("yuan to add, up to 5000")],
    ) -> dict[str, Any]:
        """Add money to the user's wallet."""
        u = self._user(user_id)
        cents = to_cents("amount", amount)
        if cents <= 0 or cents > MAX_TOP_UP:
            raise bad_request("amount must be between 0.01 and 5000 yuan")
        self.execute(
            "UPDATE takeout_users SET wallet_cents = wallet_cents + ? WHERE user_id = ?", (cents, user_id)
        )
        return ok(user_id=user_id, wallet_balance=from_cents(u["wallet_cents"] + cents))

    # ---- orders ------------------------------------------------------------------------------------
    @write
    def place_takeout_order(
        self,
        user_id: Annotated[str, Param("user id")],
        restaurant_id: Annotated[str, Param("restaurant id")],
        items: Annotated[dict[str, int], Param('menu item id -> quantity, e.g. {"ITM-00012": 2}')],
        address_id: Annotated[str, Param("one of the user's delivery addresses")],
        payment_method: Annotated[
            str, Param("wallet (paid now) or cash on delivery", enum=PAYMENT_METHODS)
        ] = "wallet",
        note: Annotated[str, Param("a note for the restaurant")] = "",
    ) -> dict[str, Any]:
        """Order food from one restaurant for delivery; stock is reserved and the wallet charged."""
        return ok(order=self._place(user_id, restaurant_id, items, address_id, payment_method, note))

    @write
    def reorder_takeout_order(
        self,
        order_id: Annotated[str, Param("a previous order to repeat")],
        payment_method: Annotated[str, Param("wallet or cash", enum=PAYMENT_METHODS)] = "wallet",
    ) -> dict[str, Any]:
        """Order the same items from the same restaurant to the same address again, at today's prices."""
        o = self._order(order_id)
        lines = self.rows(
            "SELECT item_id, quantity FROM takeout_order_items WHERE order_id = ? ORDER BY rowid", (order_id,)
        )
        items = {line["item_id"]: int(line["quantity"]) for line in lines}
        return ok(
            order=self._place(
                o["user_id"], o["restaurant_id"], items, o["address_id"], payment_method, o["note"]
            )
        )

    @read
    def get_takeout_order(
        self, order_id: Annotated[str, Param("order id, e.g. TO-000123")]
    ) -> dict[str, Any]:
        """An order's items, totals, current status and timeline."""
        return ok(order=self._order_view(self._order(order_id)))

    @read
    def list_takeout_orders(
        self,
        user_id: Annotated[str, Param("user id")],
        status: Annotated[str | None, Param("only orders with this status", enum=STATUSES)] = None,
        page: Annotated[int, Param("1-based page")] = 1,
        page_size: Annotated[int, Param("results per page, 1-50")] = 10,
    ) -> dict[str, Any]:
        """The user's orders, newest first."""
        self._user(user_id)
        rows = self.rows(
            "SELECT o.*, r.name AS restaurant_name FROM takeout_orders o JOIN takeout_restaurants r"
            " USING (restaurant_id) WHERE o.user_id = ? ORDER BY o.placed_at DESC, o.order_id DESC",
            (user_id,),
        )
        views = [
            {
                "order_id": o["order_id"],
                "restaurant_name": o["restaurant_name"],
                "order_status": self._status(o),
                "total": from_cents(o["total_cents"]),
                "placed_at": o["placed_at"],
                "rating": o["rating"],
            }
            for o in rows
        ]
        if status is not None:
            views = [v for v in views if v["order_status"] == status]
        return ok(total=len(views), page=page, orders=paginate(views, page, page_size, max_page_size=50))

    @write
    def cancel_takeout_order(
        self,
        order_id: Annotated[str, Param("order id")],
        reason: Annotated[str, Param("why")] = "",
    ) -> dict[str, Any]:
        """Cancel an order before the rider picks it up: stock returns and a wallet payment is refunded."""
        o = self._order(order_id)
        status = self._status(o)
        if status == "cancelled":
            raise conflict(f"order {order_id} is already cancelled")
        if status in ("delivering", "delivered"):
            raise conflict(
                f"order {order_id} is {status}; it can no longer be cancelled", order_status=status
            )
        refund = o["total_cents"] if o["payment_method"] == "wallet" else 0
        self.execute(
            "UPDATE takeout_orders SET cancelled_at = ?, cancel_reason = ?, refunded_cents = ?"
            " WHERE order_id = ?",
            (iso(app_now(self)), reason, refund, order_id),
        )
        self.execute(
            "UPDATE takeout_menu_items SET stock = stock + i.quantity FROM takeout_order_items i"
            " WHERE i.order_id = ? AND takeout_menu_items.item_id = i.item_id",
            (order_id,),
        )
        if refund:
            self.execute(
                "UPDATE takeout_users SET wallet_cents = wallet_cents + ? WHERE user_id = ?",
                (refund, o["user_id"]),
            )
        return ok(order_id=order_id, order_status="cancelled", refunded=from_cents(refund))

    @write
    def rate_takeout_order(
        self,
        order_id: Annotated[str, Param("order id")],
        rating: Annotated[int, Param("stars, 1-5")],
        comment: Annotated[str, Param("a short review")] = "",
    ) -> dict[str, Any]:
        """Rate a delivered order once; the restaurant's average rating is updated."""
        o = self._order(order_id)
        check_range("rating", rating, 1, 5)
        status = self._status(o)
        if status != "delivered":
            raise conflict(f"order {order_id} is {status}; only delivered orders can be rated")
        if o["rating"] is not None:
            raise conflict(f"order {order_id} was already rated {o['rating']}")
        r = self._restaurant(o["restaurant_id"])
        count = r["rating_count"] + 1
        average = round((r["rating"] * r["rating_count"] + rating) / count, 2)
        self.execute(
            "UPDATE takeout_orders SET rating = ?, review = ?, rated_at = ? WHERE order_id = ?",
            (rating, comment, iso(app_now(self)), order_id),
        )
        self.execute(
            "UPDATE takeout_restaurants SET rating = ?, rating_count = ? WHERE restaurant_id = ?",
            (average, count, o["restaurant_id"]),
        )
        return ok(order_id=order_id, rating=rating, restaurant_rating=average, restaurant_rating_count=count)
