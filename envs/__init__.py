"""ToolEnv and its wrappers. Importing registers `toolgym/ToolEnv-v0` and `toolgym/Demo-v0` with gymnasium."""

from __future__ import annotations

import gymnasium as gym

if "toolgym/ToolEnv-v0" not in gym.registry:
    gym.register(id="toolgym/ToolEnv-v0", entry_point="toolgym.envs.tool_env:ToolEnv")
    gym.register(id="toolgym/Demo-v0", entry_point="toolgym.envs.demo:make_demo_env")
