"""Tool sets the recorder tests load by name (`--toolset tests.recorder.toolsets:<factory>`):
the built-in tools with one tool deliberately changed, to see verify catch the drift."""

from __future__ import annotations

from toolgym.mocks.world import MockWorld
from toolgym.tasks import AnswerSpec, Task
from toolgym.tools import Tool, ToolSet, tool
from toolgym.toolservers.gta.calculator import DESCRIPTION, calculate
from toolgym.toolservers.gta.calculator import calculator as real_calculator
from toolgym.toolservers.registry import builtin_tools


def _replace(replacement: Tool) -> ToolSet:
    return ToolSet(replacement if t.name == replacement.name else t for t in builtin_tools())


@tool(name="Calculator", category="logic", description=DESCRIPTION, version=real_calculator.version)
def changed_calculator_tool(expression: str) -> str:
    """A Calculator whose backend changed its number format (same name, same version)."""
    return calculate(expression) + "0"


def changed_calculator() -> ToolSet:
    return _replace(changed_calculator_tool)


def builtin() -> ToolSet:
    return ToolSet(builtin_tools())


def bank_task() -> tuple[Task, str, str]:
    """A banking task (read the balance, move 12.5) and the first two active accounts."""
    world = MockWorld(["banking"])
    accounts = [a["account_id"] for a in world.rows("bank_accounts", {"status": "active"})]
    world.close()
    task = Task(
        id="bank",
        query="Move 12.5 from the first account to the second.",
        apps=["banking"],
        tools=["get_balance", "transfer"],
        answer=AnswerSpec(whitelist=[["done"]]),
        max_steps=10,
    )
    return task, accounts[0], accounts[1]
