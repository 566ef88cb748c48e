"""`RemoteToolSet`: the tools of a toolgym server as a ToolSet, usable by ToolEnv exactly like
in-process tools (and mergeable with them and with mock apps).

    remote = RemoteToolSet("http://127.0.0.1:8765", token=None)
    env = ToolEnv(local_tools.merged(remote), tasks)

The server validates arguments with the tool's own validator, so argument errors read the same as
in-process. Files travel as handles: a file argument's bytes are uploaded once per server
(content-addressed: PUT /v1/files/<sha256>) and files the tool produces are downloaded into the
episode's file store, so the observation (content, text, file handles) is the one the tool gives
in-process. Connection failures, timeouts without an answer, 5xx and auth failures raise
`InfraError`: the env shows `infra_error`, never the agent's fault.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

import httpx

from toolgym.errors import ArgumentError, ErrorKind, InfraError, error_for_kind
from toolgym.files import FileHandle, StoredFile
from toolgym.tools import ReturnSpec, SchemaTool, ToolContext, ToolSet

from ._common import (
    bearer,
    error_for_status,
    params_without_validation,
    store_bytes,
    transport_error,
    with_handles,
)

# how long past the server's own tool timeout the client waits before calling the server dead
TIMEOUT_MARGIN_S = 10.0

# the kinds a server passes on from the tool; any other (unknown tool, overload, a tool that
# cannot load) is the server's trouble, an infra error for the agent
_TOOL_KINDS = frozenset({ErrorKind.ARGUMENT_ERROR.value, ErrorKind.TOOL_ERROR.value, ErrorKind.TIMEOUT.value})


class RemoteTool(SchemaTool):
    """One tool of a toolgym server. Its schema is the server's; its arguments are checked by the
    server (with the tool's own validator), so this side only requires a JSON object."""

    def __init__(self, descriptor: Mapping[str, Any], owner: RemoteToolSet) -> None:
        super().__init__(
            str(descriptor["name"]),
            descriptor["parameters"],
            self._call,
            description=str(descriptor.get("description", "")),
            returns=[ReturnSpec.model_validate(r) for r in descriptor.get("returns_spec", [])],
            category=descriptor.get("category", "operation"),
            mutates_state=bool(descriptor.get("mutates_state", False)),
            version=str(descriptor.get("version", "1")),
            backend=f"remote:{descriptor.get('backend', 'unknown')}",
        )
        self.owner = owner
        limits = descriptor.get("limits") or {}
        self.timeout_s = owner.call_timeout_s or float(limits.get("timeout_s") or 60.0) + TIMEOUT_MARGIN_S

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return params_without_validation(self, arguments)

    def _call(self, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        files = {k: v for k, v in arguments.items() if isinstance(v, StoredFile)}
        for stored in files.values():
            self.owner.upload(stored)
        wire = {k: (v.handle.ref if isinstance(v, StoredFile) else v) for k, v in arguments.items()}
        envelope = {
            "arguments": wire,
            "seed": ctx.seed,
            "clock": ctx.clock.isoformat(),
            "task_id": ctx.task_id,
        }
        status, payload = self.owner.post_call(self.name, envelope, self.timeout_s)
        if status == 409 and payload.get("missing_files"):
            # the server lost files it had (a restart): send them again, once
            by_sha = {s.handle.sha256: s for s in files.values()}
            for sha in payload["missing_files"]:
                if sha in by_sha:
                    self.owner.upload(by_sha[sha], force=True)
            status, payload = self.owner.post_call(self.name, envelope, self.timeout_s)
        return self.owner.decode(self.name, status, payload, ctx)


class RemoteToolSet(ToolSet):
    """The tools a toolgym server hosts (all, or `tools`), fetched from GET /v1/tools."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        tools: Iterable[str] | None = None,
        connect_timeout_s: float = 5.0,
        headers: Mapping[str, str] | None = None,
        call_timeout_s: float | None = None,
        client: httpx.Client | None = None,
    ) -> None:
        """`call_timeout_s`: how long a call may go unanswered before it is an infra error
        (default: the tool's server-side timeout plus a margin, so the server's own `timeout`
        answer arrives first)."""
        super().__init__()
        self.url = url.rstrip("/")
        self.call_timeout_s = call_timeout_s
        self._http = client or httpx.Client(
            base_url=self.url,
            headers=bearer(token, headers),
            timeout=httpx.Timeout(60.0, connect=connect_timeout_s),
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=64),
        )
        self._uploaded: set[str] = set()
        self._lock = threading.Lock()
        descriptors = self._get_json("/v1/tools")["tools"]
        wanted = list(tools) if tools is not None else None
        by_name = {d["name"]: d for d in descriptors}
        if wanted is not None:
            missing = [n for n in wanted if n not in by_name]
            if missing:
                raise InfraError(f"{self.url} does not serve {missing}; it serves {sorted(by_name)}")
        for name in wanted if wanted is not None else list(by_name):
            self.add(RemoteTool(by_name[name], self))

    # ---- plumbing ----------------------------------------------------------------------
    def _get_json(self, path: str) -> Any:
        try:
            response = self._http.get(path)
        except httpx.HTTPError as exc:
            transport_error(f"{self.url}{path}", exc)
        if response.status_code != 200:
            raise error_for_status(f"{self.url}{path}", response.status_code, response.text[:500])
        try:
            return response.json()
        except ValueError:
            raise InfraError(f"{self.url}{path}: answer is not JSON") from None

    def health(self) -> dict[str, Any]:
        return dict(self._get_json("/v1/health"))

    def metrics(self) -> dict[str, Any]:
        return dict(self._get_json("/v1/metrics")["tools"])

    def upload(self, stored: StoredFile, *, force: bool = False) -> None:
        sha = stored.handle.sha256
        if sha in self._uploaded and not force:
            return
        handle = stored.handle
        try:
            response = self._http.put(
                f"/v1/files/{sha}",
                params={"name": handle.name} if handle.name else None,
                content=stored.read_bytes(),
                headers={"Content-Type": handle.media_type},
            )
        except httpx.HTTPError as exc:
            transport_error(f"uploading {handle.ref} to {self.url}", exc)
        if response.status_code == 413:
            raise ArgumentError(f"{handle.name or handle.ref} is larger than {self.url} accepts")
        if response.status_code not in (200, 201):
            raise error_for_status(f"uploading {handle.ref}", response.status_code, response.text[:500])
        with self._lock:
            self._uploaded.add(sha)

    def post_call(self, name: str, envelope: dict[str, Any], timeout_s: float) -> tuple[int, dict[str, Any]]:
        what = f"{name} at {self.url}"
        try:
            response = self._http.post(f"/v1/tools/{name}/call", json=envelope, timeout=timeout_s)
        except httpx.HTTPError as exc:
            transport_error(what, exc)
        try:
            payload = response.json()
        except ValueError:
            raise error_for_status(what, response.status_code, response.text[:500]) from None
        if not isinstance(payload, dict):
            raise InfraError(f"{what}: malformed answer")
        return response.status_code, payload

    def download(self, handle: FileHandle, ctx: ToolContext) -> FileHandle:
        if handle.ref in ctx.files:
            return ctx.files.get(handle).handle
        try:
            response = self._http.get(f"/v1/files/{handle.sha256}")
        except httpx.HTTPError as exc:
            transport_error(f"downloading {handle.ref} from {self.url}", exc)
        if response.status_code != 200:
            raise error_for_status(f"downloading {handle.ref}", response.status_code, response.text[:500])
        return store_bytes(
            ctx, response.content, name=handle.name, media_type=handle.media_type, sha256=handle.sha256
        )

    def decode(self, name: str, status: int, payload: dict[str, Any], ctx: ToolContext) -> Any:
        """The call's value as the tool returned it in-process, or the typed error it raised."""
        what = f"{name} at {self.url}"
        error = payload.get("error")
        if status == 200 and error is None:
            handles = [FileHandle.model_validate(h) for h in payload.get("files", [])]
            local = {h.sha256: self.download(h, ctx) for h in handles}
            return with_handles(payload.get("content"), local)
        if not isinstance(error, dict):
            raise error_for_status(what, status, str(payload.get("detail", ""))[:500])
        kind, message = str(error.get("kind")), str(error.get("message", ""))
        if status in (401, 403) or status >= 500 or kind not in _TOOL_KINDS:
            # the server's own trouble (overload, a tool that cannot load, auth): infra
            raise InfraError(f"{what}: {message}", data=payload.get("content"))
        raise error_for_kind(kind, message, data=payload.get("content"))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RemoteToolSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
