"""Import paths that moved, kept working: issue 35 split the old `toolgym.evaluation` (scoring, models,
runs and reports in one folder) into `toolgym.models`, `toolgym.running` and `toolgym.reports`, leaving
`toolgym.evaluation` to the metric suites and their loaders.

`import toolgym.evaluation.llm` (and `from ... import`, `importlib.import_module`, the
`module:attribute` names that run.json and rollout specs hold) gives the module at its new path, the
same module object, so classes and `isinstance` are one. `toolgym/__init__.py` installs the finder;
it imports nothing of toolgym, so the floors' import rule (ARCHITECTURE.md) is untouched. New code
imports the new paths; these stay for code and configurations written before the move.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType

MOVED: dict[str, str] = {
    "toolgym.evaluation.llm": "toolgym.models.llm",
    "toolgym.evaluation.hf_models": "toolgym.models.hf_models",
    "toolgym.evaluation.hf_agent": "toolgym.models.hf_agent",
    "toolgym.evaluation.serve_model": "toolgym.models.serve_model",
    "toolgym.evaluation.rollout_agents": "toolgym.models.rollout_agents",
    "toolgym.evaluation.users": "toolgym.models.users",
    "toolgym.evaluation.simulators": "toolgym.models.simulators",
    "toolgym.evaluation.setups": "toolgym.models.setups",
    "toolgym.evaluation.run_config": "toolgym.running.config",
    "toolgym.evaluation.run_plan": "toolgym.running.plan",
    "toolgym.evaluation.runs": "toolgym.running.trials",
    "toolgym.evaluation.task_sources": "toolgym.running.task_sources",
    "toolgym.evaluation.retrieval": "toolgym.running.retrieval",
    "toolgym.evaluation.scoring": "toolgym.reports.scoring",
    "toolgym.evaluation.robustness": "toolgym.reports.robustness",
    "toolgym.evaluation.report": "toolgym.reports.report",
    "toolgym.evaluation.viewer": "toolgym.reports.viewer",
    "toolgym.evaluation.export": "toolgym.reports.export",
    "toolgym.evaluation.otel": "toolgym.reports.otel",
}


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds a moved module under its old name and hands back the module at its new path."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        # the module itself, not a copy: importlib keeps its own __name__ and __spec__ (they are set)
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module ran when it was imported at its new path."""


def install() -> None:
    """Put the finder on `sys.meta_path` once, ahead of the path finder (the old files are gone)."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedModules())
