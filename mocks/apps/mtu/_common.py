"""Shared pieces of the MTU-Bench apps: value parsing in MTU's loose conventions, place and name
pools for seeding, result-field selection, and publishing parameter names Python cannot spell.

MTU's APIs come from several source datasets (SGD, MultiWOZ, SNIPS, ATIS, generated ones), so the
same idea arrives in many spellings: "dontcare" for "any", "True"/"true"/true for yes, "five" or
"5" for a count, "today"/"Saturday"/"2024-03-05" for a date, "19:30"/"7 pm" for a time. These
helpers turn each into one canonical value or a 400.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime, timedelta
from types import NoneType, UnionType
from typing import Annotated, Any, Final, Union, get_args, get_origin

from pydantic import BeforeValidator, ConfigDict, Field, create_model

from toolgym.mocks.app import App, Query, app_apis, arguments_strict
from toolgym.mocks.clock import format_time
from toolgym.mocks.responses import bad_request, not_found, unprocessable
from toolgym.mocks.seeding import leading_number

DONTCARE: Final = "dontcare"

# A tri-state filter as MTU writes it: true/false, "True"/"False" in any case, or "dontcare"; and
# a count: 2, "2" or "two". Published as strings; finalize_tools() lets JSON booleans and numbers
# through as their string forms (the framework takes no union parameter types).
Flag = str
Count = str

# ---- parsing ---------------------------------------------------------------------------------
_TRUE: Final = frozenset({"true", "yes", "y", "1"})
_FALSE: Final = frozenset({"false", "no", "n", "0"})


def flag(param: str, value: str | bool | None) -> bool | None:
    """True, False, or None for "dontcare"/absent; 400 for anything else."""
    if value is None or isinstance(value, bool):
        return value
    text = value.strip().lower()
    if text in ("", DONTCARE, "any", "true or false"):
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise bad_request(f"{param!r} must be True, False or 'dontcare', got {value!r}", param=param)


def count(param: str, value: int | str | None, *, lo: int = 1, hi: int = 50) -> int:
    """A count from 3, "3", "three" or "3 people"; 400 unless it is within [lo, hi]."""
    number: int | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, str):
        number = leading_number(value.strip().lower())
    if number is None:
        raise bad_request(f"{param!r} must be a whole number, got {value!r}", param=param)
    if not lo <= number <= hi:
        raise bad_request(f"{param!r} must be between {lo} and {hi}, got {number}", param=param)
    return number


def number(param: str, value: float | int | str) -> float:
    """A float from 12.5, "12.5", "$12.50" or "12.5 USD"; 400 otherwise."""
    if isinstance(value, bool):
        raise bad_request(f"{param!r} must be a number, got {value!r}", param=param)
    if isinstance(value, (int, float)):
        return float(value)
    found = re.search(r"-?\d+(?:\.\d+)?", value.replace(",", ""))
    if found is None:
        raise bad_request(f"{param!r} must be a number, got {value!r}", param=param)
    return float(found.group(0))


WEEKDAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS: Final = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)


def _weekday_index(text: str) -> int | None:
    for i, name in enumerate(WEEKDAYS):
        if text == name or text == name[:3] or (len(text) >= 3 and name.startswith(text)):
            return i
    return None


def parse_day(param: str, value: str, today: date) -> date:
    """A date from "2024-03-05", "today", "tomorrow", "Saturday", "next friday", "March 5th" or
    "5 March 2024"; weekday names mean the next such day (today counts). 400 otherwise."""
    text = value.strip().lower().replace(",", " ")
    text = re.sub(r"\s+", " ", text)
    try:
        return date.fromisoformat(text)
    except ValueError:
        pass
    if text in ("today", "tonight", "now", "this evening", "this morning", "this afternoon"):
        return today
    if text == "tomorrow":
        return today + timedelta(days=1)
    if text in ("day after tomorrow", "the day after tomorrow"):
        return today + timedelta(days=2)
    words = text.split(" ")
    nxt = words[0] in ("next", "this", "coming", "on")
    if nxt:
        words = words[1:]
    if len(words) == 1:
        idx = _weekday_index(words[0])
        if idx is not None:
            ahead = (idx - today.weekday()) % 7
            if text.startswith("next ") and ahead == 0:
                ahead = 7
            return today + timedelta(days=ahead)
    # "march 5th", "5 march", "march 5 2024", "the 5th of march"
    words = [w for w in words if w not in ("the", "of")]
    month = day = year = None
    for w in words:
        stripped = re.sub(r"(st|nd|rd|th)$", "", w)
        if any(m.startswith(w) and len(w) >= 3 for m in MONTHS):
            month = next(i for i, m in enumerate(MONTHS, 1) if m.startswith(w))
        elif stripped.isdigit() and len(stripped) == 4:
            year = int(stripped)
        elif stripped.isdigit():
            day = int(stripped)
    if month is not None and day is not None:
        try:
            found = date(year or today.year, month, day)
        except ValueError:
            raise bad_request(f"{param!r}: no such date {value!r}", param=param) from None
        if year is None and found < today:
            found = found.replace(year=found.year + 1)
        return found
    raise bad_request(f"{param!r} must be a date YYYY-MM-DD (or today/tomorrow/a weekday), got {value!r}")


def upcoming_day(param: str, value: str, today: date, *, called: str | None = None) -> date:
    """parse_day for something to book: a day before `today` is a 422 "<called> <day> is in the
    past" (`called`: how the message names the day; default the parameter, "" none)."""
    day = parse_day(param, value, today)
    if day < today:
        subject = param if called is None else called
        raise unprocessable(f"{subject} {day.isoformat()} is in the past".lstrip())
    return day


def parse_clock(param: str, value: str) -> str:
    """A time of day as "HH:MM" from "19:30", "7:30 pm", "7pm", "19:30:00", "noon"; 400 otherwise."""
    text = value.strip().lower().replace(".", "")
    if text in ("noon", "midday"):
        return "12:00"
    if text == "midnight":
        return "00:00"
    found = re.fullmatch(r"(?:at |around )?(\d{1,2})(?::(\d{2}))?(?::\d{2})?\s*(am|pm|a m|p m)?", text)
    if found is None:
        raise bad_request(f"{param!r} must be a time HH:MM, got {value!r}", param=param)
    hour, minute = int(found.group(1)), int(found.group(2) or 0)
    suffix = (found.group(3) or "").replace(" ", "")
    if found.group(2) is None and not suffix:
        raise bad_request(f"{param!r} must be a time HH:MM, got {value!r}", param=param)
    if suffix == "pm" and hour < 12:
        hour += 12
    elif suffix == "am" and hour == 12:
        hour = 0
    if hour > 23 or minute > 59:
        raise bad_request(f"{param!r}: no such time {value!r}", param=param)
    return f"{hour:02d}:{minute:02d}"


def minutes(clock: str) -> int:
    """Minutes since midnight of an "HH:MM" string."""
    hours, mins = clock.split(":")
    return int(hours) * 60 + int(mins)


def clock_of(total_minutes: int) -> str:
    total_minutes %= 24 * 60
    return f"{total_minutes // 60:02d}:{total_minutes % 60:02d}"


PARTS_OF_DAY: Final[dict[str, tuple[int, int]]] = {
    "morning": (5 * 60, 12 * 60),
    "afternoon": (12 * 60, 17 * 60),
    "evening": (17 * 60, 21 * 60),
    "night": (19 * 60, 24 * 60),
    "tonight": (17 * 60, 24 * 60),
}


def time_window(param: str, value: str) -> tuple[int, int]:
    """A range of minutes from "morning", "before 10:00", "after 5 pm", "around 7 pm" or "19:00"
    (a plain time means within an hour either side)."""
    text = value.strip().lower()
    for part, window in PARTS_OF_DAY.items():
        if part in text:
            return window
    for prefix, make in (
        ("before ", lambda m: (0, m)),
        ("by ", lambda m: (0, m)),
        ("after ", lambda m: (m, 24 * 60)),
        ("from ", lambda m: (m, 24 * 60)),
    ):
        if text.startswith(prefix):
            return make(minutes(parse_clock(param, text[len(prefix) :])))
    at = minutes(parse_clock(param, text))
    return max(0, at - 60), min(24 * 60, at + 60)


def canon(text: str | None) -> str:
    """Case- and space-insensitive form of a name for comparisons."""
    return re.sub(r"\s+", " ", (text or "").strip().lower())


def words_in(needle: str, haystack: str) -> bool:
    """Every word of `needle` appears in `haystack` (both compared canonically)."""
    hay = canon(haystack)
    return all(w in hay for w in canon(needle).split(" ") if w)


def choice(param: str, value: str, allowed: Sequence[str], synonyms: Mapping[str, str] | None = None) -> str:
    """The canonical spelling among `allowed` of a value given in any case; 400 otherwise."""
    key = canon(value)
    for a in allowed:
        if canon(a) == key:
            return a
    if synonyms and key in synonyms:
        return synonyms[key]
    raise bad_request(f"invalid value {value!r} for {param!r}; expected one of {list(allowed)}", param=param)


def one_of(names: Mapping[str, Any], what: str) -> tuple[str, Any]:
    """Exactly one of several alternative parameters (MTU variants name one idea differently):
    the first one given, or a 400 naming them all."""
    for name, value in names.items():
        if value not in (None, ""):
            return name, value
    raise bad_request(f"{what}: give one of {list(names)}", params=list(names))


def _field_key(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def select_fields(
    row: Mapping[str, Any], return_info: Sequence[str] | None, param: str = "return_info"
) -> dict[str, Any]:
    """MultiWOZ-style `return_info`: ["all"] or field names in any spelling ("phone number",
    "ArriveBy", "entrance fee"); a name matching no field is a 400, not silently dropped."""
    if not return_info or any(_field_key(r) == "all" for r in return_info):
        return dict(row)
    keys = {_field_key(k): k for k in row}
    out: dict[str, Any] = {}
    for wanted in return_info:
        w = _field_key(wanted)
        found = keys.get(w) or next((k for kk, k in keys.items() if w and (w in kk or kk in w)), None)
        if found is None:
            raise bad_request(f"{param}: unknown field {wanted!r}; fields: {['all', *row]}", param=param)
        out[found] = row[found]
    return out


# ---- places ----------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class City:
    name: str
    state: str
    country: str
    lat: float
    lon: float


CITIES: Final = (
    City("San Francisco", "California", "United States", 37.77, -122.42),
    City("New York", "New York", "United States", 40.71, -74.01),
    City("Los Angeles", "California", "United States", 34.05, -118.24),
    City("Seattle", "Washington", "United States", 47.61, -122.33),
    City("Chicago", "Illinois", "United States", 41.88, -87.63),
    City("Atlanta", "Georgia", "United States", 33.75, -84.39),
    City("Boston", "Massachusetts", "United States", 42.36, -71.06),
    City("Washington", "District of Columbia", "United States", 38.91, -77.04),
    City("Philadelphia", "Pennsylvania", "United States", 39.95, -75.17),
    City("San Diego", "California", "United States", 32.72, -117.16),
    City("Portland", "Oregon", "United States", 45.52, -122.68),
    City("Las Vegas", "Nevada", "United States", 36.17, -115.14),
    City("Sacramento", "California", "United States", 38.58, -121.49),
    City("San Jose", "California", "United States", 37.34, -121.89),
    City("Oakland", "California", "United States", 37.80, -122.27),
    City("Fresno", "California", "United States", 36.74, -119.79),
    City("Anaheim", "California", "United States", 33.84, -117.91),
    City("Phoenix", "Arizona", "United States", 33.45, -112.07),
    City("Denver", "Colorado", "United States", 39.74, -104.99),
    City("Vancouver", "British Columbia", "Canada", 49.28, -123.12),
    City("Toronto", "Ontario", "Canada", 43.65, -79.38),
    City("London", "England", "United Kingdom", 51.51, -0.13),
    City("Cambridge", "England", "United Kingdom", 52.21, 0.12),
    City("Paris", "Ile-de-France", "France", 48.86, 2.35),
    City("Sydney", "New South Wales", "Australia", -33.87, 151.21),
    City("Mexico City", "Mexico City", "Mexico", 19.43, -99.13),
    City("New Delhi", "Delhi", "India", 28.61, 77.21),
)
CITY_BY_NAME: Final = {c.name.lower(): c for c in CITIES}
CITY_ALIASES: Final[dict[str, str]] = {
    "nyc": "New York",
    "new york city": "New York",
    "ny": "New York",
    "manhattan": "New York",
    "sf": "San Francisco",
    "san fran": "San Francisco",
    "la": "Los Angeles",
    "l.a.": "Los Angeles",
    "vegas": "Las Vegas",
    "dc": "Washington",
    "washington dc": "Washington",
    "washington d.c.": "Washington",
    "philly": "Philadelphia",
    "mexico": "Mexico City",
    "delhi": "New Delhi",
    "sydney, australia": "Sydney",
}
# the part-of-town vocabulary of the MultiWOZ APIs (their town is Cambridge)
AREAS: Final = ("centre", "north", "south", "east", "west")


def city_name(value: str) -> str | None:
    """The seeded city a user's spelling refers to ("NYC", "new york", "Vegas", "Seattle, WA")."""
    key = canon(value)
    for k in (key, key.split(",")[0].strip(), key.removesuffix(" city")):
        if k in CITY_BY_NAME:
            return CITY_BY_NAME[k].name
        if k in CITY_ALIASES:
            return CITY_ALIASES[k]
    return None


def require_city(param: str, value: str) -> str:
    found = city_name(value)
    if found is None:
        raise not_found("city", value)
    return found


def area_of(value: str) -> str | None:
    """The MultiWOZ part of town named in "centre", "the west side of town", "center"."""
    text = canon(value).replace("center", "centre").replace("central", "centre")
    for a in AREAS:
        if re.search(rf"\b{a}\b", text):
            return a
    return None


def where_area(query: Query, area: str, city: Callable[[str], str] | None = None) -> Query:
    """MultiWOZ's `area` filter: a part of Cambridge ("centre", "the west") or, as MTU's other
    sources use the same parameter, a city (`city` resolves it; default: the seeded city's name or
    the text as given)."""
    part = area_of(area)
    if part is not None:
        return query.where("city = 'Cambridge' AND area = ?", part)
    return query.where("city = ?", city(area) if city is not None else city_name(area) or area)


STREETS: Final = (
    "Main Street",
    "Oak Avenue",
    "Mission Street",
    "Market Street",
    "Broadway",
    "El Camino Real",
    "Park Avenue",
    "Elm Street",
    "Maple Drive",
    "Sunset Boulevard",
    "Lake Shore Drive",
    "Cedar Lane",
    "Pine Street",
    "2nd Street",
    "5th Avenue",
    "Hill Road",
    "River Road",
    "Church Street",
    "King Street",
    "Regent Street",
    "Bridge Street",
    "Trumpington Street",
    "Station Road",
    "Castle Street",
)
FIRST_NAMES: Final = (
    "John",
    "Alex",
    "Robert",
    "Jack",
    "Mark",
    "Emma",
    "Olivia",
    "Liam",
    "Sophia",
    "Noah",
    "Mia",
    "James",
    "Ava",
    "Lucas",
    "Isabella",
    "Ethan",
    "Grace",
    "Daniel",
    "Chloe",
    "Henry",
    "Zoe",
    "Samuel",
    "Lily",
    "David",
    "Nora",
    "Peter",
    "Hannah",
    "Omar",
    "Priya",
    "Kenji",
    "Sara",
    "Mateo",
    "Yvonne",
    "Philip",
    "Rachel",
    "Victor",
)
LAST_NAMES: Final = (
    "Smith",
    "Johnson",
    "Williams",
    "Brown",
    "Jones",
    "Garcia",
    "Miller",
    "Davis",
    "Martinez",
    "Lopez",
    "Wilson",
    "Anderson",
    "Taylor",
    "Thomas",
    "Moore",
    "Lee",
    "Walker",
    "Young",
    "King",
    "Wright",
    "Chen",
    "Patel",
    "Nguyen",
    "Kim",
    "Yang",
    "Doe",
    "Rivera",
    "Clark",
)


def street_address(rng: random.Random) -> str:
    return f"{rng.randint(10, 2999)} {rng.choice(STREETS)}"


def earlier_booking(
    row: dict[str, Any], rng: random.Random, clock: datetime, *, days_ago: tuple[int, int]
) -> dict[str, Any]:
    """A seeded booking of another customer's: `row`, confirmed, made between `days_ago` days
    before the episode. The day is drawn after the row's own draws, in the order the seeders of
    the golden tasks have always drawn them."""
    made = clock - timedelta(days=rng.randint(*days_ago))
    return {**row, "status": "confirmed", "created_at": format_time(made)}


def phone(rng: random.Random) -> str:
    return f"{rng.randint(200, 989)}-{rng.randint(200, 999)}-{rng.randint(0, 9999):04d}"


# ---- argument leniency and published names the framework cannot express -------------------
def _as_text(value: Any) -> Any:
    # MTU agents send yes/no as JSON booleans and counts as numbers for string parameters
    if arguments_strict():
        return value  # the declared type only (toolgym.mocks.app.strict_arguments)
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (int, float)):
        return str(value)
    return value


def _as_text_list(value: Any) -> Any:
    # a single string where a list is expected ("all" for ["all"])
    if arguments_strict():
        return value
    if isinstance(value, (str, bool, int, float)):
        return [_as_text(value)]
    if isinstance(value, (list, tuple)):
        return [_as_text(v) for v in value]
    return value


def _is_text(annotation: Any) -> bool:
    if annotation is str:
        return True
    return get_origin(annotation) in (Union, UnionType) and set(get_args(annotation)) == {str, NoneType}


def _is_text_list(annotation: Any) -> bool:
    base = annotation
    if get_origin(base) in (Union, UnionType):
        rest = [a for a in get_args(base) if a is not NoneType]
        base = rest[0] if len(rest) == 1 else None
    return get_origin(base) is tuple and get_args(base)[:1] == (str,)


def finalize_tools(cls: type[App], renames: Mapping[str, Mapping[str, str]] | None = None) -> type[App]:
    """Adjust the app's prototype tools where the framework cannot say what MTU publishes.

    * string parameters also take JSON booleans and numbers (as "True"/"False"/"3"), and list
      parameters a single string: MTU's own data writes `has_wifi: true` and `people: 5`;
    * `renames` gives parameters published names Python cannot use ("song/playlist", "from",
      "class"): {api: {python_name: published_name}}; the method still gets the Python names.

    Call once, right after the class definition (worlds copy the prototype tools).
    """
    for api in app_apis(cls):
        mapping = (renames or {}).get(api.name, {})
        tool = api.tool
        fields: dict[str, Any] = {}
        for py_name, info in tool.args_model.model_fields.items():
            annotation: Any = info.annotation
            if _is_text(annotation):
                annotation = Annotated[annotation, BeforeValidator(_as_text)]
            elif _is_text_list(annotation):
                annotation = Annotated[annotation, BeforeValidator(_as_text_list)]
            default = ... if info.is_required() else info.default
            fields[py_name] = (annotation, Field(default, alias=mapping.get(py_name, py_name)))
        tool.args_model = create_model(f"{tool.name}Args", __config__=ConfigDict(extra="forbid"), **fields)
        for py_name, published in mapping.items():
            binding = tool._bindings[py_name]
            tool._bindings[py_name] = dataclasses.replace(
                binding, spec=binding.spec.model_copy(update={"name": published})
            )
    return cls
