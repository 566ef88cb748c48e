"""Rebuild fixtures/tooleyes/tasks.jsonl: ToolEyes' 382 queries as toolgym tasks over the 95 tool
libraries shipped beside it (config_gpt4.<Category>__<Tool>.json, copied unchanged from ToolEyes'
Tool_Library), each task naming its library's simulated tools as its app.

    python scripts/make_tooleyes_tasks.py [path/to/scenario_data_raw.json]

The default source is the reference copy in ../shared/data/tooleyes (Junjie-Ye/ToolEyes, Test_Data).
"""

from __future__ import annotations

import sys
from pathlib import Path

from toolgym.evaluation.loaders.tooleyes import load_tool_configs, load_tooleyes_queries
from toolgym.mocks.simulated.app import fixture_dir

DEFAULT_SOURCE = (
    Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "tooleyes" / "scenario_data_raw.json"
)


def main(source: Path = DEFAULT_SOURCE) -> Path:
    folder = fixture_dir("tooleyes")
    tasks = load_tooleyes_queries(source, load_tool_configs(sorted(folder.glob("config_gpt4.*.json"))))
    missing = [t.id for t in tasks if t.apps is None]
    if missing:
        raise SystemExit(f"no shipped tool library for {len(missing)} queries: {missing[:5]}")
    out = folder / "tasks.jsonl"
    tasks.dump(out)
    return out


if __name__ == "__main__":
    print(main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_SOURCE))
