"""Each paper's published run setup, and few-shot examples for the LLM agent.

`PRESETS` (`toolgym run --preset NAME`) hold what a paper states of its setup: the action
protocol, the turn limit and the sampling. What a paper does not state stays None (the server's
default), and options given on the command line win over the preset.

Few-shot examples (`toolgym run --few-shot FILE`) are solved episodes in the protocol's own
format. They go where ReAct-style prompts put in-context examples (ToolEyes' and GTA's
prompts both do): into the system message, after the protocol's format instructions and before
the task, each example as the user's request, the assistant's replies as written and the tool
results as `Observation:` lines. A file is JSON (a list of examples) or JSONL (one per line); an
example is a list of chat messages (`role` user, assistant or tool, string `content`) or an
object with such a list under `messages`.

Tool schemas: the native-tools protocols (openai, responses) send them in the request's `tools`
only, which the server's chat template renders; the system message keeps the format
instructions. `toolgym run --tools-in-prompt` (`system_prompt(..., tools_in_prompt=True)`) also
lists them in the system message, for a server whose chat template renders no tools. No preset
needs it: every paper's prompt here (ToolEyes', GTA's lagent ReAct, MTU's ReAct, T-Eval's, CToolEval's)
puts the tools' docs in the prompt text, and those are the text protocols (react, json), whose
instructions always carry the docs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from toolgym.protocols import ActionProtocol, OpenAIProtocol, ResponsesProtocol
from toolgym.tools import ToolSet

ROLES: Final = ("user", "assistant", "tool")
Example = list[dict[str, str]]


@dataclass(frozen=True)
class Preset:
    protocol: str
    max_steps: int
    temperature: float | None
    top_p: float | None
    source: str  # where the numbers come from


PRESETS: Final[dict[str, Preset]] = {
    "tooleyes": Preset(
        "react",
        9,
        0.3,
        0.5,
        "ToolEyes (Ye et al. 2024): temperature 0.3, top_p 0.5, at most 9 turns; five-shot (--few-shot) and zero-shot",
    ),
    "gta": Preset(
        "react",
        10,
        None,
        None,
        "GTA's OpenCompass config: lagent ReAct agent, max_turn=10; sampling is the server's default",
    ),
    "mtu": Preset(
        "react",
        1,
        None,
        None,
        "MTU-Eval: a Thought/Action reply per turn, scored turn by turn; sampling not published "
        "(MTU-Bench-Team/MTU-Bench holds the data and the scorer cal_score.py, no inference code or settings)",
    ),
    "teval": Preset(
        "json",
        1,
        0.0,
        None,
        "T-Eval: one response per step-wise item, JSON format (the str format is the react-like one); greedy "
        "decoding, as open-compass/T-Eval test.py infer() calls llm.chat(..., do_sample=False) (its HF "
        "models also cap max_new_tokens=512); top_p not set",
    ),
    "ctooleval": Preset(
        "react",
        10,
        None,
        None,
        "CToolEval: ReAct-style tool calls, end to end; turn limit and sampling not found in a published "
        "source reachable here (tjunlp-lab/CToolEval not fetchable): 10 turns assumed, sampling the server's",
    ),
}


class FewShotError(ValueError):
    """A few-shot file that cannot be read; the message names the file and the example."""


def _example(raw: Any, where: str) -> Example:
    messages = raw.get("messages") if isinstance(raw, dict) else raw
    if not isinstance(messages, list) or not messages:
        raise FewShotError(f"{where}: an example is a non-empty list of messages (or {{'messages': [...]}})")
    out: Example = []
    for n, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ROLES or not isinstance(m.get("content"), str):
            raise FewShotError(
                f"{where}, message {n}: needs 'role' ({', '.join(ROLES)}) and string 'content'"
            )
        out.append({"role": m["role"], "content": m["content"]})
    if out[0]["role"] != "user" or not any(m["role"] == "assistant" for m in out):
        raise FewShotError(f"{where}: an example starts with the user and has an assistant reply")
    return out


def load_few_shot(path: Path | str) -> list[Example]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FewShotError(f"{path}: cannot read: {exc}") from None
    try:
        data = json.loads(text)
        rows = [(f"example {n}", e) for n, e in enumerate(data)] if isinstance(data, list) else None
        if isinstance(data, dict):
            rows = [("example 0", data)]
    except ValueError:
        rows = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append((f"line {lineno}", json.loads(line)))
                except ValueError as exc:
                    raise FewShotError(f"{path}: line {lineno}: not JSON: {exc}") from None
    if not rows:
        raise FewShotError(f"{path}: no examples (a JSON list, or JSONL with one example a line)")
    return [_example(raw, f"{path}: {where}") for where, raw in rows]


def tools_in_prompt_refusal(protocol: str) -> str:
    """Why `tools_in_prompt` cannot apply to a text protocol."""
    return (
        f"--tools-in-prompt is for the openai and responses protocols; {protocol!r} always puts "
        "the tools' docs in its instructions"
    )


def system_prompt(
    instructions: str,
    protocol: ActionProtocol,
    tools: ToolSet,
    *,
    tools_in_prompt: bool = False,
    few_shot: Sequence[Example] = (),
) -> str:
    """The system message an LLM agent sends: the env's instructions (`info["instructions"]`),
    for a native-tools protocol with `tools_in_prompt` its form that also lists the schemas, then
    the few-shot examples. Text protocols always carry the tools' docs in their instructions."""
    if tools_in_prompt:
        if not isinstance(protocol, (OpenAIProtocol, ResponsesProtocol)):
            raise ValueError(tools_in_prompt_refusal(protocol.name))
        instructions = protocol.instructions(tools, tools_in_prompt=True)
    return f"{instructions}\n\n{few_shot_block(few_shot)}" if few_shot else instructions


def few_shot_block(examples: Sequence[Example]) -> str:
    """The examples as the system message's closing section."""
    parts = ["Here are solved examples of the format:"]
    for n, example in enumerate(examples, 1):
        lines = [f"--- Example {n} ---"]
        for m in example:
            if m["role"] == "user":
                lines.append(f"User: {m['content']}")
            elif m["role"] == "tool":
                lines.append(f"Observation: {m['content']}")
            else:
                lines.append(m["content"])
        parts.append("\n".join(lines))
    parts.append("--- End of examples ---")
    return "\n\n".join(parts)
