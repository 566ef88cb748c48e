"""A NeMo Gym resources server over toolgym (nemo-gym 0.4.0 to 0.7.0): this file is the server's `app.py`,
written into a resources-server folder by `toolgym.envs.adapters.nemo_gym.write_resources_server`
and run by NeMo Gym (`ng_run`) in NeMo Gym's own venv, which needs Python >= 3.12. It imports
nothing of toolgym: toolgym runs as `toolgym env-server` in its own venv, and this server drives
its sessions over HTTP (`toolgym_url`), which is how NeMo Gym splits its servers anyway.

It is a `GymnasiumServer` (NeMo Gym's Gymnasium-API resources server, played by its
`gymnasium_agent`): `/reset` opens a toolgym session on the row's task (`task_set`, `task_id`,
`seed`), each `/step` sends the model's reply text to the session, and the step that ends the
episode carries toolgym's reward (the agent sums step rewards; the others are 0). The row's
`responses_create_params.input` already holds the protocol's instructions and the task's query
(`toolgym.envs.adapters.nemo_gym.nemo_gym_rows`), so reset adds no observation. toolgym writes each
episode's trace on its side (`toolgym env-server --trace-dir`).
"""

from __future__ import annotations

import contextlib
from typing import Any, ClassVar

import httpx
from nemo_gym.base_resources_server import (  # type: ignore[import-not-found,unused-ignore]
    BaseResourcesServerConfig,
)
from nemo_gym.openai_utils import NeMoGymResponse  # type: ignore[import-not-found,unused-ignore]
from pydantic import Field
from resources_servers.gymnasium import GymnasiumServer, extract_text  # type: ignore[import-not-found,unused-ignore]


class ToolgymServerConfig(BaseResourcesServerConfig):  # type: ignore[misc]
    toolgym_url: str
    """The base URL of `toolgym env-server` (e.g. http://127.0.0.1:8100)."""
    protocol: str = "react"
    """The action protocol that reads the model's replies: react or json (text replies)."""
    toolgym_token: str | None = None
    """The env server's bearer token, when it has one."""
    timeout_s: float = 300.0
    reward_mode: str = "final"
    """milestones: each step's reward is the change in milestone progress (the gymnasium agent sums
    them), the last step's the usual one; final: the last step's only."""


class ToolgymServer(GymnasiumServer):  # type: ignore[misc]
    # NeMo Gym >= 0.7 asks each server whether it needs Ray (undeclared: Ray on, with a warning);
    # this one only calls toolgym over HTTP. A class variable older versions ignore.
    ray_enabled: ClassVar[bool] = False
    config: ToolgymServerConfig
    toolgym_sessions: dict[str, str] = Field(default_factory=dict)

    async def _call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        headers = (
            {"Authorization": f"Bearer {self.config.toolgym_token}"} if self.config.toolgym_token else {}
        )
        async with httpx.AsyncClient(timeout=self.config.timeout_s) as client:
            answer = await client.post(self.config.toolgym_url.rstrip("/") + path, json=body, headers=headers)
        if answer.status_code != 200:
            raise RuntimeError(f"toolgym env-server {path}: HTTP {answer.status_code}: {answer.text[:500]}")
        result: dict[str, Any] = answer.json()
        return result

    async def reset(
        self, metadata: dict[str, Any], session_id: str | None = None
    ) -> tuple[str | None, dict[str, Any]]:
        await self.close_session(session_id)
        body: dict[str, Any] = {
            "agent": "nemo_gym",
            "task_id": metadata["task_id"],
            "config": {
                "tasks": metadata["task_set"],
                "protocol": metadata.get("protocol", self.config.protocol),
            },
        }
        if metadata.get("seed") is not None:
            body["seed"] = metadata["seed"]
        if self.config.reward_mode != "final":  # a server before reward_mode takes the default
            body["config"]["reward_mode"] = self.config.reward_mode
        answer = await self._call("/reset", body)
        self.toolgym_sessions[str(session_id)] = answer["observation"]["session_id"]
        return None, {"task_id": metadata["task_id"]}

    async def step(
        self, action: NeMoGymResponse, metadata: dict[str, Any], session_id: str | None = None
    ) -> tuple[str | None, float, bool, bool, dict[str, Any]]:
        toolgym_session = self.toolgym_sessions[str(session_id)]
        answer = await self._call(
            "/step", {"session_id": toolgym_session, "action": {"text": extract_text(action)}}
        )
        observation = answer.get("observation", {})
        terminated = bool(observation.get("terminated", False))
        truncated = bool(observation.get("truncated", False))
        if not (terminated or truncated):
            return str(observation.get("text", "")), 0.0, False, False, {}
        scores = (observation.get("info") or {}).get("scores") or {}
        info = {"task_id": metadata["task_id"], "scores": scores}
        return None, float(answer.get("reward") or 0.0), terminated, truncated, info

    async def close_session(self, session_id: str | None) -> None:
        toolgym_session = self.toolgym_sessions.pop(str(session_id), None)
        if toolgym_session is not None:
            # a session the server closed or lost already is closed
            with contextlib.suppress(httpx.HTTPError, RuntimeError):
                await self._call("/close", {"session_id": toolgym_session})
        await super().close_session(session_id)


if __name__ == "__main__":
    ToolgymServer.run_webserver()
