"""Realistic values for simulated answers: Faker's data, drawn by a seeded hash, never lorem ipsum.

Faker (en_US) fills fixed pools once per process (names, places, companies, streets, jobs,
catch phrases, ...) from seed 0, so a pool is the same in every process for one Faker version
(pinned in pyproject). A value is then a pick from a pool by a `Draw` (bytes of a BLAKE2b hash of
the episode seed, the tool and the canonical arguments), which costs well under a microsecond,
where a seeded Faker call costs tens. Dates and times come from the task's clock, never the
wall clock. Why Faker and not mimesis or polyfactory: docs/simulated-tools.md.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from functools import cache
from typing import Any

POOL_SIZE = 256
CURRENCIES = ("USD", "EUR", "GBP", "JPY", "CNY", "CAD", "AUD", "CHF", "INR", "SGD")
STATUSES = ("active", "pending", "completed", "confirmed", "available")


class Draw:
    """Deterministic choices from one key: `Draw(b"...").below(10)`, `.pick(pool)`, `.child("x")`."""

    __slots__ = ("_bytes", "_key", "_pos")

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._bytes = hashlib.blake2b(key, digest_size=64).digest()
        self._pos = 0

    def child(self, label: str) -> Draw:
        return Draw(self._key + b"/" + label.encode("utf-8", "surrogatepass"))

    def below(self, n: int) -> int:
        """0 <= value < n (n up to 2**32)."""
        if self._pos + 4 > len(self._bytes):
            self._bytes = hashlib.blake2b(self._bytes, digest_size=64).digest()
            self._pos = 0
        value = int.from_bytes(self._bytes[self._pos : self._pos + 4], "big")
        self._pos += 4
        return value % max(n, 1)

    def pick(self, pool: tuple[Any, ...]) -> Any:
        return pool[self.below(len(pool))]

    def between(self, low: float, high: float, digits: int = 2) -> float:
        return round(low + (high - low) * self.below(1_000_000) / 1_000_000, digits)


@cache
def pools() -> dict[str, tuple[Any, ...]]:
    """Faker's values, POOL_SIZE of each kind, the same in every process (seed 0, en_US)."""
    from faker import Faker

    fake = Faker("en_US")
    fake.seed_instance(0)

    def many(fn: Callable[[], Any]) -> tuple[Any, ...]:
        return tuple(fn() for _ in range(POOL_SIZE))

    return {
        "person": many(fake.name),
        "first_name": many(fake.first_name),
        "last_name": many(fake.last_name),
        "city": many(fake.city),
        "country": many(fake.country),
        "country_code": many(fake.country_code),
        "state": many(fake.state),
        "street": many(fake.street_address),
        "postcode": many(fake.postcode),
        "company": many(fake.company),
        "job": many(fake.job),
        "email": many(fake.email),
        "phone": many(fake.phone_number),
        "url": many(fake.url),
        "domain": many(fake.domain_name),
        "phrase": many(fake.catch_phrase),
        "sentence": many(lambda: f"{fake.catch_phrase()} that will {fake.bs()}."),
        "color": many(fake.color_name),
        "timezone": many(fake.timezone),
        "language": many(fake.language_name),
        "ipv4": many(fake.ipv4_public),
        "user_name": many(fake.user_name),
        "file_name": many(fake.file_name),
        "title": many(lambda: fake.catch_phrase().title()),
    }


def _uuid(draw: Draw) -> str:
    """A version-4 UUID's layout from the draw."""
    hexes = "".join(f"{draw.below(2**32):08x}" for _ in range(4))
    return f"{hexes[:8]}-{hexes[8:12]}-4{hexes[13:16]}-a{hexes[17:20]}-{hexes[20:32]}"


def _when(draw: Draw, clock: datetime) -> datetime:
    """A moment within a month either side of the task's clock, on the minute."""
    return clock + timedelta(minutes=draw.below(60 * 24 * 60) - 60 * 24 * 30)


# field-name words -> how to make the value; the first rule whose word the field has wins
_Rule = Callable[[Draw, datetime], Any]
_RULES: tuple[tuple[frozenset[str], _Rule], ...] = (
    (frozenset({"email", "mail"}), lambda d, c: d.pick(pools()["email"])),
    (frozenset({"phone", "mobile", "tel", "telephone"}), lambda d, c: d.pick(pools()["phone"])),
    (
        frozenset({"url", "link", "website", "homepage", "href", "image", "img", "logo", "thumbnail"}),
        lambda d, c: d.pick(pools()["url"]),
    ),
    (
        frozenset({"uuid", "guid"}),
        lambda d, c: _uuid(d),
    ),
    (
        frozenset({"id", "key", "code", "number", "no", "isbn", "sku"}),
        lambda d, c: f"{d.below(900000) + 100000}",
    ),
    (frozenset({"date", "day", "birthday", "deadline"}), lambda d, c: _when(d, c).date().isoformat()),
    (
        frozenset(
            {
                "time",
                "timestamp",
                "at",
                "datetime",
                "updated",
                "created",
                "start",
                "end",
                "departure",
                "arrival",
            }
        ),
        lambda d, c: _when(d, c).isoformat(),
    ),
    (frozenset({"year"}), lambda d, c: c.year - d.below(30)),
    (frozenset({"currency"}), lambda d, c: d.pick(CURRENCIES)),
    (
        frozenset(
            {
                "price",
                "amount",
                "cost",
                "fee",
                "balance",
                "total",
                "salary",
                "fare",
                "value",
                "revenue",
                "income",
                "budget",
                "payment",
            }
        ),
        lambda d, c: d.between(5, 2000),
    ),
    (
        frozenset({"rate", "ratio", "percent", "percentage", "change", "score", "rating", "stars"}),
        lambda d, c: d.between(0, 5, 1),
    ),
    (frozenset({"temperature", "temp"}), lambda d, c: d.between(-10, 35, 1)),
    (frozenset({"humidity"}), lambda d, c: d.below(100)),
    (frozenset({"wind", "speed"}), lambda d, c: d.between(0, 40, 1)),
    (frozenset({"latitude", "lat"}), lambda d, c: d.between(-60, 70, 4)),
    (frozenset({"longitude", "lon", "lng"}), lambda d, c: d.between(-180, 180, 4)),
    (
        frozenset(
            {
                "count",
                "quantity",
                "size",
                "total",
                "capacity",
                "age",
                "rank",
                "population",
                "duration",
                "minutes",
                "seconds",
                "hours",
                "page",
                "limit",
                "num",
                "points",
                "goals",
                "wins",
                "losses",
            }
        ),
        lambda d, c: d.below(100) + 1,
    ),
    (frozenset({"status", "state"}), lambda d, c: d.pick(STATUSES)),
    (
        frozenset({"city", "town", "location", "destination", "origin", "place", "venue"}),
        lambda d, c: d.pick(pools()["city"]),
    ),
    (frozenset({"country", "nation", "nationality"}), lambda d, c: d.pick(pools()["country"])),
    (frozenset({"address", "street"}), lambda d, c: d.pick(pools()["street"])),
    (frozenset({"zip", "postcode", "postal"}), lambda d, c: d.pick(pools()["postcode"])),
    (frozenset({"timezone", "tz"}), lambda d, c: d.pick(pools()["timezone"])),
    (frozenset({"language", "lang"}), lambda d, c: d.pick(pools()["language"])),
    (frozenset({"color", "colour"}), lambda d, c: d.pick(pools()["color"])),
    (frozenset({"ip"}), lambda d, c: d.pick(pools()["ipv4"])),
    (frozenset({"username", "user", "login", "handle"}), lambda d, c: d.pick(pools()["user_name"])),
    (frozenset({"file", "filename", "path"}), lambda d, c: d.pick(pools()["file_name"])),
    (
        frozenset(
            {
                "company",
                "organization",
                "organisation",
                "team",
                "brand",
                "publisher",
                "airline",
                "manufacturer",
                "provider",
                "club",
            }
        ),
        lambda d, c: d.pick(pools()["company"]),
    ),
    (frozenset({"job", "occupation", "position", "role"}), lambda d, c: d.pick(pools()["job"])),
    (frozenset({"first"}), lambda d, c: d.pick(pools()["first_name"])),
    (frozenset({"last", "surname"}), lambda d, c: d.pick(pools()["last_name"])),
    (
        frozenset(
            {
                "name",
                "author",
                "driver",
                "player",
                "artist",
                "person",
                "owner",
                "host",
                "contact",
                "director",
                "customer",
            }
        ),
        lambda d, c: d.pick(pools()["person"]),
    ),
    (frozenset({"title", "headline", "subject"}), lambda d, c: d.pick(pools()["title"])),
    (
        frozenset(
            {
                "description",
                "summary",
                "text",
                "content",
                "message",
                "comment",
                "review",
                "body",
                "note",
                "notes",
                "advice",
                "answer",
                "result",
                "definition",
                "quote",
                "fact",
                "joke",
            }
        ),
        lambda d, c: d.pick(pools()["sentence"]),
    ),
)
_SPLIT = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
# whole names that the word rules would get wrong ("country_code" is no numeric code)
_NAMED: dict[str, _Rule] = {
    "country_code": lambda d, c: d.pick(pools()["country_code"]),
    "countrycode": lambda d, c: d.pick(pools()["country_code"]),
    "day_of_week": lambda d, c: d.pick(_DAYS),
    "weekday": lambda d, c: d.pick(_DAYS),
    "population": lambda d, c: 10_000 + d.below(50_000_000),
    "capital_city": lambda d, c: d.pick(pools()["city"]),
    "condition": lambda d, c: d.pick(("sunny", "partly cloudy", "cloudy", "light rain", "clear", "snow")),
    "symbol": lambda d, c: "".join(chr(65 + d.below(26)) for _ in range(3 + d.below(2))),
    "day": lambda d, c: d.pick(_DAYS),
}


@cache
def _rule_for(field_name: str) -> _Rule | None:
    named = _NAMED.get(field_name.lower())
    if named is not None:
        return named
    parts = [p.lower() for p in _SPLIT.findall(field_name)]
    # the last word names the kind best ("departure_city" is a city, "city_code" a code)
    for part in reversed(parts):
        for keys, rule in _RULES:
            if part in keys:
                return rule
    return None


def field_value(field_name: str, draw: Draw, clock: datetime, *, of: str | None = None) -> Any:
    """A realistic value for a field called `field_name` (a phrase when the name says nothing);
    `of`: the kind of record it belongs to, so the `name` of a country is a country's."""
    rule = _rule_for(of) if of is not None and field_name == "name" else None
    rule = rule or _rule_for(field_name)
    return rule(draw, clock) if rule is not None else draw.pick(pools()["phrase"])


def schema_value(schema: Mapping[str, Any], name: str, draw: Draw, clock: datetime, depth: int = 0) -> Any:
    """A value that fits `schema` (a JSON Schema), named `name`: enums pick a member, objects
    fill every property, arrays hold one to three items, strings follow their format or name."""
    if "const" in schema:
        return schema["const"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return draw.pick(tuple(enum))
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None:
        for key in ("anyOf", "oneOf", "allOf"):
            options = schema.get(key)
            if isinstance(options, list) and options and isinstance(options[0], Mapping):
                return schema_value(options[0], name, draw, clock, depth)
        kind = "object" if isinstance(schema.get("properties"), Mapping) else None
    if kind == "object":
        props = schema.get("properties")
        if not isinstance(props, Mapping) or depth > 6:
            return {}
        return {
            str(k): schema_value(
                v if isinstance(v, Mapping) else {}, str(k), draw.child(str(k)), clock, depth + 1
            )
            for k, v in props.items()
        }
    if kind == "array":
        items = schema.get("items")
        low = int(schema.get("minItems", 1))
        count = max(low, min(int(schema.get("maxItems", 3)), 1 + draw.below(3)))
        singular = name[:-1] if name.endswith("s") else name
        return [
            schema_value(
                items if isinstance(items, Mapping) else {}, singular, draw.child(str(n)), clock, depth + 1
            )
            for n in range(count)
        ]
    if kind == "integer":
        low, high = int(schema.get("minimum", 0)), int(schema.get("maximum", low + 100))
        value = field_value(name, draw, clock)
        return value if isinstance(value, int) and low <= value <= high else low + draw.below(high - low + 1)
    if kind == "number":
        low_f, high_f = float(schema.get("minimum", 0)), float(schema.get("maximum", 1000))
        value = field_value(name, draw, clock)
        return (
            float(value)
            if isinstance(value, (int, float)) and low_f <= value <= high_f
            else draw.between(low_f, high_f)
        )
    if kind == "boolean":
        return draw.below(2) == 1
    if kind == "null":
        return None
    fmt = schema.get("format")
    if fmt == "date":
        return _when(draw, clock).date().isoformat()
    if fmt == "date-time":
        return _when(draw, clock).isoformat()
    if fmt == "email":
        return draw.pick(pools()["email"])
    if fmt in ("uri", "url"):
        return draw.pick(pools()["url"])
    value = field_value(name, draw, clock) if name else draw.pick(pools()["phrase"])
    if kind == "string":
        return str(value)
    return value
