"""A sandbox for model-written Python: every run is a fresh, locked-down child process.

The server process never evaluates the code. It starts `python -I -B _sandbox_runner.py` and
sends the code as data on stdin; the runner executes it. Layers, outermost first:

* isolation: bubblewrap when it works (new root holding only /usr, the Python installation and
  the workdir; no network, pid, ipc or uts namespace); else `unshare` (no network, private mount
  and pid namespaces, /root /home /tmp /run ... covered by empty tmpfs, the workdir mounted
  noexec); else nothing beyond the layers below.
* credentials: when the server runs as root, the child drops to nobody (65534) before any
  model code runs, so RLIMIT_NPROC applies and root-only files stay closed. Model code never
  runs as root: without isolation, when nobody cannot reach the Python installation, a run is
  refused unless TOOLGYM_SANDBOX_ALLOW_ROOT=1 says otherwise.
* rlimits: CPU, address space, processes, file size, open files, no core dumps; plus a wall
  clock timeout that kills the whole process group.
* an audit hook in the runner: no sockets, processes, ctypes, SQLite, or files outside the
  workdir and the Python installation.
* lifetime: each run's folder is named after its owner process (pid and start time); a folder
  whose owner died (kill -9) is removed by the next run. The child dies with the server (parent
  death signal), and on a timeout the wrapper's child is killed first so that the wrapper reaps
  it: no zombie is left behind.

Outcomes map onto typed errors: ToolTimeout for the time limits, ToolError for everything the
code did wrong (with the exception's last traceback line), InfraError when the sandbox broke.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import json
import logging
import os
import resource
import select
import shutil
import signal
import site
import stat
import struct
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from toolgym.cache import cache_root
from toolgym.errors import ArgumentError, InfraError, ToolError, ToolTimeout

log = logging.getLogger(__name__)

SandboxMode = Literal["solver", "plot"]
Isolation = Literal["auto", "bwrap", "unshare", "none"]

NOBODY_UID = 65534
NOBODY_GID = 65534
RUNNER_PATH = Path(__file__).resolve().with_name("_sandbox_runner.py")
# Shared with the runner (which cannot import this module).
RESULT_NAME = ".toolgym-result.json"
IMAGE_NAME = ".toolgym-figure.png"
EXIT_CPU = 90
EXIT_SETUP = 91
BWRAP_WORKDIR = "/sandbox"
MPL_DIRNAME = ".mplconfig"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Dirs the unshare path covers with an empty tmpfs (what the code needs is bound back).
HIDDEN_DIRS = ("/root", "/home", "/tmp", "/var/tmp", "/dev/shm", "/run")
PROBE_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class SandboxLimits:
    """Per-run limits. Defaults follow GTA's tools (20 s timeout) with room for sympy/matplotlib."""

    wall_timeout_s: float = 20.0
    cpu_time_s: int = 20
    memory_mb: int = 1024  # RLIMIT_AS; importing matplotlib + sympy maps about 320 MiB
    max_processes: int = 64  # RLIMIT_NPROC, counted per uid (all sandboxes share nobody's count)
    max_file_mb: int = 32  # RLIMIT_FSIZE: largest file the code (or its stdout) can write
    max_open_files: int = 128
    max_code_bytes: int = 100_000
    max_output_chars: int = 100_000
    max_image_bytes: int = 10_000_000
    max_log_bytes: int = 64_000  # captured stdout/stderr kept for diagnostics


@dataclass(frozen=True)
class SandboxResult:
    """`text` for solver runs (str of what `solution()` returned), `png` for plot runs."""

    mode: SandboxMode
    text: str | None
    png: bytes | None
    isolation: str
    elapsed_s: float
    stdout: str = ""


# ---- environment probing (once per process) -------------------------------------------------------
@functools.cache
def _is_root() -> bool:
    return os.geteuid() == 0


def _can_traverse(path: Path, uid: int, gid: int) -> bool:
    """Whether uid/gid could reach `path`: every ancestor (and the path) searchable by them."""
    for directory in [*reversed(path.parents), path]:
        try:
            st = directory.stat()
        except OSError:
            return False
        if st.st_uid == uid:
            bit = stat.S_IXUSR
        elif st.st_gid == gid:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if stat.S_ISDIR(st.st_mode) and not st.st_mode & bit:
            return False
    return True


def python_paths() -> list[Path]:
    """What the child's interpreter reads: prefixes, stdlib, site-packages, each both resolved
    and as this interpreter sees it. The child is started by the same unresolved path and finds
    its venv (pyvenv.cfg) next to it, so a venv reached through a symlinked folder must be there
    at that path too, not only at its real one."""
    raw: set[str] = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    raw.update(site.getsitepackages())
    paths = sysconfig.get_paths()
    raw.update(p for k in ("stdlib", "platstdlib", "purelib", "platlib") if (p := paths.get(k)))
    raw.add(os.path.dirname(os.path.realpath(sys.executable)))
    # a venv's bin dir holds symlinks into the base prefix: keep the unresolved path too
    raw.add(os.path.dirname(os.path.abspath(sys.executable)))
    dirs = [p for p in raw if p and os.path.isdir(p)]
    found = {Path(os.path.realpath(p)) for p in dirs} | {Path(os.path.abspath(p)) for p in dirs}
    return minimal_paths(found)


def minimal_paths(paths: Iterable[Path]) -> list[Path]:
    """Drop paths that lie under another path of the set."""
    ordered = sorted(set(paths), key=lambda p: len(p.parts))
    kept: list[Path] = []
    for p in ordered:
        if not any(p == k or k in p.parents for k in kept):
            kept.append(p)
    return kept


def _blocked_ancestor(path: Path, uid: int, gid: int) -> Path | None:
    """The highest proper ancestor of `path` that uid/gid cannot search (None: reachable)."""
    for ancestor in reversed(path.parents):
        if not _can_traverse(ancestor, uid, gid):
            return ancestor
    return None


def _run_probe(argv: list[str]) -> bool:
    try:
        proc = subprocess.run(
            argv, capture_output=True, timeout=PROBE_TIMEOUT_S, env={"PATH": "/usr/bin:/bin"}
        )
    except (OSError, subprocess.SubprocessError):
        return False
    if proc.returncode != 0:
        log.debug("sandbox probe %s failed: %s", argv[0], proc.stderr.decode(errors="replace")[-500:])
    return proc.returncode == 0


_LIBDIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def _bwrap_base(bwrap: str) -> list[str]:
    argv = [
        bwrap,
        "--die-with-parent",
        "--new-session",
        "--unshare-ipc",
        "--unshare-pid",
        # the runner is the namespace's init, bwrap's own child: bwrap reaps it before it exits
        # (its reaper init would be orphaned, a zombie, when bwrap exits first)
        "--as-pid-1",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "sandbox",
    ]
    if _is_root():
        # No user namespace: the runner becomes the real nobody (so RLIMIT_NPROC and file
        # ownership behave as on the host); it needs just these two capabilities to get there.
        argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        argv += ["--unshare-user"]
    argv += ["--ro-bind", "/usr", "/usr"]
    for d in _LIBDIRS:
        if os.path.islink(d):
            argv += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            argv += ["--ro-bind", d, d]
    argv += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    return argv


def _bwrap_parent_dirs(binds: list[Path]) -> list[str]:
    """`--dir` for the parents of bind targets: bwrap would create them 0700 (root's), and
    nobody could not reach e.g. a Python under /root/.pyenv."""
    parents = sorted({a for b in binds for a in b.parents if a != Path("/")}, key=lambda a: len(a.parts))
    bound = set(binds)
    argv: list[str] = []
    for d in parents:
        if d in bound or any(b in d.parents for b in bound) or d.is_relative_to("/usr"):
            continue
        argv += ["--dir", str(d)]
    return argv


_probe_lock = threading.Lock()


@functools.cache
def _bwrap_path() -> str | None:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None
    true = shutil.which("true") or "/bin/true"
    with _probe_lock:
        return bwrap if _run_probe([*_bwrap_base(bwrap), "--", true]) else None


def _unshare_flags() -> list[str]:
    flags = ["--net", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc", "--ipc", "--uts"]
    flags += ["--propagation", "private"]
    if not _is_root():
        flags = ["--user", "--map-root-user", *flags]
    return flags


@functools.cache
def _unshare_path() -> str | None:
    """`unshare` if it can give us network, mount and pid namespaces and mount a tmpfs there."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    probe_dir = tempfile.mkdtemp(prefix=_run_dir_prefix())
    try:
        # A constant snippet (not model code): the same mount(2) call the runner makes.
        snippet = (
            "import ctypes, os, sys\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "rc = libc.mount(b'tmpfs', os.fsencode(sys.argv[1]), b'tmpfs', ctypes.c_ulong(0), b'size=16k')\n"
            "sys.exit(0 if rc == 0 else 1)\n"
        )
        argv = [unshare, *_unshare_flags(), "--", sys.executable, "-I", "-S", "-c", snippet, probe_dir]
        with _probe_lock:
            return unshare if _run_probe(argv) else None
    finally:
        shutil.rmtree(probe_dir, ignore_errors=True)


def available_isolations() -> list[Isolation]:
    """The isolation backends that work on this host, strongest first ("none" always works)."""
    found: list[Isolation] = []
    if _bwrap_path():
        found.append("bwrap")
    if _unshare_path():
        found.append("unshare")
    found.append("none")
    return found


ISOLATION_ENV = "TOOLGYM_SANDBOX_ISOLATION"  # operators may pin what "auto" means


def resolve_isolation(isolation: Isolation = "auto") -> Literal["bwrap", "unshare", "none"]:
    if isolation == "auto":
        pinned = os.environ.get(ISOLATION_ENV, "auto")
        if pinned in ("bwrap", "unshare", "none"):
            return resolve_isolation(pinned)  # type: ignore[arg-type]
        best = available_isolations()[0]
        if best == "none":
            _warn_once("sandbox: neither bwrap nor unshare works here; relying on rlimits + audit hook only")
        return "bwrap" if best == "bwrap" else "unshare" if best == "unshare" else "none"
    if isolation == "bwrap" and not _bwrap_path():
        raise InfraError("sandbox: bubblewrap is not available on this host")
    if isolation == "unshare" and not _unshare_path():
        raise InfraError("sandbox: unshare (network/mount/pid namespaces) is not available on this host")
    return isolation


@functools.cache
def _warn_once(message: str) -> None:
    log.warning(message)


@functools.cache
def _drop_allowed_without_mounts() -> bool:
    """Without a mount namespace, nobody must be able to reach the interpreter by itself."""
    needed = [*python_paths(), RUNNER_PATH.parent, Path(tempfile.gettempdir())]
    return all(_can_traverse(p, NOBODY_UID, NOBODY_GID) for p in needed)


ALLOW_ROOT_ENV = "TOOLGYM_SANDBOX_ALLOW_ROOT"  # "1": the operator accepts model code running as root


def _drops_to_nobody(backend: str) -> bool:
    """Whether the child drops to nobody. Model code never runs as root unless the operator said
    so: without a mount namespace nobody may be unable to reach the interpreter, and then the
    run is refused (hand-made bytecode gets past any audit hook; only the uid stops it)."""
    if not _is_root():
        return False
    if backend != "none" or _drop_allowed_without_mounts():
        return True
    if os.environ.get(ALLOW_ROOT_ENV) == "1":
        _warn_once(f"sandbox: model code runs as root without isolation ({ALLOW_ROOT_ENV}=1)")
        return False
    raise InfraError(
        "sandbox: refusing to run model code as root without isolation (neither bwrap nor unshare "
        "works here and nobody cannot read the Python installation): install bubblewrap, run as a "
        f"non-root user, or set {ALLOW_ROOT_ENV}=1 to run it as root anyway"
    )


# ---- run folders: named after their owner, so a kill -9 leaves nothing for long ---------------
RUN_DIR_PREFIX = "toolgym-sbx-"


def _start_ticks(pid: int) -> str | None:
    """A process's start time (clock ticks since boot): with the pid, names one process for good."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _run_dir_prefix() -> str:
    pid = os.getpid()
    return f"{RUN_DIR_PREFIX}{pid}-{_start_ticks(pid) or 0}-"


def _owner_alive(name: str) -> bool:
    """Whether the process named in a run folder's name (`toolgym-sbx-PID-TICKS-...`) still runs."""
    try:
        pid_text, ticks, _ = name[len(RUN_DIR_PREFIX) :].split("-", 2)
        pid = int(pid_text)
    except ValueError:
        return True  # not one of ours: leave it
    return _start_ticks(pid) == ticks


def _remove_stale_run_dirs() -> None:
    """Remove the run folders of dead owners (a server killed mid-run cannot clean up itself)."""
    try:
        entries = list(os.scandir(tempfile.gettempdir()))
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(RUN_DIR_PREFIX) or _owner_alive(entry.name):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
            shutil.rmtree(entry.path, ignore_errors=True)


# ---- matplotlib font cache --------------------------------------------------------------------------
_mpl_lock = threading.Lock()


def mpl_cache_dir() -> Path:
    return cache_root() / "mplconfig"


def _fontlists(directory: Path) -> list[Path]:
    return sorted(directory.glob("fontlist-v*.json")) if directory.is_dir() else []


def warm_mpl_cache() -> list[Path]:
    """Build matplotlib's font list once into the shared cache dir (a child importing matplotlib
    with MPLCONFIGDIR there); every Plot run gets a copy instead of rescanning the fonts."""
    directory = mpl_cache_dir()
    try:
        version = importlib.metadata.version("matplotlib")
    except importlib.metadata.PackageNotFoundError:
        return []
    marker = directory / "matplotlib-version"
    with _mpl_lock:
        found = _fontlists(directory)
        if found and marker.is_file() and marker.read_text().strip() == version:
            return found
        # first use, or another matplotlib: a stale list would make every run rebuild its own
        for stale in found:
            stale.unlink(missing_ok=True)
        directory.mkdir(parents=True, exist_ok=True)
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(directory),
            "MPLCONFIGDIR": str(directory),
            "MPLBACKEND": "Agg",
        }
        try:
            subprocess.run(
                [sys.executable, "-I", "-c", "import matplotlib.font_manager"],
                env=env,
                capture_output=True,
                timeout=300,
                check=True,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            _warn_once(f"sandbox: could not warm the matplotlib font cache: {exc}")
            return []
        marker.write_text(version)
        return _fontlists(directory)


# ---- one run --------------------------------------------------------------------------------------
def _rlimits(limits: SandboxLimits) -> list[tuple[int, tuple[int, int]]]:
    mem = limits.memory_mb * 1024 * 1024
    fsize = limits.max_file_mb * 1024 * 1024
    return [
        (resource.RLIMIT_CPU, (limits.cpu_time_s, limits.cpu_time_s + 1)),
        (resource.RLIMIT_AS, (mem, mem)),
        (resource.RLIMIT_NPROC, (limits.max_processes, limits.max_processes)),
        (resource.RLIMIT_FSIZE, (fsize, fsize)),
        (resource.RLIMIT_NOFILE, (limits.max_open_files, limits.max_open_files)),
        (resource.RLIMIT_CORE, (0, 0)),
    ]


PR_SET_PDEATHSIG = 1


@functools.cache
def _prctl() -> Callable[..., int] | None:
    """libc's prctl, looked up once here: the child between fork and exec must not load anything."""
    try:
        import ctypes

        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (ImportError, OSError, AttributeError):
        return None
    return prctl


def dies_with_parent() -> Callable[[], None]:
    """A `preexec_fn` for subprocess.Popen that has the child killed (SIGKILL) when the process
    that started it dies, a kill -9 included (Linux's parent death signal; elsewhere nothing).
    It runs between fork and exec, so it only calls the prctl looked up here beforehand."""
    prctl = _prctl()
    kill = int(signal.SIGKILL)

    def apply() -> None:
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, kill, 0, 0, 0)

    return apply


def _preexec(rlimits: list[tuple[int, tuple[int, int]]]) -> Callable[[], None]:
    # Runs between fork and exec: setrlimit calls on prebuilt tuples and one prctl, nothing that
    # locks. The parent death signal ends the child (and through unshare --kill-child or bwrap
    # --die-with-parent, the sandbox) with the server: a kill -9 of the server leaves no runner.
    die_with_parent = dies_with_parent()

    def apply() -> None:
        die_with_parent()
        for which, value in rlimits:
            resource.setrlimit(which, value)

    return apply


def _child_env(inner_workdir: str) -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": inner_workdir,
        "TMPDIR": inner_workdir,
        "MPLCONFIGDIR": f"{inner_workdir}/{MPL_DIRNAME}",
        "MPLBACKEND": "Agg",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        # one BLAS thread: threads count against RLIMIT_NPROC and address space
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "NUMEXPR_NUM_THREADS": "1",
    }


def _mount_plan(workdir: Path, drop: bool) -> dict[str, Any]:
    keep = minimal_paths([*python_paths(), RUNNER_PATH.parent])  # stage 1 re-executes the runner
    hide = {Path(h) for h in HIDDEN_DIRS if os.path.isdir(h) and not os.path.islink(h)}
    if drop:
        # e.g. a pyenv Python under /root (0700): cover the blocking dir, bind the Python back
        for p in [*keep, workdir]:
            if not any(p == h or h in p.parents for h in hide):
                blocked = _blocked_ancestor(p, NOBODY_UID, NOBODY_GID)
                if blocked is not None:
                    hide.add(blocked)
    hidden = minimal_paths(hide)
    # keep only what a hide covers (the rest is visible already); never re-bind a covered dir's parent
    keep = [p for p in keep if any(h in p.parents for h in hidden)]
    if any(p in hidden or any(p in h.parents for h in hidden) for p in [*keep, workdir]):
        raise InfraError("sandbox: a needed path is itself one of the hidden dirs")
    return {"hide": [str(h) for h in hidden], "keep": [str(p) for p in keep], "workdir": str(workdir)}


KILL_GRACE_S = 2.0  # for a wrapper (unshare, bwrap) to reap its killed child and exit


def _wait_exit(pid: int, pidfd: int | None, deadline: float) -> bool:
    """Wait until `pid` (our child) has exited, leaving it unreaped; False at the deadline."""
    while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        if pidfd is not None:
            select.select([pidfd], [], [], remaining)
        else:
            time.sleep(min(remaining, 0.02))
    return True


def _children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError, ValueError):
                found += [int(c) for c in (task / "children").read_text().split()]
    return found


def _kill_run(pid: int, pidfd: int | None) -> None:
    """Kill what is left of a run. The wrapper's child (the init of unshare's or bwrap's pid
    namespace, where the code ignores SIGTERM or not) goes first, so that the wrapper reaps it
    and exits; killed together, the child would be orphaned and linger as a zombie. Then the
    process group, for whatever else is left."""
    children = _children(pid)
    for child in children:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(child, signal.SIGKILL)
    if children:
        _wait_exit(pid, pidfd, time.monotonic() + KILL_GRACE_S)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _feed_and_wait(proc: subprocess.Popen[bytes], payload: bytes, timeout_s: float) -> tuple[bool, float]:
    """Send the config, wait for the child to exit or the deadline, then kill what is left.
    The leader is reaped only after the kill, so its pgid cannot have been reused.
    Returns (timed out, CPU seconds the child and its reaped descendants used)."""

    def feed() -> None:
        # stdin stays open until the run is over: the runner ends itself at its end of file
        assert proc.stdin is not None
        try:
            proc.stdin.write(payload + b"\n")
            proc.stdin.flush()
        except OSError:  # the child died before reading its config
            pass

    writer = threading.Thread(target=feed, name="sandbox-stdin", daemon=True)
    writer.start()
    deadline = time.monotonic() + timeout_s
    timed_out = False
    try:
        pidfd: int | None = os.pidfd_open(proc.pid)
    except OSError:
        pidfd = None
    try:
        timed_out = not _wait_exit(proc.pid, pidfd, deadline)
    finally:
        _kill_run(proc.pid, pidfd)
        if pidfd is not None:
            os.close(pidfd)
        cpu = 0.0
        try:
            # wait4, not proc.wait(): its rusage covers the runner behind unshare/bwrap too
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            cpu = usage.ru_utime + usage.ru_stime
        except ChildProcessError:
            proc.wait()
        writer.join(timeout=1.0)
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
    return timed_out, cpu


def _read_regular(path: Path, cap: int) -> bytes | None:
    """Read a file the child may have tampered with: no symlinks, no FIFOs, at most cap bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            return None
        chunks: list[bytes] = []
        total = 0
        while total <= cap:
            chunk = os.read(fd, min(1 << 20, cap + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _tail(path: Path, cap: int) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - cap))
            return fh.read().decode(errors="replace")
    except OSError:
        return ""


def _png_size(data: bytes) -> tuple[int, int] | None:
    if len(data) < 24 or not data.startswith(PNG_SIGNATURE) or data[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


def _signal_name(returncode: int) -> str:
    num = -returncode if returncode < 0 else returncode - 128
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"exit status {returncode}"


def run_python(
    code: str,
    *,
    mode: SandboxMode,
    limits: SandboxLimits = SandboxLimits(),  # frozen, so a shared default is safe
    isolation: Isolation = "auto",
) -> SandboxResult:
    """Run `code` (Markdown fences allowed) in a fresh sandboxed process and call its `solution()`.

    Raises ArgumentError (code too large), ToolTimeout, ToolError or InfraError."""
    size = len(code.encode("utf-8", errors="replace"))
    if size > limits.max_code_bytes:
        raise ArgumentError(f"code too large: {size} bytes (limit {limits.max_code_bytes})")
    backend = resolve_isolation(isolation)
    fontlists = warm_mpl_cache() if mode == "plot" else []
    drop = _drops_to_nobody(backend)
    _remove_stale_run_dirs()

    root = Path(tempfile.mkdtemp(prefix=_run_dir_prefix()))
    try:
        work = _make_workdir(root, fontlists, drop)
        inner = BWRAP_WORKDIR if backend == "bwrap" else str(work)
        config: dict[str, Any] = {
            "mode": mode,
            "code": code,
            "workdir": inner,
            "drop_uid": NOBODY_UID if drop else None,
            "drop_gid": NOBODY_GID if drop else None,
            "mounts": _mount_plan(work, drop) if backend == "unshare" else None,
            "max_output_chars": limits.max_output_chars,
            "max_image_bytes": limits.max_image_bytes,
        }
        run = _run_child(_child_argv(backend, work), root, work, inner, config, limits)
        if run.timed_out:
            raise ToolTimeout(f"the code exceeded the time limit of {limits.wall_timeout_s:g} s")
        raw = _read_regular(work / RESULT_NAME, 4 * limits.max_output_chars + 4096)
        if raw is None:
            raise _no_result_error(run, limits)
        result = _parse_result(raw)
        if not result.get("ok"):
            raise _error_for(result, limits)
        return _sandbox_result(mode, result, work, run, limits, backend)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _make_workdir(root: Path, fontlists: list[Path], drop: bool) -> Path:
    """The run's work/ under `root`, with matplotlib's font lists in its config dir; nobody's
    when the child drops to nobody."""
    # root: 0711 and root's, so nobody can reach work/ but not list or touch the logs next to it
    root.chmod(0o711)
    work = root / "work"
    work.mkdir(mode=0o700)
    mpl = work / MPL_DIRNAME
    mpl.mkdir(mode=0o700)
    for fl in fontlists:
        shutil.copyfile(fl, mpl / fl.name)
    if drop:
        for p in [work, mpl, *mpl.iterdir()]:
            os.chown(p, NOBODY_UID, NOBODY_GID)
    return work


def _child_argv(backend: str, work: Path) -> list[str]:
    """The runner's command line inside the isolation `backend` (bwrap, unshare or none)."""
    python = [sys.executable, "-I", "-B", str(RUNNER_PATH)]
    if backend == "bwrap":
        bwrap = _bwrap_path()
        assert bwrap is not None
        binds = [p for p in python_paths() if not p.is_relative_to("/usr")] + [RUNNER_PATH]
        argv = [*_bwrap_base(bwrap), *_bwrap_parent_dirs(binds)]
        for p in binds:
            argv += ["--ro-bind", str(p), str(p)]
        argv += ["--bind", str(work), BWRAP_WORKDIR, "--chdir", BWRAP_WORKDIR, "--", *python]
    elif backend == "unshare":
        unshare = _unshare_path()
        assert unshare is not None
        argv = [unshare, *_unshare_flags(), "--", *python]
    else:
        argv = python
    return argv


@dataclass(frozen=True)
class _ChildRun:
    """How the child process ended; its stdout and stderr files are beside work/."""

    returncode: int
    timed_out: bool
    cpu_used: float  # seconds of the child and its reaped descendants
    elapsed: float  # wall seconds from its start to its end
    stdout_path: Path
    stderr_path: Path


def _run_child(
    argv: list[str], root: Path, work: Path, inner: str, config: dict[str, Any], limits: SandboxLimits
) -> _ChildRun:
    """Start the child in `work` under the rlimits, send it the config and wait for its end."""
    stdout_path, stderr_path = root / "stdout", root / "stderr"
    start = time.monotonic()
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=err,
                cwd=work,
                env=_child_env(inner),
                close_fds=True,
                process_group=0,
                preexec_fn=_preexec(_rlimits(limits)),
            )
        except OSError as exc:
            raise InfraError(f"sandbox: could not start the child: {exc}") from None
        timed_out, cpu_used = _feed_and_wait(proc, json.dumps(config).encode(), limits.wall_timeout_s)
    elapsed = time.monotonic() - start
    return _ChildRun(proc.returncode, timed_out, cpu_used, elapsed, stdout_path, stderr_path)


def _no_result_error(run: _ChildRun, limits: SandboxLimits) -> ToolTimeout | InfraError | ToolError:
    """Why a child that wrote no result ended: a CPU limit, a failed setup, a crash."""
    rc = run.returncode
    # SIGXCPU ends it through our handler (EXIT_CPU); a code that ignores SIGXCPU gets
    # SIGKILL at the hard limit, which the wrappers report in their own ways: go by usage.
    killed = rc in (-signal.SIGKILL, 128 + signal.SIGKILL)
    if (
        rc in (EXIT_CPU, -signal.SIGXCPU)
        or run.cpu_used >= limits.cpu_time_s - 0.05
        # bwrap's init reaps the runner, so its rusage never reaches us: a SIGKILL after
        # at least the CPU budget in wall time is the hard CPU limit
        or (killed and run.elapsed >= limits.cpu_time_s)
    ):
        return ToolTimeout(f"the code exceeded the CPU time limit of {limits.cpu_time_s} s")
    if rc == EXIT_SETUP:
        return InfraError(f"sandbox: setup failed: {_tail(run.stderr_path, 500).strip()}")
    if rc == 0:
        return ToolError("the code ended the process before solution() returned")
    detail = _tail(run.stderr_path, 300).strip().splitlines()
    hint = f": {detail[-1]}" if detail else ""
    return ToolError(
        f"the code's process died ({_signal_name(rc)}); it may have hit the memory limit "
        f"of {limits.memory_mb} MiB{hint}"
    )


def _sandbox_result(
    mode: SandboxMode,
    result: dict[str, Any],
    work: Path,
    run: _ChildRun,
    limits: SandboxLimits,
    backend: str,
) -> SandboxResult:
    """The solver's text or the plot's PNG (in work/, beside the result), checked."""
    stdout = _tail(run.stdout_path, limits.max_log_bytes)
    if mode == "solver":
        text = result.get("text")
        if not isinstance(text, str):
            raise ToolError("sandbox: malformed result")
        if len(text) > limits.max_output_chars:
            raise ToolError(f"output too large: {len(text)} characters (limit {limits.max_output_chars})")
        return SandboxResult(
            mode=mode, text=text, png=None, isolation=backend, elapsed_s=run.elapsed, stdout=stdout
        )
    png = _read_regular(work / IMAGE_NAME, limits.max_image_bytes)
    if png is None or len(png) > limits.max_image_bytes:
        raise ToolError(
            f"output too large or missing: the PNG must be a file under {limits.max_image_bytes} bytes"
        )
    if _png_size(png) is None:
        raise ToolError("sandbox: the figure was not saved as a PNG")
    return SandboxResult(
        mode=mode, text=None, png=png, isolation=backend, elapsed_s=run.elapsed, stdout=stdout
    )


def _parse_result(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError:
        raise ToolError("sandbox: malformed result (output too large?)") from None
    if not isinstance(value, dict):
        raise ToolError("sandbox: malformed result")
    return value


def _error_for(result: dict[str, Any], limits: SandboxLimits) -> ToolError | ToolTimeout:
    kind = str(result.get("kind", "error"))
    message = str(result.get("message", ""))[:2000]
    if kind == "memory":
        return ToolError(f"the code exceeded the memory limit of {limits.memory_mb} MiB ({message})")
    if kind == "cpu":
        return ToolTimeout(f"the code exceeded the CPU time limit of {limits.cpu_time_s} s")
    if kind == "denied":
        return ToolError(message if message.startswith("sandbox:") else f"sandbox: {message} denied")
    return ToolError(message or "the code failed")
