"""The child side of toolservers/sandbox.py: runs one piece of model-written Python code.

Standalone on purpose (stdlib only, never imports toolgym): it runs inside the sandbox, where the
project is not readable. Two stages, two interpreters:

  setup  `python -I -B _sandbox_runner.py`, config (one JSON line) on stdin, trusted code only: apply the
         mount plan (unshare path: hide /root, /tmp, ... and bind back what Python needs), set
         no_new_privs, drop to the unprivileged uid/gid when started as root, then exec
  run    `python -I -B _sandbox_runner.py --run FD`: a fresh interpreter that never loads ctypes
         (in 3.11 calls through ctypes' prebuilt function pointers are not audited, and once
         _ctypes is loaded its types stay reachable through object.__subclasses__()). It stubs
         the few primitives the audit hook cannot see, installs the hook (no network, processes,
         ctypes, SQLite, or files outside the workdir and the Python installation), imports what
         the mode needs, execs the code in fresh globals, calls `solution()` and writes the
         result JSON into the workdir.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import signal
import stat
import sys
import threading
import traceback
from collections.abc import Callable
from types import TracebackType
from typing import Any, NoReturn

RESULT_NAME = ".toolgym-result.json"
IMAGE_NAME = ".toolgym-figure.png"
CODE_FILENAME = "<code>"
EXIT_CPU = 90  # SIGXCPU arrived: the CPU-time limit was hit
EXIT_SETUP = 91  # the sandbox itself could not be set up
EXIT_ORPHANED = 92  # the server died: nobody waits for the result

# Headers GTA's runtime puts in front of the code (agentlego Solver/Plot `GenericRuntime(headers=...)`).
HEADERS = {"solver": "from sympy import symbols, Eq, solve\n", "plot": "import matplotlib.pyplot as plt\n"}

# Linux mount(2) flags.
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
PR_SET_NO_NEW_PRIVS = 38
PR_SET_PDEATHSIG = 1
PYC_HEADER_BYTES = 16  # importlib's header in front of a .pyc's marshalled code
RECENT_PYCS = 8  # .pyc files remembered for marshal.loads (imports on several threads)

FONT_DIRS = ("/usr/share/fonts", "/usr/local/share/fonts", "/usr/share/X11/fonts", "/usr/X11R6/lib/X11/fonts")
READ_ONLY_FILES = ("/dev/urandom", "/dev/random", "/dev/zero")
READ_WRITE_FILES = ("/dev/null",)

# Events refused outright, whatever their arguments.
DENIED_EVENTS = frozenset(
    {
        "os.system",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.fork",
        "os.forkpty",
        "subprocess.Popen",
        "pty.spawn",
        "os.startfile",
        "os.kill",
        "os.killpg",
        "signal.pthread_kill",
        "os.chdir",  # the workdir stays the cwd, so relative paths resolve where the hook thinks
        "os.chroot",
        "os.link",  # no links: a link is how a checked path would later point elsewhere
        "os.symlink",
        "sys.addaudithook",
        "sys.settrace",  # a tracer can rewrite the hook's frame locals
        "sys.setprofile",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "code.__new__",  # hand-made bytecode can read and write arbitrary memory
        "marshal.load",  # ... and so can marshalled bytecode (marshal.loads: see the hook)
        # SQLite opens files the hook never hears of (ATTACH, VACUUM INTO, file: URIs)
        "sqlite3.connect",
        "sqlite3.enable_load_extension",
        "sqlite3.load_extension",
        "webbrowser.open",
        "os.add_dll_directory",
    }
)
DENIED_PREFIXES = (
    "socket.",
    "ctypes.",
    "ftplib.",
    "smtplib.",
    "poplib.",
    "imaplib.",
    "nntplib.",
    "telnetlib.",
    "http.client.",
    "urllib.",
    "_xxsubinterpreters.",
)
# Modules whose import would hand out an unaudited primitive (fork_exec, raw FFI, subinterpreters).
DENIED_IMPORTS = (
    "_posixsubprocess",
    "ctypes",
    "_ctypes",
    "_xxsubinterpreters",
    "_xxinterpchannels",
    "_testcapi",
    "_testinternalcapi",
    "_testmultiphase",
    "posix",
    "_imp",
)
READ_PATH_EVENTS = frozenset({"os.listdir", "os.scandir", "os.getxattr", "os.listxattr"})
# Path-changing events and the index of their dir_fd argument (-1: it has none).
WRITE_PATH_EVENTS = (
    ("os.mkdir", 2),
    ("os.remove", 1),
    ("os.rmdir", 1),
    ("os.chmod", 2),
    ("os.chown", 3),
    ("os.utime", 3),
    ("os.truncate", -1),
    ("os.setxattr", -1),
    ("os.removexattr", -1),
    ("os.chflags", -1),
    ("os.lchflags", -1),
)
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


class SandboxDenied(PermissionError):
    """Raised by the audit hook. A PermissionError, so libraries that probe (`except OSError`)
    degrade gracefully instead of crashing."""


class SandboxImportDenied(ImportError):
    """Raised for refused imports: an ImportError, so optional imports fall back."""


class SandboxAttributeDenied(AttributeError):
    """Raised by the ctypes stand-in: an AttributeError, so `hasattr` probes just say no."""


DENIED_TYPES = (SandboxDenied, SandboxImportDenied, SandboxAttributeDenied)


class _Outcome(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


# ---- code handling ------------------------------------------------------------------------------
def strip_fences(command: str) -> str:
    """GTA/agentlego's rule: the first ```python block, else the first ``` block, else the text."""
    if "```python" in command:
        return command.split("```python")[1].split("```")[0]
    if "```" in command:
        return command.split("```")[1].split("```")[0]
    return command


def _short(text: str, limit: int = 2000) -> str:
    text = text.replace(CODE_FILENAME, "code")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe_exception(exc: BaseException) -> str:
    """The last traceback line (`Type: message`), plus the line of the code where it happened."""
    try:
        last = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()[-1]
    except Exception:
        last = type(exc).__name__
    line: int | None = getattr(exc, "lineno", None) if isinstance(exc, SyntaxError) else None
    tb: TracebackType | None = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == CODE_FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    suffix = f" (line {line} of the code)" if line is not None and not isinstance(exc, SyntaxError) else ""
    return _short(last + suffix)


# ---- sandbox setup (trusted, before the hook) ---------------------------------------------------
def _libc() -> Any:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _mount(
    libc: Any, source: str | None, target: str, fstype: str | None, flags: int, data: str | None
) -> None:
    import ctypes

    enc = os.fsencode
    rc = libc.mount(
        enc(source) if source is not None else None,
        enc(target),
        enc(fstype) if fstype is not None else None,
        ctypes.c_ulong(flags),
        enc(data) if data is not None else None,
    )
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} -> {target}: {os.strerror(err)}")


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def apply_mount_plan(plan: dict[str, Any]) -> None:
    """Runs as root in a fresh mount namespace: cover `hide` dirs with empty tmpfs, then bind
    `keep` paths (opened beforehand, so still reachable) back at their own paths."""
    libc = _libc()
    os.umask(0o022)
    hide: list[str] = plan["hide"]
    keep: list[str] = plan["keep"]
    workdir: str = plan["workdir"]
    targets = [*keep, workdir]
    fds = {p: os.open(p, os.O_PATH | os.O_CLOEXEC) for p in targets}
    hidden: list[str] = []
    for h in hide:
        try:
            _mount(libc, "tmpfs", h, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755,size=1m")
        except OSError as exc:  # e.g. refused in a user namespace: that dir just stays visible
            sys.stderr.write(f"sandbox: could not hide {h}: {exc}\n")
            continue
        hidden.append(h)
    for p in targets:
        if not any(_under(p, h) for h in hidden) and p != workdir:
            continue
        if stat.S_ISDIR(os.stat(f"/proc/self/fd/{fds[p]}").st_mode):
            os.makedirs(p, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(p), exist_ok=True)
            if not os.path.exists(p):
                os.close(os.open(p, os.O_WRONLY | os.O_CREAT, 0o644))
        _mount(libc, f"/proc/self/fd/{fds[p]}", p, None, MS_BIND | MS_REC, None)
        # Best effort: read-only Python, no-exec workdir (a written .so cannot be loaded). In a
        # user namespace the original mount's locked flags may refuse the remount; keep going.
        extra = MS_NOEXEC if p == workdir else MS_RDONLY
        with contextlib.suppress(OSError):
            _mount(libc, None, p, None, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | extra, None)
    for fd in fds.values():
        os.close(fd)


def no_new_privs() -> None:
    import ctypes

    libc = _libc()
    libc.prctl(
        ctypes.c_int(PR_SET_NO_NEW_PRIVS),
        ctypes.c_ulong(1),
        ctypes.c_ulong(0),
        ctypes.c_ulong(0),
        ctypes.c_ulong(0),
    )


def drop_privileges(uid: int, gid: int) -> None:
    import ctypes

    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)  # from root to non-root: permitted/effective/ambient caps go too
    if os.getuid() != uid or os.geteuid() != uid or os.getgid() != gid:
        raise OSError("could not drop privileges")

    # bwrap hands over a full inheritable set; empty every set (lowering needs no privilege).
    class CapHeader(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class CapData(ctypes.Structure):
        _fields_ = [
            ("effective", ctypes.c_uint32),
            ("permitted", ctypes.c_uint32),
            ("inheritable", ctypes.c_uint32),
        ]

    header = CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (CapData * 2)()
    if _libc().capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def die_with_parent(parent: int) -> None:
    """The parent death signal again: dropping privileges cleared the one the server set."""
    import ctypes

    libc = _libc()
    libc.prctl(ctypes.c_int(PR_SET_PDEATHSIG), ctypes.c_ulong(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(EXIT_SETUP)


def read_roots() -> tuple[str, ...]:
    """Directories the code may read: the Python installation, site-packages, matplotlib data, fonts."""
    import site
    import sysconfig

    roots: set[str] = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    roots.update(site.getsitepackages())
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(name)
        if path:
            roots.add(path)
    roots.update(FONT_DIRS)
    roots.add("/usr/share/zoneinfo")
    resolved = {os.path.realpath(r) for r in roots if r and os.path.isabs(r)}
    resolved.update(r for r in roots if r and os.path.isabs(r))
    return tuple(sorted(resolved))


def preimport(mode: str) -> None:
    """What the mode's header needs, imported under the hook (so numpy's optional ctypes import
    is refused and falls back)."""
    if mode == "plot":
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.figure
        import matplotlib.pyplot
    else:
        import sympy  # noqa: F401


def stub_unaudited() -> None:
    """Primitives the audit hook never hears about: fork+exec in one C call, anonymous memory
    files (loadable as native code), pidfds (signals to other processes). Their modules cannot
    be re-imported under the hook, so the stubs stick. subprocess is imported here, before the
    hook, because its import needs _posixsubprocess; then _posixsubprocess leaves sys.modules,
    so that `import _posixsubprocess` reaches the hook, which refuses it."""
    import subprocess  # noqa: F401

    def denied(what: str) -> Callable[..., Any]:
        def stub(*_args: object, **_kwargs: object) -> Any:
            raise SandboxDenied(f"sandbox: {what} denied")

        return stub

    originals: list[tuple[object, str]] = []
    posixsubprocess = sys.modules.get("_posixsubprocess")
    if posixsubprocess is not None:
        originals.append((posixsubprocess.fork_exec, "process creation (fork_exec)"))
    for module, name in ((os, "memfd_create"), (os, "pidfd_open"), (signal, "pidfd_send_signal")):
        if hasattr(module, name):
            originals.append((getattr(module, name), name))
    # Replace every module-level reference (subprocess keeps `_fork_exec`, os re-exports posix's).
    for module_obj in list(sys.modules.values()):
        namespace = getattr(module_obj, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for attr, value in list(namespace.items()):
            for original, what in originals:
                if value is original:
                    namespace[attr] = denied(what)
    sys.modules.pop("_posixsubprocess", None)


def install_ctypes_stand_in(denials: list[str]) -> None:
    """An inert `ctypes` in sys.modules: sizes of the C types and nothing else. sympy needs
    `sizeof(c_long)` at import; numpy imports ctypes optionally. Foreign calls are impossible."""
    import struct
    import types

    module = types.ModuleType("ctypes", "sandbox stand-in for ctypes: C type sizes only")
    codes = {
        "c_bool": "?",
        "c_char": "c",
        "c_byte": "b",
        "c_ubyte": "B",
        "c_short": "h",
        "c_ushort": "H",
        "c_int": "i",
        "c_uint": "I",
        "c_long": "l",
        "c_ulong": "L",
        "c_longlong": "q",
        "c_ulonglong": "Q",
        "c_size_t": "N",
        "c_ssize_t": "n",
        "c_float": "f",
        "c_double": "d",
        "c_void_p": "P",
        "c_char_p": "P",
        "c_wchar_p": "P",
    }
    for name, code in codes.items():
        setattr(
            module,
            name,
            type(name, (), {"_type_": code, "_size_": struct.calcsize(code), "__module__": "ctypes"}),
        )

    def sizeof(obj: object) -> int:
        size = getattr(obj, "_size_", None)
        if not isinstance(size, int):
            raise TypeError("this type has no size")
        return size

    def missing(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        msg = f"sandbox: ctypes ({name}) denied"
        denials.append(msg)
        raise SandboxAttributeDenied(msg)

    module.sizeof = sizeof  # type: ignore[attr-defined]
    module.__getattr__ = missing  # type: ignore[method-assign]
    sys.modules["ctypes"] = module


# ---- the audit hook ------------------------------------------------------------------------------
# The hook and its helpers below use only their parameters and default arguments: a monkeypatched
# builtin or module function (`builtins.isinstance = ...`, `os.lstat = ...`) cannot change a
# verdict, nor can rebinding this module's names (the code reaches them: `import __main__`), as
# each function holds its own references. Rebinding or deleting a function's code or defaults is
# an audited event, which the hook denies for itself and every helper (HOOK_HELPERS). No helper is
# a closure: a closure's cells can be rebound without an audit event.
def _hook_deny(msg: str, denials: list[str], exc: type[BaseException] = SandboxDenied) -> NoReturn:
    denials.append(msg)
    raise exc(msg)


def _hook_refuse(event: str, denials: list[str], _deny: Callable[..., NoReturn] = _hook_deny) -> NoReturn:
    """An event refused outright, named by what it does."""
    what = "network access" if event.startswith("socket.") else "operation"
    if event in ("os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty") or (
        event in ("subprocess.Popen", "pty.spawn")
    ):
        what = "process creation"
    elif event.startswith("ctypes."):
        what = "ctypes"
    _deny(f"sandbox: {what} ({event}) denied", denials)


def _hook_fsdecode(
    raw: Any,
    _fspath: Callable[[Any], Any] = os.fspath,
    _isinstance: Callable[[object, Any], bool] = isinstance,
    _bytes: type[bytes] = bytes,
    _decode: Callable[[bytes, str, str], str] = bytes.decode,
    _plain: Callable[[str], str] = str.__str__,
    _encoding: str = sys.getfilesystemencoding(),
    _errors: str = sys.getfilesystemencodeerrors(),
) -> str:
    """os.fsdecode on the hook's own references, as a plain str. os.fsdecode itself looks up
    `fspath` and `isinstance` among os's globals and the builtins, which the code can rebind, and
    a str subclass of the code's can answer `==`, `startswith` or `split` as it likes."""
    raw = _fspath(raw)
    return _decode(raw, _encoding, _errors) if _isinstance(raw, _bytes) else _plain(raw)


def _hook_resolve(
    raw: Any,
    workdir: str,
    _isinstance: Callable[[object, Any], bool] = isinstance,
    _int: type[int] = int,
    _fsdecode: Callable[[Any], str] = _hook_fsdecode,
    _lstat: Callable[[str], os.stat_result] = os.lstat,
    _readlink: Callable[[str], str] = os.readlink,
    _islnk: Callable[[int], bool] = stat.S_ISLNK,
) -> str | None:
    """Absolute, symlink-free path (None: not a path, e.g. an fd). Relative paths are relative
    to the workdir: chdir is denied, so that is the process's cwd."""
    if _isinstance(raw, _int):
        return None
    path = _fsdecode(raw)
    if not path.startswith("/"):
        path = workdir + "/" + path
    pending = path.split("/")
    pending.reverse()
    parts: list[str] = []
    hops = 0
    while pending:
        part = pending.pop()
        if part == "" or part == ".":
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        candidate = "/" + "/".join([*parts, part])
        try:
            st = _lstat(candidate)
        except OSError:
            parts.append(part)
            continue
        if _islnk(st.st_mode):
            hops += 1
            if hops > 40:
                return "/"  # a loop; "/" is never allowed
            target = _readlink(candidate)
            if target.startswith("/"):
                parts = []
            more = target.split("/")
            more.reverse()
            pending.extend(more)
            continue
        parts.append(part)
    return "/" + "/".join(parts)


def _hook_inside(path: str, bases: tuple[str, ...]) -> bool:
    # a loop, not any(): builtins can be monkeypatched by the code
    for base in bases:  # noqa: SIM110
        if path == base or path.startswith(base + "/"):
            return True
    return False


def _hook_check(
    raw: Any,
    write: bool,
    dir_fd: Any,
    workdir: str,
    roots: tuple[str, ...],
    denials: list[str],
    _resolve: Callable[[Any, str], str | None] = _hook_resolve,
    _inside: Callable[[str, tuple[str, ...]], bool] = _hook_inside,
    _deny: Callable[[str, list[str]], NoReturn] = _hook_deny,
    _repr: Callable[[object], str] = repr,
    _fsdecode: Callable[[Any], str] = _hook_fsdecode,
    _isinstance: Callable[[object, Any], bool] = isinstance,
    _str: type[str] = str,
    _bytes: type[bytes] = bytes,
    _int: type[int] = int,
    _ro_files: tuple[str, ...] = READ_ONLY_FILES,
    _rw_files: tuple[str, ...] = READ_WRITE_FILES,
) -> None:
    """Deny reading `raw` outside the workdir, the read roots and the device files, and writing
    it outside the workdir (or a shared library in it)."""
    if not (_isinstance(raw, _str) or _isinstance(raw, _bytes) or _isinstance(raw, _int)):
        # a path object: the operation reads its __fspath__ on its own, which may answer otherwise
        _deny("sandbox: a path given as an object, not a str, denied", denials)
    path = _resolve(raw, workdir)
    if path is None:
        return
    text = _fsdecode(raw)
    shown = _repr(text)
    # -1: no dir_fd; anything else may anchor a relative path somewhere the hook cannot see
    if dir_fd != -1 and dir_fd is not None and not text.startswith("/"):
        _deny(f"sandbox: relative path with a directory fd ({shown}) denied", denials)
    if write:
        if _inside(path, (workdir,)) or path in _rw_files:
            if path.endswith(".so"):
                _deny(f"sandbox: writing a shared library ({shown}) denied", denials)
            return
        _deny(f"sandbox: writing {shown} denied", denials)
    if _inside(path, (workdir,)) or _inside(path, roots) or path in _ro_files or path in _rw_files:
        return
    _deny(f"sandbox: reading {shown} denied", denials)


def _hook_on_open(
    args: tuple[Any, ...],
    workdir: str,
    roots: tuple[str, ...],
    denials: list[str],
    recent_pycs: list[str],
    _check: Callable[..., None] = _hook_check,
    _resolve: Callable[[Any, str], str | None] = _hook_resolve,
    _isinstance: Callable[[object, Any], bool] = isinstance,
    _str: type[str] = str,
    _int: type[int] = int,
    _write_flags: int = WRITE_FLAGS,
    _pyc_keep: int = RECENT_PYCS,
) -> None:
    """An `open` (builtin, io or os): check the path, remember an installed .pyc being read."""
    raw, mode, flags = args[0], args[1], args[2]
    if _isinstance(raw, _int):
        return
    write = (_isinstance(flags, _int) and flags & _write_flags != 0) or (
        _isinstance(mode, _str) and ("w" in mode or "a" in mode or "x" in mode or "+" in mode)
    )
    # os.open (mode None) does not report its dir_fd: refuse relative paths there.
    _check(raw, write, -2 if mode is None else -1, workdir, roots, denials)
    path = _resolve(raw, workdir)
    if not write and path is not None and path.endswith(".pyc") and path not in recent_pycs:
        recent_pycs.insert(0, path)
        del recent_pycs[_pyc_keep:]


def _hook_installed_pyc(
    data: Any,
    recent_pycs: list[str],
    workdir: str,
    roots: tuple[str, ...],
    _inside: Callable[[str, tuple[str, ...]], bool] = _hook_inside,
    _open: Callable[..., int] = os.open,
    _read: Callable[[int, int], bytes] = os.read,
    _close: Callable[[int], None] = os.close,
    _o_rdonly: int = os.O_RDONLY | os.O_CLOEXEC,
    _pyc_header: int = PYC_HEADER_BYTES,
) -> bool:
    """Whether `data` is the code of a .pyc of the installation that was just opened
    (importlib's read of it): the only marshalled code the sandbox lets through."""
    for pyc in recent_pycs:
        if not _inside(pyc, roots) or _inside(pyc, (workdir,)):
            continue  # the list is reachable by the code: trust no entry
        fd = _open(pyc, _o_rdonly)
        try:
            chunks: list[bytes] = []
            while chunk := _read(fd, 1 << 20):
                chunks.append(chunk)
        finally:
            _close(fd)
        if b"".join(chunks)[_pyc_header:] == data:
            return True
    return False


def _hook_on_import(
    args: tuple[Any, ...],
    workdir: str,
    roots: tuple[str, ...],
    denials: list[str],
    _resolve: Callable[[Any, str], str | None] = _hook_resolve,
    _inside: Callable[[str, tuple[str, ...]], bool] = _hook_inside,
    _deny: Callable[..., NoReturn] = _hook_deny,
    _isinstance: Callable[[object, Any], bool] = isinstance,
    _len: Callable[[Any], int] = len,
    _repr: Callable[[object], str] = repr,
    _str: type[str] = str,
    _plain: Callable[[str], str] = str.__str__,
    _denied_imports: tuple[str, ...] = DENIED_IMPORTS,
    _import_exc: type[BaseException] = SandboxImportDenied,
) -> None:
    """An import: refuse the denied modules, and native code from outside the installation.
    Names are compared as plain strs: a str subclass of the code's can answer `==` as it likes."""
    name = args[0]
    if _isinstance(name, _str):
        name = _plain(name)
        for blocked in _denied_imports:
            if name == blocked or name.startswith(blocked + "."):
                _deny(f"sandbox: import of {name} denied", denials, _import_exc)
    filename: Any = args[1] if _len(args) > 1 else None
    # An extension module load (`_imp.create_dynamic`): native code only from the installation.
    if _isinstance(filename, _str):
        filename = _plain(filename)
        path = _resolve(filename, workdir)
        if path is None or not _inside(path, roots):
            _deny(f"sandbox: loading native code from {_repr(filename)} denied", denials)


def _hook_on_rename(
    args: tuple[Any, ...],
    workdir: str,
    roots: tuple[str, ...],
    denials: list[str],
    _check: Callable[..., None] = _hook_check,
    _resolve: Callable[[Any, str], str | None] = _hook_resolve,
    _deny: Callable[[str, list[str]], NoReturn] = _hook_deny,
    _repr: Callable[[object], str] = repr,
    _fsdecode: Callable[[Any], str] = _hook_fsdecode,
) -> None:
    """os.rename and os.replace: both paths are written; no shared library may appear."""
    _check(args[0], True, args[2], workdir, roots, denials)
    _check(args[1], True, args[3], workdir, roots, denials)
    dst = _resolve(args[1], workdir)
    if dst is not None and dst.endswith(".so"):
        _deny(f"sandbox: creating a shared library ({_repr(_fsdecode(args[1]))}) denied", denials)


# every function the hook calls, directly or through another: protected as the hook itself
HOOK_HELPERS = (
    _hook_deny,
    _hook_refuse,
    _hook_fsdecode,
    _hook_resolve,
    _hook_inside,
    _hook_check,
    _hook_on_open,
    _hook_installed_pyc,
    _hook_on_import,
    _hook_on_rename,
)


def make_hook(
    workdir: str, roots: tuple[str, ...], denials: list[str]
) -> Callable[[str, tuple[Any, ...]], None]:
    """The hook only uses its default arguments (see above), and rebinding its code or defaults,
    or a helper's, is itself an audited, denied event."""

    def hook(
        event: str,
        args: tuple[Any, ...],
        _workdir: str = workdir,
        _roots: tuple[str, ...] = roots,
        _denials: list[str] = denials,
        _recent_pycs: list[str] = [],  # noqa: B006 (one list per hook: make_hook builds a new hook)
        _denied_events: frozenset[str] = DENIED_EVENTS,
        _denied_prefixes: tuple[str, ...] = DENIED_PREFIXES,
        _read_events: frozenset[str] = READ_PATH_EVENTS,
        _write_events: tuple[tuple[str, int], ...] = WRITE_PATH_EVENTS,
        _len: Callable[[Any], int] = len,
        _deny: Callable[[str, list[str]], NoReturn] = _hook_deny,
        _refuse: Callable[[str, list[str]], NoReturn] = _hook_refuse,
        _check: Callable[..., None] = _hook_check,
        _on_open: Callable[..., None] = _hook_on_open,
        _installed_pyc: Callable[..., bool] = _hook_installed_pyc,
        _on_import: Callable[..., None] = _hook_on_import,
        _on_rename: Callable[..., None] = _hook_on_rename,
        _protected: tuple[object, ...] = (),  # filled with the hook and HOOK_HELPERS below
    ) -> None:
        if event == "open":
            _on_open(args, _workdir, _roots, _denials, _recent_pycs)
        elif event == "import":
            _on_import(args, _workdir, _roots, _denials)
        elif event == "marshal.loads":
            # hand-made code objects read and write arbitrary memory; importlib's are the .pyc's
            if not args or not _installed_pyc(args[0], _recent_pycs, _workdir, _roots):
                _deny("sandbox: loading marshalled code (marshal.loads) denied", _denials)
        elif event in _read_events:
            if args and args[0] is not None:
                _check(args[0], False, -1, _workdir, _roots, _denials)
        elif event in _denied_events or event.startswith(_denied_prefixes):
            _refuse(event, _denials)
        elif event == "object.__setattr__" or event == "object.__delattr__":
            # rebinding (or deleting) the hook's __code__ or __defaults__, or a helper's, would
            # rewrite its verdicts
            for obj in _protected:
                if args and args[0] is obj:
                    _deny(f"sandbox: modifying the sandbox's audit hook ({args[1]!s}) denied", _denials)
        elif event == "os.rename":
            _on_rename(args, _workdir, _roots, _denials)
        else:
            for name, idx in _write_events:
                if name == event:
                    dir_fd = args[idx] if idx >= 0 and _len(args) > idx else -1
                    _check(args[0], True, dir_fd, _workdir, _roots, _denials)
                    break

    # Before the hook is installed, so not itself audited: a positional default is a tuple slot.
    defaults = hook.__defaults__ or ()
    hook.__defaults__ = (*defaults[:-1], (hook, *HOOK_HELPERS))
    return hook


# ---- running the code -----------------------------------------------------------------------------
def _cpu_exceeded(_signum: int, _frame: object) -> None:
    os._exit(EXIT_CPU)


def run_code(
    config: dict[str, Any], workdir: str, denials: list[str], reserve: list[bytearray]
) -> dict[str, Any]:
    mode: str = config["mode"]
    max_chars: int = config["max_output_chars"]
    max_image: int = config["max_image_bytes"]
    code = strip_fences(config["code"])
    env: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    try:
        try:
            import linecache

            linecache.cache[CODE_FILENAME] = (len(code), None, code.splitlines(True), CODE_FILENAME)
            exec(HEADERS[mode], env)
            exec(compile(code, CODE_FILENAME, "exec"), env)
            solution = env.get("solution")
            if not callable(solution):
                raise _Outcome(
                    "no_solution", "the code must define a function named 'solution' (def solution(): ...)"
                )
            value = solution()
            if mode == "solver":
                text = str(value)
                if len(text) > max_chars:
                    raise _Outcome(
                        "too_large", f"output too large: {len(text)} characters (limit {max_chars})"
                    )
                return {"ok": True, "kind": "ok", "message": "", "text": text, "image": None}
            from matplotlib.figure import Figure

            if not isinstance(value, Figure):
                raise _Outcome(
                    "not_figure",
                    f"solution() must return a matplotlib Figure, got {type(value).__name__}",
                )
            path = os.path.join(workdir, IMAGE_NAME)
            value.savefig(path, format="png")
            size = os.path.getsize(path)
            if size > max_image:
                os.remove(path)
                raise _Outcome("too_large", f"output too large: the PNG is {size} bytes (limit {max_image})")
            return {"ok": True, "kind": "ok", "message": "", "text": None, "image": IMAGE_NAME}
        finally:
            if mode == "plot" and "matplotlib.pyplot" in sys.modules:
                with contextlib.suppress(Exception):
                    sys.modules["matplotlib.pyplot"].close("all")
    except _Outcome as outcome:
        return {"ok": False, "kind": outcome.kind, "message": outcome.message}
    except MemoryError:
        # Free what the code still holds (its frames via the traceback, its globals) first.
        reserve.clear()
        env.clear()
        return {"ok": False, "kind": "memory", "message": "MemoryError"}
    except DENIED_TYPES as exc:
        return {"ok": False, "kind": "denied", "message": _short(str(exc))}
    except BaseException as exc:
        if denials:  # the code tripped the sandbox, then failed because of it
            return {"ok": False, "kind": "denied", "message": _short(denials[0])}
        return {"ok": False, "kind": "error", "message": _describe_exception(exc)}


def write_result(workdir: str, result: dict[str, Any]) -> None:
    data = json.dumps(result).encode()
    fd = os.open(
        os.path.join(workdir, RESULT_NAME),
        os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o600,
    )
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def setup(config_bytes: bytes) -> int:
    """Stage 1 (trusted, maybe root): namespaces' mounts, no_new_privs, privilege drop, exec stage 2."""
    config: dict[str, Any] = json.loads(config_bytes)
    workdir: str = config["workdir"]
    if config.get("mounts"):
        apply_mount_plan(config["mounts"])
    os.chdir(workdir)
    no_new_privs()
    parent = os.getppid()
    if config.get("drop_uid") is not None:
        drop_privileges(int(config["drop_uid"]), int(config["drop_gid"]))
    die_with_parent(parent)
    # The config travels to stage 2 in an anonymous file: it may exceed a pipe's buffer.
    fd = os.memfd_create("toolgym-sandbox-config", 0)
    os.write(fd, config_bytes)
    os.lseek(fd, 0, os.SEEK_SET)
    os.set_inheritable(fd, True)
    os.execv(sys.executable, [sys.executable, "-I", "-B", os.path.abspath(__file__), "--run", str(fd)])
    return EXIT_SETUP  # not reached


def exit_when_orphaned() -> None:
    """The server keeps stdin open while it waits for the run: end of file means it died (a kill
    -9). The parent death signal cannot stop every run then: bwrap, without capabilities after
    its setup, may not signal a runner that dropped to nobody."""
    watched = os.dup(0)

    def watch() -> None:
        try:
            os.read(watched, 1)
        finally:
            os._exit(EXIT_ORPHANED)

    threading.Thread(target=watch, name="sandbox-orphan-watch", daemon=True).start()


def run(fd: int) -> int:
    """Stage 2 (unprivileged, no ctypes): hook, imports, the code."""
    with os.fdopen(fd, "rb") as fh:
        config: dict[str, Any] = json.loads(fh.read())
    exit_when_orphaned()
    devnull = os.open("/dev/null", os.O_RDONLY)  # the code gets an empty stdin
    os.dup2(devnull, 0)
    os.close(devnull)
    workdir = os.getcwd()
    signal.signal(signal.SIGXCPU, _cpu_exceeded)
    mode: str = config["mode"]
    stub_unaudited()
    roots = read_roots()
    reserve = [bytearray(1 << 20)]  # released on MemoryError so the result can still be written
    denials: list[str] = []
    if "_ctypes" in sys.modules:
        raise RuntimeError("ctypes is loaded; refusing to run code")
    install_ctypes_stand_in(denials)
    sys.addaudithook(make_hook(workdir, roots, denials))
    preimport(mode)
    result = run_code(config, workdir, denials, reserve)
    write_result(workdir, result)
    sys.stdout.flush()
    sys.stderr.flush()
    return 0


def main(argv: list[str]) -> int:
    try:
        if len(argv) == 3 and argv[1] == "--run":
            fd = int(argv[2])
        else:
            return setup(sys.stdin.buffer.readline())  # one line; stdin stays open (see run)
    except Exception as exc:
        sys.stderr.write(f"sandbox setup failed: {type(exc).__name__}: {exc}\n")
        return EXIT_SETUP
    try:
        return run(fd)
    except Exception as exc:  # the sandbox's own failure, not the code's (that is in run_code)
        sys.stderr.write(f"sandbox setup failed: {type(exc).__name__}: {exc}\n")
        return EXIT_SETUP


if __name__ == "__main__":
    # os._exit: threads the code left running must not keep the process alive.
    os._exit(main(sys.argv))
