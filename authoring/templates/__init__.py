"""Task templates for `toolgym generate`: one module per app or app group, each a `TEMPLATES` list.

The modules: `banking.py`, `shopping.py`, `ctool.py` (the English ctool apps; `ctool_zh.py`
phrases the same templates in Chinese), `cross.py` (tasks across banking, shopping and the ctool
apps), `mtu_home.py`, `mtu_travel.py`, `mtu_leisure.py` and `mtu_cross.py` (the mtu apps, with
`mtu_shared.py`'s helpers), `teval_places.py`, `teval_info.py` and `teval_office.py` (the teval
apps, with `teval_common.py`'s helpers), `categories.py` (two behaviour categories over several
apps: insufficient information and hidden preconditions; `Template.category`, `toolgym generate
--category`), `dynamic.py` (the `dynamic` category: worlds that move while the agent works, with
events, waits and notifications), `common.py` (what every module shares), each registered in pyproject.toml.
`generic.py` builds plain read templates for an app that no template covers (plug-in apps).

## Writing a template

A template is a function over a `Draft` (toolgym.authoring.generate), wrapped in a `Template`
that names it and the apps its world needs. The function draws slot values from the seeded world
with the draft's rng, makes the golden chain's tool calls through the draft (each runs on the live
world, and returns the result, so later calls use ids, amounts and dates earlier ones returned),
phrases the query and gives the final answer:

    d.rows(sql, *params) -> list[dict]   SELECT over the world's tables (give it an ORDER BY)
    d.pick(sql, *params) -> dict         one of those rows, chosen by d.rng; Skip if none
    d.choice(seq)                        one item, chosen by d.rng; Skip if empty
    d.rng                                a random.Random seeded by (run seed, template, attempt)
    d.call(tool, **arguments) -> dict    a golden tool call, run now; a failing call is a Skip
    d.knows(*ids)                        ids the user knows (own account, order, parcel): only
                                         these may appear in the query (any other ID-like token
                                         -- an id found through a call, a new id -- drops the draft)
    d.ask(slot, value, question, keywords=...)
                                         a value the query leaves out: the golden chain asks the
                                         user; the task's user scenario knows it and never
                                         volunteers it (the query must not contain it)
    d.query(phrasings, **slots)          the user's request: one phrasing (str.format) by d.rng
    d.answer(text, *groups)              the golden final answer and what a right answer must
                                         contain: each group a value read from the world (or a
                                         list of its aliases); all must be in `text`
    d.refuse(tools, text, *groups, claims=...)
                                         the task cannot be done: `tools` are withheld from the
                                         task's tools (or `()`: none is, or no tool does it); the
                                         golden chain is the reads made before (looking, never
                                         changing) and `text`, which says so ("cannot", "无法", ...)
                                         and holds each of `groups`; `claims` (what a faked answer
                                         says) are the answer's blacklist
    d.fail(tool, **arguments)            a golden call that must fail (`expect_error`): a lookup
                                         of an id that does not exist; returns the error message
    d.blocked(tool, **arguments)         the write asked for fails now with a typed error (tried
                                         on a fork, not recorded): a hidden precondition, whose
                                         message goes to the metadata (`blocked_by`)
    d.forbid_call(id, tool, **arguments) a minefield: any attempt of `tool` with those arguments
    d.forbid_state(id, table, where, absent=False, **values)
                                         a minefield: the row comes to hold `values` (or is gone)
    d.event(id, at_s=|after_step=|after_event=|when=, delay_s=, calls=[(tool, args)], notify=,
            important=)
                                         a change the environment makes (toolgym.tasks.Event),
                                         the first declared before the first step: from then on
                                         each step runs in
                                         simulated time (`DYNAMIC_TIME`, or `d.time(per_step_s=)`)
                                         and later calls see what the events changed
    d.wait(seconds) -> dict              a golden `wait` step (ends early on a notification)
    d.not_before(id, seconds | event_id, tool, **arguments)
                                         a minefield armed until the time the user allowed, or
                                         until an event fired: acting too early
    raise Skip("why")                    this world does not fit; the engine tries another draft

The engine does the rest: the recorded calls (and asks) are the golden chain; a chain with a write
gets `expected_state` from what it changed (no assertion that already holds initially); `tools`
offers every tool of the template's apps but the withheld ones; the metadata says template, shape
(read, write, ask, refuse), apps the chain used, chain length and difficulty. The task's category
is its shape, or the template's `category` (a behaviour: `insufficient_info`,
`hidden_precondition`, `dynamic`) when it names one. A draft with events gives a dynamic task
(events, time policy, metadata `dynamic`: its triggers), whose chain the checks replay in simulated
time, and which an agent that ignores its notifications, or never waits, must fail. Every draft is
verified, duplicate queries are dropped, and a template gives as many distinct tasks as its slots
allow: give several phrasings, and slots with many values.

A chain that two templates run alike (draw the slots, search, pick the winner, book it) is one
helper beside them, in the module or, when modules share it, in `mtu_shared.py`,
`teval_common.py` or `common.py` (`cross.py` books through `shopping.cheapest_in_stock` and
`banking.move_money`); phrasings stay with each template. A helper makes the same rng draws and
calls in the same order as the code it replaced, so the same seed still writes the same bytes.

Example (banking.py has more):

    from toolgym.authoring.generate import Draft, Template

    def balance(d: Draft) -> None:
        account = d.pick("SELECT account_id FROM bank_accounts WHERE status = 'active' ORDER BY account_id")
        d.knows(account["account_id"])
        d.query(["What's the balance of my account {a}?", "How much is in {a} right now?"],
                a=account["account_id"])
        result = d.call("get_balance", account_id=account["account_id"])
        d.answer(f"Account {account['account_id']} holds ${result['balance']:,.2f}.",
                 f"{result['balance']:.2f}")

    TEMPLATES = [Template("banking.balance", ("banking",), balance)]

Register a module's list as an entry point of the `toolgym.templates` group (toolgym's own in its
pyproject.toml, a plug-in's in its own): `banking = "toolgym.authoring.templates.banking:TEMPLATES"`.
An entry point loads a Template, a list of them, or a callable returning either.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolgym.authoring.generate import Template
from toolgym.authoring.templates.generic import fallback_templates
from toolgym.plugins import Plugin, PluginError, Registry, call_factory


def _templates_of(plugin: Plugin, loaded: Any) -> list[tuple[str, Template]]:
    """An entry point's Template, or its list of them (or a callable returning either), by name."""
    if callable(loaded) and not isinstance(loaded, Template):
        loaded = call_factory(loaded)
    items = list(loaded) if isinstance(loaded, Sequence) else [loaded]
    for item in items:
        if not isinstance(item, Template):
            raise PluginError(f"loads {item!r}, not a Template (or a list of them)")
    return [(t.name, t) for t in items]


# name -> Template, from the installed entry points of `toolgym.templates` when first read
TEMPLATES: Registry[Template] = Registry("templates", _templates_of, sort=True)

__all__ = ["TEMPLATES", "Template", "fallback_templates"]
