"""What a model is doing now: activities told to this process's listeners as they start and end,
listed while under way, and written as lines by a worker process (which has no listener) to the
stderr it shares with its driver."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from toolgym.models.activity import Activity, Phase, doing, under_way, watching

REPO = Path(__file__).resolve().parents[2]


def test_an_activity_is_told_when_it_starts_and_ends_and_listed_while_under_way() -> None:
    heard: list[tuple[Phase, str, bool]] = []
    seen_during: list[list[Activity]] = []

    def listener(phase: Phase, activity: Activity) -> None:
        heard.append((phase, activity.kind, activity.failed))

    with watching(listener):
        with doing(Activity("load", "m", threads=1)) as load:
            seen_during.append(under_way())
        with pytest.raises(RuntimeError), doing(Activity("turn", "m", step=2)):
            raise RuntimeError("the model broke")
    with doing(Activity("convert", "m.gguf")):  # nobody listens any more
        pass
    assert heard == [
        ("start", "load", False),
        ("end", "load", False),
        ("start", "turn", False),
        ("end", "turn", True),
    ]
    assert seen_during == [[load]] and under_way() == []
    assert load.seconds is not None and load.describe() == "loading m on 1 torch thread"


def test_a_worker_process_writes_its_activities_to_the_stderr_it_shares_with_its_driver(
    tmp_path: Path,
) -> None:
    """A real multiprocessing child (spawned, as a rollout worker is) with no listener of its own,
    its stderr a pipe: its load is said when it starts and ends, and a heartbeat line names it while
    it runs longer than the interval."""
    script = textwrap.dedent(
        """
        import multiprocessing, time
        from toolgym.models.activity import Activity, doing

        def work():
            with doing(Activity("load", "the-model", threads=1)):
                time.sleep(1.5)
            with doing(Activity("turn", "the-model", step=1, prompt_tokens=5, completion_tokens=2)):
                pass

        if __name__ == "__main__":
            child = multiprocessing.get_context("spawn").Process(target=work)
            child.start()
            child.join()
            print("child exit", child.exitcode)
        """
    )
    (tmp_path / "driver.py").write_text(script, encoding="utf-8")  # spawn re-imports it in the child
    env = {"PYTHONPATH": str(REPO), "TOOLGYM_PROGRESS_EVERY": "0.4", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, str(tmp_path / "driver.py")], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.stdout.strip() == "child exit 0", done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].endswith(": loading the-model on 1 torch thread") and lines[0].startswith("worker ")
    ended = next(i for i, line in enumerate(lines) if "done in" in line)
    # while it loaded (longer than the interval): a line that says it is still at it
    assert any("still working: loading the-model" in line for line in lines[1:ended])
    assert lines[-1].endswith("turn step 1 (5+2 tokens) in 0.0 s")


def test_the_driver_process_writes_nothing_itself() -> None:
    """Outside a worker process, activities nobody listens to are not written anywhere."""
    script = (
        "from toolgym.models.activity import Activity, doing\nwith doing(Activity('load', 'm')):\n    pass\n"
    )
    env = {"PYTHONPATH": str(REPO), "TOOLGYM_PROGRESS_EVERY": "0", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0 and done.stderr == "" and done.stdout == ""
