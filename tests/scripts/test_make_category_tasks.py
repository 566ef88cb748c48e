"""scripts/make_category_tasks.py: the behaviour-category sets it writes are the bundled files byte
for byte, and a spec whose golden chain or precondition does not hold stops it."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.category_tasks.common import FILES, OUT_DIR, PRECONDITION, Spec, call, failing
from scripts.make_category_tasks import build, main


def test_the_script_rewrites_the_bundled_files_byte_for_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["--out", str(tmp_path)])
    for name in FILES.values():
        assert (tmp_path / name).read_bytes() == (OUT_DIR / name).read_bytes(), name
    assert "hidden_preconditions.jsonl: 23 tasks" in capsys.readouterr().out


def test_a_golden_call_that_does_not_do_what_its_step_says_stops_the_script() -> None:
    wrong = Spec("wrong", "x", ["banking"], "?", [call("get_balance", account_id="ACC-99999")], "No.")
    with pytest.raises(SystemExit, match="golden call #0 get_balance: tool_error"):
        build(wrong, PRECONDITION, 1)
    right = Spec("right", "x", ["banking"], "?", [failing("get_balance", account_id="ACC-99999")], "No.")
    assert build(right, PRECONDITION, 1).golden[0].expect_error == "tool_error"


def test_a_precondition_that_does_not_block_the_write_stops_the_script() -> None:
    deposit = call("deposit", account_id="ACC-10001", amount=5.0)
    spec = Spec("free", "x", ["banking"], "?", [deposit], "Done.", precondition=deposit)
    with pytest.raises(SystemExit, match="deposit does not fail before the precondition"):
        build(spec, PRECONDITION, 1)
