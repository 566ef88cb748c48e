"""Extract the API specs MTU-Bench's eval prompts offer and print SPECS.md's table.

    python -m scripts.extract_specs [/path/to/mtu-bench] > mocks/apps/mtu/SPECS.md

Each row of S-S_eval.jsonl and M-M_eval.jsonl has a ReAct prompt whose API list is a Python
literal (or JSON) after "The following is a list of APIs ...". An API name can come in several
variants (SGD schema versions name one idea differently): required parameters are those every
variant requires, the rest are optional; default conflicts are listed. The app column comes from
the published tools of MTU_APPS.
"""

from __future__ import annotations

import ast
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Final

MARK: Final = "The following is a list of APIs and their parameters that you can use:"
FILES: Final = ("S-S_eval.jsonl", "M-M_eval.jsonl")
DEFAULT_DIR: Final = Path(__file__).resolve().parent.parent / "tests" / "data" / "mtu-bench"


def api_list(question: str) -> list[Any]:
    """The bracketed API list that follows MARK, parsed as JSON or a Python literal."""
    text = question[question.index(MARK) + len(MARK) :].lstrip()
    depth, quote, escaped, end = 0, "", False, 0
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth == 0:
                end = i + 1
                break
    body = text[:end]
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = ast.literal_eval(body)
    return list(parsed)


def params_of(api: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """(required names, {optional name: default}) in either of MTU's two layouts."""
    required = [p["name"] if isinstance(p, dict) else str(p) for p in api.get("required_parameters", [])]
    raw = api.get("optional_parameters", {})
    optional = (
        dict(raw)
        if isinstance(raw, dict)
        else {
            (p["name"] if isinstance(p, dict) else str(p)): (
                p.get("default") if isinstance(p, dict) else None
            )
            for p in raw
        }
    )
    return required, optional


def collect(folder: Path) -> tuple[dict[str, list[dict[str, Any]]], Counter[str], list[str]]:
    variants: dict[str, list[dict[str, Any]]] = defaultdict(list)
    seen: Counter[str] = Counter()
    broken: list[str] = []
    for name in FILES:
        for line in (folder / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            for api in api_list(row["question"]):
                if not isinstance(api, dict):
                    broken.append(f"{row['id']}: {api!r}")
                    continue
                seen[api["name"]] += 1
                variants[api["name"]].append(api)
    return variants, seen, broken


def published() -> dict[str, tuple[str, list[str]]]:
    """API name -> (app name, published parameter names) over MTU_APPS."""
    from toolgym.mocks.app import app_apis
    from toolgym.mocks.apps.mtu import MTU_APPS

    return {a.name: (cls.name, [p.name for p in a.tool.params]) for cls in MTU_APPS for a in app_apis(cls)}


def table(folder: Path) -> str:
    variants, seen, broken = collect(folder)
    tools = published()
    lines = [
        "| API | app | required (all variants) | optional (default) | rows | notes |",
        "|---|---|---|---|---|---|",
    ]
    left_out = []
    for name in sorted(variants, key=lambda n: (-seen[n], n)):
        shapes = [params_of(v) for v in variants[name]]
        required = set.intersection(*(set(r) for r, _ in shapes))
        optional: dict[str, Any] = {}
        sometimes: set[str] = set()  # required in some variants only: marked with *
        conflicts = set()
        for r, o in shapes:
            sometimes.update(p for p in r if p not in required)
            for p, d in o.items():
                if p in optional and optional[p] != d:
                    conflicts.add(f"{p}: {optional[p]!r} vs {d!r}")
                optional.setdefault(p, d)
        for p in sorted(sometimes):
            optional.setdefault(p, None)
        n_shapes = len({json.dumps([sorted(r), sorted(o)]) for r, o in shapes})
        notes = [f"{n_shapes} variants"] if n_shapes > 1 else []
        notes += [f"default conflict {c}" for c in sorted(conflicts)]
        app, names = tools.get(name, ("", []))
        if not app:
            left_out.append(name)
            notes.append("not implemented")
        else:
            missing = sorted((required | set(optional)) - set(names))
            if missing:
                notes.append(f"not published: {', '.join(missing)}")
        opt = ", ".join(
            f"{p}{'*' if p in sometimes else ''}" + (f"={d!r}" if d is not None else "")
            for p, d in optional.items()
        )
        lines.append(
            f"| {name} | {app or '-'} | {', '.join(sorted(required)) or '-'} | {opt or '-'} | {seen[name]}"
            f" | {'; '.join(notes)} |"
        )
    lines += ["", f"APIs offered: {len(variants)}; implemented: {len(variants) - len(left_out)}."]
    lines.append(f"Not implemented: {', '.join(left_out) or 'none'}.")
    if broken:
        lines.append(f"Unparseable API entries: {'; '.join(broken)}.")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DIR))
