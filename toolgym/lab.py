"""Kept for `from toolgym.lab import Lab, InfraRetry`: the lab lives in `toolgym.envs.lab` (env,
agent and reward) and `toolgym.toolservers.hosting` (servers, hosts, `toolgym lab` commands)."""

from toolgym.envs.lab import *  # noqa: F403 - this module only re-exports
from toolgym.envs.lab import __all__ as __all__
