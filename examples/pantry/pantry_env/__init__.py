"""pantry-env: a toolgym environment from outside toolgym (see README.md)."""

from pathlib import Path

# the task set `--tasks pantry` names (entry point toolgym.tasks)
TASKS = Path(__file__).with_name("tasks.jsonl")
