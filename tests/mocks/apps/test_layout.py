"""The tests mirror the apps: every module of toolgym.mocks.apps that defines an App has its test
module at tests/ + the source path with a test_ prefix (mocks/apps/mtu/flights.py ->
tests/mocks/apps/mtu/test_flights.py), with at least one test of that app."""

from __future__ import annotations

import ast
from pathlib import Path

from toolgym.mocks.apps import ALL_APPS

ROOT = Path(__file__).resolve().parents[3]


def test_every_app_module_has_its_own_test_module() -> None:
    modules = {cls.__module__ for cls in ALL_APPS.values()}
    assert len(modules) == 44
    missing = []
    for module in sorted(modules):
        source = Path(*module.split(".")[1:])  # toolgym.mocks.apps.mtu.flights -> mocks/apps/mtu/flights
        test = ROOT / "tests" / source.parent / f"test_{source.name}.py"
        if not test.is_file():
            missing.append(str(test.relative_to(ROOT)))
            continue
        tests = [n for n in ast.parse(test.read_text()).body if isinstance(n, ast.FunctionDef)]
        if not any(n.name.startswith("test_") for n in tests):
            missing.append(f"{test.relative_to(ROOT)} (no test)")
    assert missing == []
