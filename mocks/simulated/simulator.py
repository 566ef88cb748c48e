"""The simulator interface and its two simulators: deterministic (the default, no LLM) and LLM.

A simulator writes the fresh answer to one call from the tool's documentation; what the episode
already holds (records an earlier call created, and the get/list/update/delete that find them)
is the simulated app's business (`toolgym.mocks.simulated.app`), the same for both.

- `DeterministicSimulator`: the answer is derived from the doc (its return schema where there is
  one, else a record marked `"simulated": true` whose fields follow the tool's name and
  arguments), with values drawn from Faker's pools by a hash of (episode seed, tool, canonical
  arguments): the same call answers the same in every process.
- `LLMSimulator`: a chat model (`ChatModel`, injected: the client lives on a higher floor) writes
  the answer from the doc, a few examples and this episode's earlier calls to the tool. An
  answer that is not JSON, is off the doc's return schema or is too big is asked again, at most
  `attempts` times; then the call fails with an `InfraError` (the endpoint's fault, never the
  agent's). A failing endpoint (`InfraError` from the model) fails the call at once: its client
  already retried.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import jsonschema_rs

from toolgym.canonical import canonical_json
from toolgym.errors import InfraError
from toolgym.mocks.simulated.docs import ToolDoc, words
from toolgym.mocks.simulated.values import Draw, field_value, schema_value

DETERMINISTIC = "simulated:deterministic"
LLM = "simulated:llm"
MAX_ANSWER_BYTES = 64 * 1024  # an answer bigger than this is not a tool's answer
LIST_SIZE = 3


@dataclass(frozen=True)
class SimCall:
    """One call to simulate: the doc, the validated arguments, the episode's seed and clock, and
    this episode's earlier calls to the same tool (`{"arguments", "answer"}`, oldest first)."""

    doc: ToolDoc
    arguments: Mapping[str, Any]
    seed: int
    clock: datetime
    history: Sequence[Mapping[str, Any]] = field(default=())


class Simulator(Protocol):
    """Writes the answer to a call from the documentation. `backend` names it in tool metadata
    and traces ("simulated:deterministic", "simulated:llm")."""

    backend: str

    def answer(self, call: SimCall) -> Any: ...


def draw_for(call: SimCall) -> Draw:
    """The choices of one call: a hash of (seed, tool, canonical arguments)."""
    key = f"{call.seed}\x00{call.doc.name}\x00{canonical_json(dict(call.arguments))}"
    return Draw(key.encode("utf-8", "surrogatepass"))


# what a record about a resource holds beyond its arguments, for the common themes of web APIs
_THEMES: dict[str, tuple[str, ...]] = {
    "weather": ("location", "temperature_c", "humidity", "wind_speed_kph", "condition", "updated_at"),
    "forecast": ("location", "date", "max_temperature_c", "min_temperature_c", "humidity", "condition"),
    "stock": ("symbol", "company", "price", "change_percent", "currency", "updated_at"),
    "quote": ("symbol", "price", "change_percent", "currency", "updated_at"),
    "price": ("symbol", "price", "currency", "updated_at"),
    "exchange": ("from_currency", "to_currency", "rate", "updated_at"),
    "currency": ("from_currency", "to_currency", "rate", "amount", "updated_at"),
    "convert": ("from_currency", "to_currency", "rate", "amount", "updated_at"),
    "news": ("title", "publisher", "url", "published_at", "summary"),
    "article": ("title", "author", "url", "published_at", "summary"),
    "movie": ("title", "director", "year", "rating", "description"),
    "book": ("title", "author", "publisher", "year", "isbn", "rating"),
    "song": ("title", "artist", "year", "duration"),
    "music": ("title", "artist", "year", "duration"),
    "recipe": ("title", "description", "duration", "rating"),
    "event": ("title", "venue", "city", "start_time", "end_time", "status"),
    "user": ("name", "username", "email", "city", "created_at"),
    "team": ("name", "city", "country", "wins", "losses"),
    "player": ("name", "team", "country", "age", "position", "points"),
    "match": ("home_team", "away_team", "date", "venue", "status", "score"),
    "fixture": ("home_team", "away_team", "date", "venue", "status"),
    "league": ("name", "country", "year", "team_count"),
    "flight": ("airline", "origin", "destination", "departure_time", "arrival_time", "price", "currency"),
    "hotel": ("name", "city", "address", "rating", "price", "currency"),
    "restaurant": ("name", "city", "address", "phone", "rating", "price_range"),
    "country": ("name", "country_code", "capital_city", "population", "currency", "language"),
    "company": ("name", "country", "website", "employee_count", "description"),
    "date": ("date", "day_of_week", "timezone"),
    "time": ("time", "timezone"),
    "holiday": ("name", "date", "country"),
    "joke": ("joke", "category"),
    "advice": ("advice",),
    "fact": ("fact", "category"),
    "word": ("word", "definition", "language"),
    "translate": ("text", "source_language", "target_language", "translation"),
    "file": ("file_name", "size", "updated_at", "url"),
    "email": ("email", "status", "sent_at"),
    "ip": ("ip", "city", "country", "timezone", "latitude", "longitude"),
    "location": ("city", "country", "latitude", "longitude", "timezone"),
    "address": ("street", "city", "postcode", "country", "latitude", "longitude"),
    "product": ("name", "brand", "price", "currency", "rating"),
    "order": ("status", "total", "currency", "created_at"),
    "job": ("title", "company", "city", "salary", "currency", "posted_at"),
    "repository": ("name", "owner", "description", "stars", "url", "updated_at"),
    "video": ("title", "url", "duration", "views", "published_at"),
    "image": ("url", "title", "width", "height"),
    "score": ("score", "updated_at"),
}
_DEFAULT_FIELDS = ("name", "description", "updated_at")


def record_fields(doc: ToolDoc) -> tuple[str, ...]:
    """The fields of a synthetic record for `doc`: a theme named in the tool's name (then its
    description), else the resource's own name and a description."""
    for text in (doc.name, doc.description):
        for word in words(text):
            stem = word.removesuffix("s") if len(word) > 3 else word
            for key in (word, stem):
                if key in _THEMES:
                    return _THEMES[key]
    return (doc.resource, *_DEFAULT_FIELDS) if doc.resource not in _DEFAULT_FIELDS else _DEFAULT_FIELDS


def synthetic_record(
    doc: ToolDoc, arguments: Mapping[str, Any], draw: Draw, clock: datetime
) -> dict[str, Any]:
    """A record for an undocumented answer: the arguments as given, then the theme's fields."""
    record: dict[str, Any] = {}
    for name in record_fields(doc):
        if name not in arguments:
            record[name] = field_value(name, draw.child(name), clock, of=doc.resource)
    for name, value in arguments.items():
        record[name] = value
    return record


def echo_arguments(answer: Any, arguments: Mapping[str, Any]) -> Any:
    """A generated answer that agrees with the call: a documented field named like an argument
    carries the argument's value (top level, and in the items of a top-level list)."""
    if isinstance(answer, dict):
        for name, value in arguments.items():
            if name in answer and not isinstance(answer[name], (dict, list)):
                answer[name] = value
        for key, item in answer.items():
            if isinstance(item, list):
                answer[key] = [echo_arguments(i, arguments) if isinstance(i, dict) else i for i in item]
    return answer


class DeterministicSimulator:
    """Answers from the doc alone: the same call (seed, tool, arguments) answers the same."""

    backend = DETERMINISTIC

    def answer(self, call: SimCall) -> Any:
        draw = draw_for(call)
        doc = call.doc
        if doc.returns is not None:
            return echo_arguments(schema_value(doc.returns, doc.resource, draw, call.clock), call.arguments)
        if doc.action == "list":
            items = [
                synthetic_record(doc, call.arguments, draw.child(str(n)), call.clock)
                for n in range(LIST_SIZE)
            ]
            return {"simulated": True, "results": items, "count": len(items)}
        return {"simulated": True, **synthetic_record(doc, call.arguments, draw, call.clock)}


# ---- the LLM simulator --------------------------------------------------------------------------------
class ChatModel(Protocol):
    """A chat model for `LLMSimulator` (the same shape as `toolgym.envs.users.UserLLM`, so one
    adapter and one cassette wrapper serve both). `model` names it in cassette keys."""

    model: str

    def chat(self, messages: Sequence[Mapping[str, str]], *, seed: int | None) -> str:
        """The reply text; raises InfraError when the endpoint fails."""
        ...


_SYSTEM = (
    "You simulate a web API that has no server. Given its documentation and a call, write the "
    "JSON body the API would answer with: realistic values (never placeholders or lorem ipsum), "
    "consistent with the call's arguments and with the earlier calls shown, dates near the "
    "current time given. Answer with one JSON value and nothing else."
)


def simulator_messages(call: SimCall, examples: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """What the LLM simulator asks: the doc, examples, the episode's earlier calls, the call."""
    doc = call.doc
    parts = [
        f"API: {doc.name}",
        f"Description: {doc.description or '(none)'}",
        f"Parameters (JSON Schema): {canonical_json(doc.parameters)}",
    ]
    if doc.returns is not None:
        parts.append(f"The answer must validate against this JSON Schema: {canonical_json(doc.returns)}")
    parts.append(f"Current time: {call.clock.isoformat()}")
    for example in examples:
        parts.append(f"Example call: {canonical_json(dict(example))}")
    for earlier in call.history:
        parts.append(
            f"Earlier call this session: {canonical_json(earlier.get('arguments'))} -> "
            f"{canonical_json(earlier.get('answer'))}"
        )
    parts.append(f"Call: {canonical_json(dict(call.arguments))}")
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": "\n".join(parts)}]


def _strip_fence(text: str) -> str:
    text = text.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text.strip()


class LLMSimulator:
    """Answers written by a chat model, checked against the doc; see the module docstring."""

    backend = LLM

    def __init__(self, model: ChatModel, *, attempts: int = 3, max_bytes: int = MAX_ANSWER_BYTES) -> None:
        if attempts < 1:
            raise ValueError("attempts must be at least 1")
        self.model = model
        self.attempts = attempts
        self.max_bytes = max_bytes
        self.problems: list[str] = []  # every rejected answer, for tests and reports

    def problem(self, doc: ToolDoc, text: str) -> tuple[Any, str | None]:
        """The answer in `text`, or why it is not one."""
        if len(text.encode("utf-8", "surrogatepass")) > self.max_bytes:
            return None, f"the answer is {len(text)} characters, over the {self.max_bytes}-byte limit"
        try:
            value = json.loads(_strip_fence(text))
        except ValueError as exc:
            return None, f"the answer is not JSON ({exc})"
        if doc.returns is not None:
            try:
                jsonschema_rs.validate(doc.returns, value)
            except jsonschema_rs.ValidationError as exc:
                return None, f"the answer is off the doc's return schema: {exc.message}"
        return value, None

    def answer(self, call: SimCall) -> Any:
        messages = simulator_messages(call, call.doc.examples)
        seen: list[str] = []
        for attempt in range(self.attempts):
            # each attempt carries its own seed, so a retry is a new sample and its own cassette entry
            text = self.model.chat(messages, seed=call.seed + attempt)
            value, problem = self.problem(call.doc, text)
            if problem is None:
                return value
            seen.append(problem)
            self.problems.append(f"{call.doc.name}: {problem}")
        raise InfraError(
            f"simulator for {call.doc.name!r}: no valid answer in {self.attempts} attempts: {seen[-1]}",
            data={"problems": seen},
        )
