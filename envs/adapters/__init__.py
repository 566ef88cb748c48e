"""ToolEnv behind the RL libraries' own environment interfaces (issue 29, item 4), beside the TRL and
verl adapters of `toolgym.envs.trainers`:

- `skyrl`: a SkyRL-Gym `BaseTextEnv` registered as `toolgym` (`skyrl_gym.make("toolgym", ...)`);
- `verifiers`: a verifiers taskset and multi-turn env (`vf eval toolgym.envs.adapters.verifiers`);
- `nemo_gym`: toolgym task sets as a NeMo Gym resources server, reached over HTTP.

Each drives a `TextEpisode` (`episode.py`): one ToolEnv episode stepped with the model's replies,
its trace written as `toolgym run` writes it, so the same actions score the same. The libraries
are imported only by their own adapter module; none is a dependency of toolgym.
"""
