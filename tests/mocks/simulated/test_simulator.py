"""The deterministic simulator: answers from the doc, the same in every process for one
(seed, tool, arguments), realistic values inside the task's clock."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import jsonschema

from tests.mocks.simulated.test_docs import OPENAPI, TOOLBENCH
from tests.shared_data import TEVAL_API_DOC
from toolgym.canonical import canonical_json
from toolgym.mocks.simulated.docs import load_docs, parse_docs
from toolgym.mocks.simulated.simulator import DETERMINISTIC, DeterministicSimulator, SimCall

CLOCK = datetime(2024, 5, 1, 9, 30, tzinfo=UTC)
SIM = DeterministicSimulator()
WEATHER = parse_docs(
    [
        {
            "name": "get_current_weather",
            "description": "Current weather of a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
        {"name": "search_news", "description": "News articles about a topic.", "parameters": {}},
    ],
    "weather.json",
)


def _answer(doc_index: int, arguments: dict[str, object], seed: int = 0) -> object:
    return SIM.answer(SimCall(doc=WEATHER[doc_index], arguments=arguments, seed=seed, clock=CLOCK))


def test_same_call_same_answer_and_the_seed_matters() -> None:
    first = _answer(0, {"city": "Paris"})
    assert first == _answer(0, {"city": "Paris"})
    assert first != _answer(0, {"city": "Paris"}, seed=1)
    assert first != _answer(0, {"city": "Lyon"})
    assert SIM.backend == DETERMINISTIC == "simulated:deterministic"


def test_undocumented_answers_are_marked_and_themed() -> None:
    answer = _answer(0, {"city": "Paris"})
    assert isinstance(answer, dict)
    assert answer["simulated"] is True and answer["city"] == "Paris"  # the argument, as given
    assert {"temperature_c", "humidity", "condition"} <= set(answer)
    assert isinstance(answer["temperature_c"], float) and 0 <= answer["humidity"] < 100
    listing = _answer(1, {})
    assert isinstance(listing, dict) and listing["count"] == len(listing["results"]) == 3
    assert {"title", "url", "published_at"} <= set(listing["results"][0])


def test_values_are_realistic_and_inside_the_clock() -> None:
    text = canonical_json([_answer(1, {}, seed=s) for s in range(20)])
    assert "lorem" not in text.lower() and "ipsum" not in text.lower()
    for seed in range(20):
        listing = _answer(1, {}, seed=seed)
        assert isinstance(listing, dict)
        for item in listing["results"]:
            when = datetime.fromisoformat(item["published_at"])
            assert abs(when - CLOCK) <= timedelta(days=31)


def test_documented_returns_are_followed() -> None:
    docs = [*load_docs(TEVAL_API_DOC), *parse_docs(TOOLBENCH, "tb.json"), *parse_docs(OPENAPI, "o.json")]
    for seed in range(3):
        for doc in docs:
            assert doc.returns is not None
            args = {name: "x" for name in doc.required}
            answer = SIM.answer(SimCall(doc=doc, arguments=args, seed=seed, clock=CLOCK))
            jsonschema.validate(answer, doc.returns)
    details = next(d for d in docs if d.name == "AirbnbSearch.get_property_details")
    answer = SIM.answer(SimCall(doc=details, arguments={"propertyId": 7}, seed=0, clock=CLOCK))
    assert isinstance(answer, dict) and -180 <= answer["longitude"] <= 180 and answer["title"]


_CHILD = """
import sys
from datetime import UTC, datetime
from toolgym.canonical import canonical_json
from toolgym.mocks.simulated.docs import load_docs
from toolgym.mocks.simulated.simulator import DeterministicSimulator, SimCall
docs = load_docs(sys.argv[1])
clock = datetime(2024, 5, 1, 9, 30, tzinfo=UTC)
print(canonical_json([DeterministicSimulator().answer(SimCall(doc=d, arguments={n: "x" for n in d.required},
      seed=3, clock=clock)) for d in docs]))
"""


def test_answers_are_byte_identical_across_processes() -> None:
    docs = load_docs(TEVAL_API_DOC)
    here = canonical_json(
        [
            SIM.answer(SimCall(doc=d, arguments={n: "x" for n in d.required}, seed=3, clock=CLOCK))
            for d in docs
        ]
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", _CHILD, str(TEVAL_API_DOC)],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": str(n), "PATH": ""} | _pythonpath(),
        ).stdout.strip()
        for n in (1, 2)
    ]
    assert runs[0] == runs[1] == here
    assert json.loads(here)[0]  # a real answer, not an empty list


def _pythonpath() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "HOME")}
