"""An LLM-played user on any OpenAI-compatible server, through the existing `ChatClient`.

    client = ChatClient(LLMConfig(base_url="http://127.0.0.1:8000/v1", model="M", timeout_s=30))
    env = ToolEnv(tools, tasks, user=llm_user(client))                        # live
    env = ToolEnv(tools, tasks, user=llm_user(client, cassette=Cassette(p, "record")))
    env = ToolEnv(tools, tasks, user=llm_user(client, cassette=Cassette(p, "replay")))  # no LLM

The simulator itself (`LLMUser`: prompt, stop signal, history) lives in `toolgym.envs.users`, below
this floor; this module adapts the client to its `UserLLM` and turns every client failure
(timeouts, refused requests, bodies that are not chat completions, content that is not text) into
`InfraError`, which the env reports as an `infra_error` observation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from toolgym.envs.users import LLMUser, UserLLM
from toolgym.errors import InfraError
from toolgym.models.llm import ChatClient, LLMConfig, LLMError, api_key_from_env
from toolgym.recorder.cassette import Cassette


class ChatUserLLM:
    """`UserLLM` over a `ChatClient` (retries, timeouts and token accounting are the client's).
    The LLM tool simulator's `ChatModel` has the same shape (`toolgym.models.simulators`);
    `label` names the role in error messages."""

    def __init__(self, client: ChatClient, *, label: str = "user LLM") -> None:
        self.client = client
        self.model = client.config.model
        self.label = label

    def chat(self, messages: Sequence[Mapping[str, str]], *, seed: int | None) -> str:
        try:
            result = self.client.complete(messages, seed=seed)
        except LLMError as exc:
            raise InfraError(f"{self.label}: {exc.message}", data={"status": exc.status}) from None
        content = result.message.content
        if not isinstance(content, str):
            raise InfraError(
                f"{self.label}: the reply has no text content (got {type(content).__name__})",
                data={"message": result.message.model_dump(mode="json", exclude_unset=True, warnings=False)},
            )
        return content

    def close(self) -> None:
        """Close the client (for one opened with `open_user_llm`; a shared one stays its owner's)."""
        self.client.close()


def open_user_llm(base_url: str, model: str, api_key_env: str | None) -> ChatUserLLM:
    """A user LLM on its own client, for `toolgym record` (the caller closes it with `close()`).
    Raises ValueError when `api_key_env` names a variable that is not set."""
    try:
        key = api_key_from_env(api_key_env)
    except LLMError as exc:
        raise ValueError(exc.message) from None
    return ChatUserLLM(ChatClient(LLMConfig(base_url=base_url, model=model, api_key=key)))


def llm_user(client: ChatClient, *, cassette: Cassette | None = None) -> LLMUser:
    """An `LLMUser` on `client`; with a cassette, its calls are recorded or replayed."""
    llm: UserLLM = ChatUserLLM(client)
    if cassette is not None:
        llm = cassette.wrap_user_llm(llm)
    return LLMUser(llm)


class LLMUsers:
    """The LLM user's builder for rollout workers (`UserSpec("toolgym.models.users:LLMUsers",
    {"config": ...})`): one ChatClient per worker, shared by the simulators of its envs (each env
    gets its own `LLMUser`, which holds one conversation at a time)."""

    def __init__(self, config: LLMConfig) -> None:
        self.client = ChatClient(config)

    def __call__(self) -> LLMUser:
        return llm_user(self.client)

    def cancel(self) -> None:
        """The run stopped: no request is sent from now on, those in flight are abandoned."""
        self.client.cancel()

    def close(self) -> None:
        self.client.close()
