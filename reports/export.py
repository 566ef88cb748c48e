"""Training data from runs: `toolgym export RUN_DIR --format openai|hf|sharegpt|preference|tokens|otel`.

Each finished episode (a trace with an end line, not aborted) becomes one record of what the model
saw (`conversation`): the requests the trace kept (an LLM agent's, `full_requests`): the system
message, every message as sent, the model's replies as written, and the `tools` the requests sent
(none for the text protocols, whose system message documents the tools), so each turn's prefix of
the messages, with the tools, is that turn's request. A `--api responses` run comes out in chat
form. A trace without requests (the oracle, scripted agents, golden traces) comes out as the LLM
agent would have sent it: the protocol's instructions, its tools, and the episode in the
protocol's own form (tool calls for openai/responses, text for react/json).

A world that moves (`toolgym.mocks.events`) tells the agent of its events: each notification is a
user message after the step's tool messages, as the LLM agent sends it (in sharegpt, where turns
alternate, it joins the step's observation turn on a line of its own).

A reply that did not parse is seen, not learnt, in every format: each format keeps that mark
where it has per-turn weights, and leaves the reply out where it has none.

- `openai`: OpenAI fine-tuning chat JSONL: `messages` (system, user, assistant with `tool_calls`,
  `tool` with `tool_call_id`), `tools` (function schemas), `parallel_tool_calls`. An output that
  did not parse is kept as an assistant message with `weight: 0` (seen, not learnt), then what the
  env answered it. Trailing messages after the last assistant message are dropped (a training
  example ends with the assistant); an episode with no reply to learn gives no record.
- `hf`: the conversational-with-tools form TRL and `datasets` read: the same messages with
  `arguments` as objects and tool messages named, `tools` as function schemas. TRL learns every
  assistant message of a conversation (no per-turn weights), so a reply that did not parse is
  left out together with the env's answer to it (`learnt_only`).
- `sharegpt`: LLaMA-Factory's ShareGPT with tools: `system`, `conversations` of human / gpt /
  function_call / observation turns (calls at even positions), `tools` as a JSON string; replies
  that did not parse left out as in hf (LLaMA-Factory learns every gpt / function_call turn).
- `preference`: OpenAI's preference fine-tuning (DPO) JSONL: per task, the best trial against the
  worst (a higher reward), cut at the first assistant message where they differ: `input` (the
  shared prefix, tools), `preferred_output` and `non_preferred_output` (one assistant message each);
  no pair prefers a reply that did not parse.
- `tokens`: token-level trajectories, for traces whose steps kept the model server's token ids
  (`TraceStep.tokens`, schema 1.3): the turns as given (`weight: 0` on a turn whose output did not
  parse), and where each prompt extends the previous prompt and completion, their concatenation
  with a mask (1 = model tokens to learn, 0 = prompt and tool tokens, and the completion of a turn
  that did not parse) and the completion logprobs, never re-tokenised; `messages` and `tools`
  beside them, so a chat template's rendering of them can be checked against the ids.

A step-mode trace (`toolgym run --mode step`, teacher forced) is exported as its last request and
the model's last reply: the golden history teacher forcing fed (its golden replies, learnt: they
are the golden chain in the protocol's form) and the model's prediction for the last golden step,
marked (or left out) when it did not parse. The model's earlier predictions were scored, not sent
back, so no request holds them and no record does. A step-mode trace without requests (the oracle,
a scripted agent) is refused: the golden history it was shown is not in it.

Every record carries its task id, seed, reward, task set, trial and category (`metadata` in the
openai and preference records, which `--strip-metadata` leaves out for an upload: OpenAI's files
take only the format's own keys; top-level columns in hf and sharegpt); filters keep episodes by
reward threshold, passed only, task set and category.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from toolgym.actions import ACTION_ADAPTER, Observation
from toolgym.canonical import canonical_json
from toolgym.envs.tool_env import observation_text, task_prompt
from toolgym.evaluation.base import is_teacher_forced
from toolgym.files import atomic_file
from toolgym.protocols import OpenAIProtocol, ResponsesProtocol, get_protocol
from toolgym.protocols.openai import derived_call_id
from toolgym.running.trials import SUCCESS_THRESHOLD, LoadedTrace
from toolgym.tasks import Task
from toolgym.tools import ToolSet
from toolgym.trace import Trace, full_requests

OPENAI_RECORD_KEYS = frozenset({"messages", "tools", "parallel_tool_calls", "metadata"})


class ExportFormat(StrEnum):
    openai = "openai"
    hf = "hf"
    sharegpt = "sharegpt"
    preference = "preference"
    tokens = "tokens"
    otel = "otel"


class ExportError(ValueError):
    """An export that cannot be made (no traces, an unknown task)."""


@dataclass(frozen=True)
class Episode:
    """A finished episode to export: its trace, task and where it came from."""

    loaded: LoadedTrace
    task: Task

    @property
    def trace(self) -> Trace:
        return self.loaded.trace

    @property
    def reward(self) -> float:
        assert self.trace.end is not None
        return self.trace.end.reward

    def metadata(self) -> dict[str, Any]:
        return {
            "task_id": self.task.id,
            "seed": self.trace.header.seed,
            "reward": self.reward,
            "task_set": self.loaded.task_set,
            "trial": self.loaded.trial,
            "category": self.task.category,
        }


@dataclass(frozen=True)
class EpisodeFilter:
    min_reward: float | None = None
    passed_only: bool = False
    task_sets: frozenset[str] = frozenset()
    categories: frozenset[str] = frozenset()

    def keeps(self, episode: Episode) -> bool:
        if self.min_reward is not None and episode.reward < self.min_reward:
            return False
        if self.passed_only and episode.reward < SUCCESS_THRESHOLD:
            return False
        if self.task_sets and episode.loaded.task_set not in self.task_sets:
            return False
        return not self.categories or (episode.task.category or "") in self.categories


def finished_episodes(
    traces: Iterable[LoadedTrace], tasks: Mapping[str, Task], keep: EpisodeFilter = EpisodeFilter()
) -> list[Episode]:
    """The finished, not aborted episodes that pass the filter; an unknown task is an ExportError."""
    out: list[Episode] = []
    for loaded in traces:
        end = loaded.trace.end
        if end is None or end.status == "aborted":
            continue
        task = tasks.get(loaded.trace.header.task_id)
        if task is None:
            raise ExportError(
                f"{loaded.rel}: task {loaded.trace.header.task_id!r} is in none of the task sets given (--tasks)"
            )
        episode = Episode(loaded, task)
        if keep.keeps(episode):
            out.append(episode)
    return out


# ---- tools ------------------------------------------------------------------------------------
class ToolSchemas:
    """The function schemas of the tools an episode offered: the built-in tools and each app set's
    mock APIs (built once per app set); tools found in neither (remote ones) are left out."""

    def __init__(self, builtin: ToolSet | None = None) -> None:
        self._builtin = builtin
        self._apps: dict[tuple[str, ...], ToolSet] = {}

    def _tools(self, task: Task) -> ToolSet:
        if self._builtin is None:
            from toolgym.toolservers.registry import default_toolset

            self._builtin = default_toolset()
        tools = self._builtin
        if task.apps:
            key = tuple(task.apps)
            if key not in self._apps:
                from toolgym.mocks.world import MockWorld

                world = MockWorld(key, seed=task.seed, clock=task.clock)
                self._apps[key] = world.tools
                world.close()  # the schemas outlive the world: they are plain data
            tools = tools.merged(self._apps[key])
        return tools

    def offered(self, episode: Episode) -> ToolSet:
        """The tools the episode offered, as a ToolSet (those this process can build)."""
        tools = self._tools(episode.task)
        return tools.subset([t.name for t in episode.trace.header.tools if t.name in tools])

    def of(self, episode: Episode) -> list[dict[str, Any]]:
        return self.offered(episode).to_openai()


# ---- messages -----------------------------------------------------------------------------------
def _raw_text(raw: Any) -> str:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, Mapping) and isinstance(raw.get("content"), str) and not raw.get("tool_calls"):
        return str(raw["content"])
    return canonical_json(raw) if raw is not None else ""


def episode_messages(trace: Trace, task: Task) -> list[dict[str, Any]]:
    """The episode as OpenAI chat messages (the `openai` record's; other formats derive from it)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": task_prompt(task)}]
    for step in trace.steps:
        observations = list(step.observations)
        if not step.actions:  # the output did not parse: kept, never learnt from
            messages.append({"role": "assistant", "content": _raw_text(step.raw), "weight": 0})
            if observations:
                messages.append({"role": "user", "content": observations[0]["text"]})
            messages.extend(_notifications(observations))
            continue
        answered = observations[: len(step.actions)]
        calls = [(a, o) for a, o in zip(step.actions, answered, strict=False) if a["type"] == "tool_call"]
        thought = next((a.get("thought") for a in step.actions if a.get("thought")), None)
        if calls:
            message: dict[str, Any] = {"role": "assistant"}
            if thought:
                message["content"] = thought
            message["tool_calls"] = [
                {
                    "id": a.get("call_id") or derived_call_id(i, a["name"], a["arguments"]),
                    "type": "function",
                    "function": {"name": a["name"], "arguments": canonical_json(a["arguments"])},
                }
                for i, (a, _) in enumerate(calls)
            ]
            messages.append(message)
            for call, (_, o) in zip(message["tool_calls"], calls, strict=True):
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": o["text"]})
        for a, o in zip(step.actions, answered, strict=False):
            if a["type"] == "final_answer":
                messages.append({"role": "assistant", "content": a["text"]})
            elif a["type"] == "ask_user":
                messages.append({"role": "assistant", "content": a["text"]})
                messages.append({"role": "user", "content": o["text"]})
            elif a["type"] == "no_call" and o.get("type") == "user":  # a message to a simulated user
                messages.append({"role": "assistant", "content": a.get("thought") or ""})
                messages.append({"role": "user", "content": o["text"]})
        messages.extend(_notifications(observations))
    while messages and messages[-1]["role"] != "assistant":
        messages.pop()  # a training example ends with what the model wrote
    return messages


def _notifications(observations: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A step's notifications (a moving world's events, after its actions' observations) as the LLM
    agent sends them: a user message each, after the step's tool messages."""
    return [{"role": "user", "content": o["text"]} for o in observations if o.get("type") == "notification"]


# ---- the episode as the model saw it ----------------------------------------------------------
@dataclass(frozen=True)
class Conversation:
    """An episode as the model saw it: chat messages (the system message first, then every message
    of its requests and its replies as sent and written; `weight: 0` on replies that did not parse)
    and the tools its requests offered in `tools`, as chat function schemas (empty when the requests
    sent none: the text protocols document the tools in the system message)."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]


def conversation(episode: Episode, schemas: ToolSchemas) -> Conversation:
    """The requests the trace keeps (an LLM agent's, schema 1.4), or, for a trace without them
    (the oracle, a scripted agent, a golden trace), what the LLM agent would have sent for it:
    the protocol's instructions, its tools and the episode in the protocol's own form."""
    requests = full_requests(episode.trace.steps)
    if requests and all(r is not None for r in requests):
        return _requested(episode.trace, [r for r in requests if r is not None])
    if is_teacher_forced(episode.trace):
        raise ExportError(
            f"{episode.loaded.rel}: a step-mode trace of an agent that kept no requests "
            f"({episode.trace.header.agent}): the golden history it was shown is not in it; export "
            "an end-to-end run of it, or a step-mode run of an LLM agent"
        )
    return _replayed(episode, schemas)


def _reply(raw: Any) -> list[dict[str, Any]]:
    """A step's raw output as the history items the LLM agent appended for it."""
    if isinstance(raw, str):
        return [{"role": "assistant", "content": raw}]
    if isinstance(raw, Mapping):
        return [dict(raw)]
    if isinstance(raw, list):
        return [dict(item) for item in raw if isinstance(item, Mapping)]
    return []


def _requested(trace: Trace, requests: Sequence[Mapping[str, Any]]) -> Conversation:
    """The last request's messages and the last reply. End to end, each earlier reply is in the
    request after it; under teacher forcing that place holds the golden reply (learnt: it is the
    golden chain), so the model's own replies there are in no request and only its last reply is
    in the conversation, the one a `weight: 0` can mark."""
    items = [*requests[-1]["messages"], *_reply(trace.steps[-1].raw)]
    unlearnt: set[int] = set()  # the positions of the model's replies that did not parse
    replies = list(zip(trace.steps, requests, strict=True))
    for step, request in replies[-1:] if is_teacher_forced(trace) else replies:
        if not step.actions:
            start = len(request["messages"])
            unlearnt.update(range(start, start + len(_reply(step.raw))))
    messages = _chat_messages(items, unlearnt)
    while messages and messages[-1].get("role") != "assistant":
        messages.pop()  # a training example ends with what the model wrote
    return Conversation(messages, [_chat_tool(t) for t in requests[-1]["tools"] or []])


def _chat_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A function schema in chat form; a Responses tool (flat) nested under `function`."""
    if "function" in tool:
        return dict(tool)
    keys = ("name", "description", "parameters", "strict")
    return {"type": "function", "function": {k: tool[k] for k in keys if k in tool}}


def _part_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "".join(str(p.get("text", "")) for p in parts if isinstance(p, Mapping))


def _chat_messages(items: Sequence[Mapping[str, Any]], unlearnt: set[int]) -> list[dict[str, Any]]:
    """Chat messages as they are (`weight: 0` on an unlearnt reply); Responses items as the chat
    messages that say the same: a turn's reasoning, message and function_call items one assistant
    message (text as content, else the reasoning; calls as tool_calls), each function_call_output
    a tool message."""
    out: list[dict[str, Any]] = []
    turn: dict[str, Any] | None = None  # the assistant message Responses items are building
    for i, item in enumerate(items):
        kind = item.get("type")
        if kind in ("reasoning", "function_call") or (kind == "message" and item.get("role") == "assistant"):
            if turn is None:
                turn = {"role": "assistant", "content": None, "_thought": ""}
                out.append(turn)
            if kind == "reasoning":
                turn["_thought"] += _part_text(item.get("summary")) or _part_text(item.get("content"))
            elif kind == "message":
                turn["content"] = (turn["content"] or "") + _part_text(item.get("content"))
            else:
                call = {"name": item.get("name"), "arguments": item.get("arguments")}
                turn.setdefault("tool_calls", []).append(
                    {"id": item.get("call_id"), "type": "function", "function": call}
                )
            if i in unlearnt:
                turn["weight"] = 0
            continue
        turn = None
        if kind == "function_call_output":
            out.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": item.get("output")})
        elif kind == "message":
            out.append({"role": item.get("role"), "content": _part_text(item.get("content"))})
        else:
            message = dict(item)
            if i in unlearnt and message.get("role") == "assistant":
                message["weight"] = 0
            out.append(message)
    for message in out:
        thought = message.pop("_thought", "")
        if message["role"] == "assistant" and message.get("content") is None and thought:
            message["content"] = thought
    return out


def _replayed(episode: Episode, schemas: ToolSchemas) -> Conversation:
    """What the LLM agent would have sent for a trace that kept no requests."""
    trace, task = episode.trace, episode.task
    try:
        protocol = get_protocol(trace.header.protocol)
    except ValueError:  # a protocol of the user's own: the episode without a system message
        return Conversation(episode_messages(trace, task), schemas.of(episode))
    offered = schemas.offered(episode)
    system = {"role": "system", "content": protocol.instructions(offered)}
    if isinstance(protocol, (OpenAIProtocol, ResponsesProtocol)):
        # exported in chat form: the chat protocol's tools field, reserved functions included
        return Conversation([system, *episode_messages(trace, task)], OpenAIProtocol().tools_json(offered))
    messages: list[dict[str, Any]] = [system, {"role": "user", "content": task_prompt(task)}]
    render = getattr(protocol, "format_actions", None)
    for step in trace.steps:
        actions = [ACTION_ADAPTER.validate_python(a) for a in step.actions]
        if isinstance(step.raw, str) or not actions or render is None:
            message: dict[str, Any] = {"role": "assistant", "content": _raw_text(step.raw)}
        else:
            message = {"role": "assistant", "content": render(actions)}
        if not actions:
            message["weight"] = 0
        messages.append(message)
        if step.observations:
            observations = [Observation.model_validate(o) for o in step.observations]
            messages.append({"role": "user", "content": observation_text(protocol, observations)})
    while messages and messages[-1]["role"] != "assistant":
        messages.pop()
    return Conversation(messages, [])


def learnt(message: Mapping[str, Any]) -> bool:
    """An assistant message a model is to learn: every one but those marked `weight: 0`."""
    return message.get("role") == "assistant" and message.get("weight", 1) != 0


def learnt_only(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The messages for a format with no per-turn weights (hf, sharegpt), where every assistant
    message is a training target: each reply marked `weight: 0` is left out with the env's answer
    to it (the messages up to the next assistant message), so the turns after it stay, in a
    history without the reply they never learn from; trailing messages after the last assistant
    message are dropped."""
    out: list[dict[str, Any]] = []
    skipping = False
    for m in messages:
        if m.get("role") == "assistant":
            skipping = not learnt(m)
        if not skipping:
            out.append({k: v for k, v in m.items() if k != "weight"})
    while out and out[-1].get("role") != "assistant":
        out.pop()
    return out


def parallel_calls(messages: Sequence[Mapping[str, Any]]) -> bool:
    return any(len(m.get("tool_calls") or ()) > 1 for m in messages)


def openai_record(episode: Episode, seen: Conversation) -> dict[str, Any] | None:
    """The conversation as it was, replies that did not parse kept with `weight: 0`; None when no
    reply is to be learnt."""
    messages = seen.messages
    if not any(learnt(m) for m in messages):
        return None
    return {
        "messages": messages,
        "tools": seen.tools,
        "parallel_tool_calls": parallel_calls(messages),
        "metadata": episode.metadata(),
    }


def _arguments(text: Any) -> Any:
    """Tool call arguments as an object (what chat templates render); text that is not JSON (a
    reply cut short) stays text."""
    try:
        return json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return text


def hf_record(episode: Episode, seen: Conversation) -> dict[str, Any] | None:
    """TRL's conversational form: arguments as objects, tool messages named. TRL has no per-turn
    weights (every assistant message is a target), so the replies not to learn are left out
    (`learnt_only`)."""
    messages = learnt_only(seen.messages)
    if not messages:
        return None
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                names[c["id"]] = c["function"]["name"]
                arguments = _arguments(c["function"]["arguments"])
                calls.append(
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["function"]["name"], "arguments": arguments},
                    }
                )
            m = {**m, "content": m.get("content") or "", "tool_calls": calls}
        elif m["role"] == "tool":
            m = {**m, "name": names.get(m["tool_call_id"], "")}
        out.append(m)
    return {"messages": out, "tools": seen.tools, **episode.metadata()}


def sharegpt_record(episode: Episode, seen: Conversation) -> dict[str, Any] | None:
    """LLaMA-Factory's ShareGPT with tools: the system message as `system`, human/observation at
    odd positions, gpt/function_call at even ones; several calls of one turn are one function_call
    (a JSON list) and one observation. LLaMA-Factory learns every gpt and function_call turn (it
    has no per-turn weights), so the replies not to learn are left out (`learnt_only`)."""
    system = "".join(m.get("content") or "" for m in seen.messages if m.get("role") == "system")
    turns: list[dict[str, str]] = []
    pending: list[str] = []
    for m in learnt_only(seen.messages):
        if m["role"] == "system":
            continue
        if m["role"] == "tool":
            pending.append(m["content"])
            continue
        if pending:
            turns.append(
                {"from": "observation", "value": pending[0] if len(pending) == 1 else json.dumps(pending)}
            )
            pending = []
        if m["role"] == "user":
            if turns and turns[-1]["from"] in ("human", "observation"):
                # a notification after a step's tool results (or another user message): one turn,
                # since LLaMA-Factory's turns alternate (human/observation, then gpt/function_call)
                turns[-1]["value"] += "\n" + m["content"]
            else:
                turns.append({"from": "human", "value": m["content"]})
        elif m.get("tool_calls"):
            calls = [
                {"name": c["function"]["name"], "arguments": _arguments(c["function"]["arguments"])}
                for c in m["tool_calls"]
            ]
            turns.append(
                {
                    "from": "function_call",
                    "value": json.dumps(calls[0] if len(calls) == 1 else calls, ensure_ascii=False),
                }
            )
        else:
            turns.append({"from": "gpt", "value": m.get("content") or ""})
    if pending:
        turns.append(
            {"from": "observation", "value": pending[0] if len(pending) == 1 else json.dumps(pending)}
        )
    while turns and turns[-1]["from"] not in ("gpt", "function_call"):
        turns.pop()
    if not turns:
        return None
    functions = [t["function"] for t in seen.tools]
    return {
        "conversations": turns,
        "system": system,
        "tools": json.dumps(functions, ensure_ascii=False),
        **episode.metadata(),
    }


def _assistant_only(message: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k != "weight"}


def preference_records(episodes: Sequence[Episode], schemas: ToolSchemas) -> Iterator[dict[str, Any]]:
    """Per task (and seed), the best trial against the worst, when their rewards differ: OpenAI's
    preference format, cut at the first assistant message where the two differ."""
    by_task: dict[tuple[str, int | None], list[Episode]] = {}
    for e in episodes:
        by_task.setdefault((e.task.id, e.trace.header.seed), []).append(e)
    for group in by_task.values():
        ranked = sorted(group, key=lambda e: (-e.reward, e.loaded.trial, e.loaded.rel))
        best, worst = ranked[0], ranked[-1]
        if best.reward <= worst.reward:
            continue
        good_seen = conversation(best, schemas)
        good, bad = good_seen.messages, conversation(worst, schemas).messages
        cut = next(
            (
                i
                for i, (g, b) in enumerate(zip(good, bad, strict=False))
                if _assistant_only(g) != _assistant_only(b)
            ),
            min(len(good), len(bad)),
        )
        if (
            cut >= len(good)
            or cut >= len(bad)
            or good[cut]["role"] != "assistant"
            or bad[cut]["role"] != "assistant"
        ):
            continue  # they differ only where the env answered, or one is a prefix of the other
        if not learnt(good[cut]):
            continue  # the better trial's reply there did not parse: nothing to prefer
        yield {
            "input": {
                "messages": [_assistant_only(m) for m in good[:cut]],
                "tools": good_seen.tools,
                "parallel_tool_calls": parallel_calls(good),
            },
            "preferred_output": [_assistant_only(good[cut])],
            "non_preferred_output": [_assistant_only(bad[cut])],
            "metadata": {
                "task_id": best.task.id,
                "seed": best.trace.header.seed,
                "preferred_reward": best.reward,
                "non_preferred_reward": worst.reward,
                "preferred_trial": best.loaded.trial,
                "non_preferred_trial": worst.loaded.trial,
            },
        }


def token_record(episode: Episode, seen: Conversation) -> dict[str, Any] | None:
    """The episode's token ids as the model server returned them (None without any), with the
    messages and tools they are the tokens of (rendered through the model's chat template, each
    turn's prefix gives that turn's prompt)."""
    steps = [s for s in episode.trace.steps if s.tokens is not None]
    turns = [s.tokens for s in steps if s.tokens is not None]
    if not turns:
        return None
    # a turn whose output did not parse is marked weight 0 and masked 0: seen, not learnt
    learn = [bool(s.actions) for s in steps]
    record: dict[str, Any] = {
        "turns": [
            t.model_dump(mode="json") | ({} if ok else {"weight": 0})
            for t, ok in zip(turns, learn, strict=True)
        ],
        "messages": seen.messages,
        "tools": seen.tools,
        **episode.metadata(),
    }
    ids: list[int] = []
    mask: list[int] = []
    logprobs: list[float | None] = []
    for turn, ok in zip(turns, learn, strict=True):
        if ids and turn.prompt_ids[: len(ids)] != ids:
            # the template re-rendered the history: the turns cannot be concatenated without
            # re-tokenising, so only the per-turn ids are exported
            return {**record, "input_ids": None, "loss_mask": None, "logprobs": None}
        new_prompt = turn.prompt_ids[len(ids) :]
        ids += new_prompt + turn.completion_ids
        mask += [0] * len(new_prompt) + [int(ok)] * len(turn.completion_ids)
        turn_logprobs: list[float | None] = (
            list(turn.logprobs) if turn.logprobs is not None else [None] * len(turn.completion_ids)
        )
        logprobs += [None] * len(new_prompt) + turn_logprobs
    return {**record, "input_ids": ids, "loss_mask": mask, "logprobs": logprobs}


def export_records(
    episodes: Sequence[Episode], fmt: ExportFormat, schemas: ToolSchemas | None = None
) -> list[dict[str, Any]]:
    """The records of `fmt` (every format but otel, which sends spans: toolgym.reports.otel)."""
    schemas = schemas or ToolSchemas()
    if fmt is ExportFormat.preference:
        return list(preference_records(episodes, schemas))
    out: list[dict[str, Any]] = []
    for e in episodes:
        record: dict[str, Any] | None
        if fmt is ExportFormat.otel:
            raise ExportError(f"format {fmt.value} writes no JSONL records")
        seen = conversation(e, schemas)
        if fmt is ExportFormat.openai:
            record = openai_record(e, seen)
        elif fmt is ExportFormat.hf:
            record = hf_record(e, seen)
        elif fmt is ExportFormat.sharegpt:
            record = sharegpt_record(e, seen)
        else:
            record = token_record(e, seen)
        if record is not None:
            out.append(record)
    return out


def write_jsonl(records: Iterable[Mapping[str, Any]], path: Path) -> int:
    """The records as JSON lines in `path`, replaced whole (a full disk leaves the previous file)."""
    n = 0
    with atomic_file(path) as fh:
        for record in records:
            fh.write((json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))
            n += 1
    return n


def openai_format_problems(record: Mapping[str, Any]) -> list[str]:
    """What breaks OpenAI's fine-tuning format rules for chat with tools in a record (empty =
    none): the keys, the roles, string contents, every tool call answered by a tool message with its
    id, weights of 0 or 1 on assistant messages only, at least one assistant message, last."""
    problems: list[str] = []
    extra = set(record) - OPENAI_RECORD_KEYS
    if extra:
        problems.append(f"unknown keys {sorted(extra)}")
    messages = record.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*problems, "messages must be a non-empty list"]
    open_calls: set[str] = set()
    for i, m in enumerate(messages):
        role = m.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            problems.append(f"message {i}: role {role!r}")
            continue
        content = m.get("content")
        if content is not None and not isinstance(content, str):
            problems.append(f"message {i}: content must be a string")
        if "weight" in m and (role != "assistant" or m["weight"] not in (0, 1)):
            problems.append(f"message {i}: weight must be 0 or 1, on assistant messages only")
        if role == "assistant":
            calls = m.get("tool_calls") or []
            if content is None and not calls:
                problems.append(f"message {i}: an assistant message needs content or tool_calls")
            for c in calls:
                fn = c.get("function", {})
                if c.get("type") != "function" or not isinstance(fn.get("arguments"), str):
                    problems.append(
                        f"message {i}: a tool call needs type function and arguments as a JSON string"
                    )
                else:
                    try:
                        json.loads(fn["arguments"])
                    except ValueError:
                        problems.append(f"message {i}: arguments of {fn.get('name')} are not JSON")
                open_calls.add(c.get("id"))
        elif role == "tool":
            if m.get("tool_call_id") not in open_calls:
                problems.append(f"message {i}: tool message answers no open call ({m.get('tool_call_id')!r})")
            open_calls.discard(m.get("tool_call_id"))
        elif open_calls:
            problems.append(f"message {i}: calls {sorted(open_calls)} have no tool message")
            open_calls.clear()
    if messages[-1].get("role") != "assistant":
        problems.append("the last message must be the assistant's")
    for t in record.get("tools", []):
        if t.get("type") != "function" or "name" not in t.get("function", {}):
            problems.append(f"tool {t!r} is not a function schema")
    return problems
