"""ProcessHost: a server as a sandboxed local process, for machines without Docker.

Layers, when the host has them:

* bubblewrap: a new root with only /usr, the libraries, /etc, the Python installation, the
  toolgym sources, the mounts and a private runtime directory (read-write) plus an empty /tmp;
  new user (the server runs as nobody), pid, ipc and uts namespaces; every capability dropped;
  no network namespace access at all unless the spec needs the network (then it listens on
  127.0.0.1 only; otherwise on a unix socket in the runtime directory).
* limits: a cgroup (v1) per server, nested under this process's own cgroup, caps memory, pids
  and CPU; where cgroups cannot be written, `ulimit -v` caps the address space instead.

Without bubblewrap the server runs as a plain child process with the same limits, environment
and socket, and `isolation` in the handle says "none".
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Literal

from toolgym.toolservers.hosting.base import (
    SOCKET_NAME,
    TOKEN_ENV,
    UDS_BASE_URL,
    HostingError,
    Limits,
    ServerHandle,
    ServerHost,
    ServerSpec,
    new_token,
    toolgym_root,
    wait_healthy,
)
from toolgym.toolservers.sandbox import minimal_paths, python_paths

log = logging.getLogger(__name__)

Isolation = Literal["auto", "bwrap", "none"]
_LIBDIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
CGROUP_ROOT = Path("/sys/fs/cgroup")
_CONTROLLERS = ("memory", "pids", "cpu")
STOP_GRACE_S = 5.0


def free_port(host: str = "127.0.0.1") -> int:
    (port,) = free_ports(1, host)
    return port


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """`count` distinct ports free on `host` now (all held open at once, so none repeats)."""
    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in socks:
            sock.bind((host, 0))
        return [int(sock.getsockname()[1]) for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def process_tree(pid: int) -> list[int]:
    """`pid` and all its descendants (bwrap starts the server in a session of its own, so the
    process group of the launcher does not reach it)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # exited while we looked
        children.setdefault(ppid, []).append(int(entry.name))
    tree, todo = [pid], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            tree.append(child)
            todo.append(child)
    return tree


def _signal_tree(pid: int, sig: int) -> None:
    for p in process_tree(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, sig)


def _bwrap_works(bwrap: str) -> bool:
    true = shutil.which("true") or "/bin/true"
    argv = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/", "--", true]
    try:
        return subprocess.run(argv, capture_output=True, timeout=15).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


class _Cgroup:
    """A cgroup v1 per server under this process's own cgroup of each controller."""

    def __init__(self, name: str, limits: Limits) -> None:
        self.dirs: list[Path] = []
        own = self._own_paths()
        for controller in _CONTROLLERS:
            if controller not in own:
                continue
            path = CGROUP_ROOT / controller / own[controller].lstrip("/") / name
            path.mkdir()
            self.dirs.append(path)
            if controller == "memory" and limits.memory_mb:
                (path / "memory.limit_in_bytes").write_text(str(limits.memory_mb << 20))
                with contextlib.suppress(OSError):  # no swap accounting on some kernels
                    (path / "memory.memsw.limit_in_bytes").write_text(str(limits.memory_mb << 20))
            elif controller == "pids" and limits.pids:
                (path / "pids.max").write_text(str(limits.pids))
            elif controller == "cpu" and limits.cpus:
                (path / "cpu.cfs_period_us").write_text("100000")
                (path / "cpu.cfs_quota_us").write_text(str(int(limits.cpus * 100000)))

    @staticmethod
    def _own_paths() -> dict[str, str]:
        found: dict[str, str] = {}
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for c in controllers.split(","):
                if c in _CONTROLLERS:
                    found[c] = path
        return found

    @classmethod
    def usable(cls) -> bool:
        try:
            own = cls._own_paths()
        except OSError:
            return False
        return bool(own) and all(
            os.access(CGROUP_ROOT / c / own[c].lstrip("/"), os.W_OK) for c in _CONTROLLERS if c in own
        )

    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    def remove(self) -> None:
        for d in self.dirs:
            for _ in range(50):  # the last processes may still be exiting
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


class ProcessHost(ServerHost):
    """Servers as local processes, sandboxed with bubblewrap when it works here."""

    name = "process"

    def __init__(self, *, isolation: Isolation = "auto", python: str | None = None) -> None:
        super().__init__()
        self.python = python or sys.executable
        bwrap = shutil.which("bwrap")
        if isolation == "bwrap" and (bwrap is None or not _bwrap_works(bwrap)):
            raise HostingError("bubblewrap is not installed or cannot create namespaces here")
        self.bwrap = bwrap if isolation != "none" and bwrap is not None and _bwrap_works(bwrap) else None
        if isolation == "auto" and self.bwrap is None:
            log.warning("process backend: no working bubblewrap; servers run as plain processes")
        self.cgroups = _Cgroup.usable()
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def isolation(self) -> str:
        return "bwrap" if self.bwrap else "none"

    # ---- command line -------------------------------------------------------------------------
    def _bwrap_argv(self, spec: ServerSpec, runtime: Path) -> list[str]:
        assert self.bwrap is not None
        argv = [self.bwrap, "--die-with-parent", "--new-session", "--unshare-user", "--uid", "65534"]
        argv += ["--gid", "65534", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        if not spec.network:
            argv.append("--unshare-net")
        argv += ["--hostname", f"toolgym-{spec.name}", "--cap-drop", "ALL"]
        argv += ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
        for d in _LIBDIRS:
            if os.path.islink(d):
                argv += ["--symlink", os.readlink(d), d]
            elif os.path.isdir(d):
                argv += ["--ro-bind", d, d]
        argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        for p in minimal_paths({*python_paths(), toolgym_root()}):
            if not p.is_relative_to("/usr"):
                argv += ["--ro-bind", str(p), str(p)]
        for m in spec.mounts:
            argv += ["--ro-bind" if m.read_only else "--bind", str(m.source), m.target]
        argv += ["--bind", str(runtime), str(runtime), "--chdir", str(runtime), "--"]
        return argv

    def _wrapper(self, spec: ServerSpec, cgroup: _Cgroup | None) -> list[str]:
        """`sh -c` that joins the cgroup (or sets ulimits) and then execs the server: nothing the
        server starts can run outside its limits, and no preexec_fn runs in this process."""
        lines = ["ulimit -c 0"]
        if cgroup is not None:
            lines += [f'echo $$ > "{f}"' for f in cgroup.procs_files()]
        elif spec.limits.memory_mb:
            lines.append(f"ulimit -v {spec.limits.memory_mb * 1024}")
        lines.append('exec "$@"')
        return ["/bin/sh", "-c", "; ".join(lines), "toolgym-server"]

    def _argv(self, spec: ServerSpec, runtime: Path, bind: list[str], cgroup: _Cgroup | None) -> list[str]:
        server = [self.python, "-I", "-m", "toolgym.cli", *spec.argv, *bind]
        sandbox = self._bwrap_argv(spec, runtime) if self.bwrap else []
        return [*self._wrapper(spec, cgroup), *sandbox, *server]

    def _env(self, spec: ServerSpec, runtime: Path, token: str) -> dict[str, str]:
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(runtime / "home"),
            "TMPDIR": "/tmp" if self.bwrap else str(runtime / "tmp"),
            "LANG": "C.UTF-8",
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "MPLCONFIGDIR": str(runtime / "home" / ".mplconfig"),
            TOKEN_ENV: token,
        }
        env.update(spec.env)
        return env

    # ---- lifecycle ----------------------------------------------------------------------------
    def start(self, spec: ServerSpec) -> ServerHandle:
        if spec.gpus:
            log.info("process backend: gpus %s are visible as on the host", spec.gpus)
        if not self.bwrap and any(m.target != str(m.source) for m in spec.mounts):
            raise HostingError("mounts at another path need bubblewrap (or the container backend)")
        runtime = Path(tempfile.mkdtemp(prefix=f"toolgym-{spec.name}-"))
        (runtime / "home").mkdir()
        (runtime / "tmp").mkdir()
        token = spec.token or new_token()
        handle = ServerHandle(spec=spec, backend=self.name, url="", token=token, ident="")
        handle.extra.update(runtime=str(runtime), isolation=self.isolation)
        if spec.transport == "uds":
            handle.uds = str(runtime / SOCKET_NAME)
            handle.url = UDS_BASE_URL
        else:
            host, port = spec.publish or ("127.0.0.1", 0)
            handle.extra["host"], handle.extra["port"] = host, port or free_port()
            shown = "127.0.0.1" if host in ("0.0.0.0", "") else f"[{host}]" if ":" in host else host
            handle.url = f"http://{shown}:{handle.extra['port']}"
        self._handles[str(runtime)] = handle
        try:
            self._launch(handle)
        except BaseException:
            self.stop(handle)
            raise
        return handle

    def _launch(self, handle: ServerHandle) -> None:
        spec, runtime = handle.spec, Path(handle.extra["runtime"])
        if handle.uds:
            Path(handle.uds).unlink(missing_ok=True)
            bind = ["--uds", handle.uds]
        else:
            bind = ["--host", handle.extra["host"], "--port", str(handle.extra["port"])]
        cgroup = None
        if self.cgroups:
            try:
                cgroup = _Cgroup(f"toolgym-{spec.name}-{secrets.token_hex(4)}", spec.limits)
            except OSError as exc:
                log.warning("process backend: no cgroup for %s (%s); using ulimit", spec.name, exc)
        handle.extra["limits"] = "cgroup" if cgroup else "ulimit"
        log_path = runtime / "server.log"
        started = time.monotonic()
        with log_path.open("ab") as log_file:
            proc = subprocess.Popen(
                self._argv(spec, runtime, bind, cgroup),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                env=self._env(spec, runtime, handle.token),
                cwd=runtime,
                start_new_session=True,  # its own process group: stop() kills all of it
            )
        handle.ident = str(proc.pid)
        handle.extra["cgroup"] = cgroup
        self._procs[handle.extra["runtime"]] = proc
        wait_healthy(
            handle.url,
            uds=handle.uds,
            path=handle.spec.health_path,
            timeout_s=spec.startup_timeout_s,
            alive=lambda: proc.poll() is None,
            logs=lambda: self.logs(handle, 40),
            what=f"server {spec.name!r} (process {proc.pid})",
        )
        handle.started_s = time.monotonic() - started

    def _proc(self, handle: ServerHandle) -> subprocess.Popen[bytes] | None:
        return self._procs.get(handle.extra.get("runtime", ""))

    def alive(self, handle: ServerHandle) -> bool:
        proc = self._proc(handle)
        return proc is not None and proc.poll() is None

    def _kill(self, handle: ServerHandle) -> None:
        proc = self._proc(handle)
        if proc is not None and proc.poll() is None:
            _signal_tree(proc.pid, signal.SIGCONT)  # a stopped (hung) server cannot act on TERM
            _signal_tree(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                _signal_tree(proc.pid, signal.SIGKILL)
                proc.wait()
        cgroup = handle.extra.pop("cgroup", None)
        if isinstance(cgroup, _Cgroup):
            cgroup.remove()

    def kill(self, handle: ServerHandle, sig: int = signal.SIGKILL) -> None:
        """Send a signal to every process of the server (fault injection: SIGKILL, SIGSTOP)."""
        proc = self._proc(handle)
        if proc is None:
            raise HostingError(f"no process for server {handle.spec.name!r}")
        _signal_tree(proc.pid, sig)

    def restart(self, handle: ServerHandle) -> ServerHandle:
        self._kill(handle)
        self._launch(handle)
        handle.restarts += 1
        return handle

    def stop(self, handle: ServerHandle) -> None:
        self._kill(handle)
        runtime = handle.extra.get("runtime", "")
        self._procs.pop(runtime, None)
        self._handles.pop(runtime, None)
        if runtime:
            shutil.rmtree(runtime, ignore_errors=True)

    def logs(self, handle: ServerHandle, tail: int = 200) -> str:
        path = Path(handle.extra.get("runtime", "/nonexistent")) / "server.log"
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-tail:])
