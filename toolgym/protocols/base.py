"""The contract every action protocol implements: parse raw model output into actions, and
render the prompt (format instructions + tool docs), actions and observations in its format."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol

from toolgym.actions import Action, ActionRecord, Observation
from toolgym.errors import FormatError
from toolgym.tools import ToolSet


class ModelDumpable(Protocol):
    """A pydantic model, such as the openai SDK's ChatCompletion, ChatCompletionMessage,
    Response and its output items (read by duck typing: the core does not import the SDK)."""

    def model_dump(self, *, mode: str = ..., exclude_none: bool = ...) -> dict[str, Any]: ...


# Raw model output: text, an OpenAI-style assistant message, Responses output items, or the
# openai SDK's objects for them (`plain_output` turns those into the plain forms).
RawOutput = str | Mapping[str, Any] | Sequence[Mapping[str, Any] | ModelDumpable] | ModelDumpable

MAX_OUTPUT_CHARS = 200_000  # longer model output is a format_error, not a parse attempt


def _dumped(value: Any) -> Any:
    """A pydantic model (the openai SDK's types are) as JSON data, found by duck typing so the
    core never imports the SDK; a list or tuple (output items) as a list with each item dumped;
    anything else unchanged. One level only: what is inside an item, a list or a mapping stays as
    it is for the protocol to check, so a container nested past the recursion limit is a
    format_error there, never a RecursionError here."""
    if isinstance(value, (list, tuple)):
        return [_dumped_item(item) for item in value]
    return _dumped_item(value)


def _dumped_item(value: Any) -> Any:
    """`value` as JSON data when it is a pydantic model; anything else unchanged."""
    if isinstance(value, (str, bytes, Mapping, list, tuple)):
        return value
    try:
        dump = getattr(value, "model_dump", None)
        if not callable(dump):
            return value
        # unset and null fields (audio, refusal, function_call, ...) say nothing to a parser
        return dump(mode="json", exclude_none=True)
    except Exception as exc:  # a hostile __getattr__ or a failing dump: the output cannot be read
        raise FormatError(f"cannot read {type(value).__name__} as JSON data: {exc}") from None


def plain_output(output: Any) -> Any:
    """Model output as one of the `RawOutput` shapes, so protocols see plain data only.

    The openai SDK's objects become their JSON data (`model_dump`). A chat completion (or one of
    its choices) becomes its assistant message; a Responses `Response` becomes its `output`
    items; one output item becomes a list of one. Text, messages and item lists pass unchanged;
    a completion with several choices is a FormatError (which one to step is the caller's call)."""
    if type(output) is str:  # raw text, the usual output: no ABC checks
        return output
    value = _dumped(output)
    if not isinstance(value, Mapping):
        return value
    if value.get("object") == "chat.completion" or ("choices" in value and "role" not in value):
        choices = value.get("choices")
        if not isinstance(choices, list) or len(choices) != 1:
            count = len(choices) if isinstance(choices, list) else 0
            raise FormatError(
                f"a chat completion with {count} choices; step one choice's message "
                "(completion.choices[i].message)"
            )
        value = choices[0]
        if not isinstance(value, Mapping):
            raise FormatError("the chat completion's choice is not an object")
    if "message" in value and "finish_reason" in value:  # one choice of a completion
        message = value["message"]
        if not isinstance(message, Mapping):
            raise FormatError("the chat completion's choice has no message object")
        return message
    if value.get("object") == "response":
        items = value.get("output")
        if not isinstance(items, list):
            raise FormatError("the Responses response has no output list")
        return items
    item_type = value.get("type")
    if isinstance(item_type, str) and item_type in RESPONSE_ITEM_TYPES:  # a chat message has no "type"
        return [value]
    return value


# The Responses output items an agent's turn is made of (toolgym.protocols.responses reads them).
RESPONSE_ITEM_TYPES = frozenset({"function_call", "reasoning", "message"})


class ActionProtocol(ABC):
    name: ClassVar[str]
    # True: every ToolCall `parse` returns holds arguments that `check_arguments` made (plain JSON
    # data, str keys, finite numbers, within the depth limit), so `ToolEnv.step` does not walk
    # them a second time. A protocol that builds arguments any other way leaves it False.
    checks_arguments: ClassVar[bool] = False
    # True: the instructions ask for a thought with every reply (ReAct's `Thought:` line, the JSON
    # protocol's "thought" key), so the oracle's golden replies carry one (`envs.agents`)
    asks_for_thought: ClassVar[bool] = False

    @abstractmethod
    def parse(self, output: RawOutput) -> list[Action]:
        """One or more actions (parallel tool calls), or raise toolgym.errors.FormatError."""

    def parse_records(self, output: RawOutput) -> list[Action | ActionRecord]:
        """What `parse` gives, as `ToolEnv.step` takes it: a protocol may answer with the step
        path's lean records (`ActionRecord`, each standing for the model `parse` would give) to
        spare building models on every step. By default, `parse` itself."""
        return list(self.parse(output))

    @abstractmethod
    def instructions(self, tools: ToolSet) -> str:
        """The system-prompt text: how to answer in this format, and the docs of `tools` (the
        native-tools protocols, openai and responses, leave those to the request's `tools`)."""

    @abstractmethod
    def format_action(self, action: Action) -> RawOutput:
        """Model output that `parse` turns back into `action` (used by scripted agents and
        to render golden history)."""

    def format_observation(self, obs: Observation) -> str:
        return obs.text
