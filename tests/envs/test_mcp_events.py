"""`toolgym mcp` over a world that moves (tests/envs/dynamic_fixture.py's task), driven by the `mcp`
SDK's own client in process: the env's `wait` and `current_time` are tools, and each call's
notifications reach the client twice, as text after the call's result and as log messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client

from tests.envs import dynamic_fixture as dyn
from toolgym.actions import ToolCall
from toolgym.envs.mcp_server import EVENTS_LOGGER, FINAL_ANSWER, McpSetupError, build_server, make_config


def _texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


def _episode(
    tmp_path: Path, *, level: types.LoggingLevel | None, notifications: str = "medium"
) -> tuple[list[str], list[Any], list[str]]:
    """The tool names, each call's result and the log messages' data (`level`: the client's
    `logging/setLevel`; None sets none; `notifications`: the server's verbosity)."""
    config = make_config(
        tasks=str(dyn.write_task_file(tmp_path)), task=dyn.TASK_ID, notifications=notifications
    )
    server, close_all = build_server(config, single=True)
    logged: list[str] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        assert params.logger == EVENTS_LOGGER and params.level == "info"
        logged.append(str(params.data))

    async def main() -> tuple[list[str], list[Any]]:
        async with Client(server, mode="legacy", logging_callback=on_log) as client:
            if level is not None:
                await client.session.set_logging_level(level)
            names = [t.name for t in (await client.list_tools()).tools]
            ask, wait, _ = dyn.actions()
            assert isinstance(ask, ToolCall) and isinstance(wait, ToolCall)
            results = [
                await client.call_tool(ask.name, ask.arguments),
                await client.call_tool(wait.name, wait.arguments),
                await client.call_tool(FINAL_ANSWER, {"text": dyn.FINAL}),
            ]
            return names, results

    try:
        names, results = anyio.run(main)
    finally:
        close_all()
    return names, results, logged


def test_notifications_reach_the_client_in_the_result_and_as_log_messages(tmp_path: Path) -> None:
    names, (asked, waited, final), logged = _episode(tmp_path, level=None)
    assert "wait" in names and "current_time" in names and "send_message" in names
    reminder = f"Notification (2024-01-01T00:00:10+00:00): {dyn.REMINDER}"
    reply = f"Notification (2024-01-01T00:05:10+00:00): {dyn.reply_text(dyn.friends()[1])}"
    # the call's own text first, then what the world told the agent during it
    assert not asked.is_error and '"status":"success"' in _texts(asked)[0]
    assert _texts(asked)[1:] == [reminder]
    assert '"notified":true' in _texts(waited)[0] and _texts(waited)[1:] == [reply]
    assert final.structured_content is not None and final.structured_content["reward"] == 1.0
    assert _texts(final) == ["episode over: reward 1.0"]  # nothing fired with the answer
    assert logged == [reminder, reply]


# `logging/setLevel` is how a handshake-era client sets its threshold (deprecated from 2026-07-28)
@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
def test_a_client_above_info_gets_no_log_messages_but_the_results_keep_the_notifications(
    tmp_path: Path,
) -> None:
    _, (asked, _, _), logged = _episode(tmp_path, level="warning")
    assert logged == []
    assert _texts(asked)[1] == f"Notification (2024-01-01T00:00:10+00:00): {dyn.REMINDER}"


def test_the_servers_verbosity_chooses_the_notifications_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    _, (asked, waited, _), logged = _episode(tmp_path, level=None, notifications="none")
    assert _texts(asked)[1:] == [] and _texts(waited)[1:] == [] and logged == []
    with pytest.raises(McpSetupError, match="notifications must be one of"):
        make_config(tasks=str(dyn.write_task_file(tmp_path)), task=dyn.TASK_ID, notifications="loud")
