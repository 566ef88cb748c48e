"""ContainerHost: servers as Docker containers, through the `docker` SDK.

Every container gets: the memory, CPU and pids limits of its spec (swap off), all capabilities
dropped, no-new-privileges, a read-only root with a tmpfs /tmp, an init process, a log size cap
and the toolgym labels. A server that needs no network gets `network_mode="none"` and listens
on a unix socket in a host directory mounted at /run/toolgym; one that needs the network is
published on 127.0.0.1 only (a host port chosen here, so a restart keeps it). Clients only ever
use that socket or that loopback port, never a container IP. Health is polled on `/health`
(Docker's own HEALTHCHECK status is not relied on: Podman never reports it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from toolgym.toolservers.hosting.base import (
    SOCKET_NAME,
    TOKEN_ENV,
    UDS_BASE_URL,
    HostingError,
    ServerHandle,
    ServerHost,
    ServerKind,
    ServerSpec,
    new_token,
    wait_healthy,
)
from toolgym.toolservers.hosting.process import free_port

CONTAINER_PORT = 8000
RUNTIME_TARGET = "/run/toolgym"
CONTAINER_UID = 10001  # the images' non-root user
LABEL = "org.toolgym.server"
DEFAULT_IMAGE: dict[ServerKind, str] = {
    "mocks": "toolgym/mockserver:latest",
    "tools": "toolgym/toolserver:latest",
}
DOCKERD_LOG = Path("/var/log/dockerd.log")


def _client_host(host_ip: str) -> str:
    """Where this machine reaches a port published on `host_ip` (all interfaces: loopback)."""
    if host_ip in ("0.0.0.0", "::", ""):
        return "127.0.0.1"
    return f"[{host_ip}]" if ":" in host_ip else host_ip


class DockerUnavailable(HostingError):
    """No Docker daemon answers (and none could be started)."""


def docker_client(*, timeout_s: int = 120) -> Any:
    """A `docker.DockerClient` from the environment (DOCKER_HOST or the default socket)."""
    try:
        import docker.errors

        import docker
    except ImportError as exc:  # pragma: no cover - docker is a dependency
        raise DockerUnavailable("the `docker` Python package is missing: pip install docker") from exc
    try:
        client = docker.from_env(timeout=timeout_s)
        client.ping()
    except docker.errors.DockerException as exc:
        raise DockerUnavailable(f"no Docker daemon answers: {exc}") from None
    return client


def start_dockerd(*, wait_s: float = 30.0, log_path: Path = DOCKERD_LOG) -> Any:
    """Start `dockerd` in the background (machines without systemd) unless one answers already;
    return a client. Needs root and the docker.io package."""
    with contextlib.suppress(DockerUnavailable):
        return docker_client()
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise DockerUnavailable("dockerd is not installed (apt-get install -y docker.io)")
    if os.geteuid() != 0:
        raise DockerUnavailable("dockerd is not running and starting it needs root")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        subprocess.Popen([dockerd], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return docker_client()
        except DockerUnavailable:
            if time.monotonic() > deadline:
                tail = log_path.read_text(errors="replace").splitlines()[-20:] if log_path.exists() else []
                raise DockerUnavailable(
                    f"dockerd did not answer within {wait_s:g} s; {log_path}:\n" + "\n".join(tail)
                ) from None
            time.sleep(0.25)


class ContainerHost(ServerHost):
    """Servers in Docker containers. `client`: a docker.DockerClient (default: from the
    environment); images must exist (`toolgym lab build`, or pass `build=True` to build the
    missing or outdated ones on first use)."""

    name = "docker"

    def __init__(self, client: Any | None = None, *, build: bool = False, log_max_size: str = "10m") -> None:
        super().__init__()
        self.client = client or docker_client()
        self.build = build
        self.log_max_size = log_max_size

    def _image(self, spec: ServerSpec) -> str:
        import docker.errors

        image = spec.image or DEFAULT_IMAGE[spec.kind]
        if self.build:
            from toolgym.toolservers.hosting.images import IMAGES, ImageBuilder

            by_tag = {d.tag: name for name, d in IMAGES.items()}
            if image in by_tag:
                ImageBuilder(self.client, log=lambda _: None).ensure([by_tag[image]])
        try:
            self.client.images.get(image)
        except docker.errors.ImageNotFound:
            raise HostingError(f"image {image} is missing: build it with `toolgym lab build`") from None
        return image

    def _run_kwargs(self, spec: ServerSpec, handle: ServerHandle) -> dict[str, Any]:
        lim = spec.limits
        env = {TOKEN_ENV: handle.token, "TOOLGYM_HEALTH_PATH": spec.health_path, **spec.env}
        volumes: dict[str, dict[str, str]] = {
            str(m.source): {"bind": m.target, "mode": "ro" if m.read_only else "rw"} for m in spec.mounts
        }
        kwargs: dict[str, Any] = {
            "detach": True,
            "init": True,
            "read_only": True,
            "tmpfs": {"/tmp": f"rw,nosuid,nodev,size={lim.tmp_mb}m"},
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "labels": {LABEL: spec.name, "org.toolgym.kind": spec.kind},
            "log_config": {"type": "json-file", "config": {"max-size": self.log_max_size, "max-file": "3"}},
            "environment": env,
        }
        if lim.memory_mb:
            kwargs["mem_limit"] = f"{lim.memory_mb}m"
            kwargs["memswap_limit"] = f"{lim.memory_mb}m"  # the same figure: no swap
        if lim.cpus:
            kwargs["nano_cpus"] = int(lim.cpus * 1e9)
        if lim.pids:
            kwargs["pids_limit"] = lim.pids
        if spec.gpus:
            import docker.types

            kwargs["device_requests"] = [
                docker.types.DeviceRequest(device_ids=list(spec.gpus), capabilities=[["gpu"]])
            ]
        if handle.uds:
            runtime = handle.extra["runtime"]
            volumes[runtime] = {"bind": RUNTIME_TARGET, "mode": "rw"}
            env["TOOLGYM_UDS"] = f"{RUNTIME_TARGET}/{SOCKET_NAME}"
            kwargs["network_mode"] = "none"
            kwargs["command"] = [*spec.argv, "--uds", f"{RUNTIME_TARGET}/{SOCKET_NAME}"]
        else:
            kwargs["ports"] = {f"{CONTAINER_PORT}/tcp": (handle.extra["host_ip"], handle.extra["port"])}
            kwargs["command"] = [*spec.argv, "--host", "0.0.0.0", "--port", str(CONTAINER_PORT)]
        kwargs["volumes"] = volumes
        return kwargs

    def start(self, spec: ServerSpec) -> ServerHandle:
        image = self._image(spec)
        token = spec.token or new_token()
        handle = ServerHandle(spec=spec, backend=self.name, url="", token=token, ident="")
        handle.extra["image"] = image
        if spec.transport == "uds":
            runtime = Path(tempfile.mkdtemp(prefix=f"toolgym-{spec.name}-"))
            if os.geteuid() == 0:  # the image's user creates the socket there
                os.chown(runtime, CONTAINER_UID, CONTAINER_UID)
            else:  # cannot give it away: let anyone in (the directory name is random)
                runtime.chmod(0o777)
            handle.extra["runtime"] = str(runtime)
            handle.uds = str(runtime / SOCKET_NAME)
            handle.url = UDS_BASE_URL
        else:
            host_ip, port = spec.publish or ("127.0.0.1", 0)
            handle.extra["host_ip"], handle.extra["port"] = host_ip, port or free_port()
            handle.url = f"http://{_client_host(host_ip)}:{handle.extra['port']}"
        started = time.monotonic()
        container = self.client.containers.run(image, **self._run_kwargs(spec, handle))
        handle.ident = container.id
        self._handles[container.id] = handle
        try:
            self._wait(handle)
        except BaseException:
            self.stop(handle)
            raise
        handle.started_s = time.monotonic() - started
        return handle

    def container(self, handle: ServerHandle) -> Any:
        return self.client.containers.get(handle.ident)

    def _status(self, handle: ServerHandle) -> str:
        import docker.errors

        try:
            c = self.container(handle)
        except docker.errors.NotFound:
            return "missing"
        return str(c.status)

    def alive(self, handle: ServerHandle) -> bool:
        return self._status(handle) == "running"

    def _wait(self, handle: ServerHandle) -> None:
        wait_healthy(
            handle.url,
            uds=handle.uds,
            path=handle.spec.health_path,
            timeout_s=handle.spec.startup_timeout_s,
            alive=lambda: self._status(handle) in ("running", "created", "restarting"),
            logs=lambda: self.logs(handle, 40),
            what=f"container {handle.ident[:12]} ({handle.spec.name})",
        )

    def restart(self, handle: ServerHandle) -> ServerHandle:
        """Bring the same container back: unpause a frozen one, kill a hung or dead one, start
        it again on the same socket or port, and wait for health."""
        import docker.errors

        started = time.monotonic()
        try:
            c = self.container(handle)
        except docker.errors.NotFound:
            c = None
        if c is None:  # removed behind our back: a new container with the same spec
            c = self.client.containers.run(handle.extra["image"], **self._run_kwargs(handle.spec, handle))
            self._handles.pop(handle.ident, None)
            handle.ident = c.id
            self._handles[c.id] = handle
        else:
            if c.status == "paused":
                c.unpause()
            if c.status in ("running", "paused", "restarting"):
                with contextlib.suppress(docker.errors.APIError):
                    c.kill()
                c.wait(timeout=30)
            if handle.uds:
                Path(handle.uds).unlink(missing_ok=True)
            c.start()
        self._wait(handle)
        handle.restarts += 1
        handle.started_s = time.monotonic() - started
        return handle

    def stop(self, handle: ServerHandle) -> None:
        import docker.errors

        with contextlib.suppress(docker.errors.NotFound):
            self.container(handle).remove(force=True)
        self._handles.pop(handle.ident, None)
        runtime = handle.extra.get("runtime")
        if runtime:
            shutil.rmtree(runtime, ignore_errors=True)

    def logs(self, handle: ServerHandle, tail: int = 200) -> str:
        import docker.errors

        try:
            raw: bytes = self.container(handle).logs(tail=tail)
        except docker.errors.NotFound:
            return ""
        return raw.decode("utf-8", errors="replace")

    def kill(self, handle: ServerHandle, signal: str = "SIGKILL") -> None:
        """Fault injection: kill the container (it stays, stopped, for restart)."""
        self.container(handle).kill(signal=signal)

    def pause(self, handle: ServerHandle) -> None:
        """Fault injection: freeze every process of the container (a hung server)."""
        self.container(handle).pause()
