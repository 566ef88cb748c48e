"""Generic read templates for an app no template covers (a plug-in's app, say): one per read API,
its required parameters filled from columns of the same name in the app's own tables, the answer
the values the call returned. Plain, but verified like every generated task."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from toolgym.authoring.generate import Draft, Skip, Template
from toolgym.mocks.world import MockWorld
from toolgym.tools import BaseTool

PHRASINGS = (
    "Could you look up {what}{given}?",
    "I need {what}{given}.",
    "Please find {what}{given}.",
    "Can you tell me {what}{given}?",
)
# result values worth saying back: short text and numbers, not the ids the call was given
MAX_ANSWER_VALUES = 2


# a description that starts with a verb reads as a request without it: "Get the alarms ..." -> "the alarms ..."
VERBS = (
    "get ",
    "list ",
    "find ",
    "search for ",
    "search ",
    "return ",
    "returns ",
    "show ",
    "look up ",
    "fetch ",
    "query ",
)


def _what(tool: BaseTool) -> str:
    """The tool's description as the object of a request: "The current balance of one account."
    -> "the current balance of one account"; up to its first colon or semicolon."""
    first = (tool.description or tool.name.replace("_", " ")).strip().split("\n")[0]
    first = re.split(r"[:;]|\. ", first)[0].rstrip(".").strip()
    for verb in VERBS:
        if first.lower().startswith(verb):
            first = first[len(verb) :]
            break
    return first[:1].lower() + first[1:]


def _leaves(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """(key, scalar) pairs of a result, depth first: dicts by key order, lists by their first item."""
    if isinstance(value, dict):
        return [pair for k, v in value.items() for pair in _leaves(v, k)]
    if isinstance(value, list):
        return _leaves(value[0], path) if value else []
    return [(path, value)]


def _answerable(key: str, value: Any, given: set[str]) -> bool:
    if key in ("status", "") or isinstance(value, bool) or value is None:
        return False
    text = str(value)
    return 0 < len(text) <= 40 and text not in given


def _columns(world: MockWorld) -> dict[str, str]:
    """Column name -> a table of the world (the app's own) that has it, the first by table name."""
    out: dict[str, str] = {}
    for table in sorted(world.table_names):
        for column in world.store.tables[table].columns:
            out.setdefault(column, table)
    return out


def _read_template(tool_name: str) -> Callable[[Draft], None]:
    def draft(d: Draft) -> None:
        tool = d.world.tools.get(tool_name)
        columns = _columns(d.world)
        arguments: dict[str, Any] = {}
        for param in tool.params:
            table = columns.get(param.name)
            if param.optional and (table is None or d.rng.random() < 0.5):
                continue  # an optional filter the tables can fill, half the time: more distinct tasks
            if table is None:
                raise Skip(f"no column gives {tool_name}'s {param.name}")
            row = d.pick(
                f'SELECT "{param.name}" AS v FROM "{table}" WHERE "{param.name}" IS NOT NULL ORDER BY rowid'
            )
            arguments[param.name] = row["v"]
        d.knows(*(str(v) for v in arguments.values()))
        given = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in arguments.items())
        d.query(PHRASINGS, what=_what(tool), given=f" for {given}" if given else "")
        result = d.call(tool_name, **arguments)
        values = [
            (k, v) for k, v in _leaves(result) if _answerable(k, v, {str(a) for a in arguments.values()})
        ][:MAX_ANSWER_VALUES]
        if not values:
            raise Skip(f"{tool_name} returned nothing to say")
        said = "; ".join(f"{k.replace('_', ' ')}: {v}" for k, v in values)
        d.answer(f"Here is what I found: {said}.", *(str(v) for _, v in values))

    return draft


def fallback_templates(app: str) -> list[Template]:
    """A read template per read API of `app`: its required parameters, and half the time each
    optional one, filled from a column of the same name (a draft whose parameter no column fills is
    skipped)."""
    world = MockWorld([app])
    try:
        reads = sorted(t.name for t in world.tools if not t.mutates_state)
    finally:
        world.close()
    return [Template(f"{app}.generic.{name}", (app,), _read_template(name)) for name in reads]
