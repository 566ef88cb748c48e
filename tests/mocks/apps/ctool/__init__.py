"""Tests of the CToolEval-style mock apps (toolgym.mocks.apps.ctool) and their task fixtures."""

from __future__ import annotations

from tests.mocks.apps import expect_error, ok_call

__all__ = ["expect_error", "ok_call"]
