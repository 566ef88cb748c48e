"""toolgym task sets as a NeMo Gym environment (nemo-gym 0.7.0, Python >= 3.13.14; 0.4.0, Python >= 3.12,
with `nemo_gym="0.4.0"`): a resources server
in NeMo Gym's venv that drives `toolgym env-server` sessions over HTTP (`nemo_gym_server.py`, its
`app.py`), played by NeMo Gym's own `gymnasium_agent`, with rows NeMo Gym's rollout collection
reads. toolgym and NeMo Gym never share a process or a venv.

    toolgym env-server --port 8100 --trace-dir runs/nemo &            # toolgym's venv
    python -c "from toolgym.envs.adapters.nemo_gym import write_resources_server; \\
               write_resources_server('.', 'ctool', toolgym_url='http://127.0.0.1:8100')"
    ng_run "+config_paths=[resources_servers/toolgym/configs/toolgym.yaml,\\
            responses_api_models/openai_model/configs/openai_model.yaml]" ...   # NeMo Gym's venv
    ng_collect_rollouts +agent_name=toolgym_agent \\
        +input_jsonl_fpath=resources_servers/toolgym/data/ctool.jsonl +output_jsonl_fpath=rollouts.jsonl

`write_resources_server(root, tasks, ...)` writes `root/resources_servers/<name>/`: `app.py`,
`requirements.txt` (nemo-gym: what `ng_run` installs in the server's venv), `configs/<name>.yaml`
(the resources server `<name>_resources_server` and its agent `<name>_agent`, a gymnasium_agent
on the model server `policy_model`; from NeMo Gym 0.5 on, also the environment server
`<name>_environment_server` through which rollout collection reaches the agent, a `legacy_agent`
relay, which 0.7 would otherwise generate with a deprecation warning) and `data/<set>.jsonl`
(`nemo_gym_rows`). Run `ng_run` from `root`: NeMo Gym looks for a local server under the working
directory.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from toolgym.envs.adapters.episode import load_env
from toolgym.envs.tool_env import task_prompt

SERVER_SOURCE = Path(__file__).with_name("nemo_gym_server.py")
NEMO_GYM_VERSION = "0.7.0"  # the newest tested (tests/envs/adapters/test_nemo_gym.py); 0.4.0 too
# NeMo Gym's Python floor per release (0.5 to 0.7 declare >= 3.13.14; 0.7.0 runs on 3.13.0 when
# installed with --ignore-requires-python)
NEMO_GYM_PYTHON = {"0.4": "3.12", "0.5": "3.13.14", "0.6": "3.13.14", "0.7": "3.13.14"}


def has_environment_servers(nemo_gym: str) -> bool:
    """Whether a NeMo Gym release reaches agents through environment servers (0.5 and later)."""
    major, minor = (int(x) for x in nemo_gym.split(".")[:2])
    return (major, minor) >= (0, 5)


def nemo_gym_rows(
    tasks: str, *, agent: str = "toolgym_agent", protocol: str = "react", seed: int | None = None
) -> list[dict[str, Any]]:
    """One NeMo Gym row per task of a set given by name or file: the model's opening input (the
    protocol's instructions and the task's query), the agent that plays it, and what the resources
    server opens the toolgym session with (`task_set`, `task_id`, `seed`, `protocol`)."""
    env = load_env(tasks, protocol=protocol)
    rows = []
    try:
        for task in env.tasks:
            _, info = env.reset(seed=seed, options={"task": task.id})
            opening = [
                {"role": "system", "content": info["instructions"]},
                {"role": "user", "content": task_prompt(task)},
            ]
            rows.append(
                {
                    "responses_create_params": {"input": opening},
                    "agent_ref": {"type": "responses_api_agents", "name": agent},
                    "task_set": str(tasks),
                    "task_id": task.id,
                    "seed": seed,
                    "protocol": protocol,
                }
            )
    finally:
        env.close()
    return rows


def _config(
    name: str,
    toolgym_url: str,
    protocol: str,
    max_steps: int,
    model_server: str,
    reward_mode: str = "final",
    nemo_gym: str = NEMO_GYM_VERSION,
) -> str:
    """The server's config: YAML is a superset of JSON, so json.dumps writes it."""
    config: dict[str, Any] = {
        f"{name}_resources_server": {
            "resources_servers": {
                name: {
                    "entrypoint": "app.py",
                    "domain": "agent",
                    "description": "toolgym task sets: tool calls on mock apps and real tools, scored by toolgym",
                    "toolgym_url": toolgym_url,
                    "protocol": protocol,
                    **({"reward_mode": reward_mode} if reward_mode != "final" else {}),
                }
            }
        },
        f"{name}_agent": {
            "responses_api_agents": {
                "gymnasium_agent": {
                    "entrypoint": "app.py",
                    "resources_server": {"type": "resources_servers", "name": f"{name}_resources_server"},
                    "model_server": {"type": "responses_api_models", "name": model_server},
                    "max_steps": max_steps,
                }
            }
        },
    }
    if has_environment_servers(nemo_gym):
        config[f"{name}_environment_server"] = {
            "environment_servers": {
                "legacy_agent": {
                    "entrypoint": "app.py",
                    "agent_server": {"type": "responses_api_agents", "name": f"{name}_agent"},
                }
            }
        }
    return json.dumps(config, indent=2) + "\n"


def write_resources_server(
    root: str | Path,
    tasks: str,
    *,
    toolgym_url: str,
    name: str = "toolgym",
    protocol: str = "react",
    max_steps: int = 10,
    model_server: str = "policy_model",
    seed: int | None = None,
    reward_mode: str = "final",
    nemo_gym: str = NEMO_GYM_VERSION,
) -> Path:
    """Writes the resources server `root/resources_servers/<name>/` (see the module docstring) with
    the rows of `tasks`; returns its config file. `reward_mode="milestones"`: the sessions' step
    rewards are the changes in milestone progress (the gymnasium agent sums them). `nemo_gym`: the
    NeMo Gym release the server runs on (its requirement and its config's layout)."""
    folder = Path(root) / "resources_servers" / name
    (folder / "configs").mkdir(parents=True, exist_ok=True)
    (folder / "data").mkdir(exist_ok=True)
    shutil.copyfile(SERVER_SOURCE, folder / "app.py")
    (folder / "requirements.txt").write_text(f"nemo-gym=={nemo_gym}\nhttpx\n", encoding="utf-8")
    rows = nemo_gym_rows(tasks, agent=f"{name}_agent", protocol=protocol, seed=seed)
    data = folder / "data" / f"{Path(tasks).stem}.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    config = folder / "configs" / f"{name}.yaml"
    config.write_text(
        _config(name, toolgym_url, protocol, max_steps, model_server, reward_mode, nemo_gym), encoding="utf-8"
    )
    return config
