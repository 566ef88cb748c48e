"""Trainer adapters on the real ToolEnv and mock worlds: TRL's GRPO environment interface (tools
found and typed the way TRL finds them, schemas by transformers' `get_json_schema`, and TRL's own
GRPOTrainer probing the factory) and verl's tool interface (driven as verl's tool agent loop does:
create, execute, release per call; then, where verl is installed, against verl's own BaseTool,
schema models, tool config loader and ToolAgentLoop)."""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolgym.envs.demo import resolve_task_set
from toolgym.envs.trainers import (
    FINAL_ANSWER,
    GRPOToolEnv,
    VerlToolAdapter,
    grpo_dataset,
    grpo_environment_factory,
    offered_tools,
    verl_tool_schema,
    verl_tools,
)
from toolgym.tools import ToolSet

MTU = resolve_task_set("mtu")
TRANSFER = {
    "account_number": "123456",
    "source_account": "checking",
    "destination_account": "savings",
    "amount": 500,
    "transfer_speed": "now",
}


def _mtu_tools() -> ToolSet:
    return offered_tools(ToolSet(), MTU)


def _tool_methods(env: GRPOToolEnv) -> dict[str, object]:
    # what GRPOTrainer does: public functions of the class, reset and get_reward apart
    return {
        name: getattr(env, name)
        for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }


def test_grpo_environment_tools_are_typed_methods() -> None:
    transformers = pytest.importorskip("transformers")
    env = grpo_environment_factory(ToolSet(), MTU)()
    methods = _tool_methods(env)
    assert {"get_account_balance", "transfer_funds", FINAL_ANSWER} <= methods.keys()
    assert set(methods) - {FINAL_ANSWER} <= {t.name for t in env.env.tools.merged(_mtu_tools())}  # tools only
    schema = transformers.utils.get_json_schema(methods["transfer_funds"])["function"]
    assert schema["name"] == "transfer_funds"
    expected = _mtu_tools().get("transfer_funds").parameters_schema()
    assert set(schema["parameters"]["required"]) == set(expected["required"])
    assert set(schema["parameters"]["properties"]) == set(expected["properties"])
    assert schema["parameters"]["properties"]["amount"]["type"] == "number"
    assert transformers.utils.get_json_schema(methods[FINAL_ANSWER])["function"]["parameters"][
        "required"
    ] == ["text"]


def test_grpo_rollouts_each_have_their_own_episode() -> None:
    factory = grpo_environment_factory(ToolSet(), MTU, protocol="openai")
    rows = {row["task_id"]: row for row in grpo_dataset(MTU)}
    first, second = factory(), factory()
    first.reset(**rows["mtu-balance-002"])
    second.reset(**rows["mtu-transfer-011"])
    assert "$4,825.50" in first.get_account_balance(account_number="123456")  # type: ignore[attr-defined]
    assert "argument_error" in first.get_account_balance(accountnumber="1")  # type: ignore[attr-defined]
    first.final_answer("Account 123456 has a balance of $4,825.50.")
    assert first.get_reward() == 1.0 and first.final_answer("again") == "Answer recorded."
    second.transfer_funds(**TRANSFER)  # type: ignore[attr-defined]
    # no final answer: scored on its state now (the transfer task checks the world and the answer)
    unfinished = second.get_reward()
    assert 0.0 <= unfinished < 1.0
    second.final_answer("Done: $500 moved from checking to savings, completed.")
    assert second.get_reward() == 1.0
    first.reset(**rows["mtu-transfer-011"])  # reset again: a fresh world for the next rollout
    assert first.get_reward() < 1.0


def test_grpo_rollouts_keep_dense_step_rewards_under_milestones() -> None:
    factory = grpo_environment_factory(ToolSet(), MTU, protocol="openai", reward_mode="milestones")
    rows = {row["task_id"]: row for row in grpo_dataset(MTU)}
    env = factory()
    env.reset(**rows["mtu-transfer-011"])
    env.get_account_balance(account_number="123456")  # type: ignore[attr-defined]
    env.transfer_funds(**TRANSFER)  # type: ignore[attr-defined]
    env.final_answer("Done: $500 moved from checking to savings, completed.")
    # the read brings no milestone about; the transfer all four (two balances, two transactions)
    assert env.step_rewards == [0.0, 1.0, 1.0] and env.get_reward() == 1.0
    env.reset(**rows["mtu-transfer-011"])
    assert env.step_rewards == []


def test_verl_steps_return_dense_rewards_under_milestones() -> None:
    tools = {t.name: t for t in verl_tools(ToolSet(), MTU, reward_mode="milestones")}

    async def main() -> list[float]:
        rewards = []
        for name, args in (
            ("get_account_balance", {"account_number": "123456"}),
            ("transfer_funds", TRANSFER),
        ):
            instance, _ = await tools[name].create(create_kwargs={"task_id": "mtu-transfer-011"})
            _, reward, _ = await tools[name].execute(instance, args, agent_data=_AgentData("rollout"))
            await tools[name].release(instance)
            rewards.append(reward)
        return rewards

    assert anyio.run(main) == [0.0, 1.0]


def _word_tokenizer(words: list[str]) -> Any:
    """A tiny real tokenizer (a word-level vocabulary, no download) for trainers that need one."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocabulary = ["<pad>", "<|im_end|>", "<unk>", *words]
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocabulary)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=backend, pad_token="<pad>", eos_token="<|im_end|>", unk_token="<unk>"
    )


def test_trl_grpo_trainer_takes_the_factory(tmp_path: pytest.TempPathFactory) -> None:
    trl = pytest.importorskip("trl")
    datasets = pytest.importorskip("datasets")
    pytest.importorskip("torch")
    from transformers import LlamaConfig, LlamaForCausalLM

    words = ["<|im_start|>", "user", "assistant", "tool", *"abcdefghijklmnopqrstuvwxyz"]
    tokenizer = _word_tokenizer(words)
    # TRL's own Qwen3 chat template (it knows how to parse tool calls out of its replies)
    from trl.chat_template_utils import qwen3_chat_template

    tokenizer.chat_template = qwen3_chat_template
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(words),
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=2,
            max_position_embeddings=256,
        )
    )
    small = MTU.__class__([MTU["mtu-balance-002"]])
    config = trl.GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=4,
        max_steps=1,
        report_to=[],
        use_cpu=True,
        logging_steps=1,
        save_strategy="no",
    )
    try:
        trainer = trl.GRPOTrainer(
            model=model,
            args=config,
            train_dataset=datasets.Dataset.from_list(grpo_dataset(small) * 2),
            processing_class=tokenizer,
            environment_factory=grpo_environment_factory(ToolSet(), small),
        )
    except (ValueError, NotImplementedError) as exc:  # a tiny tokenizer TRL cannot parse tool calls for
        pytest.skip(f"TRL refused the toy model/tokenizer, not the environment: {exc}")
    names = {getattr(t, "__name__", "") for t in trainer.tools}
    assert {"get_account_balance", FINAL_ANSWER} <= names
    assert "ToolgymGRPOEnv" in trainer.reward_func_names  # get_reward became a reward source
    trainer.train()  # one step: the random model's rollouts reset their envs and are scored by get_reward
    pool = [e for envs in trainer._environment_pool.values() for e in envs]
    assert len(pool) >= 2 and all(isinstance(e, GRPOToolEnv) for e in pool)
    assert {e.env.task.id for e in pool if e.env.task is not None} == {"mtu-balance-002"}


@dataclass
class _AgentData:  # the field of verl's AgentData the tools read
    request_id: str


def test_verl_tools_keep_one_episode_per_trajectory() -> None:
    tools = {t.name: t for t in verl_tools(ToolSet(), MTU)}
    transfer, balance = tools["transfer_funds"], tools["get_account_balance"]
    schema = transfer.get_openai_tool_schema()  # verl's model where verl is installed, else the dict
    assert (schema if isinstance(schema, dict) else schema.model_dump())["function"][
        "name"
    ] == "transfer_funds"
    sample = {"create_kwargs": {"task_id": "mtu-transfer-011"}}

    async def call(
        tool: VerlToolAdapter, args: dict[str, object], request: str
    ) -> tuple[str, dict[str, object]]:
        # verl's ToolAgentLoop: create with the sample's create_kwargs, execute, release, per call
        instance, _ = await tool.create(create_kwargs=sample["create_kwargs"])
        try:
            response, _, metrics = await tool.execute(instance, args, agent_data=_AgentData(request))
        finally:
            await tool.release(instance)
        return response.text, metrics

    async def main() -> tuple[str, str, dict[str, object]]:
        await call(transfer, TRANSFER, "rollout-a")
        after_a, metrics = await call(balance, {"account_number": "123456"}, "rollout-a")
        after_b, _ = await call(balance, {"account_number": "123456"}, "rollout-b")
        return after_a, after_b, metrics

    after_a, after_b, metrics = anyio.run(main)
    assert "4,325.50" in after_a and "4,825.50" in after_b  # rollout b's world never saw a's transfer
    assert metrics["episode"] == "rollout-a" and metrics["step"] == 2 and metrics["error_kind"] is None
    assert not transfer.episodes.instances  # every instance released
    assert transfer.episodes.reward("rollout-a") < 1.0  # no final answer yet
    transfer.episodes.close("rollout-a")
    assert "rollout-a" not in transfer.episodes.envs


def test_verl_tool_from_its_config() -> None:
    adapter = VerlToolAdapter({"tool": "get_account_balance", "tasks": "mtu"})
    other = VerlToolAdapter({"tool": "transfer_funds", "tasks": "mtu"})
    assert adapter.episodes is other.episodes  # one task set's tools share its episodes

    async def main() -> str:
        instance, _ = await adapter.create(create_kwargs={"episode_id": "e1"})
        try:
            response, _, _ = await adapter.execute(instance, {"account_number": "123456"})
        finally:
            await adapter.release(instance)
        return str(response.text)

    assert "create_kwargs.task_id" in anyio.run(main)


# ---- against verl's own classes (verl 0.9.1, installed --no-deps by `make install-dev`) ----------
_VERL_METHODS = ("get_openai_tool_schema", "create", "execute", "calc_reward", "release")


def test_verl_adapter_has_verls_base_tool_interface() -> None:
    base_tool = pytest.importorskip("verl.tools.base_tool")
    schemas = pytest.importorskip("verl.tools.schemas")
    for name in _VERL_METHODS:
        ours, theirs = getattr(VerlToolAdapter, name), getattr(base_tool.BaseTool, name)
        assert inspect.iscoroutinefunction(ours) == inspect.iscoroutinefunction(theirs), name
        ours_params = list(inspect.signature(ours).parameters.values())
        theirs_params = list(inspect.signature(theirs).parameters.values())  # through verl's trace decorator
        assert [(p.name, p.kind) for p in ours_params] == [(p.name, p.kind) for p in theirs_params], name
    # verl's loader builds a tool as tool_cls(config=..., tool_schema=...), the schema None when not given
    init = inspect.signature(VerlToolAdapter).bind(config={"type": "native"}, tool_schema=None)
    assert set(init.arguments) == {"config", "tool_schema"}

    adapter = VerlToolAdapter({"type": "native", "tool": "transfer_funds", "tasks": "mtu"})
    assert isinstance(adapter.tool_schema, schemas.OpenAIFunctionToolSchema)
    assert adapter.tool_schema.function.name == adapter.name == "transfer_funds"

    async def main() -> tuple[object, object]:
        instance, created = await adapter.create(create_kwargs={"task_id": "mtu-balance-002"})
        try:
            response, _, _ = await adapter.execute(instance, {"account_number": "123456"})
        finally:
            await adapter.release(instance)
        return created, response

    for response in anyio.run(main):
        assert isinstance(response, schemas.ToolResponse)  # verl's own class, not toolgym's mirror


def test_verl_schema_model_takes_every_offered_tool() -> None:
    schemas = pytest.importorskip("verl.tools.schemas")
    from pydantic import ValidationError

    from toolgym.toolservers.registry import default_toolset

    tools = default_toolset()
    for name in ("mtu", "teval", "ctool", "multiturn"):
        tools = tools.merged(
            ToolSet(t for t in offered_tools(ToolSet(), resolve_task_set(name)) if t.name not in tools)
        )
    for tool in tools:
        model = schemas.OpenAIFunctionToolSchema.model_validate(verl_tool_schema(tool))
        expected = tool.parameters_schema().get("properties", {})
        assert set(model.function.parameters.properties) == set(expected), tool.name
    # why the conversion: verl's model wants a type on every parameter, an optional one is anyOf
    transfer = tools.get("transfer_funds")
    with pytest.raises(ValidationError, match="type"):
        schemas.OpenAIFunctionToolSchema.model_validate(
            {
                "type": "function",
                "function": {
                    "name": transfer.name,
                    "description": transfer.description,
                    "parameters": transfer.parameters_schema(),
                },
            }
        )
    typed = schemas.OpenAIFunctionToolSchema.model_validate(verl_tool_schema(transfer))
    assert typed.function.parameters.properties["schedule_time"].type == ["string", "null"]


def _byte_tokenizer() -> Any:
    """A real byte-level tokenizer (every byte a token, no merges, no download) with a ChatML-like
    template that renders tools and tool calls the hermes way: decoding gives back the text."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    byte_symbols = bytes_to_unicode().values()  # type: ignore[no-untyped-call]
    backend = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(byte_symbols)}, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<pad>"
    )
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>"]})
    tokenizer.chat_template = (
        "{% if tools %}<|im_start|>system\n{% for t in tools %}{{ t | tojson }}\n{% endfor %}<|im_end|>\n{% endif %}"
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
        "{% for c in m.tool_calls or [] %}<tool_call>{{ c.function | tojson }}</tool_call>{% endfor %}"
        "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    return tokenizer


def _hermes_call(name: str, arguments: dict[str, object]) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call><|im_end|>"


# verl's rollout settings for the tool agent loop: hermes tool calls, a few turns, deterministic ids
VERL_ROLLOUT = {
    "multi_turn": {
        "max_user_turns": 5,
        "max_assistant_turns": 5,
        "max_parallel_calls": 1,
        "max_tool_response_length": 4000,
        "tool_response_truncate_side": "middle",
        "format": "hermes",
    },
    "prompt_length": 8192,
    "response_length": 8192,
    "full_determinism": True,
}


def _verl_tools(tmp_path: Path, names: tuple[str, ...]) -> list[Any]:
    """The adapters of `names` on the mtu tasks, built by verl's own tool config loader."""
    from verl.tools.tool_registry import initialize_tools_from_config

    config = tmp_path / "tools.yaml"
    entries = [
        {
            "class_name": "toolgym.envs.trainers.VerlToolAdapter",
            "config": {"type": "native", "tool": name, "tasks": "mtu"},
        }
        for name in names
    ]
    config.write_text(json.dumps({"tools": entries}))  # YAML is a superset of JSON
    tools: list[Any] = initialize_tools_from_config(str(config))
    return tools


def _run_verl_rollouts(tools: list[Any], tokenizer: Any, server: Any, task_id: str, query: str) -> list[Any]:
    """Two rollouts (priorities 1 and 2: request ids det-1 and det-2) of verl's ToolAgentLoop on
    the task, `server` standing in for vLLM/SGLang."""
    agent_loop = pytest.importorskip("verl.experimental.agent_loop.agent_loop")
    tool_loop = pytest.importorskip("verl.experimental.agent_loop.tool_agent_loop")
    from omegaconf import OmegaConf

    async def main() -> list[Any]:
        loop = tool_loop.ToolAgentLoop(  # built inside the event loop: it keeps the running loop
            agent_loop.DictConfigWrap(OmegaConf.create({"actor_rollout_ref": {"rollout": VERL_ROLLOUT}})),
            server_manager=server,
            tokenizer=tokenizer,
            processor=None,
            dataset_cls=None,
            data_config=agent_loop.DictConfigWrap(OmegaConf.create({})),
            tools=agent_loop.ToolListWrap(tools),
        )
        prompt = [{"role": "user", "content": query}]
        tools_kwargs = {t.name: {"create_kwargs": {"task_id": task_id}} for t in tools}
        return [
            await loop.run({}, priority=priority, raw_prompt=prompt, tools_kwargs=tools_kwargs)
            for priority in (1, 2)
        ]

    results: list[Any] = anyio.run(main)
    return results


def test_verl_tool_agent_loop_runs_rollouts_on_the_adapter(tmp_path: Path) -> None:
    """verl's own pieces end to end on CPU: its tool config loader builds the adapters, its
    ToolAgentLoop (built by its constructor: tool schemas dumped for the chat template, the hermes
    tool parser) runs two rollouts, a scripted model server standing in for vLLM/SGLang."""
    pytest.importorskip("verl.tools.base_tool")
    pytest.importorskip("verl.experimental.agent_loop.tool_agent_loop")
    from verl.workers.rollout.replica import TokenOutput

    tools = _verl_tools(tmp_path, ("transfer_funds", "get_account_balance"))
    assert [type(t) for t in tools] == [VerlToolAdapter, VerlToolAdapter]
    episodes = tools[0].episodes  # the task set's, shared by its tools (and other tests' adapters)
    live = set(episodes.instances)
    tokenizer = _byte_tokenizer()
    balance = _hermes_call("get_account_balance", {"account_number": "123456"})
    scripts = {  # what the "model" answers, turn by turn, per rollout (verl's deterministic request ids)
        "det-1": [_hermes_call("transfer_funds", TRANSFER), balance, "Done: $500 moved.<|im_end|>"],
        "det-2": [
            _hermes_call("get_account_balance", {"account": "123456"}),
            balance,
            "No transfer.<|im_end|>",
        ],
    }
    seen: dict[str, list[str]] = {key: [] for key in scripts}

    class ScriptedServer:
        async def generate(self, request_id: str, prompt_ids: list[int], **kwargs: Any) -> Any:
            seen[request_id].append(tokenizer.decode(prompt_ids))
            reply = scripts[request_id][len(seen[request_id]) - 1]
            return TokenOutput(token_ids=tokenizer.encode(reply, add_special_tokens=False))

    query = "Move $500 from checking to savings of account 123456."
    first, second = _run_verl_rollouts(tools, tokenizer, ScriptedServer(), "mtu-transfer-011", query)
    # the tools verl put in the prompt: the adapter's schemas, optional parameters typed
    system = seen["det-1"][0].split("<|im_end|>")[0].splitlines()[1:]
    rendered = {t["function"]["name"]: t["function"] for t in map(json.loads, system)}
    assert set(rendered) == {"transfer_funds", "get_account_balance"}
    assert rendered["transfer_funds"]["parameters"]["properties"]["schedule_time"]["type"] == [
        "string",
        "null",
    ]
    assert '"transfer_status":"completed"' in seen["det-1"][1] and "$4,325.50" in seen["det-1"][2]
    assert "argument_error" in seen["det-2"][1] and "$4,825.50" in seen["det-2"][2]  # its own world
    assert first.num_turns == second.num_turns == 6 and first.extra_fields["tool_rewards"] == [0.0, 0.0]
    # the model's tokens are trained on, the tools' are masked out
    model_tokens = sum(len(tokenizer.encode(r, add_special_tokens=False)) for r in scripts["det-1"])
    assert sum(first.response_mask) == model_tokens < len(first.response_mask)
    assert set(episodes.instances) == live  # the loop released every instance it created
    assert episodes.envs["det-1"].task is not None and episodes.envs["det-1"].task.id == "mtu-transfer-011"
    assert 0.0 <= episodes.reward("det-1") < 1.0  # state right, no final answer given (the task wants one)
    for key in scripts:
        episodes.close(key)
