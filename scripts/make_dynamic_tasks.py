"""Regenerate fixtures/dynamic/*.jsonl: the dynamic task sets, worlds that move while the agent works.

Three sets over the bundled mock apps, built by the modules of scripts/dynamic_tasks/:

- at_time.jsonl (`at_time.py`): act at or after a simulated time (a transfer window, a warehouse
  opening, midnight); the golden chain waits for the moment, and a minefield forbids acting before
  the event that marks it.
- world_changes.jsonl (`world_changes.py`): the world changes mid-task (a cancelled booking or
  order, a declined invitation, a deposit that lands, a message that changes the plan) and the
  agent must adapt; a minefield forbids adapting before the change happened.
- wait_for_reply.jsonl (`wait_for_reply.py`): ask someone, wait for the reply (an event that fires
  a while after the question is sent) instead of polling or guessing, then do what the reply says;
  a minefield forbids acting on the reply before it arrived, and a milestone asks that it be done
  within some simulated minutes of it.

Every golden chain is run here as its episode runs it (`toolgym.envs.timed_chain.replay_timed`: its steps cost
the task's simulated time, its events fire through the apps' APIs, `wait` ends at a
notification); a call that does not succeed, an event whose call fails or that never fires, a
`when` fact or a state assertion that holds on the untouched world, or an assertion that does not
hold after the chain stops the script. Each golden call's `expected` is what it answered there.
Run `python -m scripts.make_dynamic_tasks` from the repository root: the same code writes the
same bytes. `toolgym check dynamic-at-time dynamic-world-changes dynamic-wait-for-reply` checks them.
"""

from __future__ import annotations

from collections.abc import Sequence

from scripts.dynamic_tasks.at_time import at_time
from scripts.dynamic_tasks.common import AT_TIME, FILES, OUT_DIR, PREFIX, WAIT_FOR_REPLY, WORLD_CHANGES, Spec
from scripts.dynamic_tasks.wait_for_reply import wait_for_reply
from scripts.dynamic_tasks.world_changes import world_changes
from scripts.task_set_files import write_sets
from toolgym.actions import FinalAnswer, ToolCall
from toolgym.envs.milestones import state_fact_holds
from toolgym.envs.timed_chain import replay_timed
from toolgym.mocks.rewards import GoldenReplayError, check_assertions
from toolgym.mocks.world import MockWorld
from toolgym.tasks import AnswerSpec, GoldenStep, Task, TimePolicy


def draft(spec: Spec, category: str, number: int) -> Task:
    """The task as the spec says, its golden calls without their results yet."""
    golden = [GoldenStep(action=c) for c in spec.calls]
    golden.append(GoldenStep(action=FinalAnswer(text=spec.answer)))
    return Task(
        id=f"{PREFIX[category]}-{spec.name}-{number:03d}",
        query=spec.query,
        golden=golden,
        answer=AnswerSpec(whitelist=spec.whitelist),
        clock=spec.clock,
        category=category,
        apps=list(spec.apps),
        expected_state=spec.state,
        milestones=spec.milestones or None,
        minefields=spec.minefields or None,
        events=spec.events,
        time=TimePolicy(per_step_s=spec.per_step_s, max_wait_s=spec.max_wait_s),
        metadata={"subcategory": spec.kind},
    )


def _untouched_problems(task: Task, world: MockWorld) -> list[str]:
    """What must not hold before the chain runs: a `when` fact (its event would fire at once) and
    a state assertion (one that holds already cannot fail)."""
    problems = [
        f"event {e.id!r}: its `when` fact holds on the untouched world"
        for e in task.events or ()
        if e.when is not None and state_fact_holds(e.when, world)
    ]
    report = check_assertions(world, task.expected_state)
    problems += [f"expected_state holds already: {r.detail}" for r in report.results if r.passed]
    return problems


def build(spec: Spec, category: str, number: int) -> Task:
    """The task with each golden call's result, once its chain, events and assertions do what
    they should (SystemExit says what does not)."""
    task = draft(spec, category, number)
    world = MockWorld(spec.apps, seed=task.seed, clock=task.clock)
    try:
        # the apps' tools are offered (the env adds its own `wait` and `current_time`)
        task = task.model_copy(update={"tools": list(world.tools.names)})
        problems = _untouched_problems(task, world)
        try:
            observations, fired = replay_timed(world, task)
        except GoldenReplayError as exc:
            raise SystemExit(f"{task.id}: {exc}") from None
        failed = [
            f"event {e['id']!r}: {c['tool']}: {c.get('error')}"
            for e in fired
            for c in e["calls"]
            if not c["ok"]
        ]
        never = sorted({e.id for e in task.events or ()} - {e["id"] for e in fired})
        problems += failed + ([f"events never fire: {never}"] if never else [])
        report = check_assertions(world, task.expected_state)
        problems += [
            f"expected_state fails after the chain: {r.detail}" for r in report.results if not r.passed
        ]
    finally:
        world.close()
    if problems:
        raise SystemExit(f"{task.id}: " + "; ".join(problems))
    results = [obs.content for obs in observations]
    answer, whitelist = spec.answer_from(results) if spec.answer_from else (spec.answer, spec.whitelist)
    given = iter(results)
    golden = [
        step.model_copy(update={"expected": next(given)})
        if isinstance(step.action, ToolCall)
        else GoldenStep(action=FinalAnswer(text=answer))
        for step in task.golden
    ]
    done = task.model_copy(update={"golden": golden, "answer": AnswerSpec(whitelist=whitelist)})
    return Task.model_validate(done.model_dump(mode="json", exclude_none=True))  # checked as a file reads it


def main(argv: Sequence[str] | None = None) -> None:
    write_sets(
        (__doc__ or "").splitlines()[0],
        OUT_DIR,
        {
            FILES[AT_TIME]: (at_time, lambda spec, n: build(spec, AT_TIME, n)),
            FILES[WORLD_CHANGES]: (world_changes, lambda spec, n: build(spec, WORLD_CHANGES, n)),
            FILES[WAIT_FOR_REPLY]: (wait_for_reply, lambda spec, n: build(spec, WAIT_FOR_REPLY, n)),
        },
        argv,
    )


if __name__ == "__main__":
    main()
