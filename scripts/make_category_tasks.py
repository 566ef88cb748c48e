"""Regenerate fixtures/categories/*.jsonl: the behaviour-category task sets over the bundled mock apps.

Three sets, each a behaviour an agent must get right beyond calling the right tool (the categories
of Apple's ToolSandbox), built by the modules of scripts/category_tasks/:

- insufficient_info.jsonl (`insufficient.py`): the tool it needs is not offered, the thing it names
  does not exist, or a value it needs is never given and there is no user to ask; the right answer
  says it cannot be done, and minefields forbid faking it.
- hidden_preconditions.jsonl (`preconditions.py`): a write fails with a typed error naming what is
  missing until another write changes that state; the golden chain makes that write, then the one
  asked for.
- canonicalization.jsonl (`canonical.py`): relative dates and times, units and names that the tools
  take only in canonical form; the golden chain uses the canonical arguments.

Every golden call is run here on a fresh world (a call that does not do what its step says stops
the script), and a write chain's expected_state is what it changed, as `toolgym generate` derives
it. Run `python -m scripts.make_category_tasks` from the repository root: the same code writes the
same bytes. `toolgym check insufficient-info hidden-preconditions canonicalization` checks them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from scripts.category_tasks.canonical import canonicalization
from scripts.category_tasks.common import CANONICAL, FILES, INSUFFICIENT, OUT_DIR, PRECONDITION, Spec
from scripts.category_tasks.insufficient import insufficient_info
from scripts.category_tasks.preconditions import hidden_preconditions
from scripts.task_set_files import write_sets
from toolgym.actions import FinalAnswer
from toolgym.authoring.generate import WorldInfo, expected_state_of
from toolgym.errors import ErrorKind
from toolgym.mocks.rewards import check_assertions
from toolgym.mocks.world import MockWorld
from toolgym.tasks import AnswerSpec, GoldenStep, Task

PREFIX: Final = {INSUFFICIENT: "info", PRECONDITION: "pre", CANONICAL: "canon"}


def _blocked_by(fresh: MockWorld, spec: Spec) -> str:
    """The typed error the asked-for write meets on the untouched world (on a fork of it): the
    proof that the task's precondition is real and that the error says what is missing."""
    assert spec.precondition is not None
    other = fresh.fork()
    try:
        obs = other.step(spec.precondition.call)
    finally:
        other.close()
    if obs.error is None or obs.error.kind != ErrorKind.TOOL_ERROR:
        raise SystemExit(f"{spec.name}: {spec.precondition.call.name} does not fail before the precondition")
    return obs.error.message


def expected_state(spec: Spec) -> tuple[list[dict[str, Any]], list[str]]:
    """Runs the golden steps on a fresh world, each as its step says (ok, or the error kind it
    expects); the state assertions of what the chain changed that fail on the untouched world,
    and the tools of the task's apps."""
    fresh = MockWorld(spec.apps, seed=spec.seed, clock=spec.clock)
    try:
        info = WorldInfo.of(fresh)
        if spec.precondition is not None:
            spec.extra["blocked_by"] = _blocked_by(fresh, spec)
        fresh.take_diff()
        for number, step in enumerate(spec.steps):
            obs = fresh.step(step.call)
            got = obs.error.kind if obs.error is not None else None
            if got != step.error:
                raise SystemExit(
                    f"{spec.name}: golden call #{number} {step.call.name}: {got or 'ok'}: {obs.text}"
                )
        if not any(s.call.name in info.writes and s.error is None for s in spec.steps):
            return [], sorted(info.owner)
        changed = expected_state_of(fresh, info, fresh.take_diff())
        fresh.reset(seed=spec.seed, clock=spec.clock)
        report = check_assertions(fresh, changed)
        return [a for a, r in zip(changed, report.results, strict=True) if not r.passed], sorted(info.owner)
    finally:
        fresh.close()


def build(spec: Spec, category: str, number: int) -> Task:
    state, tools = expected_state(spec)
    unknown = [t for t in spec.withheld if t not in tools]
    if unknown:
        raise SystemExit(f"{spec.name}: withheld tools not in the apps: {unknown}")
    answer = None
    if spec.whitelist or spec.blacklist:
        answer = AnswerSpec(whitelist=spec.whitelist or None, blacklist=spec.blacklist or None)
    golden = [GoldenStep(action=s.call, expect_error=s.error) for s in spec.steps]
    golden.append(GoldenStep(action=FinalAnswer(text=spec.answer)))
    return Task(
        id=f"{PREFIX[category]}-{spec.name}-{number:03d}",
        query=spec.query,
        tools=[t for t in tools if t not in spec.withheld],
        golden=golden,
        answer=answer,
        clock=spec.clock,
        seed=spec.seed,
        category=category,
        apps=list(spec.apps),
        expected_state=state,
        minefields=spec.minefields or None,
        metadata={"subcategory": spec.kind, **spec.extra},
    )


def main(argv: Sequence[str] | None = None) -> None:
    write_sets(
        (__doc__ or "").splitlines()[0],
        OUT_DIR,
        {
            FILES[INSUFFICIENT]: (insufficient_info, lambda spec, n: build(spec, INSUFFICIENT, n)),
            FILES[PRECONDITION]: (hidden_preconditions, lambda spec, n: build(spec, PRECONDITION, n)),
            FILES[CANONICAL]: (canonicalization, lambda spec, n: build(spec, CANONICAL, n)),
        },
        argv,
    )


if __name__ == "__main__":
    main()
