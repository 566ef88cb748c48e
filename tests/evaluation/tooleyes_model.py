"""A scripted model for ToolEyes runs on the fake OpenAI server (tests/models/fake_openai.py):
it plays the agent (ReAct text: call the first offered tool with every required argument, then
`Action: finish`, as ToolEyes' prompt asks) and the judge (a fixed score), from the request alone,
so any of the 382 queries gets a well-formed episode."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tests.models.fake_openai import Reply, text

JUDGE_SCORE = 7


def offered_tools(system: str) -> list[dict[str, Any]]:
    """The tool docs the react protocol lists in its instructions (one JSON object a line)."""
    tools = []
    for line in system.splitlines():
        if line.startswith('{"'):
            record = json.loads(line)
            if isinstance(record, dict) and "name" in record:
                tools.append(record)
    return tools


def valid_arguments(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments that satisfy a ToolEyes schema: every required parameter, as a string."""
    params = doc.get("parameters", {})
    return {name: "1" for name in params.get("required", [])}


def tooleyes_script(body: Mapping[str, Any]) -> Reply:
    messages = body["messages"]
    system = next((m["content"] for m in messages if m.get("role") == "system"), "")
    if "Evaluation Score" in system:  # a judge question
        return text(f"Scoring Reason: consistent and relevant.\nEvaluation Score: {JUDGE_SCORE}")
    turn = sum(1 for m in messages if m.get("role") == "assistant")
    tools = offered_tools(system)
    if turn == 0 and tools:
        first = tools[0]
        return text(
            f"Thought: I should use {first['name']}.\nAction: {first['name']}\n"
            f"Action Input: {json.dumps(valid_arguments(first))}"
        )
    observed = str(messages[-1].get("content", ""))[:80]
    return text(
        "Thought: I have what I need.\nAction: finish\n"
        f"Action Input: {json.dumps({'answer': 'Here is the result: ' + observed})}"
    )
