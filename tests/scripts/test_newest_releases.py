"""scripts/newest_releases.py (`make newest`): its pairings name tests that exist, and its table
says what each row checked. The installs themselves run in `make newest`, never in `make test`."""

from __future__ import annotations

from pathlib import Path

from scripts.newest_releases import PAIRINGS, ROOT, Checked, kept_rows, render


def test_every_pairing_names_tests_that_exist_and_a_distinct_library() -> None:
    for pairing in PAIRINGS:
        assert pairing.tests and all((ROOT / t).is_file() for t in pairing.tests), pairing.name
    assert len({p.dist for p in PAIRINGS}) == len(PAIRINGS)
    # a library whose tests are told where its venv is says why it has one of its own
    assert all(p.own_venv for p in PAIRINGS if p.env)


def test_the_table_has_a_row_per_library_with_its_release_outcome_and_venv() -> None:
    results = [
        Checked(PAIRINGS[0], "1.4.0", "53 passed"),
        Checked(PAIRINGS[-1], "-", "not installed", note="pip exited 1"),
    ]
    text = render(results)
    rows = [
        line
        for line in text.splitlines()
        if line.startswith(f"| {PAIRINGS[0].name} ") or line.startswith(f"| {PAIRINGS[-1].name} ")
    ]
    assert len(rows) == 2
    assert "| 1.4.0 |" in rows[0] and "53 passed" in rows[0] and "an overlay on toolgym's venv" in rows[0]
    assert "not installed (pip exited 1)" in rows[1] and PAIRINGS[-1].own_venv in rows[1]
    assert Path(ROOT / "Makefile").read_text().count("scripts.newest_releases") == 1


def test_a_run_of_some_libraries_keeps_the_other_rows(tmp_path: Path) -> None:
    doc = tmp_path / "n.md"
    doc.write_text(
        render([Checked(PAIRINGS[0], "1.4.0", "53 passed"), Checked(PAIRINGS[1], "3.57.0", "52 passed")])
    )
    kept = kept_rows(doc, {PAIRINGS[1].name})
    assert list(kept) == [PAIRINGS[0].name]
    again = render([Checked(PAIRINGS[1], "3.58.0", "52 passed")], kept)
    assert "| 1.4.0 |" in again and "| 3.58.0 |" in again and "| 3.57.0 |" not in again
