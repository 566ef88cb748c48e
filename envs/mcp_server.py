"""`toolgym mcp`: a seeded mock world (or the built-in tool set) as an MCP server, over stdio or
streamable HTTP, built with the official `mcp` SDK (low-level `Server`).

Each MCP session (a stdio process, an HTTP `Mcp-Session-Id`) drives its own `ToolEnv`, so it has
its own world: what one client writes, no other client sees. The session runs one episode at a
time:

- **prompts** are the task set's queries, one per task. Getting a task's prompt starts that task's
  episode in the session (a fresh world, reset to the task's seed), as a host does when its user
  picks the task; the session's first episode runs the task given by `--task` (default the first).
- **tools** are the episode's tools and `final_answer` (text), which ends the episode and scores
  it. A tool call is one env step: the call goes to `ToolEnv.step` as the OpenAI assistant message
  a model would have written, so the trace is an ordinary `openai`-protocol trace that `toolgym
  eval`, `report`, `verify` and `export` read. A failing call is a result with `isError` (the
  typed error in `structuredContent`); an unknown tool is a protocol error (JSON-RPC -32602), as
  the MCP spec separates them; it is not an env step. A task with events (a world that moves,
  `toolgym.mocks.events`) adds the env's `wait` and `current_time` tools; the notifications its
  events fire during a call come back as extra text blocks of that call's result, and as MCP log
  messages (`notifications/message`, logger `toolgym.events`, level info) sent before it, for
  hosts that show the server's messages (`logging/setLevel` sets the session's threshold).
- **resources** (read-only): the episode (`toolgym://episode`: task, step, done, reward), the
  world's state hash (`toolgym://world/state-hash`), each table's rows (`toolgym://world/tables/
  <table>`) and the session's files (`toolgym://files/<sha256>`: task files and produced files).

With `--trace-dir`, each episode's trace goes to `DIR/session-<n>/ep<k>.<task>.seed<s>.jsonl`
(an episode left unfinished stays as a `.partial` file). Worlds keep per-session state, so the
server speaks the session-based (initialize handshake) protocol versions; 2026-07-28's
sessionless requests are refused with a message that says so.
"""

from __future__ import annotations

import itertools
import json
import threading
import typing
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio

try:  # the SDK is the `mcp` extra
    import mcp.types as types
    from mcp import MCPError
    from mcp.server.connection import allowed_log_levels
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel.server import NotificationOptions, Server
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
except ImportError:  # no SDK, or a 1.x (which lacks these names): one line naming the extra
    from toolgym.toolservers.mcp_sdk import require_mcp

    require_mcp()
    raise

from toolgym.actions import Observation
from toolgym.canonical import canonical_json
from toolgym.envs.runner import parse_verbosity, step_fields, trace_end, trace_header, trace_name
from toolgym.envs.tool_env import ToolEnv
from toolgym.errors import ArgumentError, ErrorKind
from toolgym.files import FileHandle
from toolgym.http import Exposure, secure
from toolgym.mocks.app import strict_arguments
from toolgym.mocks.events import DEFAULT_VERBOSITY, Verbosity
from toolgym.protocols.openai import derived_call_id
from toolgym.tasks import Task, TaskSet
from toolgym.tools import ToolSet
from toolgym.toolservers.server.mcp_face import decode_data_uri, error_result, file_block, mcp_tool
from toolgym.trace import TraceWriter

FINAL_ANSWER = "final_answer"
EVENTS_LOGGER = "toolgym.events"  # the MCP log messages that carry a moving world's notifications
NOTIFICATION_LEVEL: types.LoggingLevel = "info"
_LEVELS: tuple[types.LoggingLevel, ...] = typing.get_args(types.LoggingLevel)  # least severe first
SERVER_NAME = "toolgym"
_T = TypeVar("_T")


class McpSetupError(ValueError):
    """A server that cannot start: unknown task, apps or task set."""


@dataclass(frozen=True)
class McpWorldConfig:
    """What every session of one server shares: the tasks, the tools beside the worlds, the first
    task, an optional seed for every episode, the step limit and where traces go."""

    tasks: TaskSet
    tools: ToolSet
    first_task: str
    seed: int | None = None
    max_steps: int = 50
    trace_dir: Path | None = None
    strict_arguments: bool = False  # no argument coercion (toolgym.mocks.app.strict_arguments)
    verbosity: Verbosity = DEFAULT_VERBOSITY  # which events of a world that moves notify the client


def world_task(apps: Sequence[str], seed: int) -> Task:
    """The open-ended task of `toolgym mcp --apps ...` without a task set: the apps' world, all its
    APIs, no expected answer (the episode ends with final_answer or at the step limit)."""
    query = f"Use the tools of the {', '.join(apps)} apps." if apps else "Use the tools."
    return Task(id="mcp-world", query=query, apps=list(apps) or None, seed=seed)


def _final_answer_tool() -> types.Tool:
    return types.Tool(
        name=FINAL_ANSWER,
        description="Give the final answer to the task. This ends the episode and scores it.",
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string", "description": "the answer"}},
            "required": ["text"],
            "additionalProperties": False,
        },
        annotations=types.ToolAnnotations(read_only_hint=False),
    )


def _state_error(message: str) -> types.CallToolResult:
    """A call the session cannot take now (the episode is over): a result with isError."""
    return types.CallToolResult(
        content=[types.TextContent(text=message)],
        structured_content={"error": {"kind": "episode_over", "message": message}},
        is_error=True,
    )


class WorldSession:
    """One MCP session: its ToolEnv (and so its world), the running episode and its trace.

    Every env call runs on one worker thread at a time (`run`), off the event loop: a slow tool
    blocks only its own session."""

    def __init__(self, config: McpWorldConfig, number: int, agent: str) -> None:
        self.config = config
        self.number = number
        self.agent = agent
        self.env = ToolEnv(
            config.tools,
            config.tasks,
            protocol="openai",
            max_steps=config.max_steps,
            verbosity=config.verbosity,
        )
        self.lock = anyio.Lock()
        self.episodes = 0
        self.done = False
        self.reward: float | None = None
        self.files: dict[str, FileHandle] = {}
        self._writer: TraceWriter | None = None
        self._hash_before: str | None = None
        self.log_level: types.LoggingLevel = "debug"  # the client's `logging/setLevel`: all by default

    async def run(self, fn: Callable[[], _T]) -> _T:
        async with self.lock:
            return await anyio.to_thread.run_sync(fn)

    # ---- episodes ------------------------------------------------------------------------
    def start(self, task_id: str) -> str:
        """Start an episode on the task (an unfinished one is left as a partial trace); the prompt."""
        self._close_writer()
        seed = self.config.seed
        obs, info = self.env.reset(seed=seed, options={"task": task_id})
        task = self.env.task
        assert task is not None
        self.episodes += 1
        self.done, self.reward = False, None
        self.files = {}
        for announced in info["files"]:
            self._keep(self.env.files.resolve(announced["handle"]).handle)
        self._hash_before = info.get("state_hash")
        if self.config.trace_dir is not None:
            with strict_arguments(self.config.strict_arguments):  # the header says so, as the runner's does
                header = trace_header(
                    self.env,
                    _Named(self.agent),
                    task,
                    seed,
                    {"max_steps": task.max_steps or self.env.max_steps},
                )
            name = f"ep{self.episodes}.{trace_name(task.id, seed)}"
            path = self.config.trace_dir / f"session-{self.number}" / name
            self._writer = TraceWriter(path, header)
        return obs

    def step(self, message: dict[str, Any]) -> tuple[list[Observation], dict[str, Any]]:
        """One env step of an assistant message; its observations (the call's first, then any
        notifications) and the step's info."""
        with strict_arguments(self.config.strict_arguments):
            _, reward, terminated, truncated, info = self.env.step(message)
        if self._writer is not None:
            self._writer.step(step_fields(message, info, self._hash_before))
        self._hash_before = info.get("state_hash")
        if terminated or truncated:
            self.done, self.reward = True, float(reward)
            if self._writer is not None:
                self._writer.finish(trace_end(self.env, info, terminated=terminated, reward=float(reward)))
                self._writer = None
        assert self.env.episode is not None
        observations = self.env.episode.steps[-1].observations
        for obs in observations:
            for handle in obs.files:
                self._keep(handle)
        return observations, info

    def _keep(self, handle: FileHandle) -> None:
        self.files[handle.sha256] = handle

    def _close_writer(self) -> None:
        if self._writer is not None:
            self._writer.close()  # left as `.partial`: the episode did not finish
            if self.env.episode is not None and not self.env.episode.steps:
                self._writer.partial_path.unlink(missing_ok=True)  # nothing happened in it
            self._writer = None

    def close(self) -> None:
        self._close_writer()
        self.env.close()


class _Named:
    """The trace header names the agent (the MCP client); the agent itself runs on the client."""

    def __init__(self, name: str) -> None:
        self.name = name

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        raise NotImplementedError("the agent of an MCP session runs on the client")

    def act(self, observation: str, info: dict[str, Any]) -> str:
        raise NotImplementedError("the agent of an MCP session runs on the client")


def _assistant_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """An MCP tool call as the OpenAI assistant message a model would have written for it."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": derived_call_id(0, name, arguments),
                "type": "function",
                "function": {"name": name, "arguments": canonical_json(arguments)},
            }
        ],
    }


def build_server(config: McpWorldConfig, *, single: bool) -> tuple[Server[Any], Callable[[], None]]:
    """The MCP server of `config` and a function that closes every session still open. `single`:
    one session for the whole server (stdio); else one per MCP session (streamable HTTP)."""
    handlers = _Handlers(config, single)
    server: Server[Any] = Server(
        SERVER_NAME,
        version="1",
        instructions="A toolgym world: get a task's prompt to start its episode, call the tools, "
        f"then {FINAL_ANSWER}. Resources show the world's tables, state hash and files.",
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
        on_list_prompts=handlers.list_prompts,
        on_get_prompt=handlers.get_prompt,
        on_list_resources=handlers.list_resources,
        on_list_resource_templates=handlers.list_templates,
        on_read_resource=handlers.read_resource,
    )
    if not single:
        server.add_request_handler("server/discover", types.RequestParams, handlers.discover)
    # declares the logging capability the notifications' log messages need (handshake versions)
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, handlers.set_level)
    handlers.server = server
    return server, handlers.close_all


class _Handlers:
    """The server's request handlers and the sessions they drive."""

    def __init__(self, config: McpWorldConfig, single: bool) -> None:
        self.config = config
        self.single = single
        self.counter = itertools.count(1)
        self.sessions: dict[int, WorldSession] = {}
        self.guard = threading.Lock()
        self.server: Server[Any] | None = None  # set once built: discover reports its capabilities

    # ---- sessions ------------------------------------------------------------------------------
    async def new_session(self, ctx: ServerRequestContext[Any]) -> WorldSession:
        params = ctx.session.client_params
        agent = f"mcp:{params.client_info.name}" if params is not None else "mcp"
        with self.guard:
            number = next(self.counter)
        session = WorldSession(self.config, number, agent)
        self.sessions[number] = session
        await session.run(lambda: session.start(self.config.first_task))
        return session

    async def session_of(self, ctx: ServerRequestContext[Any]) -> WorldSession:
        if self.single:  # stdio: the process is the session, whichever protocol era the client speaks
            if not self.sessions:
                await self.new_session(ctx)
            return next(iter(self.sessions.values()))
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            raise MCPError(
                code=types.INVALID_REQUEST,
                message=f"toolgym keeps a world per MCP session: connect with the initialize handshake "
                f"(protocol {', '.join(HANDSHAKE_PROTOCOL_VERSIONS)}), not {ctx.protocol_version}",
            )
        # the SDK keeps per-connection state and teardown on its Connection, which the low-level
        # handler context reaches only through the session proxy
        connection = ctx.session._connection
        session: WorldSession | None = connection.state.get("toolgym")
        if session is None:
            session = await self.new_session(ctx)
            connection.state["toolgym"] = session
            number = session.number

            def closed() -> None:
                closing = self.sessions.pop(number, None)
                if closing is not None:
                    closing.close()

            stack: AsyncExitStack = connection.exit_stack
            stack.callback(closed)
        return session

    def close_all(self) -> None:
        for session in list(self.sessions.values()):
            session.close()
        self.sessions.clear()

    async def discover(
        self, ctx: ServerRequestContext[Any], params: types.RequestParams | None
    ) -> types.DiscoverResult:
        # over HTTP, advertise only session-based versions: SDK clients in "auto" mode then fall
        # back to the initialize handshake, which gives each client its own world
        assert self.server is not None
        return types.DiscoverResult(
            supported_versions=list(HANDSHAKE_PROTOCOL_VERSIONS),
            capabilities=self.server.get_capabilities(),
        )

    # ---- tools: the episode's tools and final_answer -------------------------------------------
    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        session = await self.session_of(ctx)
        return types.ListToolsResult(
            tools=[*(mcp_tool(t) for t in session.env.offered), _final_answer_tool()]
        )

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        session = await self.session_of(ctx)
        name, arguments = params.name, dict(params.arguments or {})
        if name != FINAL_ANSWER and name not in session.env.offered:
            # the MCP spec makes an unknown tool a protocol error (JSON-RPC -32602), not a result
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Unknown tool: {name}",
                data={"kind": ErrorKind.UNKNOWN_TOOL.value, "tool": name},
            )
        if session.done:
            return _state_error(
                f"the episode is over (reward {session.reward}): get a task's prompt to start another"
            )
        message = _step_message(session, name, arguments)
        if isinstance(message, types.CallToolResult):
            return message
        observations, info = await session.run(lambda: session.step(message))
        notifications = [o.text for o in observations if o.type == "notification"]
        await _log_notifications(ctx, session, notifications)
        if name == FINAL_ANSWER:
            result = {"reward": session.reward, "scores": info.get("scores", {}), "steps": info["step"]}
            answer = types.CallToolResult(
                content=[types.TextContent(text=f"episode over: reward {session.reward}")],
                structured_content=result,
            )
        else:
            answer = await _tool_result(session, observations[0])
        # what the world told the agent during the call: after the call's own content, as the next
        # observation of every other surface holds it
        answer.content.extend(types.TextContent(text=text) for text in notifications)
        return answer

    async def set_level(
        self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        session = await self.session_of(ctx)
        session.log_level = params.level
        return types.EmptyResult()

    # ---- prompts: the task queries ---------------------------------------------------------
    async def list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(name=t.id, title=t.id, description=t.category or t.query[:200])
                for t in self.config.tasks
            ]
        )

    async def get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if params.name not in self.config.tasks:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {params.name}")
        session = await self.session_of(ctx)
        text = await session.run(lambda: session.start(params.name))
        # the new task offers its own tools and world: hosts that cache the lists fetch them again
        await ctx.session.send_tool_list_changed()
        await ctx.session.send_resource_list_changed()
        return types.GetPromptResult(
            description=f"task {params.name}: a new episode in this session",
            messages=[types.PromptMessage(role="user", content=types.TextContent(text=text))],
        )

    # ---- resources: the session's world, read-only -----------------------------------------
    async def list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        session = await self.session_of(ctx)
        return types.ListResourcesResult(resources=await session.run(lambda: _resources(session)))

    async def list_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    name="table",
                    uri_template="toolgym://world/tables/{table}",
                    description="the rows of one table of the session's world (JSON)",
                    mime_type="application/json",
                ),
                types.ResourceTemplate(
                    name="file",
                    uri_template="toolgym://files/{sha256}",
                    description="a file of the session (task files, produced files)",
                ),
            ]
        )

    async def read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        session = await self.session_of(ctx)
        contents = await session.run(lambda: _read(session, str(params.uri)))
        return types.ReadResourceResult(contents=[contents])


def _step_message(
    session: WorldSession, name: str, arguments: dict[str, Any]
) -> dict[str, Any] | types.CallToolResult:
    """The assistant message of a call (a final answer, or a tool call whose data: URIs are now
    files of the session), or the error result of arguments it cannot take."""
    if name == FINAL_ANSWER:
        text = arguments.get("text")
        if not isinstance(text, str) or set(arguments) != {"text"}:
            return error_result(ErrorKind.ARGUMENT_ERROR, f"{FINAL_ANSWER} takes one string argument, text")
        return {"role": "assistant", "content": text}
    tool = session.env.offered.get(name)
    for pname in tool.file_params:
        value = arguments.get(pname)
        if isinstance(value, str) and value.startswith("data:"):
            decoded = decode_data_uri(value)
            if decoded is None:
                return error_result(ErrorKind.ARGUMENT_ERROR, f"{name}: {pname}: malformed data: URI")
            data, media_type = decoded
            arguments[pname] = session.env.files.put_bytes(data, media_type=media_type).ref
    return _assistant_call(name, arguments)


async def _tool_result(session: WorldSession, obs: Observation) -> types.CallToolResult:
    """A tool step's observation as the call's result: its error, or its text and files (and a
    note when the step limit ended the episode)."""
    if obs.error is not None:
        return error_result(obs.error.kind, obs.error.message)
    content: list[types.ContentBlock] = [types.TextContent(text=obs.text)]
    for handle in obs.files:
        content.append(await anyio.to_thread.run_sync(file_block, session.env.files, handle))
    if session.done:
        content.append(types.TextContent(text=f"the step limit ended the episode: reward {session.reward}"))
    return types.CallToolResult(content=content, structured_content={"result": obs.content})


async def _log_notifications(ctx: ServerRequestContext[Any], session: WorldSession, texts: list[str]) -> None:
    """Each notification as an MCP log message on the call's own stream, when the client takes
    messages at that level: its `logging/setLevel` (handshake versions) and the request's opt-in
    (2026-07-28's `_meta` log level, checked by the SDK's own rule)."""
    allowed = allowed_log_levels(ctx.protocol_version, ctx.meta)
    if NOTIFICATION_LEVEL not in allowed or _LEVELS.index(NOTIFICATION_LEVEL) < _LEVELS.index(
        session.log_level
    ):
        return
    for text in texts:
        message = types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(
                level=NOTIFICATION_LEVEL, logger=EVENTS_LOGGER, data=text
            )
        )
        await ctx.session.send_notification(message, related_request_id=ctx.request_id)


def _resources(session: WorldSession) -> list[types.Resource]:
    env = session.env
    out = [
        types.Resource(
            name="episode",
            uri="toolgym://episode",
            description="the session's episode: task, step, done, reward",
            mime_type="application/json",
        )
    ]
    world = env.world
    if world is not None:
        out.append(
            types.Resource(
                name="state-hash",
                uri="toolgym://world/state-hash",
                description="canonical sha256 of the world's whole state",
                mime_type="text/plain",
            )
        )
        for table in _table_names(session):
            out.append(
                types.Resource(
                    name=f"table {table}",
                    uri=f"toolgym://world/tables/{table}",
                    description=f"the rows of {table}",
                    mime_type="application/json",
                )
            )
    for sha, handle in session.files.items():
        out.append(
            types.Resource(
                name=handle.name or sha[:12],
                uri=f"toolgym://files/{sha}",
                mime_type=handle.media_type,
            )
        )
    return out


def _table_names(session: WorldSession) -> list[str]:
    from toolgym.mocks.world import MockWorld

    world = session.env.world
    return world.table_names if isinstance(world, MockWorld) else []


def _read(session: WorldSession, uri: str) -> types.TextResourceContents | types.BlobResourceContents:
    env = session.env
    if uri == "toolgym://episode":
        task = env.task
        episode = {
            "task_id": task.id if task is not None else None,
            "query": task.query if task is not None else None,
            "episode": session.episodes,
            "step": len(env.episode.steps) if env.episode is not None else 0,
            "done": session.done,
            "reward": session.reward,
        }
        return types.TextResourceContents(uri=uri, text=canonical_json(episode), mime_type="application/json")
    if uri == "toolgym://world/state-hash" and env.world is not None:
        return types.TextResourceContents(uri=uri, text=env.world.state_hash(), mime_type="text/plain")
    prefix = "toolgym://world/tables/"
    if uri.startswith(prefix) and uri[len(prefix) :] in _table_names(session):
        from toolgym.mocks.world import MockWorld

        assert isinstance(env.world, MockWorld)
        rows = env.world.rows(uri[len(prefix) :])
        return types.TextResourceContents(
            uri=uri, text=json.dumps(rows, sort_keys=True, default=str), mime_type="application/json"
        )
    prefix = "toolgym://files/"
    handle = session.files.get(uri[len(prefix) :]) if uri.startswith(prefix) else None
    if handle is not None:
        block = file_block(env.files, handle)
        data = block.data if isinstance(block, types.ImageContent) else None
        if data is None:
            assert isinstance(block, types.EmbeddedResource)
            assert isinstance(block.resource, types.BlobResourceContents)
            data = block.resource.blob
        return types.BlobResourceContents(uri=uri, blob=data, mime_type=handle.media_type)
    # the MCP spec: an unknown resource is JSON-RPC -32002 "Resource not found"
    raise MCPError(code=-32002, message=f"Resource not found: {uri}", data={"uri": uri})


# ---- the command -------------------------------------------------------------------------------
def make_config(
    *,
    apps: Sequence[str] = (),
    tasks: str | None = None,
    task: str | None = None,
    seed: int | None = None,
    max_steps: int = 50,
    trace_dir: Path | None = None,
    strict_arguments: bool = False,
    notifications: str = DEFAULT_VERBOSITY,
) -> McpWorldConfig:
    """The server of `toolgym mcp`: a task set (its worlds, and the registered tools its tasks use
    beside them: `toolservers.registry.tools_beside_worlds`), or one open world of `apps`, or (neither) the built-in
    tool set."""
    from toolgym.mocks.apps import get_app
    from toolgym.toolservers.registry import tools_beside_worlds

    for name in apps:
        try:
            get_app(name)
        except (KeyError, ValueError) as exc:
            raise McpSetupError(str(exc)) from None
    if tasks is not None:
        from toolgym.envs.demo import resolve_task_set

        try:
            task_set = resolve_task_set(tasks)
        except ValueError as exc:
            raise McpSetupError(str(exc)) from None
        if not len(task_set):
            raise McpSetupError(f"the task set {tasks!r} has no tasks")
        if apps:
            kept = [t for t in task_set if t.apps and set(t.apps) <= set(apps)]
            if not kept:
                raise McpSetupError(f"no task of {tasks!r} uses only the apps {', '.join(apps)}")
            task_set = TaskSet(kept, base_dir=task_set.base_dir)
    else:
        task_set = TaskSet([world_task(apps, seed or 0)])
    try:
        verbosity = parse_verbosity(notifications)
    except ArgumentError as exc:
        raise McpSetupError(exc.message) from None
    first = task or next(iter(task_set)).id
    if first not in task_set:
        raise McpSetupError(f"no task {first!r} in the task set")
    return McpWorldConfig(
        tasks=task_set,
        tools=tools_beside_worlds(task_set),
        first_task=first,
        seed=seed,
        max_steps=max_steps,
        trace_dir=trace_dir,
        strict_arguments=strict_arguments,
        verbosity=verbosity,
    )


async def serve_stdio(config: McpWorldConfig) -> None:
    from mcp.server.stdio import stdio_server

    server, close_all = build_server(config, single=True)
    try:
        async with stdio_server() as (read_stream, write_stream):
            options = server.create_initialization_options(
                NotificationOptions(tools_changed=True, resources_changed=True)
            )
            await server.run(read_stream, write_stream, options)
    finally:
        close_all()


def http_app(config: McpWorldConfig, exposure: Exposure | None = None) -> tuple[Any, Callable[[], None]]:
    """The streamable HTTP app (`/mcp`, stateful sessions, JSON responses) and its closer, behind
    the toolkit's guards (`exposure`: loopback without a token by default), as every toolgym server."""
    from mcp.server.transport_security import TransportSecuritySettings

    exposure = exposure or Exposure()
    server, close_all = build_server(config, single=False)
    # the toolkit's BrowserGuard checks Host, Origin and content type for every server alike
    app = server.streamable_http_app(
        json_response=True,
        stateless_http=False,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        host=exposure.host or "127.0.0.1",
    )
    secure(app, exposure)
    return app, close_all


# the `toolgym mcp` command lives in a light module, so `toolgym` starts without the mcp SDK
from toolgym.envs.mcp_command import mcp_command as mcp_command  # noqa: E402
