"""Rebuild fixtures/mtu/simulated_apis.json: every API that MTU-Eval's prompts offer and no mock
app implements, as one MTU API list served by the simulator ("simulated:mtu").

    python scripts/make_mtu_simulated.py [eval.jsonl ...]

The default sources are MTU-Eval's five eval files copied in tests/data/mtu-bench. An API whose
prompts document it in several ways gets one doc that accepts them all: the parameters any
variant documents, required only where every variant requires them, result fields of them all.
Prints the API names, real (mock app) and simulated, for docs/simulated-tools.md.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from toolgym.evaluation.loaders.mtu import parse_api_list, read_jsonl
from toolgym.mocks.simulated.app import fixture_dir
from toolgym.mocks.simulated.docs import param_entries

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCES = sorted((ROOT / "tests" / "data" / "mtu-bench").glob("*_eval.jsonl"))


def merged(variants: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    required_sets = [
        [name for name, _ in param_entries(v.get("required_parameters", []), typed=False)] for v in variants
    ]
    required = [n for n in required_sets[0] if all(n in r for r in required_sets)]
    optional: dict[str, Any] = {}
    results: list[str] = []
    for v in variants:
        for key in ("required_parameters", "optional_parameters"):
            for name, schema in param_entries(v.get(key, []), typed=False):
                if name not in required:
                    optional.setdefault(name, schema.get("default", ""))
        for name, _ in param_entries(v.get("result_parameters", []), typed=False):
            if name not in results:
                results.append(name)
    return {
        "name": str(variants[0]["name"]).strip(),
        "description": str(variants[0].get("description", "")),
        "required_parameters": required,
        "optional_parameters": optional,
        "result_parameters": results,
    }


def main(sources: Sequence[Path] = DEFAULT_SOURCES) -> tuple[list[str], list[str]]:
    from toolgym.mocks.app import app_apis
    from toolgym.mocks.apps.mtu import MTU_APPS

    mocked = {api.name for cls in MTU_APPS for api in app_apis(cls)}
    offered: dict[str, list[dict[str, Any]]] = {}
    for source in sources:
        for row in read_jsonl(source):
            for api in parse_api_list(str(row["question"])):
                name = str(api["name"]).strip()
                if name:
                    offered.setdefault(name, []).append(dict(api))
    simulated = sorted(n for n in offered if n not in mocked)
    folder = fixture_dir("mtu")
    folder.mkdir(exist_ok=True)
    apis = [merged(offered[name]) for name in simulated]
    (folder / "simulated_apis.json").write_text(
        json.dumps(apis, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return sorted(n for n in offered if n in mocked), simulated


if __name__ == "__main__":
    real, simulated = main([Path(p) for p in sys.argv[1:]] or DEFAULT_SOURCES)
    print(f"real ({len(real)}):", ", ".join(real))
    print(f"simulated ({len(simulated)}):", ", ".join(simulated))
