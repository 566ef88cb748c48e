"""Agent builders for rollout workers (`AgentSpec` names them): a worker process or Ray actor calls
one once and gets the factory that makes each episode's agent."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from toolgym.envs.tool_env import ToolEnv
from toolgym.models.hf_agent import HFChatClient, hf_agent
from toolgym.models.hf_models import HFConfig
from toolgym.models.llm import ChatClient, LLMAgent, LLMConfig


class LLMAgents:
    """LLM agents on an OpenAI-compatible server: one ChatClient per worker, shared by its episodes;
    trial t samples with `llm_seed + t`, as in one process."""

    def __init__(
        self,
        config: LLMConfig,
        llm_seed: int | None = None,
        few_shot: Sequence[Sequence[Mapping[str, str]]] | None = None,
        tools_in_prompt: bool = False,
    ) -> None:
        self.client = ChatClient(config)
        self.llm_seed = llm_seed
        self.few_shot = few_shot
        self.tools_in_prompt = tools_in_prompt

    def __call__(self, env: ToolEnv, trial: int) -> LLMAgent:
        seed = None if self.llm_seed is None else self.llm_seed + trial
        return LLMAgent(
            self.client, env, seed=seed, few_shot=self.few_shot, tools_in_prompt=self.tools_in_prompt
        )

    def cancel(self) -> None:
        """The run stopped: no request is sent from now on, those in flight are abandoned."""
        self.client.cancel()

    def close(self) -> None:
        self.client.close()


class HFAgents:
    """Agents on a model in this process (`--agent hf:...`): each worker loads the model itself,
    once, from the config's paths (a model is never pickled); trial t samples with `llm_seed + t`."""

    def __init__(
        self,
        config: HFConfig,
        llm_seed: int | None = None,
        few_shot: Sequence[Sequence[Mapping[str, str]]] | None = None,
    ) -> None:
        self.client = HFChatClient(config)
        self.llm_seed = llm_seed
        self.few_shot = few_shot

    def __call__(self, env: ToolEnv, trial: int) -> LLMAgent:
        seed = None if self.llm_seed is None else self.llm_seed + trial
        return hf_agent(self.client, env, seed=seed, few_shot=self.few_shot)

    def cancel(self) -> None:
        """The run stopped: no turn starts from now on, the one generating stops at its next token."""
        self.client.cancel()
