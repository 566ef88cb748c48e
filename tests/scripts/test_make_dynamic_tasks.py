"""scripts/make_dynamic_tasks.py: the dynamic sets it writes are the bundled files byte for byte,
and a spec whose chain, events or assertions do not do what they should stops it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from scripts.dynamic_tasks.common import AT_TIME, FILES, OUT_DIR, row
from scripts.dynamic_tasks.world_changes import world_changes
from scripts.make_dynamic_tasks import build, main


def test_the_script_rewrites_the_bundled_files_byte_for_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["--out", str(tmp_path)])
    for name in FILES.values():
        assert (tmp_path / name).read_bytes() == (OUT_DIR / name).read_bytes(), name
    assert "wait_for_reply.jsonl: 11 tasks" in capsys.readouterr().out


def test_an_assertion_that_holds_already_or_never_stops_the_script() -> None:
    spec = world_changes()[4]  # a refund lands in checking and the agent moves it to savings
    assert build(spec, AT_TIME, 1).golden[-2].expected["status"] == "success"
    holds = replace(spec, state=[row("bank_customers", customer_id="CUST-0002")])
    with pytest.raises(SystemExit, match="expected_state holds already"):
        build(holds, AT_TIME, 1)
    never = replace(spec, state=[row("bank_transactions", memo="no such memo")])
    with pytest.raises(SystemExit, match="expected_state fails after the chain"):
        build(never, AT_TIME, 1)


def test_an_event_whose_call_fails_stops_the_script() -> None:
    spec = world_changes()[4]
    broken = spec.events[0].model_copy(
        update={
            "calls": [
                spec.events[0]
                .calls[0]
                .model_copy(update={"arguments": {"account_id": "ACC-99999", "amount": 1.0}})
            ]
        }
    )
    with pytest.raises(SystemExit, match="event 'refund': deposit"):
        build(replace(spec, events=[broken]), AT_TIME, 1)
