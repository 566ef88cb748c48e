"""`vf-eval toolgym_verifiers`: toolgym task sets as a verifiers 0.4.0 environment.

verifiers finds a taskset by a top-level import name (its ids carry no dots), so this package only
re-exports the adapter, `toolgym.envs.adapters.verifiers` (its docstring says how to run it)."""

from toolgym.envs.adapters.verifiers import ToolgymChatHarness, ToolgymEnv, ToolgymTaskset

__all__ = ["ToolgymChatHarness", "ToolgymEnv", "ToolgymTaskset"]
