"""Express delivery: quote, send, track, redirect and cancel parcels between Chinese cities.

Semantics: a shipment's progress is a timeline fixed when it is created (pickup, departure from the
origin sorting center, arrival in the destination city, out for delivery, delivered), derived from
the service level and the road distance; its status and tracking events are whatever part of that
timeline lies before the simulated clock, so tracking advances deterministically as the clock does.
A shipment can be cancelled only before pickup and redirected only before it leaves the origin
sorting center (a new city re-prices it and moves its arrival). Fees are stored in fen, shown in yuan.
"""

from __future__ import annotations

import math
import random
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Volatile, format_id, read, set_counter, write
from toolgym.mocks.apps.ctool._common import FIRST_NAMES, LAST_NAMES, app_now, iso, utc
from toolgym.mocks.responses import (
    bad_request,
    conflict,
    from_cents,
    ok,
    paginate,
    unprocessable,
)
from toolgym.mocks.seeding import haversine_km, insert_rows, person_name
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

# name -> (latitude, longitude) of the city center
CITIES: Final[dict[str, tuple[float, float]]] = {
    "Beijing": (39.9042, 116.4074),
    "Shanghai": (31.2304, 121.4737),
    "Guangzhou": (23.1291, 113.2644),
    "Shenzhen": (22.5431, 114.0579),
    "Hangzhou": (30.2741, 120.1551),
    "Chengdu": (30.5728, 104.0668),
    "Wuhan": (30.5928, 114.3055),
    "Nanjing": (32.0603, 118.7969),
    "Xi'an": (34.3416, 108.9398),
    "Chongqing": (29.4316, 106.9123),
}
CITY_NAMES: Final = tuple(CITIES)
STREETS: Final = (
    "Renmin Road",
    "Jiefang Road",
    "Zhongshan Road",
    "Heping Street",
    "Xinhua Road",
    "Jianshe Road",
    "Wenhua Road",
    "Chaoyang Road",
)


class Service:
    """A service level: pickup delay, sorting time, line-haul speed, and its price list (fen)."""

    def __init__(
        self,
        name: str,
        label: str,
        pickup_h: float,
        handling_h: float,
        speed_kmh: float,
        min_transit_h: float,
        base: int,
        per_kg: int,
        per_500km: int,
    ) -> None:
        self.name, self.label = name, label
        self.pickup_h, self.handling_h = pickup_h, handling_h
        self.speed_kmh, self.min_transit_h = speed_kmh, min_transit_h
        self.base, self.per_kg, self.per_500km = base, per_kg, per_500km


SERVICES: Final[dict[str, Service]] = {
    s.name: s
    for s in (
        Service("express", "Next-day air express", 1, 2, 80, 3, 1800, 600, 300),
        Service("standard", "Standard ground", 2, 3, 40, 6, 1200, 400, 200),
        Service("economy", "Economy freight", 4, 6, 20, 12, 800, 200, 100),
    )
}
SERVICE_NAMES: Final = tuple(SERVICES)
STATUSES: Final = (
    "created",
    "picked_up",
    "in_transit",
    "arrived_at_destination",
    "out_for_delivery",
    "delivered",
    "cancelled",
)
MAX_WEIGHT_KG: Final = 50.0
LAST_MILE_H: Final = 4  # arrival at the destination sorting center -> out for delivery
DELIVERY_H: Final = 2  # out for delivery -> delivered
SAME_CITY_KM: Final = 15  # the nominal distance of a shipment within one city
ROAD_FACTOR: Final = 1.2  # roads are longer than great circles

N_CUSTOMERS: Final = 40
N_SHIPMENTS: Final = 560
N_FRESH: Final = 40  # shipments created in the last hours: still waiting for pickup or dispatch


def road_km(from_city: str, to_city: str) -> int:
    if from_city == to_city:
        return SAME_CITY_KM
    (a_lat, a_lon), (b_lat, b_lon) = CITIES[from_city], CITIES[to_city]
    return round(haversine_km(a_lat, a_lon, b_lat, b_lon) * ROAD_FACTOR)


def fee_cents(service: Service, weight_kg: float, distance_km: int, same_city: bool) -> int:
    """The first kilogram is in the base price; each started extra kilogram and each started 500 km
    (between cities) cost extra."""
    extra_kg = math.ceil(max(weight_kg - 1.0, 0.0) - 1e-9)
    legs = 0 if same_city else math.ceil(distance_km / 500)
    return service.base + extra_kg * service.per_kg + legs * service.per_500km


def timeline(service: Service, created: datetime, distance_km: int) -> dict[str, datetime]:
    pickup = created + timedelta(hours=service.pickup_h)
    dispatch = pickup + timedelta(hours=service.handling_h)
    transit_min = max(service.min_transit_h, distance_km / service.speed_kmh) * 60
    arrive = dispatch + timedelta(minutes=math.ceil(transit_min / 10) * 10)  # 10-minute slots
    out = arrive + timedelta(hours=LAST_MILE_H)
    return {
        "pickup_at": pickup,
        "dispatch_at": dispatch,
        "arrive_at": arrive,
        "out_for_delivery_at": out,
        "delivered_at": out + timedelta(hours=DELIVERY_H),
    }


def _check_phone(param: str, phone: str) -> None:
    # mainland mobile numbers: 11 digits starting with 1
    if not (len(phone) == 11 and phone.isdigit() and phone.startswith("1")):
        raise bad_request(f"{param!r} must be an 11-digit mobile number starting with 1, got {phone!r}")


def _check_weight(weight_kg: float) -> None:
    if not weight_kg > 0:
        raise bad_request("weight_kg must be positive")
    if weight_kg > MAX_WEIGHT_KG:
        raise unprocessable(f"parcels over {MAX_WEIGHT_KG:g} kg need freight service; got {weight_kg} kg")


class ExpressApp(App):
    name = "express"
    description = (
        "An express delivery service: quote fees, send parcels between cities, track them as they "
        "move, redirect them before dispatch and cancel them before pickup."
    )
    version = "1"
    schema = f"""
    CREATE TABLE express_customers (
        customer_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        phone TEXT NOT NULL,
        city TEXT NOT NULL,
        address TEXT NOT NULL
    );
    CREATE TABLE express_shipments (
        tracking_number TEXT PRIMARY KEY,
        customer_id TEXT NOT NULL,
        sender_name TEXT NOT NULL,
        sender_phone TEXT NOT NULL,
        sender_city TEXT NOT NULL,
        sender_address TEXT NOT NULL,
        recipient_name TEXT NOT NULL,
        recipient_phone TEXT NOT NULL,
        recipient_city TEXT NOT NULL,
        recipient_address TEXT NOT NULL,
        item_description TEXT NOT NULL,
        weight_kg REAL NOT NULL CHECK (weight_kg > 0),
        service TEXT NOT NULL CHECK (service IN ({", ".join(f"'{s}'" for s in SERVICE_NAMES)})),
        distance_km INTEGER NOT NULL,
        fee_cents INTEGER NOT NULL CHECK (fee_cents > 0),
        courier TEXT NOT NULL,
        created_at TEXT NOT NULL,
        pickup_at TEXT NOT NULL,
        dispatch_at TEXT NOT NULL,
        arrive_at TEXT NOT NULL,
        out_for_delivery_at TEXT NOT NULL,
        delivered_at TEXT NOT NULL,
        cancelled_at TEXT,
        cancel_reason TEXT
    );
    CREATE INDEX express_shipments_customer ON express_shipments(customer_id);
    CREATE TABLE express_address_changes (
        change_id TEXT PRIMARY KEY,
        tracking_number TEXT NOT NULL,
        old_city TEXT NOT NULL,
        old_address TEXT NOT NULL,
        new_city TEXT NOT NULL,
        new_address TEXT NOT NULL,
        fee_difference_cents INTEGER NOT NULL,
        changed_at TEXT NOT NULL
    );
    CREATE TABLE express_address_book (
        address_id TEXT PRIMARY KEY,
        customer_id TEXT NOT NULL,
        label TEXT NOT NULL,
        name TEXT NOT NULL,
        phone TEXT NOT NULL,
        city TEXT NOT NULL,
        address TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE TABLE express_service_points (
        point_id TEXT PRIMARY KEY,
        city TEXT NOT NULL,
        name TEXT NOT NULL,
        address TEXT NOT NULL,
        phone TEXT NOT NULL,
        opening_hours TEXT NOT NULL,
        accepts_dropoff INTEGER NOT NULL
    );
    """
    volatile: ClassVar[Volatile] = {
        "express_address_changes": ["changed_at"],
        "express_address_book": ["created_at"],
    }

    # ---- seed data ---------------------------------------------------------------------------
    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        now = utc(clock)

        def person() -> str:
            return person_name(rng, FIRST_NAMES, LAST_NAMES, family_first=True)

        def phone() -> str:
            return "1" + rng.choice("3589") + "".join(rng.choice("0123456789") for _ in range(9))

        def address() -> str:
            return f"{rng.randint(1, 400)} {rng.choice(STREETS)}, Building {rng.randint(1, 30)}"

        customers = [
            {
                "customer_id": format_id("EC", i, 4),
                "name": person(),
                "phone": phone(),
                "city": rng.choice(CITY_NAMES),
                "address": address(),
            }
            for i in range(1, N_CUSTOMERS + 1)
        ]
        insert_rows(db, "express_customers", customers)

        book: list[dict[str, Any]] = []
        for c in customers:
            for k in range(rng.randint(1, 4)):
                book.append(
                    {
                        "address_id": format_id("ADR", len(book) + 1, 5),
                        "customer_id": c["customer_id"],
                        "label": ("Home", "Office", "Parents", "Friend")[k],
                        "name": person(),
                        "phone": phone(),
                        "city": rng.choice(CITY_NAMES),
                        "address": address(),
                        "created_at": iso(now - timedelta(days=rng.randint(10, 400))),
                    }
                )
        insert_rows(db, "express_address_book", book)
        set_counter(db, "ADR", len(book))

        couriers = [person() for _ in range(30)]
        shipments = []
        for i in range(1, N_SHIPMENTS + N_FRESH + 1):
            c = rng.choice(customers)
            service = SERVICES[rng.choices(SERVICE_NAMES, (2, 5, 2))[0]]
            to_city = c["city"] if rng.random() < 0.2 else rng.choice(CITY_NAMES)
            distance = road_km(c["city"], to_city)
            weight = round(rng.uniform(0.2, 12.0), 1)
            # older shipments spread over two weeks; the last few are hours old and still moving
            age = (
                timedelta(minutes=rng.randint(20, 14 * 24 * 60))
                if i <= N_SHIPMENTS
                else timedelta(minutes=rng.randint(5, 6 * 60))
            )
            created = now - age
            times = timeline(service, created, distance)
            cancelled_at = reason = None
            cancel_time = created + timedelta(minutes=30)
            if rng.random() < 0.06 and cancel_time <= now:
                cancelled_at = iso(cancel_time)
                reason = rng.choice(("sender changed plans", "wrong address", "item no longer needed"))
            shipments.append(
                {
                    "tracking_number": format_id("EXP", i, 8),
                    "customer_id": c["customer_id"],
                    "sender_name": c["name"],
                    "sender_phone": c["phone"],
                    "sender_city": c["city"],
                    "sender_address": c["address"],
                    "recipient_name": person(),
                    "recipient_phone": phone(),
                    "recipient_city": to_city,
                    "recipient_address": address(),
                    "item_description": rng.choice(
                        ("documents", "clothes", "books", "electronics", "tea", "gift box", "shoes")
                    ),
                    "weight_kg": weight,
                    "service": service.name,
                    "distance_km": distance,
                    "fee_cents": fee_cents(service, weight, distance, c["city"] == to_city),
                    "courier": rng.choice(couriers),
                    "created_at": iso(created),
                    **{k: iso(v) for k, v in times.items()},
                    "cancelled_at": cancelled_at,
                    "cancel_reason": reason,
                }
            )
        insert_rows(db, "express_shipments", shipments)
        set_counter(db, "EXP", len(shipments))

        points: list[dict[str, Any]] = []
        for city in CITY_NAMES:
            for k in range(4):
                points.append(
                    {
                        "point_id": format_id("SP", len(points) + 1, 4),
                        "city": city,
                        "name": f"{city} {rng.choice(STREETS).split()[0]} Service Point {k + 1}",
                        "address": address(),
                        "phone": phone(),
                        "opening_hours": rng.choice(("08:00-20:00", "09:00-21:00", "00:00-24:00")),
                        "accepts_dropoff": int(rng.random() < 0.85),
                    }
                )
        insert_rows(db, "express_service_points", points)

    # ---- helpers -----------------------------------------------------------------------------
    def _customer(self, customer_id: str) -> dict[str, Any]:
        return self.get_or_404("express_customers", "customer_id", customer_id, what="customer")

    def _shipment(self, tracking_number: str) -> dict[str, Any]:
        return self.get_or_404("express_shipments", "tracking_number", tracking_number, what="shipment")

    @staticmethod
    def _stages(s: dict[str, Any]) -> list[tuple[str, str, str, str]]:
        """(time, status, location, description) of every milestone, reached or not."""
        return [
            (s["created_at"], "created", s["sender_city"], "Order created, waiting for courier pickup"),
            (s["pickup_at"], "picked_up", s["sender_city"], f"Picked up by courier {s['courier']}"),
            (
                s["dispatch_at"],
                "in_transit",
                s["sender_city"],
                f"Departed {s['sender_city']} sorting center for {s['recipient_city']}",
            ),
            (
                s["arrive_at"],
                "arrived_at_destination",
                s["recipient_city"],
                f"Arrived at {s['recipient_city']} sorting center",
            ),
            (s["out_for_delivery_at"], "out_for_delivery", s["recipient_city"], "Out for delivery"),
            (
                s["delivered_at"],
                "delivered",
                s["recipient_city"],
                f"Delivered, signed for by {s['recipient_name']}",
            ),
        ]

    def _events(self, s: dict[str, Any]) -> list[dict[str, Any]]:
        now = iso(app_now(self))
        until = min(now, s["cancelled_at"]) if s["cancelled_at"] else now
        events = [
            {"time": t, "status": st, "location": loc, "description": d}
            for t, st, loc, d in self._stages(s)
            if t <= until
        ]
        if s["cancelled_at"] and s["cancelled_at"] <= now:
            events.append(
                {
                    "time": s["cancelled_at"],
                    "status": "cancelled",
                    "location": s["sender_city"],
                    "description": f"Shipment cancelled: {s['cancel_reason'] or 'no reason given'}",
                }
            )
        return events

    def _status(self, s: dict[str, Any]) -> str:
        events = self._events(s)
        return str(events[-1]["status"]) if events else "created"

    def _view(self, s: dict[str, Any]) -> dict[str, Any]:
        status = self._status(s)
        return {
            "tracking_number": s["tracking_number"],
            "shipment_status": status,
            "service": s["service"],
            "sender": {"name": s["sender_name"], "city": s["sender_city"], "address": s["sender_address"]},
            "recipient": {
                "name": s["recipient_name"],
                "phone": s["recipient_phone"],
                "city": s["recipient_city"],
                "address": s["recipient_address"],
            },
            "item_description": s["item_description"],
            "weight_kg": s["weight_kg"],
            "distance_km": s["distance_km"],
            "fee": from_cents(s["fee_cents"]),
            "currency": "CNY",
            "created_at": s["created_at"],
            "estimated_delivery": None if status == "cancelled" else s["delivered_at"],
        }

    # ---- quotes and reference data --------------------------------------------------------------
    @read
    def list_service_types(self) -> dict[str, Any]:
        """The service levels with their speed and price list."""
        return ok(
            currency="CNY",
            services=[
                {
                    "service": s.name,
                    "label": s.label,
                    "pickup_within_hours": s.pickup_h,
                    "base_fee_first_kg": from_cents(s.base),
                    "fee_per_extra_kg": from_cents(s.per_kg),
                    "fee_per_500_km": from_cents(s.per_500km),
                    "max_weight_kg": MAX_WEIGHT_KG,
                }
                for s in SERVICES.values()
            ],
        )

    @read
    def estimate_shipping_fee(
        self,
        from_city: Annotated[str, Param("city the parcel leaves from", enum=CITY_NAMES)],
        to_city: Annotated[str, Param("destination city", enum=CITY_NAMES)],
        weight_kg: Annotated[float, Param("parcel weight in kg, up to 50")],
        service: Annotated[str, Param("service level", enum=SERVICE_NAMES)] = "standard",
    ) -> dict[str, Any]:
        """Quote the fee and delivery time of a parcel by weight, distance and service level."""
        _check_weight(weight_kg)
        s = SERVICES[service]
        distance = road_km(from_city, to_city)
        start = app_now(self)
        times = timeline(s, start, distance)
        hours = (times["delivered_at"] - start).total_seconds() / 3600
        return ok(
            from_city=from_city,
            to_city=to_city,
            service=service,
            weight_kg=weight_kg,
            distance_km=distance,
            fee=from_cents(fee_cents(s, weight_kg, distance, from_city == to_city)),
            currency="CNY",
            estimated_hours=round(hours, 1),
            estimated_delivery=iso(times["delivered_at"]),
        )

    @read
    def find_service_points(
        self,
        city: Annotated[str, Param("city", enum=CITY_NAMES)],
        dropoff_only: Annotated[bool, Param("only points that accept parcel drop-off")] = False,
    ) -> dict[str, Any]:
        """Service points (counters where parcels can be dropped off or collected) in a city."""
        sql = "SELECT * FROM express_service_points WHERE city = ?"
        if dropoff_only:
            sql += " AND accepts_dropoff = 1"
        rows = self.rows(sql + " ORDER BY point_id", (city,))
        return ok(
            city=city,
            service_points=[{**r, "accepts_dropoff": bool(r["accepts_dropoff"])} for r in rows],
        )

    # ---- address book --------------------------------------------------------------------------
    @read
    def list_saved_addresses(
        self, customer_id: Annotated[str, Param("customer id, e.g. EC-0001")]
    ) -> dict[str, Any]:
        """The customer's address book (saved recipients)."""
        self._customer(customer_id)
        rows = self.rows(
            "SELECT address_id, label, name, phone, city, address FROM express_address_book"
            " WHERE customer_id = ? ORDER BY address_id",
            (customer_id,),
        )
        return ok(customer_id=customer_id, addresses=rows)

    @write
    def save_address(
        self,
        customer_id: Annotated[str, Param("customer id")],
        name: Annotated[str, Param("recipient name")],
        phone: Annotated[str, Param("11-digit mobile number")],
        city: Annotated[str, Param("city", enum=CITY_NAMES)],
        address: Annotated[str, Param("street address")],
        label: Annotated[str, Param("a short label such as Home or Office")] = "",
    ) -> dict[str, Any]:
        """Save a recipient in the customer's address book."""
        self._customer(customer_id)
        _check_phone("phone", phone)
        if not name.strip() or not address.strip():
            raise bad_request("name and address must not be empty")
        duplicate = self.scalar(
            "SELECT address_id FROM express_address_book WHERE customer_id = ? AND name = ? AND city = ?"
            " AND address = ?",
            (customer_id, name, city, address),
        )
        if duplicate is not None:
            raise conflict(f"this address is already saved as {duplicate}", address_id=duplicate)
        address_id = self.next_id("ADR", 5)
        self.execute(
            "INSERT INTO express_address_book VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (address_id, customer_id, label or "Other", name, phone, city, address, iso(app_now(self))),
        )
        return ok(address_id=address_id)

    # ---- shipments -------------------------------------------------------------------------------
    @write
    def create_shipment(
        self,
        customer_id: Annotated[str, Param("the sender's customer id; pickup is at the sender's address")],
        recipient_name: Annotated[str, Param("recipient name")],
        recipient_phone: Annotated[str, Param("recipient's 11-digit mobile number")],
        recipient_city: Annotated[str, Param("destination city", enum=CITY_NAMES)],
        recipient_address: Annotated[str, Param("destination street address")],
        weight_kg: Annotated[float, Param("parcel weight in kg, up to 50")],
        service: Annotated[str, Param("service level", enum=SERVICE_NAMES)] = "standard",
        item_description: Annotated[str, Param("what is inside")] = "parcel",
    ) -> dict[str, Any]:
        """Book a parcel pickup at the sender's address; returns the tracking number and fee."""
        sender = self._customer(customer_id)
        _check_phone("recipient_phone", recipient_phone)
        _check_weight(weight_kg)
        if not recipient_name.strip() or not recipient_address.strip():
            raise bad_request("recipient_name and recipient_address must not be empty")
        s = SERVICES[service]
        distance = road_km(sender["city"], recipient_city)
        fee = fee_cents(s, weight_kg, distance, sender["city"] == recipient_city)
        now = app_now(self)
        times = timeline(s, now, distance)
        tracking = self.next_id("EXP", 8)
        # the courier who last picked up in the sender's city serves this pickup too
        courier = self.scalar(
            "SELECT courier FROM express_shipments WHERE sender_city = ?"
            " ORDER BY created_at DESC, tracking_number DESC LIMIT 1",
            (sender["city"],),
        )
        self.execute(
            "INSERT INTO express_shipments VALUES"
            " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)",
            (
                tracking,
                customer_id,
                sender["name"],
                sender["phone"],
                sender["city"],
                sender["address"],
                recipient_name,
                recipient_phone,
                recipient_city,
                recipient_address,
                item_description,
                weight_kg,
                service,
                distance,
                fee,
                courier or "Duty courier",
                iso(now),
                *(iso(times[k]) for k in ("pickup_at", "dispatch_at", "arrive_at")),
                iso(times["out_for_delivery_at"]),
                iso(times["delivered_at"]),
            ),
        )
        return ok(
            tracking_number=tracking,
            shipment_status="created",
            fee=from_cents(fee),
            currency="CNY",
            pickup_by=iso(times["pickup_at"]),
            estimated_delivery=iso(times["delivered_at"]),
        )

    @read
    def get_shipment(
        self, tracking_number: Annotated[str, Param("tracking number, e.g. EXP-00000042")]
    ) -> dict[str, Any]:
        """A shipment's details: sender, recipient, fee, current status and estimated delivery."""
        return ok(shipment=self._view(self._shipment(tracking_number)))

    @read
    def track_shipment(self, tracking_number: Annotated[str, Param("tracking number")]) -> dict[str, Any]:
        """The tracking events of a shipment so far, oldest first, and its current status."""
        s = self._shipment(tracking_number)
        events = self._events(s)
        status = self._status(s)
        return ok(
            tracking_number=tracking_number,
            shipment_status=status,
            estimated_delivery=None if status == "cancelled" else s["delivered_at"],
            events=events,
        )

    @read
    def list_shipments(
        self,
        customer_id: Annotated[str, Param("customer id")],
        status: Annotated[str | None, Param("only shipments with this status", enum=STATUSES)] = None,
        page: Annotated[int, Param("1-based page number")] = 1,
        page_size: Annotated[int, Param("results per page, 1-50")] = 10,
    ) -> dict[str, Any]:
        """The customer's shipments, newest first, optionally by current status."""
        self._customer(customer_id)
        rows = self.rows(
            "SELECT * FROM express_shipments WHERE customer_id = ?"
            " ORDER BY created_at DESC, tracking_number DESC",
            (customer_id,),
        )
        views = [self._view(r) for r in rows]
        if status is not None:
            views = [v for v in views if v["shipment_status"] == status]
        return ok(
            customer_id=customer_id,
            total=len(views),
            page=page,
            shipments=[
                {k: v[k] for k in ("tracking_number", "shipment_status", "service", "fee", "created_at")}
                | {"recipient_city": v["recipient"]["city"], "recipient_name": v["recipient"]["name"]}
                for v in paginate(views, page, page_size, max_page_size=50)
            ],
        )

    @write
    def cancel_shipment(
        self,
        tracking_number: Annotated[str, Param("tracking number")],
        reason: Annotated[str, Param("why it is cancelled")] = "",
    ) -> dict[str, Any]:
        """Cancel a shipment that the courier has not picked up yet; the fee is not charged."""
        s = self._shipment(tracking_number)
        status = self._status(s)
        if status == "cancelled":
            raise conflict(f"shipment {tracking_number} is already cancelled")
        if status != "created":
            raise conflict(
                f"shipment {tracking_number} was picked up at {s['pickup_at']};"
                " it can no longer be cancelled",
                shipment_status=status,
            )
        self.execute(
            "UPDATE express_shipments SET cancelled_at = ?, cancel_reason = ? WHERE tracking_number = ?",
            (iso(app_now(self)), reason, tracking_number),
        )
        return ok(
            tracking_number=tracking_number,
            shipment_status="cancelled",
            refunded_fee=from_cents(s["fee_cents"]),
        )

    @write
    def change_delivery_address(
        self,
        tracking_number: Annotated[str, Param("tracking number")],
        new_address: Annotated[str, Param("the new street address")],
        new_city: Annotated[
            str | None, Param("the new city; default: same city as now", enum=CITY_NAMES)
        ] = None,
    ) -> dict[str, Any]:
        """Redirect a shipment that has not left the origin sorting center; another city re-prices it."""
        s = self._shipment(tracking_number)
        status = self._status(s)
        if status == "cancelled":
            raise conflict(f"shipment {tracking_number} is cancelled")
        if status not in ("created", "picked_up"):
            raise conflict(
                f"shipment {tracking_number} left the sorting center at {s['dispatch_at']};"
                " the address can no longer be changed",
                shipment_status=status,
            )
        if not new_address.strip():
            raise bad_request("new_address must not be empty")
        city = new_city or s["recipient_city"]
        if city == s["recipient_city"] and new_address == s["recipient_address"]:
            raise conflict("the shipment already goes to this address")
        service = SERVICES[s["service"]]
        distance = road_km(s["sender_city"], city)
        fee = fee_cents(service, s["weight_kg"], distance, s["sender_city"] == city)
        times = timeline(service, datetime.fromisoformat(s["created_at"]), distance)
        self.execute(
            "UPDATE express_shipments SET recipient_city = ?, recipient_address = ?, distance_km = ?,"
            " fee_cents = ?, arrive_at = ?, out_for_delivery_at = ?, delivered_at = ?"
            " WHERE tracking_number = ?",
            (
                city,
                new_address,
                distance,
                fee,
                iso(times["arrive_at"]),
                iso(times["out_for_delivery_at"]),
                iso(times["delivered_at"]),
                tracking_number,
            ),
        )
        change_id = self.next_id("CHG")
        self.execute(
            "INSERT INTO express_address_changes VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                change_id,
                tracking_number,
                s["recipient_city"],
                s["recipient_address"],
                city,
                new_address,
                fee - s["fee_cents"],
                iso(app_now(self)),
            ),
        )
        return ok(
            tracking_number=tracking_number,
            change_id=change_id,
            recipient_city=city,
            recipient_address=new_address,
            fee=from_cents(fee),
            fee_difference=from_cents(fee - s["fee_cents"]),
            estimated_delivery=iso(times["delivered_at"]),
        )

    @read
    def get_customer_profile(self, customer_id: Annotated[str, Param("customer id")]) -> dict[str, Any]:
        """The sender profile: name, phone, pickup city and address, and shipment counts."""
        c = self._customer(customer_id)
        total = int(
            self.scalar("SELECT count(*) FROM express_shipments WHERE customer_id = ?", (customer_id,))
        )
        return ok(customer={**c, "shipment_count": total})
