"""Trainer adapters on the real ToolEnv and mock worlds: TRL's GRPO environment interface (tools
found and typed the way TRL finds them, schemas by transformers' `get_json_schema`, and TRL's own
GRPOTrainer probing the factory) and verl's tool interface (driven as verl's tool agent loop does:
create, execute, release per call)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import anyio
import pytest

from toolgym.envs.demo import resolve_task_set
from toolgym.envs.trainers import (
    FINAL_ANSWER,
    GRPOToolEnv,
    VerlToolAdapter,
    grpo_dataset,
    grpo_environment_factory,
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
    from toolgym.envs.trainers import offered_tools

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


def test_trl_grpo_trainer_takes_the_factory(tmp_path: pytest.TempPathFactory) -> None:
    trl = pytest.importorskip("trl")
    datasets = pytest.importorskip("datasets")
    pytest.importorskip("torch")
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    words = [
        "<pad>",
        "<|im_end|>",
        "<unk>",
        "<|im_start|>",
        "user",
        "assistant",
        "tool",
        *"abcdefghijklmnopqrstuvwxyz",
    ]
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=backend, pad_token="<pad>", eos_token="<|im_end|>", unk_token="<unk>"
    )
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
    assert transfer.get_openai_tool_schema()["function"]["name"] == "transfer_funds"
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
        response, _, _ = await adapter.execute(instance, {"account_number": "123456"})
        return str(response.text)

    assert "create_kwargs.task_id" in anyio.run(main)
