"""The commands of runs, one module each: `run` (run.py: configuration -> plan -> execute ->
report, its options as data in run_options.py, its output and signals in run_output.py) and
`teval-subsets` / `teval-answer` (teval.py). What the commands of runs and reports share is in
common.py, the LLM options in llm_options.py. `toolgym/cli.py` registers them by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolgym.running.commands.run import run
from toolgym.running.commands.teval import teval_answer_command, teval_subsets_command

COMMANDS: dict[str, Callable[..., Any]] = {
    "run": run,
    "teval-subsets": teval_subsets_command,
    "teval-answer": teval_answer_command,
}
