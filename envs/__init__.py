"""ToolEnv and its wrappers. Importing registers `toolgym/ToolEnv-v0` and `toolgym/Demo-v0` with gymnasium."""

from __future__ import annotations

# One import path: this root folder is the package `toolgym.envs` (through the link toolgym/envs),
# never a top-level `envs` package, or every module would exist twice.
if __name__ != "toolgym.envs":
    raise ImportError(
        f"import toolgym.envs, not {__name__}: the root folder envs/ is a subpackage of toolgym"
    )


import gymnasium as gym

if "toolgym/ToolEnv-v0" not in gym.registry:
    gym.register(id="toolgym/ToolEnv-v0", entry_point="toolgym.envs.tool_env:ToolEnv")
    gym.register(id="toolgym/Demo-v0", entry_point="toolgym.envs.demo:make_demo_env")
