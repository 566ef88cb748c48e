"""`toolgym models` lists the simulators of documented tools beside the GTA tools' backends."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from toolgym.cli import app
from toolgym.mocks.simulated.app import bundled_libraries


def test_models_lists_the_simulated_backends() -> None:
    result = CliRunner().invoke(app, ["models", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["backend"]: r for r in json.loads(result.output)}
    deterministic, llm = rows["simulated:deterministic"], rows["simulated:llm"]
    assert deterministic["usable"] and deterministic["selected"] and "Faker" in deterministic["detail"]
    assert not llm["selected"] and "OpenAI-compatible" in llm["detail"]
    assert deterministic["tool"] == f"simulated tools ({len(bundled_libraries())} bundled libraries)"
    assert len([lib for lib in bundled_libraries() if lib.startswith("tooleyes/")]) == 95
