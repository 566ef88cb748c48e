"""The LLM tool simulator on any OpenAI-compatible server, through the existing `ChatClient`.

    client = ChatClient(LLMConfig(base_url="http://127.0.0.1:8000/v1", model="M", timeout_s=30))
    env = ToolEnv(tools, tasks, world_factory=simulated_worlds(llm_simulator(client)))      # live
    env = ToolEnv(..., world_factory=simulated_worlds(llm_simulator(client, cassette=c)))    # cached

The simulator itself (`LLMSimulator`: prompt, answer checks, bounded retries) lives in
`toolgym.mocks.simulated`, below this floor; this module adapts the client to its `ChatModel`
(every client failure becomes an `InfraError`, which the env reports as an `infra_error`
observation). With a cassette, each request goes through it: a hit costs nothing, strict replay
never calls the model (a miss is an `InfraError`). A cassette on the env (`ToolEnv(cassette=...)`)
records the simulated tools' answers themselves, so a recorded run replays with no LLM at all.
"""

from __future__ import annotations

from toolgym.envs.tool_env import WorldFactory
from toolgym.mocks.apps import get_app
from toolgym.mocks.simulated.app import with_simulator
from toolgym.mocks.simulated.simulator import ChatModel, LLMSimulator, Simulator
from toolgym.mocks.world import MockWorld
from toolgym.models.llm import ChatClient, LLMConfig
from toolgym.models.users import ChatUserLLM
from toolgym.recorder.cassette import Cassette
from toolgym.tasks import Task
from toolgym.world import World


def chat_model(client: ChatClient) -> ChatModel:
    """The simulator's `ChatModel` over a `ChatClient`."""
    return ChatUserLLM(client, label="tool simulator LLM")


def llm_simulator(client: ChatClient, *, cassette: Cassette | None = None, attempts: int = 3) -> LLMSimulator:
    """An `LLMSimulator` on `client`; with a cassette, its requests are recorded or replayed."""
    model = chat_model(client)
    if cassette is not None:
        model = cassette.wrap_user_llm(model)
    return LLMSimulator(model, attempts=attempts)


def simulated_worlds(simulator: Simulator) -> WorldFactory:
    """A world factory whose simulated libraries answer through `simulator`."""

    def factory(task: Task) -> World | None:
        if not task.apps:
            return None
        apps = with_simulator([get_app(name) for name in task.apps], simulator)
        return MockWorld(apps, seed=task.seed, clock=task.clock)

    return factory


class LLMSimulatedWorlds:
    """The world builder of rollout workers for `toolgym run --simulator-base-url ...`
    (`WorldSpec("toolgym.models.simulators:LLMSimulatedWorlds", {"config": ...})`): one
    ChatClient and one simulator per worker, shared by the worlds of its envs."""

    def __init__(self, config: LLMConfig, attempts: int = 3) -> None:
        self.client = ChatClient(config)
        self.simulator = llm_simulator(self.client, attempts=attempts)

    def __call__(self) -> WorldFactory:
        return simulated_worlds(self.simulator)

    def cancel(self) -> None:
        """The run stopped: no request is sent from now on, those in flight are abandoned."""
        self.client.cancel()

    def close(self) -> None:
        self.client.close()
