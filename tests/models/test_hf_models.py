"""Local models by name: a GGUF file is read from the model folder it is converted into once, and
that folder holds the file's own weights (gguf's dequantization, compared value for value)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.models.real_model import needs_model
from toolgym.cache import CACHE_ENV
from toolgym.models.hf_models import MARKER, model_files, parse_hf_spec

# (GGUF tensor, the folder's tensor): ones transformers only dequantizes (it reorders attn_q and
# attn_k for Llama's rotary layout), of the first and the last layer and the embeddings
SAME_TENSORS = [
    ("token_embd.weight", "model.embed_tokens.weight"),
    ("blk.0.attn_norm.weight", "model.layers.0.input_layernorm.weight"),
    ("blk.0.attn_v.weight", "model.layers.0.self_attn.v_proj.weight"),
    ("blk.0.attn_output.weight", "model.layers.0.self_attn.o_proj.weight"),
    ("blk.0.ffn_down.weight", "model.layers.0.mlp.down_proj.weight"),
    ("blk.29.ffn_gate.weight", "model.layers.29.mlp.gate_proj.weight"),
    ("blk.29.ffn_up.weight", "model.layers.29.mlp.up_proj.weight"),
    ("output_norm.weight", "model.norm.weight"),
]


@needs_model
def test_a_gguf_model_is_read_from_its_converted_folder_which_holds_the_files_weights(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import gguf
    import numpy as np
    from safetensors import safe_open

    config = parse_hf_spec("hf:smollm2")
    assert config.gguf_file is not None
    folder, options = model_files(config)  # converted now unless this session's cache holds it
    assert options == {} and (Path(folder) / MARKER).is_file()
    assert model_files(config) == (folder, {})  # found again, not converted again

    tensors = {t.name: t for t in gguf.GGUFReader(Path(config.folder) / config.gguf_file).tensors}
    with safe_open(str(Path(folder) / "model.safetensors"), "np") as saved:
        for file_name, folder_name in SAME_TENSORS:
            tensor = tensors[file_name]
            expected = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
            got = saved.get_tensor(folder_name)
            assert got.dtype == np.float32 and np.array_equal(got, expected.reshape(got.shape)), folder_name

    monkeypatch.setenv(CACHE_ENV, "0")  # caches off: the file itself
    assert model_files(config) == (config.folder, {"gguf_file": config.gguf_file})


def test_a_model_folder_is_read_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    config = parse_hf_spec(f"hf:{tmp_path}")
    assert model_files(config) == (str(tmp_path.resolve()), {})


# ---- torch's thread count ---------------------------------------------------------------------------
def threads_in_child(cpus: set[int], env: dict[str, str]) -> int:
    """torch_threads() in a fresh process pinned to `cpus`, with `env` as its environment's
    OMP_NUM_THREADS setting (none when missing)."""
    import os
    import subprocess
    import sys

    code = (
        f"import os; os.sched_setaffinity(0, {sorted(cpus)!r}); "
        "from toolgym.models.hf_models import torch_threads; print(torch_threads())"
    )
    child_env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"} | env
    done = subprocess.run([sys.executable, "-c", code], env=child_env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


def test_the_default_thread_count_is_half_the_cpus_this_process_may_use_at_most_four() -> None:
    import os

    from toolgym.models.hf_models import MAX_DEFAULT_THREADS

    mine = os.sched_getaffinity(0)
    assert threads_in_child({min(mine)}, {}) == 1  # one CPU: one thread, never zero
    assert threads_in_child(mine, {}) == max(1, min(MAX_DEFAULT_THREADS, len(mine) // 2))
    assert threads_in_child({min(mine)}, {"OMP_NUM_THREADS": "3"}) == 3  # the user's own say


def test_a_requested_thread_count_wins_and_must_be_positive(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolgym.models.hf_models import torch_threads

    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert torch_threads(5) == 5 and torch_threads() == 2
    monkeypatch.setenv("OMP_NUM_THREADS", "not a number")
    assert 1 <= torch_threads() <= 4
    with pytest.raises(ValueError, match="at least 1"):
        torch_threads(0)
