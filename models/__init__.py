"""Models: the chat client and LLM agent, local models (`hf:`) in this process or behind `toolgym serve-model`, prompt setups, and the builders that put model-backed agents, users and tool simulators on rollout workers."""

# One import path: this root folder is the package `toolgym.models` (through the link toolgym/models),
# never a top-level `models` package, or every module would exist twice.
if __name__ != "toolgym.models":
    raise ImportError(
        f"import toolgym.models, not {__name__}: the root folder models/ is a subpackage of toolgym"
    )
