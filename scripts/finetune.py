"""Close the loop on a real model: generated tasks -> golden traces -> training data -> a supervised
fine-tune with TRL -> the base and the fine-tuned model evaluated the same way on tasks held out of
training (all seven bundled sets and the generator's held-out templates).

    .venv/bin/python -m scripts.finetune --bench-steps 20          # s/step: LoRA/full x fp32/bf16
    .venv/bin/python -m scripts.finetune --steps 300 --eval-per-set 0     # train; docs/finetune.md
    .venv/bin/python -m scripts.finetune --steps 300 --eval-per-set 10    # train, then before/after

1. `toolgym generate --apps ... --seed S --holdout F`: verified tasks from the apps' templates; the
   held-out templates' tasks go to generated.holdout.jsonl and are never trained on;
2. `toolgym record --tasks generated.jsonl` (the oracle's golden traces, ReAct) and `toolgym export
   --format hf` (one record per episode: the messages the model is sent and the golden replies);
   `--train-sets` adds the training split of bundled sets the same way (a task of theirs is held
   out when sha256(id) % 5 == 0);
3. the split is checked, not assumed: no training task is a held-out template's, and a generated
   task whose id, query or golden chain (its actions) is a bundled task's is dropped from training
   (split.json says which), so no evaluated task is ever trained on;
4. TRL's SFTTrainer on CPU: LoRA through peft (merged into the weights when saved) or a full
   fine-tune, bf16 autocast where the CPU has native bf16 (else fp32; `--precision`), torch threads from the CPUs the process may use, seeded
   (torch, random, numpy, the data order), one progress line per optimizer step; the loss is on
   the assistant's tokens when the model's chat template can be given generation markers that
   render the same text (SmolLM2's can). The model is saved with its own chat template to a folder
   `hf:FOLDER` loads;
5. scripts/baselines.py's runs (`toolgym run` end to end and `--mode step`, `toolgym eval` fixed
   and compat) of both models on `--eval-per-set` tasks of each bundled set (`--eval-sets`, default
   all seven) and of the held-out generated templates (one task a template).

`--resume` goes on with a run that stopped in `--work` (its finished training kept, its
evaluation runs resumed). Not part of CI: it trains for many minutes on CPU. tests/scripts/test_finetune.py checks steps 1-3
(no model) and the progress line and seeding of a short training run on the real model.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import hashlib
import importlib
import json
import os
import random
import shlex
import statistics
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from scripts.baselines import (
    EVAL_TIMES,
    BaselineError,
    EvalClock,
    ModelPath,
    Results,
    Sample,
    Settings,
    collect,
    held_out_sample,
    machine,
    metric_table,
    outcome_table,
    path_times,
    run_path,
    shown_command,
    suite_error_table,
    task_file_sample,
    toolgym,
    usage_table,
    versions,
)
from toolgym.canonical import canonical_hash
from toolgym.envs.demo import benchmark_task_sets, resolve_task_set
from toolgym.tasks import Task, TaskSet

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "finetune.md"
COMMAND = (".venv/bin/python", "-m", "scripts.finetune")
FOLDS = 5  # one task in FOLDS of a bundled set's training split is held out
GENERATED = "generated"  # the generated task file's stem: its task set name in traces and exports
HELD_OUT_GENERATED = "generated-holdout"  # the evaluated sample of the held-out templates
# SmolLM2's chat template renders every message with this expression; its training twin marks
# the assistant's content and end-of-turn token as generated (TRL's assistant-only loss)
CHATML_MESSAGE = "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
CHATML_TRAINING = (
    "{% if message['role'] == 'assistant' %}{{ '<|im_start|>assistant\n' }}{% generation %}"
    "{{ message['content'] + '<|im_end|>' }}{% endgeneration %}{{ '\n' }}{% else %}"
    + CHATML_MESSAGE
    + "{% endif %}"
)
# bf16 autocast against fp32 (--bench-steps), the loss of the same first steps, relative:
# - step 1, where both runs hold the same weights and batch, differs by rounding alone: bf16 keeps
#   8 bits of mantissa (2^-8 = 0.4% per value), autocast runs the matmuls in bf16 and the softmax
#   and the loss in fp32, and the step's loss is a mean over hundreds of tokens, so rounding moves
#   it well under 1%; 1% off would be a different computation;
# - steps 2..COMPARED_STEPS also carry the updates apart (gradients from bf16 activations), which
#   rounding does not bound: 5%, the looser bound a trajectory still the same one keeps (measured
#   on SmolLM2: LoRA within 1.2%, a full fine-tune within 3.8%).
BF16_FIRST_STEP_TOLERANCE = 0.01
BF16_TOLERANCE = 0.05
COMPARED_STEPS = 3
TRAIN_RECORD = "train.json"  # a finished training run: what it measured, its base, config and records
NOT_SHOWN = ("--render-only", "--resume")  # how the document was made, not what it measured


def is_held_out(task_id: str) -> bool:
    """The split of a bundled set's tasks: fixed by the task's id alone."""
    return int(hashlib.sha256(task_id.encode("utf-8")).hexdigest(), 16) % FOLDS == 0


def golden_chain(task: Task) -> str:
    return canonical_hash([step.action.model_dump(mode="json") for step in task.golden])


def normal_query(task: Task) -> str:
    return " ".join(task.query.lower().split())


@dataclass(frozen=True)
class DataConfig:
    """Where training data comes from: `generate_n` generated tasks of `apps` (seeded, a `holdout`
    fraction of templates kept apart) and the training split of the bundled `train_sets`."""

    apps: str = "banking,shopping,ctool,ctool_zh,mtu,teval"
    generate_n: int = 400
    seed: int = 0
    holdout: float = 0.1
    train_sets: tuple[str, ...] = ()

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> DataConfig:
        sets = tuple(filter(None, args.train_sets.split(",")))
        return cls(args.apps, args.generate, args.generate_seed, args.holdout, sets)


@dataclass
class Split:
    """Training records, and what was kept out of training and why."""

    train: list[dict[str, Any]] = field(default_factory=list)
    train_tasks: dict[str, list[str]] = field(default_factory=dict)  # task set -> trained task ids
    held_out: dict[str, list[str]] = field(default_factory=dict)  # bundled train set -> held-out ids
    held_out_templates: list[str] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)  # training task -> the evaluated task it repeats

    def shown(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "train"}


def bundled_tasks() -> dict[str, tuple[str, Task]]:
    """Every task of the bundled sets (the evaluation's side), by id: (set name, task)."""
    return {task.id: (name, task) for name in benchmark_task_sets() for task in resolve_task_set(name)}


def repeats(task: Task, evaluated: Iterable[Task]) -> dict[str, str]:
    """Why `task` must not be trained on: the evaluated tasks it shares an id, a query (case and
    spaces aside) or a golden chain with; empty when it shares none."""
    found: dict[str, str] = {}
    chain, query = golden_chain(task), normal_query(task)
    for other in evaluated:
        if other.id == task.id:
            found[other.id] = "same id"
        elif normal_query(other) == query:
            found[other.id] = "same query"
        elif task.golden and other.golden and golden_chain(other) == chain:
            found[other.id] = "same golden chain"
    return found


def split_records(
    records: Sequence[dict[str, Any]], generated: Sequence[Task], config: DataConfig, held_templates: set[str]
) -> Split:
    """The training records: every generated task's (not of a held-out template, repeating no
    bundled task) and the training split of `config.train_sets` (less a task whose golden chain or
    query is a held-out task's). Every bundled task outside that training split is evaluated."""
    split = Split(held_out_templates=sorted(held_templates))
    bundled = bundled_tasks()
    trained_bundled = {
        i for i, (name, _) in bundled.items() if name in config.train_sets and not is_held_out(i)
    }
    for task_id, (name, _) in bundled.items():
        if name in config.train_sets and task_id not in trained_bundled:
            split.held_out.setdefault(name, []).append(task_id)
    evaluated = [task for i, (_, task) in bundled.items() if i not in trained_bundled]
    trainable = {t.id: (GENERATED, t) for t in generated} | {i: bundled[i] for i in trained_bundled}
    for task_id, (_, task) in trainable.items():
        if task.metadata.get("template") in held_templates:
            raise BaselineError(f"{task_id}: its template is held out, yet it is in the training file")
        found = repeats(task, evaluated)
        if found:
            split.dropped[task_id] = "; ".join(f"{why} as {other}" for other, why in sorted(found.items()))
    for record in records:
        task_id = str(record["task_id"])
        if task_id not in trainable or task_id in split.dropped:
            continue
        split.train.append({"messages": record["messages"]})
        split.train_tasks.setdefault(trainable[task_id][0], []).append(task_id)
    return split


def prepare(config: DataConfig, work: Path, log: list[str]) -> Split:
    """Steps 1-3: generated tasks, golden traces, their export, the split (train.jsonl and
    split.json in `work`). Only toolgym's commands make the data."""
    work.mkdir(parents=True, exist_ok=True)
    generated_file = work / f"{GENERATED}.jsonl"  # and its held-out part, generated.holdout.jsonl
    sources: list[str] = list(config.train_sets)
    if config.generate_n:
        args = ["generate", "--apps", config.apps, "--n", str(config.generate_n), "--seed", str(config.seed)]
        toolgym([*args, "--holdout", str(config.holdout), "--out", str(generated_file)], log)
        sources.insert(0, str(generated_file))
    if not sources:
        raise BaselineError("no training data: give --generate N (> 0) or --train-sets")
    golden, export = work / "golden", work / "golden.hf.jsonl"
    tasks_args = [a for s in sources for a in ("--tasks", s)]
    toolgym(["record", *tasks_args, "--out", str(golden)], log)
    toolgym(["export", str(golden), "--format", "hf", *tasks_args, "--out", str(export)], log)
    records = [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines() if line]
    generated = list(TaskSet.load(generated_file)) if config.generate_n else []
    held = {str(t.metadata.get("template")) for t in held_out_generated(work)}
    split = split_records(records, generated, config, held)
    if not split.train:
        raise BaselineError("no training record left from the generated tasks and --train-sets")
    lines = [json.dumps(r, ensure_ascii=False) for r in split.train]
    (work / "train.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (work / "split.json").write_text(json.dumps(split.shown(), indent=2) + "\n", encoding="utf-8")
    return split


def held_out_generated(work: Path) -> list[Task]:
    file = work / f"{GENERATED}.holdout.jsonl"
    return list(TaskSet.load(file)) if file.is_file() else []


def evaluation_samples(work: Path, split: dict[str, Any], sets: Sequence[str], per_set: int) -> list[Sample]:
    """What is evaluated: the first `per_set` tasks (file order) of each bundled set in `sets`
    that were not trained on, and one task of each of the first `per_set` held-out templates."""
    chosen = []
    for name in sets:
        trained = set(split["train_tasks"].get(name, []))
        ids = [t.id for t in resolve_task_set(name) if t.id not in trained][:per_set]
        if ids:
            chosen.append(held_out_sample(name, ids))
    first_of_template: dict[str, str] = {}
    for task in held_out_generated(work):
        first_of_template.setdefault(str(task.metadata.get("template")), task.id)
    ids = [first_of_template[t] for t in sorted(first_of_template)][:per_set]
    if ids:
        file = work / f"{GENERATED}.holdout.jsonl"
        chosen.append(task_file_sample(HELD_OUT_GENERATED, file, ids))
    return chosen


def training_template(template: str | None) -> str | None:
    """The chat template with generation markers (same text), or None when it is not ChatML's."""
    if not template or CHATML_MESSAGE not in template:
        return None
    return template.replace(CHATML_MESSAGE, CHATML_TRAINING)


@dataclass(frozen=True)
class TrainConfig:
    steps: int
    learning_rate: float = 1e-4
    batch_size: int = 1
    grad_accum: int = 1
    max_length: int = 2048
    seed: int = 0
    lora: bool = True
    precision: str = "auto"  # bf16 autocast, fp32, or auto: bf16 where the CPU multiplies it natively
    threads: int | None = None  # None: toolgym's default (models/hf_models.py: torch_threads)


def native_bf16() -> bool:
    """Whether this CPU multiplies bf16 matrices in hardware (AMX or AVX512-BF16), where bf16
    autocast halved a forward and backward pass of SmolLM2 (an Intel CPU with AMX). Elsewhere torch
    emulates bf16, and it is no option: on an AMD EPYC with AVX2 alone (2026-11-30) a 2048x2048
    bf16 product took 61 s against 0.2 s in fp32, and a forward and backward pass of SmolLM2 over
    1,800 tokens 504 s against 40 s."""
    import torch

    cpu: Any = torch.cpu  # the probes are torch's private functions: absent ones answer no
    probes = ("_is_amx_tile_supported", "_is_avx512_bf16_supported")
    return any(bool(getattr(cpu, probe, lambda: False)()) for probe in probes)


def chosen_precision(requested: str) -> str:
    """`--precision`: bf16 or fp32 as asked; auto is bf16 where the CPU has it natively, else fp32."""
    if requested != "auto":
        return requested
    return "bf16" if native_bf16() else "fp32"


def seed_everything(seed: int) -> None:
    """torch, random and numpy (and the LoRA weights' initialisation, made before the Trainer
    seeds); the data order follows the Trainer's data_seed."""
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def use_threads(requested: int | None) -> int:
    """torch's intra-op threads from toolgym's rule (the CPUs this process may use), and as many
    inter-op threads (settable once per process, before torch's first parallel work)."""
    import torch

    from toolgym.models.hf_models import use_torch_threads

    threads = use_torch_threads(requested)
    # already set, or torch already ran parallel work: it keeps its count
    with contextlib.suppress(RuntimeError):
        torch.set_num_interop_threads(threads)
    return threads


def load_base(base: str, config: TrainConfig) -> tuple[Any, Any]:
    """The tokenizer and an fp32 copy of the model (its own: the cached one stays the base)."""
    from toolgym.models.hf_agent import HFModel
    from toolgym.models.hf_models import parse_hf_spec

    loaded = HFModel(parse_hf_spec(base))
    model = loaded.model.float()  # fp32 master weights; bf16 is autocast's, per operation
    _as_plain_weights(model)
    return loaded.tokenizer, model


def render_check(tokenizer: Any, messages: Sequence[Any]) -> str | None:
    """The marked training template, once it is shown to render exactly what the model is sent."""
    marked = training_template(tokenizer.chat_template)
    if marked is None:
        return None
    for convo in messages:
        same = tokenizer.apply_chat_template(convo, tokenize=False, chat_template=marked)
        if same != tokenizer.apply_chat_template(convo, tokenize=False):
            raise BaselineError("the training template's markers changed the rendered text")
    return marked


def fine_tune(
    base: str, train: Sequence[dict[str, Any]], out: Path | None, config: TrainConfig
) -> dict[str, Any]:
    """Step 4: SFTTrainer on CPU from the base model `hf:...`; the model saved to `out` (None: a
    measurement, nothing saved). Returns what was measured: method, losses, seconds per step."""
    from datasets import Dataset, disable_progress_bars  # type: ignore[import-untyped,unused-ignore]
    from transformers import PrinterCallback, set_seed
    from trl.trainer.sft_config import SFTConfig
    from trl.trainer.sft_trainer import SFTTrainer

    disable_progress_bars()  # four bars of dataset preparation per run: the step lines say enough
    precision = chosen_precision(config.precision)
    threads = use_threads(config.threads)
    tokenizer, model = load_base(base, config)
    threads = use_threads(config.threads)  # loading may have set its own count
    original = tokenizer.chat_template
    messages = [r["messages"] for r in train]
    marked = render_check(tokenizer, messages)
    tokenizer.chat_template = marked or original
    lengths = [
        len(tokenizer.apply_chat_template(m, tokenize=True, return_dict=True)["input_ids"]) for m in messages
    ]
    args = SFTConfig(
        output_dir=str((out.parent if out else Path("runs/finetune-bench")) / "trainer"),
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
        bf16=precision == "bf16",  # TRL's default is bf16: always said, never assumed
        seed=config.seed,
        data_seed=config.seed,
        dataloader_num_workers=0,
        disable_tqdm=True,  # the progress line below replaces the bar, also off a terminal
        activation_checkpointing=False,  # TRL's default trades ~20% more compute for memory 135M never lacks
    )
    set_seed(config.seed)
    seed_everything(config.seed)
    progress = Progress(config.steps)
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list([{"messages": m} for m in messages]),
        processing_class=tokenizer,
        peft_config=_lora() if config.lora else None,
        callbacks=[progress],
    )
    trainer.remove_callback(PrinterCallback)  # its dict per step says less than the progress line
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    with learnt_positions_only() as compact_head:
        trainer.train()
    minutes = (time.monotonic() - started) / 60
    if out is not None:
        tuned: Any = trainer.model  # a PreTrainedModel (a PeftModel under LoRA)
        trained = tuned.merge_and_unload() if config.lora else tuned
        tokenizer.chat_template = original  # the fine-tuned model is prompted as the base is
        trained.save_pretrained(out)
        tokenizer.save_pretrained(out)
    del trainer, model
    gc.collect()
    return {
        "method": "LoRA (peft), merged" if config.lora else "full fine-tune",
        "precision": "bf16 autocast" if precision == "bf16" else "fp32",
        "precision_asked": config.precision,  # auto: the document says what the CPU chose
        "threads": threads,
        "loss_on": "assistant tokens" if marked is not None else "every token",
        "head_on": "learnt positions" if compact_head else "every position",
        "records": len(messages),
        "record_tokens": {"mean": sum(lengths) / len(lengths), "max": max(lengths)},
        "truncated": sum(n > config.max_length for n in lengths),
        "examples_seen": config.steps * config.batch_size * config.grad_accum,
        "losses": progress.losses,
        "step_seconds": progress.seconds,
        "load": {"before": load_before, "during": progress.loads, "after": os.getloadavg()[0]},
        "minutes": minutes,
        "config": asdict(config),
    }


@contextlib.contextmanager
def learnt_positions_only() -> Iterator[bool]:
    """TRL's fused LM head (`add_fused_lm_head`, which SFTTrainer's loss uses) projects only the
    positions whose next token is learnt where Triton runs it; elsewhere it projects every position
    (on the CPU in fp32), which keeps tile shapes fixed for compilers that CPU training does not
    use. The head is a 49152 x 576 matrix, about a fifth of SmolLM2's multiply-adds per token, and
    the learnt positions (the assistant's replies) are a small share of a record whose system
    prompt lists tool schemas, so within this block it projects the learnt positions alone: the
    same loss and gradients (tests/scripts/test_finetune.py), less work. Yields False, changing
    nothing, for a TRL without that switch."""
    fused: Any = importlib.import_module("trl.trainer.utils")  # a private switch: typed as Any
    original = getattr(fused, "_use_triton", None)
    if original is None:
        yield False
        return
    fused._use_triton = lambda device: True  # only `compact` reads it there; the kernels keep their own test
    try:
        yield True
    finally:
        fused._use_triton = original


def _progress_base() -> type:
    from transformers import TrainerCallback

    return TrainerCallback


class Progress(_progress_base()):  # type: ignore[misc]
    """One line per optimizer step, printed (and flushed) as it happens: step i/n, loss, seconds
    per step, ETA; the losses, step times and load averages are kept for the document."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.losses: list[float] = []
        self.seconds: list[float] = []
        self.loads: list[float] = []
        self._last = time.monotonic()

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._last = time.monotonic()

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        if not logs or "loss" not in logs:
            return
        now = time.monotonic()
        took, self._last = now - self._last, now
        self.losses.append(float(logs["loss"]))
        self.seconds.append(took)
        self.loads.append(os.getloadavg()[0])
        mean = sum(self.seconds) / len(self.seconds)
        eta = mean * (self.steps - state.global_step)
        print(
            f"step {state.global_step}/{self.steps}  loss {logs['loss']:.4f}  {took:.2f} s/step  "
            f"ETA {int(eta // 60)}m{int(eta % 60):02d}s  load {self.loads[-1]:.1f}",
            flush=True,
        )


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
    try:
        from peft import LoraConfig  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise BaselineError(
            "--lora needs peft (pip install -c constraints.txt -e '.[ml]'), or give --full"
        ) from None
    return LoraConfig(
        r=16, lora_alpha=32, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM"
    )


def bench(base: str, train: Sequence[dict[str, Any]], steps: int, config: TrainConfig) -> dict[str, Any]:
    """`steps` optimizer steps of each method (LoRA, full) in each precision (fp32, bf16), nothing
    saved: seconds per step, and the bf16 losses against fp32's on the first COMPARED_STEPS."""
    runs: dict[str, Any] = {}
    precisions = ("fp32", "bf16") if native_bf16() else ("fp32",)
    if len(precisions) == 1:
        print("-- bench: bf16 not measured: this CPU has no native bf16 (torch emulates it, far slower)")
    for lora in (True, False):
        for precision in precisions:
            name = f"{'lora' if lora else 'full'} {precision}"
            print(f"-- bench: {name}, {steps} steps", flush=True)
            settings = {**asdict(config), "steps": steps, "lora": lora, "precision": precision}
            runs[name] = fine_tune(base, train, None, TrainConfig(**settings))
    return {"steps": steps, "runs": runs}


def precision_checks(runs: dict[str, Any]) -> dict[str, dict[str, float | bool]]:
    """Per method, bf16's loss against fp32's: step 1's relative gap and the worst of the first
    COMPARED_STEPS, each against its tolerance (none where bf16 was not measured)."""
    checks: dict[str, dict[str, float | bool]] = {}
    for method in ("lora", "full"):
        if f"{method} bf16" not in runs:  # a CPU without native bf16: not measured
            continue
        fp32, bf16 = runs[f"{method} fp32"]["losses"], runs[f"{method} bf16"]["losses"]
        gaps = [abs(b - f) / f for f, b in zip(fp32[:COMPARED_STEPS], bf16[:COMPARED_STEPS], strict=True)]
        checks[method] = {
            "first": gaps[0],
            "worst": max(gaps),
            "within": gaps[0] <= BF16_FIRST_STEP_TOLERANCE and max(gaps) <= BF16_TOLERANCE,
        }
    return checks


def median(values: Sequence[float]) -> float:
    """The upper median (a measured step, not a mean of two); 0 with none."""
    return statistics.median_high(values) if values else 0.0


INTRO = """\
The loop closed on a real model: SmolLM2-135M-Instruct (the base, `{base}`) is fine-tuned on the
golden traces of tasks that `toolgym generate` made, and evaluated, before and after, on tasks it
was not trained on: the seven bundled sets and the generator's held-out templates. A 135M model and
CPU training: the numbers say whether the loop works and which way it moves the model, not how
good a tool agent can get. Every metric is a percentage; `-` means the row did not run for that
model."""

WHY_A_SCRIPT = """\
The script prints one line per optimizer step as it happens (step i/n, loss, seconds per step, ETA,
load), to a terminal or a log alike. It stays a script (scripts/, beside baselines.py, whose
evaluation it shares) rather than a `toolgym` command in the `training/` room that ARCHITECTURE.md
plans: every step but the training loop already is a toolgym command (generate, record, export,
run, eval), and the loop is TRL's SFTTrainer with settings measured for one 135M model on one
2-core machine; a command earns its room when its options are an interface users build on (more
model families, an accelerator path)."""

RESUME = (
    "A run that stops part way goes on with the same command and `--resume`: a finished training "
    "is kept (the same base, config and records; one stopped mid-way starts again), each evaluation "
    "run resumes its episodes, and the evaluation minutes add up the runs of the command."
)

NOT_NATIVE = (
    "this CPU has no native bf16 (AMX or AVX512-BF16), so bf16 was not run: torch emulates it, far slower"
)

NO_TRAINING_RUN = (
    "No training run has finished in this work folder: the figures below are `--bench-steps`'s. "
    "`--steps 300 --eval-per-set 0` trains (and `--eval-per-set N` evaluates) and rewrites this file."
)


def _load_line(train: dict[str, Any]) -> str:
    during = train["load"]["during"]
    mean = sum(during) / len(during) if during else 0.0
    return (
        f"load average (1 min) {train['load']['before']:.1f} before, {mean:.1f} mean over the steps "
        f"(min {min(during, default=0):.1f}, max {max(during, default=0):.1f}), {train['load']['after']:.1f} after"
    )


def data_lines(meta: dict[str, Any]) -> list[str]:
    split, train, data = meta["split"], meta["train"] or meta["data_records"], meta["data"]
    trained = ", ".join(f"{name} {len(ids)}" for name, ids in split["train_tasks"].items())
    dropped = "; ".join(f"{k} ({v})" for k, v in split["dropped"].items()) or "none"
    lines = [
        f"- generated: `toolgym generate --apps {data['apps']} --n {data['generate_n']} --seed {data['seed']} "
        f"--holdout {data['holdout']}`; {len(split['held_out_templates'])} templates held out (their tasks "
        "evaluated, never trained on)",
        f"- bundled training splits: {', '.join(data['train_sets']) or 'none'}"
        + "".join(
            f"; {name}: {len(ids)} held out (sha256(id) % {FOLDS} == 0)"
            for name, ids in split["held_out"].items()
        ),
        f"- trained tasks: {trained}; dropped for repeating an evaluated bundled task: {dropped}",
        f"- training data: `toolgym record` (the oracle, ReAct) and `toolgym export --format hf`, "
        f"{train['records']} records of {train['record_tokens']['mean']:.0f} tokens on average (longest "
        f"{train['record_tokens']['max']}, {train['truncated']} cut at max_length {train['config']['max_length']})",
    ]
    return lines


def _precision_why(train: dict[str, Any]) -> str:
    """Why the run's precision, where `--precision auto` chose it (a run before auto says nothing)."""
    if train.get("precision_asked") != "auto":
        return ""
    return " (auto: the CPU has native bf16)" if train["precision"] != "fp32" else f" (auto: {NOT_NATIVE})"


def training_lines(train: dict[str, Any]) -> list[str]:
    config, seconds = train["config"], train["step_seconds"]
    losses = train["losses"]
    shown = losses if len(losses) <= 12 else [*losses[:6], *losses[-6:]]
    gap = "" if len(losses) <= 12 else " (first and last six)"
    return [
        f"- {train['method']}, {train['precision']}{_precision_why(train)}, loss on {train['loss_on']}"
        + (f" (LM head projected on {train['head_on']})" if "head_on" in train else "")
        + f", TRL SFTTrainer on CPU with {train['threads']} torch thread(s), seed {config['seed']}",
        f"- {config['steps']} optimizer steps x batch {config['batch_size']} x accumulation "
        f"{config['grad_accum']} = {train['examples_seen']} examples, learning rate {config['learning_rate']} "
        "(constant)",
        f"- time: {train['minutes']:.1f} min in all, {median(seconds):.2f} s per step (median; mean "
        f"{sum(seconds) / max(len(seconds), 1):.2f}, slowest {max(seconds, default=0):.2f}); {_load_line(train)}",
        f"- training loss per step{gap}: {', '.join(f'{v:.3f}' for v in shown)}",
    ]


def bench_lines(bench: dict[str, Any]) -> list[str]:
    rows = [
        f"| {name} | {median(r['step_seconds']):.2f} | {sum(r['step_seconds']) / len(r['step_seconds']):.2f} | "
        f"{r['threads']} | {_load_line(r)} | {', '.join(f'{v:.3f}' for v in r['losses'][:COMPARED_STEPS])} |"
        for name, r in bench["runs"].items()
    ]
    measured = "; ".join(
        f"{method}: step 1 {100 * float(c['first']):.2f}%, worst of {COMPARED_STEPS} "
        f"{100 * float(c['worst']):.2f}% ({'within' if c['within'] else 'OUTSIDE'})"
        for method, c in precision_checks(bench["runs"]).items()
    )
    return [
        f"{bench['steps']} optimizer steps of each, the same data, seed and batches, nothing saved "
        f"(`--bench-steps {bench['steps']}`), run on their own; the load column says how busy the machine was:",
        "",
        "| method, precision | s/step (median) | s/step (mean) | threads | load | loss, first steps |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        f"bf16 autocast against fp32, relative: the first step's loss (the same weights and batch, so "
        f"rounding alone) at most {100 * BF16_FIRST_STEP_TOLERANCE:.0f}% apart, since bf16 rounds each "
        "value by 0.4% and autocast keeps the softmax and the loss in fp32, so the mean over hundreds "
        f"of tokens moves well under 1%; the first {COMPARED_STEPS} steps at most "
        f"{100 * BF16_TOLERANCE:.0f}% apart, since after step 1 the weights also differ by an update "
        f"computed from bf16 activations, which rounding does not bound. Measured: "
        + (f"{measured}." if measured else f"nothing: {NOT_NATIVE}."),
    ]


def render(meta: dict[str, Any], results: Results, bench: dict[str, Any] | None) -> str:
    lines = ["# Fine-tuning a real model on generated tasks", "", INTRO.format(base=meta["base"]), ""]
    command = shown_command(meta["command"], COMMAND)
    lines += [
        "Reproduce (not in CI; the runs go to `--work`):",
        "",
        "```bash",
        command,
        "```",
        "",
        RESUME,
        "",
    ]
    lines += [WHY_A_SCRIPT, ""]
    lines += [f"Measured on {meta['machine']}. Versions: {meta['versions']}.", "", "## Data", ""]
    lines += [*data_lines(meta), "", "## Training", ""]
    lines += training_lines(meta["train"]) if meta["train"] else [NO_TRAINING_RUN]
    lines += [""]
    if bench:
        lines += ["## Step time and precision", "", *bench_lines(bench), ""]
    if not meta["train"]:
        return "\n".join(lines) + "\n"
    lines += ["## Before and after, on held-out tasks", ""]
    if not results or not any(results.values()):
        lines += [
            "Not run with this training run (`--eval-per-set 0`). `--eval-per-set N` runs it: N tasks of "
            "each bundled set and of the held-out generated templates, both models.",
        ]
        return "\n".join(lines) + "\n"
    evaluated = "; ".join(f"{name}: {', '.join(ids)}" for name, ids in meta["evaluated"].items())
    lines += [
        f"Evaluated: {evaluated}.",
        "",
        f"Both models run the same commands (scripts/baselines.py's): `toolgym run` end to end and "
        f"`--mode step` (teacher-forced on the golden chain, where the suite scores it), ReAct, temperature "
        f"0, at most {meta['max_steps']} steps (a task that sets its own limit keeps it: the generated "
        f"ones allow their golden chain's length + 4) and {meta['max_tokens']} new tokens per turn, then "
        "`toolgym eval` in fixed and compat mode.",
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
        f"Evaluation: {path_times(meta['eval_minutes'], meta.get('eval_load', {}), meta.get('eval_runs', {}))}.",
        "",
        *usage_table(results),
    ]
    return "\n".join(lines) + "\n"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m scripts.finetune", description=__doc__.split("\n")[0])
    data = DataConfig()
    p.add_argument("--apps", default=data.apps, help="apps or groups the tasks are generated for")
    p.add_argument("--generate", type=int, default=data.generate_n, help="generated tasks (0: none)")
    p.add_argument("--generate-seed", type=int, default=data.seed, help="toolgym generate's --seed")
    p.add_argument("--holdout", type=float, default=data.holdout, help="fraction of templates held out")
    p.add_argument("--train-sets", default="", help="bundled sets whose training split is also trained on")
    p.add_argument("--base", default="hf:smollm2", help="the base model, hf:PATH[#FILE.gguf]")
    p.add_argument("--steps", type=int, default=300, help="optimizer steps (default 300)")
    p.add_argument("--learning-rate", type=float, default=1e-4)
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--grad-accum", type=int, default=1, help="examples per optimizer step (x batch size)")
    p.add_argument("--max-length", type=int, default=2048, help="tokens per training record")
    p.add_argument("--seed", type=int, default=0, help="training seed: torch, random, numpy, data order")
    method = p.add_mutually_exclusive_group()
    method.add_argument("--lora", dest="lora", action="store_true", default=True, help="LoRA (default)")
    method.add_argument("--full", dest="lora", action="store_false", help="a full fine-tune")
    p.add_argument(
        "--precision",
        choices=("auto", "bf16", "fp32"),
        default="auto",
        help="bf16 autocast, fp32, or auto (default): bf16 where the CPU has it natively (AMX, "
        "AVX512-BF16: measured ~2x faster), else fp32 (torch emulates bf16 there, far slower)",
    )
    p.add_argument("--threads", type=int, help="torch threads (default: toolgym's rule, the CPUs it may use)")
    p.add_argument(
        "--bench-steps",
        type=int,
        default=0,
        help="only measure: N steps of LoRA/full x fp32/bf16 (bf16 where native)",
    )
    p.add_argument("--eval-per-set", type=int, default=10, help="held-out tasks evaluated per set (0: none)")
    p.add_argument("--eval-sets", help="bundled sets evaluated (default: all seven, `toolgym tasks`)")
    p.add_argument("--max-steps", type=int, default=4, help="episode step limit in evaluation")
    p.add_argument("--max-tokens", type=int, default=96, help="new tokens per turn in evaluation")
    p.add_argument(
        "--eval-workers",
        type=int,
        default=1,
        help="evaluation episodes on N processes (toolgym run --workers)",
    )
    p.add_argument(
        "--work", type=Path, default=Path("runs/finetune"), help="generated tasks, traces, data, model, runs"
    )
    p.add_argument("--doc", type=Path, default=DOC, help="the document written (default docs/finetune.md)")
    p.add_argument("--render-only", action="store_true", help="rewrite the document from --work")
    p.add_argument(
        "--resume",
        action="store_true",
        help="go on with a run stopped in --work: its finished training is kept (the same base, config "
        "and records; a stopped one starts again) and each evaluation run resumes its episodes",
    )
    return p


def model_paths(base: str, model_dir: Path) -> list[ModelPath]:
    return [
        ModelPath(f"base ({base})", "base", ("--agent", base)),
        ModelPath("fine-tuned", "fine-tuned", ("--agent", f"hf:{model_dir}")),
    ]


def data_fingerprint(train: Sequence[dict[str, Any]]) -> str:
    """The training records' hash: what a finished training run is matched on, with its config."""
    return canonical_hash(list(train))


def finished_training(
    work: Path, model_dir: Path, base: str, config: TrainConfig, data: str
) -> dict[str, Any] | None:
    """The record of a training run this command finished in `work` (its model saved) from the same
    base, config and records; None when there is none, or it differs in any of them."""
    file = work / TRAIN_RECORD
    if not file.is_file() or not (model_dir / "config.json").is_file():
        return None
    record: dict[str, Any] = json.loads(file.read_text(encoding="utf-8"))
    same_config = record.get("config") == json.loads(json.dumps(asdict(config)))
    return record if same_config and record.get("base") == base and record.get("data") == data else None


def trained(args: argparse.Namespace, split: Split, model_dir: Path, config: TrainConfig) -> dict[str, Any]:
    """Step 4, or with `--resume` its finished run in `--work` (same base, config and records),
    whose record train.json keeps."""
    work: Path = args.work
    data = data_fingerprint(split.train)
    found = finished_training(work, model_dir, args.base, config, data) if args.resume else None
    if found is not None:
        print(
            f"training: kept, {work / TRAIN_RECORD} (--resume: the same base, config and records)", flush=True
        )
        return found
    (work / TRAIN_RECORD).unlink(missing_ok=True)  # the model is about to change under it
    train = {**fine_tune(args.base, split.train, model_dir, config), "base": args.base, "data": data}
    (work / TRAIN_RECORD).write_text(json.dumps(train, indent=2) + "\n", encoding="utf-8")
    return train


def train_and_evaluate(args: argparse.Namespace, argv: Sequence[str]) -> None:
    """Steps 1-5 into `--work`: finetune.json says what was done and measured."""
    work: Path = args.work
    model_dir = (work / "model").resolve()
    log: list[str] = []
    data = DataConfig.from_args(args)
    split = prepare(data, work, log)
    config = TrainConfig(
        args.steps,
        args.learning_rate,
        args.batch_size,
        args.grad_accum,
        args.max_length,
        args.seed,
        args.lora,
        args.precision,
        args.threads,
    )
    if args.bench_steps:
        measured = bench(args.base, split.train, args.bench_steps, config)
        (work / "bench.json").write_text(json.dumps(measured, indent=2) + "\n", encoding="utf-8")
        return
    train = trained(args, split, model_dir, config)
    sets = args.eval_sets.split(",") if args.eval_sets else list(benchmark_task_sets())
    chosen = evaluation_samples(work, split.shown(), sets, args.eval_per_set) if args.eval_per_set else []
    settings = Settings(
        work / "eval",
        args.max_steps,
        args.max_tokens,
        teval_subsets=False,
        workers=args.eval_workers,
        fresh=not args.resume,
    )
    clock = EvalClock(work / EVAL_TIMES, resumed=args.resume)
    for path in model_paths(args.base, model_dir) if chosen else []:
        with clock.timing(path.label):  # a run stopped part way keeps its minutes so far
            run_path(settings, path, chosen, log)
    meta = {
        "command": shlex.join([*COMMAND, *(a for a in argv if a not in NOT_SHOWN)]),
        "base": args.base,
        "data": asdict(data),
        "split": split.shown(),
        "evaluated": {s.name: list(s.task_ids) for s in chosen},
        "sources": {s.name: s.source for s in chosen},
        "train": train,
        "max_steps": args.max_steps,
        "max_tokens": args.max_tokens,
        "eval_minutes": clock.minutes(),
        "eval_load": clock.loads(),
        "eval_runs": clock.runs(),
        "machine": machine(),
        "versions": versions(),
    }
    (work / "finetune.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    (work / "commands.txt").write_text("\n".join(log) + "\n", encoding="utf-8")


def bench_meta(args: argparse.Namespace, work: Path, bench: dict[str, Any]) -> dict[str, Any]:
    """What the document says when only `--bench-steps` ran in `work`: its data (the split and the
    records of the benchmark's default run) and no training run."""
    data = DataConfig.from_args(args)
    return {
        "command": shlex.join([*COMMAND, "--bench-steps", str(bench["steps"])]),
        "base": args.base,
        "data": asdict(data),
        "split": json.loads((work / "split.json").read_text(encoding="utf-8")),
        "train": None,
        "data_records": next(iter(bench["runs"].values())),
        "machine": machine(),
        "versions": versions(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(argv if argv is not None else sys.argv[1:])
    args = parser().parse_args(argv)
    work: Path = args.work
    if not args.render_only:
        train_and_evaluate(args, argv)
    meta_file, bench_file = work / "finetune.json", work / "bench.json"
    bench_found = json.loads(bench_file.read_text(encoding="utf-8")) if bench_file.is_file() else None
    if not meta_file.is_file():
        if bench_found is None or not (work / "split.json").is_file():
            print(f"nothing to render in {work}/")
            return 0
        args.doc.write_text(render(bench_meta(args, work, bench_found), {}, bench_found), encoding="utf-8")
        print(f"{args.doc} written from {bench_file} (no training run finished in {work}/)")
        return 0
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    sources = meta.get("sources", {})  # a task file's path, else "" (a bundled set)
    chosen = [
        task_file_sample(name, Path(sources[name]), ids) if sources.get(name) else held_out_sample(name, ids)
        for name, ids in meta["evaluated"].items()
    ]
    settings = Settings(work / "eval", meta["max_steps"], meta["max_tokens"], teval_subsets=False)
    model_dir = (work / "model").resolve()
    results = (
        {p.label: collect(settings, p, chosen) for p in model_paths(meta["base"], model_dir)}
        if chosen
        else {}
    )
    args.doc.write_text(render(meta, results, bench_found), encoding="utf-8")
    print(f"{args.doc} written; model in {model_dir}, runs in {work}/")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BaselineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
