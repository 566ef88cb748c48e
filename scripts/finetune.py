"""Close the loop on a real model: golden traces -> training data -> a supervised fine-tune with TRL
-> the base and the fine-tuned model evaluated the same way on tasks held out of training.

    .venv/bin/python -m scripts.finetune --sets teval,multiturn --steps 30     # writes docs/finetune.md

1. `toolgym record --tasks SET ...`: the oracle's golden traces of every task of the sets (ReAct);
2. `toolgym export GOLDEN --format hf`: one record per episode, the messages the model would be
   sent and the golden replies (TRL's conversational format);
3. the split, by task id: a task is held out when sha256(id) % 5 == 0 (about one in five, stable
   when tasks are added); training keeps the other tasks' records, less any whose golden chain
   (its actions) equals a held-out task's, so no evaluated chain is ever trained on;
4. TRL's SFTTrainer on CPU: LoRA (merged into the weights when saved) when peft is installed, else
   a full fine-tune; the base GGUF is dequantised by transformers (toolgym's own loader,
   `toolgym.models.hf_agent`); the loss is on the assistant's tokens when the model's chat
   template can be given generation markers that render the same text (SmolLM2's can), else on
   every token. The model is saved with its own chat template to a folder `hf:FOLDER` loads;
5. scripts/baselines.py's runs (`toolgym run` end to end and `--mode step`, `toolgym eval` fixed
   and compat) of both models on the first `--eval-per-set` held-out tasks of each set.

Not part of CI: it trains for minutes to an hour on CPU. tests/scripts/test_finetune.py checks
steps 1-3 (no model).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import importlib.util
import json
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from scripts.baselines import (
    BaselineError,
    ModelPath,
    Results,
    Settings,
    collect,
    held_out_sample,
    metric_table,
    outcome_table,
    run_path,
    suite_error_table,
    toolgym,
    usage_table,
    versions,
)
from toolgym.canonical import canonical_hash
from toolgym.envs.demo import resolve_task_set
from toolgym.tasks import Task

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "finetune.md"
COMMAND = (".venv/bin/python", "-m", "scripts.finetune")
FOLDS = 5  # one task in FOLDS is held out
# SmolLM2's chat template renders every message with this expression; its training twin marks
# the assistant's content and end-of-turn token as generated (TRL's assistant-only loss)
CHATML_MESSAGE = "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
CHATML_TRAINING = (
    "{% if message['role'] == 'assistant' %}{{ '<|im_start|>assistant\n' }}{% generation %}"
    "{{ message['content'] + '<|im_end|>' }}{% endgeneration %}{{ '\n' }}{% else %}"
    + CHATML_MESSAGE
    + "{% endif %}"
)


def is_held_out(task_id: str) -> bool:
    """The split: fixed by the task's id alone."""
    return int(hashlib.sha256(task_id.encode("utf-8")).hexdigest(), 16) % FOLDS == 0


def golden_chain(task: Task) -> str:
    return canonical_hash([step.action.model_dump(mode="json") for step in task.golden])


@dataclass
class Split:
    """Training records and held-out tasks, per set (bundled set names)."""

    train: list[dict[str, Any]] = field(default_factory=list)
    held_out: dict[str, list[str]] = field(default_factory=dict)
    train_tasks: dict[str, list[str]] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)  # training tasks sharing a held-out golden chain


def split_records(records: Sequence[dict[str, Any]], sets: Sequence[str]) -> Split:
    """Held-out tasks by id; every other task's record trains, unless its golden chain is a
    held-out task's. Records of tasks outside `sets` are left out."""
    split = Split()
    tasks: dict[str, tuple[str, Task]] = {}
    for name in sets:
        for task in resolve_task_set(name):
            tasks[task.id] = (name, task)
            if is_held_out(task.id):
                split.held_out.setdefault(name, []).append(task.id)
    held_chains = {golden_chain(tasks[i][1]) for ids in split.held_out.values() for i in ids}
    for record in records:
        task_id = str(record["task_id"])
        if task_id not in tasks or is_held_out(task_id):
            continue
        name, task = tasks[task_id]
        if golden_chain(task) in held_chains:
            split.dropped.append(task_id)
            continue
        split.train.append({"messages": record["messages"]})
        split.train_tasks.setdefault(name, []).append(task_id)
    return split


def prepare(sets: Sequence[str], work: Path, log: list[str]) -> Split:
    """Steps 1-3: golden traces, their export, the split (train.jsonl and split.json in `work`)."""
    golden, export = work / "golden", work / "golden.hf.jsonl"
    toolgym(["record", *[a for s in sets for a in ("--tasks", s)], "--out", str(golden)], log)
    toolgym(["export", str(golden), "--format", "hf", "--out", str(export)], log)
    records = [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines() if line]
    split = split_records(records, sets)
    if not split.train:
        raise BaselineError(f"no training record left from the sets {', '.join(sets)}")
    lines = [json.dumps(r, ensure_ascii=False) for r in split.train]
    (work / "train.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    shown = {"held_out": split.held_out, "train_tasks": split.train_tasks, "dropped": split.dropped}
    (work / "split.json").write_text(json.dumps(shown, indent=2) + "\n", encoding="utf-8")
    return split


def training_template(template: str | None) -> str | None:
    """The chat template with generation markers (same text), or None when it is not ChatML's."""
    if not template or CHATML_MESSAGE not in template:
        return None
    return template.replace(CHATML_MESSAGE, CHATML_TRAINING)


@dataclass(frozen=True)
class TrainConfig:
    steps: int
    learning_rate: float
    batch_size: int
    grad_accum: int
    max_length: int
    seed: int = 0


def fine_tune(base: str, train: Sequence[dict[str, Any]], out: Path, config: TrainConfig) -> dict[str, Any]:
    """Steps 4: SFTTrainer on CPU from the base model `hf:...`; the model saved to `out`. Returns
    what was measured: method, loss, tokens, minutes."""
    from datasets import Dataset  # type: ignore[import-untyped,unused-ignore]
    from trl.trainer.sft_config import SFTConfig
    from trl.trainer.sft_trainer import SFTTrainer

    from toolgym.models.hf_agent import HFModel
    from toolgym.models.hf_models import parse_hf_spec

    loaded = HFModel(parse_hf_spec(base))  # its own copy: the cached one stays the base for evaluation
    tokenizer, model = loaded.tokenizer, loaded.model
    _as_plain_weights(model)
    original = tokenizer.chat_template
    marked = training_template(original)
    messages = [r["messages"] for r in train]
    if marked is not None:  # the marked template must render exactly what the model is sent
        for convo in messages:
            same = tokenizer.apply_chat_template(convo, tokenize=False, chat_template=marked)
            if same != tokenizer.apply_chat_template(convo, tokenize=False):
                raise BaselineError("the training template's markers changed the rendered text")
        tokenizer.chat_template = marked
    lengths = [
        len(tokenizer.apply_chat_template(m, tokenize=True, return_dict=True)["input_ids"]) for m in messages
    ]
    peft_config = _lora() if importlib.util.find_spec("peft") is not None else None
    args = SFTConfig(
        output_dir=str(out.parent / "trainer"),
        max_steps=config.steps,
        per_device_train_batch_size=config.batch_size,
        gradient_accumulation_steps=config.grad_accum,
        learning_rate=config.learning_rate,
        lr_scheduler_type="constant",
        max_length=config.max_length,
        assistant_only_loss=marked is not None,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        seed=config.seed,
        dataloader_num_workers=0,
        activation_checkpointing=False,  # TRL's default trades ~20% more compute for memory 135M never lacks
    )
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list([{"messages": m} for m in messages]),
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    started = time.monotonic()
    trainer.train()
    minutes = (time.monotonic() - started) / 60
    tuned: Any = trainer.model  # a PreTrainedModel (a PeftModel under LoRA)
    trained = tuned.merge_and_unload() if peft_config is not None else tuned
    tokenizer.chat_template = original  # the fine-tuned model is prompted as the base is
    trained.save_pretrained(out)
    tokenizer.save_pretrained(out)
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    del trainer, trained, model, loaded
    gc.collect()
    return {
        "method": "LoRA (peft), merged" if peft_config is not None else "full fine-tune (peft not installed)",
        "loss_on": "assistant tokens" if marked is not None else "every token",
        "records": len(messages),
        "record_tokens": {"mean": sum(lengths) / len(lengths), "max": max(lengths)},
        "truncated": sum(n > config.max_length for n in lengths),
        "examples_seen": config.steps * config.batch_size * config.grad_accum,
        "losses": losses,
        "minutes": minutes,
        "config": asdict(config),
    }


def _as_plain_weights(model: Any) -> None:
    """A GGUF file loads dequantised (float tensors) but keeps its GGUF quantizer, which makes the
    Trainer refuse to train it and save_pretrained to save it; with float weights only, the
    quantizer is removed the way transformers removes it for a dequantised load."""
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is None:
        return
    if not all(p.dtype.is_floating_point for p in model.parameters()):
        raise BaselineError(
            f"the base model keeps quantized weights ({type(quantizer).__name__}): not trainable"
        )
    quantizer.remove_quantization_config(model)


def _lora() -> Any:
    from peft import LoraConfig  # type: ignore[import-not-found,unused-ignore]

    return LoraConfig(
        r=16, lora_alpha=32, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM"
    )


INTRO = """\
The loop closed on a real model: SmolLM2-135M-Instruct (the base, `{base}`) is fine-tuned on
toolgym's golden traces and evaluated, before and after, on tasks it was not trained on. A 135M
model, a few minutes of CPU training and a handful of held-out episodes: the numbers say whether the
loop works and which way it moves the model, not how good a tool agent can get. Every metric is a
percentage; `-` means the row did not run for that model."""


def data_lines(meta: dict[str, Any]) -> list[str]:
    split, train = meta["split"], meta["train"]
    lines = [f"- sets: {', '.join(meta['sets'])} (golden traces: `toolgym record`, the oracle, ReAct)"]
    for name in meta["sets"]:
        held = split["held_out"].get(name, [])
        lines.append(
            f"- {name}: {len(split['train_tasks'].get(name, []))} training tasks, {len(held)} held out "
            f"({', '.join(held) or 'none'}); evaluated: {', '.join(meta['evaluated'].get(name, [])) or 'none'}"
        )
    dropped = ", ".join(split["dropped"]) or "none"
    lines += [
        f"- split: held out when sha256(task id) % {FOLDS} == 0; training tasks whose golden chain equals a "
        f"held-out task's are dropped from training: {dropped}",
        f"- training data: `toolgym export --format hf`, {train['records']} records of "
        f"{train['record_tokens']['mean']:.0f} tokens on average (longest {train['record_tokens']['max']}, "
        f"{train['truncated']} cut at max_length {train['config']['max_length']})",
        f"- training: {train['method']}, loss on {train['loss_on']}, TRL SFTTrainer on CPU, "
        f"{train['config']['steps']} optimizer steps x batch {train['config']['batch_size']} x "
        f"accumulation {train['config']['grad_accum']} = {train['examples_seen']} examples, learning rate "
        f"{train['config']['learning_rate']} (constant), {train['minutes']:.1f} min",
        f"- training loss per step: {', '.join(f'{v:.3f}' for v in train['losses'])}",
    ]
    return lines


def render(meta: dict[str, Any], results: Results) -> str:
    lines = ["# Fine-tuning a real model on golden traces", "", INTRO.format(base=meta["base"]), ""]
    lines += ["Reproduce (not in CI; the runs go to `--work`):", "", "```bash", meta["command"], "```", ""]
    lines += [f"Measured on {meta['machine']}. Versions: {meta['versions']}.", "", "## Data and training", ""]
    lines += [*data_lines(meta), ""]
    lines += [
        "## Before and after, on the held-out tasks",
        "",
        f"Both models run the same commands (scripts/baselines.py's): `toolgym run` end to end and "
        f"`--mode step` (teacher-forced on the golden chain, where the suite scores it), ReAct, temperature "
        f"0, at most {meta['max_steps']} steps and {meta['max_tokens']} new tokens per turn, then `toolgym "
        "eval` in fixed and compat mode.",
        "",
        "### Episodes",
        "",
        *outcome_table(results),
        "",
        "### Suite metrics",
        "",
        *metric_table(results),
        "",
        "### Error kinds the suites count (fixed mode)",
        "",
        *suite_error_table(results),
        "",
        "### Tokens and latency per model turn (wall clock)",
        "",
        f"Evaluation: {', '.join(f'{k} {v:.1f} min' for k, v in meta['eval_minutes'].items())}.",
        "",
        *usage_table(results),
    ]
    return "\n".join(lines) + "\n"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m scripts.finetune", description=__doc__.split("\n")[0])
    p.add_argument("--sets", default="teval,multiturn", help="bundled sets to train and evaluate on")
    p.add_argument("--base", default="hf:smollm2", help="the base model, hf:PATH[#FILE.gguf]")
    p.add_argument("--steps", type=int, default=30, help="optimizer steps (default 30)")
    p.add_argument("--learning-rate", type=float, default=1e-4)
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--grad-accum", type=int, default=2, help="examples per optimizer step (x batch size)")
    p.add_argument("--max-length", type=int, default=3072, help="tokens per training record")
    p.add_argument("--eval-per-set", type=int, default=2, help="held-out tasks evaluated per set")
    p.add_argument("--max-steps", type=int, default=2, help="episode step limit in evaluation")
    p.add_argument("--max-tokens", type=int, default=64, help="new tokens per turn in evaluation")
    p.add_argument(
        "--work", type=Path, default=Path("runs/finetune"), help="golden traces, data, model, runs"
    )
    p.add_argument("--doc", type=Path, default=DOC, help="the document written (default docs/finetune.md)")
    p.add_argument("--render-only", action="store_true", help="rewrite the document from --work")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    import platform

    from scripts.baselines import _cpus

    args = parser().parse_args(argv)
    sets = args.sets.split(",")
    work: Path = args.work
    model_dir = (work / "model").resolve()
    meta_file = work / "finetune.json"
    paths = [
        ModelPath(f"base ({args.base})", "base", ("--agent", args.base)),
        ModelPath("fine-tuned", "fine-tuned", ("--agent", f"hf:{model_dir}")),
    ]
    settings = Settings(work / "eval", args.max_steps, args.max_tokens, teval_subsets=False)
    if not args.render_only:
        work.mkdir(parents=True, exist_ok=True)
        log: list[str] = []
        split = prepare(sets, work, log)
        config = TrainConfig(
            args.steps, args.learning_rate, args.batch_size, args.grad_accum, args.max_length
        )
        train = fine_tune(args.base, split.train, model_dir, config)
        evaluated = {name: ids[: args.eval_per_set] for name, ids in split.held_out.items()}
        chosen = [held_out_sample(name, evaluated[name]) for name in sets if evaluated.get(name)]
        eval_minutes = {}
        for path in paths:
            started = time.monotonic()
            run_path(settings, path, chosen, log)
            eval_minutes[path.label] = (time.monotonic() - started) / 60
        shown = [a for a in (argv if argv is not None else sys.argv[1:])]
        meta = {
            "command": shlex.join([*COMMAND, *shown]),
            "base": args.base,
            "sets": sets,
            "split": json.loads((work / "split.json").read_text(encoding="utf-8")),
            "evaluated": evaluated,
            "train": train,
            "max_steps": args.max_steps,
            "max_tokens": args.max_tokens,
            "eval_minutes": eval_minutes,
            "machine": f"{platform.machine()}, {_cpus()} CPU cores (shared)",
            "versions": versions(),
        }
        meta_file.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        (work / "commands.txt").write_text("\n".join(log) + "\n", encoding="utf-8")
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    chosen = [held_out_sample(name, ids) for name, ids in meta["evaluated"].items() if ids]
    results = {p.label: collect(settings, p, chosen) for p in paths}
    args.doc.write_text(render(meta, results), encoding="utf-8")
    print(f"{args.doc} written; model in {model_dir}, runs in {work}/")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BaselineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
