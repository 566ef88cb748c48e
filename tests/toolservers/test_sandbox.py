"""The sandbox against hostile code: every attempt comes back as a typed error and the host is
left as it was. Real child processes throughout; short limits keep the file fast."""

from __future__ import annotations

import json
import os
import socket
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolgym.actions import Observation, ToolCall
from toolgym.errors import ErrorKind, ToolError, ToolTimeout
from toolgym.files import FileStore
from toolgym.tools import ToolContext, ToolSet
from toolgym.toolservers.gta.plot import make_plot_tool
from toolgym.toolservers.gta.solver import make_solver_tool, solver_tool
from toolgym.toolservers.sandbox import (
    Isolation,
    SandboxLimits,
    available_isolations,
    run_python,
)

HOSTILE = SandboxLimits(wall_timeout_s=8.0, cpu_time_s=8, memory_mb=512)
ISOLATIONS = available_isolations()


@pytest.fixture(scope="module")
def ts() -> ToolSet:
    return ToolSet([make_solver_tool(HOSTILE), make_plot_tool(HOSTILE)])


def call(ts: ToolSet, code: str, name: str = "Solver") -> Observation:
    return ts.call(ToolCall(name=name, arguments={"command": code}), ToolContext(files=FileStore()))


def code(body: str) -> str:
    return textwrap.dedent(body).strip() + "\n"


def assert_error(obs: Observation, kind: ErrorKind, *fragments: str) -> str:
    assert obs.error is not None, f"expected an error, got {obs.text!r}"
    assert obs.error.kind == kind, obs.error
    for fragment in fragments:
        assert fragment in obs.error.message, obs.error.message
    return obs.error.message


def processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


# ---- time ----------------------------------------------------------------------------------------
def test_infinite_loop_hits_the_wall_clock_timeout() -> None:
    ts = ToolSet([make_solver_tool(SandboxLimits(wall_timeout_s=2.0, cpu_time_s=10))])
    obs = call(ts, "def solution():\n    while True:\n        pass\n")
    assert_error(obs, ErrorKind.TIMEOUT, "exceeded", "2 s")


def test_cpu_limit_is_a_timeout() -> None:
    ts = ToolSet([make_solver_tool(SandboxLimits(wall_timeout_s=15.0, cpu_time_s=1))])
    obs = call(ts, "x = 0\nwhile True:\n    x += 1\n")
    assert_error(obs, ErrorKind.TIMEOUT, "CPU time limit of 1 s")


# ---- processes -----------------------------------------------------------------------------------
def test_fork_bomb_is_denied(ts: ToolSet) -> None:
    obs = call(
        ts,
        code("""
        import os
        def solution():
            while True:
                os.fork()
    """),
    )
    assert_error(obs, ErrorKind.TOOL_ERROR, "sandbox:", "process creation", "denied")


def test_subprocess_loop_is_denied_and_starts_nothing(ts: ToolSet) -> None:
    marker = f"31.{uuid.uuid4().int % 10**8}"
    obs = call(
        ts,
        code(f"""
        import subprocess
        def solution():
            procs = []
            while True:
                procs.append(subprocess.Popen(["sleep", "{marker}"]))
    """),
    )
    assert_error(obs, ErrorKind.TOOL_ERROR, "sandbox:", "denied")
    assert processes_with(marker) == []


def test_os_system_is_denied(ts: ToolSet, tmp_path: Path) -> None:
    target = tmp_path / "os-system-ran"
    obs = call(ts, f"def solution():\n    return str(__import__('os').system('touch {target}'))\n")
    assert_error(obs, ErrorKind.TOOL_ERROR, "sandbox:", "os.system", "denied")
    assert not target.exists()


def test_ctypes_is_denied(ts: ToolSet, tmp_path: Path) -> None:
    target = tmp_path / "ctypes-ran"
    obs = call(
        ts,
        code(f"""
        import ctypes
        def solution():
            libc = ctypes.CDLL(None)
            libc.system(b"touch {target}")
            return "done"
    """),
    )
    assert_error(obs, ErrorKind.TOOL_ERROR, "sandbox:", "ctypes", "denied")
    assert not target.exists()


# ---- memory --------------------------------------------------------------------------------------
def test_huge_allocation_hits_the_memory_limit(ts: ToolSet) -> None:
    obs = call(ts, "def solution():\n    return str(len(bytearray(10**10)))\n")
    assert_error(obs, ErrorKind.TOOL_ERROR, "memory limit of 512 MiB")


def test_growing_list_hits_the_memory_limit(ts: ToolSet) -> None:
    obs = call(
        ts,
        code("""
        def solution():
            chunks = []
            while True:
                chunks.append(bytearray(10**7))
    """),
    )
    assert_error(obs, ErrorKind.TOOL_ERROR, "memory limit")


# ---- files ---------------------------------------------------------------------------------------
def test_reading_etc_passwd_is_denied(ts: ToolSet) -> None:
    obs = call(ts, "def solution():\n    return open('/etc/passwd').read()\n")
    message = assert_error(obs, ErrorKind.TOOL_ERROR, "sandbox:", "/etc/passwd", "denied")
    assert "root:" not in message and "root:" not in obs.text


def test_reading_a_host_file_is_denied(ts: ToolSet, tmp_path: Path) -> None:
    secret = f"s3cr3t-{uuid.uuid4()}"
    path = tmp_path / "secret.txt"
    path.write_text(secret)
    obs = call(ts, f"def solution():\n    return open({str(path)!r}).read()\n")
    assert_error(obs, ErrorKind.TOOL_ERROR, "sandbox:", "denied")
    assert secret not in obs.text


def test_writing_outside_the_workdir_is_denied(ts: ToolSet, tmp_path: Path) -> None:
    target = tmp_path / "pwned.txt"
    obs = call(ts, f"def solution():\n    open({str(target)!r}, 'w').write('pwned')\n    return 'ok'\n")
    assert_error(obs, ErrorKind.TOOL_ERROR, "sandbox:", "writing", "denied")
    assert not target.exists()


def test_writing_inside_the_workdir_is_fine(ts: ToolSet) -> None:
    obs = call(
        ts,
        code("""
        import os, tempfile
        def solution():
            with open("notes.txt", "w") as fh:
                fh.write("hello")
            fd, path = tempfile.mkstemp()
            os.close(fd)
            return open("notes.txt").read() + str(os.path.exists(path))
    """),
    )
    assert obs.error is None, obs.text
    assert obs.text == "helloTrue"


# ---- network -------------------------------------------------------------------------------------
def test_socket_to_localhost_is_denied_and_nothing_connects(ts: ToolSet) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        port = server.getsockname()[1]
        obs = call(
            ts,
            code(f"""
            import socket
            def solution():
                s = socket.create_connection(("127.0.0.1", {port}), timeout=2)
                s.sendall(b"hello from the sandbox")
                return "connected"
        """),
        )
        assert_error(obs, ErrorKind.TOOL_ERROR, "sandbox:", "network", "denied")
        server.settimeout(0.2)
        with pytest.raises(TimeoutError):
            server.accept()


# ---- attempts on the hook itself -----------------------------------------------------------------
def test_hook_bypass_attempts_are_all_denied(ts: ToolSet, tmp_path: Path) -> None:
    """One run, many tricks; each must end in the sandbox's PermissionError."""
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cr3t")
    obs = call(
        ts,
        code(f"""
        import builtins, gc, importlib.machinery, importlib.util, json, os, socket, sqlite3, subprocess, sys
        def attempt(fn):
            try:
                fn()
            except BaseException as exc:
                return "denied" if str(exc).startswith("sandbox:") else f"{{type(exc).__name__}}: {{exc}}"
            return "ALLOWED"

        def ctypes_types_reachable():
            stack, seen = [object], set()
            while stack:
                cls = stack.pop()
                if cls in seen:
                    continue
                seen.add(cls)
                if cls.__module__ == "_ctypes":
                    return
                stack.extend(type.__subclasses__(cls))
            raise PermissionError("sandbox: no _ctypes type is reachable")

        def patched_builtins():
            real = builtins.isinstance
            builtins.isinstance = lambda *a: False
            try:
                open("/etc/passwd").read()
            finally:
                builtins.isinstance = real

        def patched_lstat():
            real = os.lstat
            os.lstat = lambda *a, **k: real("/")
            try:
                open({str(secret)!r}).read()
            finally:
                os.lstat = real

        def reimport_posixsubprocess():
            del sys.modules["_posixsubprocess"]
            import _posixsubprocess
            _posixsubprocess.fork_exec

        def native_from_workdir():
            with open("evil.bin", "wb") as fh:
                fh.write(b"\\x7fELF" + b"\\0" * 64)
            loader = importlib.machinery.ExtensionFileLoader("evil", os.path.abspath("evil.bin"))
            spec = importlib.util.spec_from_loader("evil", loader)
            importlib.util.module_from_spec(spec)

        def rename_to_so():
            open("lib.bin", "wb").close()
            os.rename("lib.bin", "lib.so")

        def solution():
            tries = {{
                "fork_exec": lambda: sys.modules["_posixsubprocess"].fork_exec(),
                "subprocess_fork_exec": lambda: subprocess._fork_exec(),
                "reimport_posixsubprocess": reimport_posixsubprocess,
                "memfd_create": lambda: os.memfd_create("x"),
                "posix_spawn": lambda: os.posix_spawn("/bin/true", ["true"], {{}}),
                "execv": lambda: os.execv("/bin/true", ["true"]),
                "kill": lambda: os.kill(1, 9),
                "settrace": lambda: sys.settrace(lambda *a: None),
                "gc_objects": lambda: gc.get_objects(),
                "code_replace": lambda: (lambda: 0).__code__.replace(co_consts=(1,)),
                "symlink": lambda: os.symlink("/etc/passwd", "link"),
                "hardlink": lambda: os.link({str(secret)!r}, "hard"),
                "chdir": lambda: os.chdir("/"),
                "write_so": lambda: open("evil.so", "wb").close(),
                "rename_to_so": rename_to_so,
                "native_from_workdir": native_from_workdir,
                "patched_builtins": patched_builtins,
                "patched_lstat": patched_lstat,
                "dotdot": lambda: open("../../../../../../etc/passwd").read(),
                "relative_os_open": lambda: os.open("x", os.O_RDONLY),
                "proc_environ": lambda: open("/proc/self/environ").read(),
                "listdir_root": lambda: os.listdir("/"),
                "socketpair": lambda: socket.socketpair(),
                "udp": lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM),
                "unix": lambda: socket.socket(socket.AF_UNIX).connect("/run/x.sock"),
                "sqlite_outside": lambda: sqlite3.connect({str(tmp_path / "x.db")!r}),
                "import_ctypes_util": lambda: __import__("ctypes.util"),
                "ctypes_pythonapi": lambda: __import__("ctypes").pythonapi.Py_GetVersion(),
                "ctypes_memmove": lambda: __import__("ctypes").memmove(0, 0, 1),
                "import_ctypes_c": lambda: __import__("_ctypes"),
                "ctypes_types_reachable": ctypes_types_reachable,
            }}
            return json.dumps({{name: attempt(fn) for name, fn in tries.items()}})
    """),
    )
    assert obs.error is None, obs.text
    results = json.loads(obs.text)
    assert {name: r for name, r in results.items() if r != "denied"} == {}
    assert not (tmp_path / "x.db").exists()


def test_denial_reported_even_if_the_code_swallows_it(ts: ToolSet) -> None:
    obs = call(
        ts,
        code("""
        def solution():
            try:
                data = open("/etc/shadow").read()
            except Exception:
                data = None
            return data.upper()
    """),
    )
    assert_error(obs, ErrorKind.TOOL_ERROR, "sandbox:", "/etc/shadow", "denied")


# ---- operating-system layers (beneath the hook) ---------------------------------------------------
@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_os_layers(isolation: Isolation, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cr3t")
    probe = code(f"""
        import json, os, resource, socket
        def solution():
            limits = {{name: resource.getrlimit(getattr(resource, name))[1]
                      for name in ("RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_NPROC", "RLIMIT_FSIZE",
                                   "RLIMIT_NOFILE", "RLIMIT_CORE")}}
            return json.dumps({{
                "uid": os.getuid(),
                "interfaces": [name for _, name in socket.if_nameindex()],
                "sees_host_tmp": os.path.exists({str(secret)!r}),
                "sees_root_home": os.path.exists("/root/.bashrc") or os.path.exists("/root/.profile"),
                "limits": limits,
            }})
    """)
    limits = SandboxLimits(wall_timeout_s=10.0, cpu_time_s=7, memory_mb=768, max_processes=32)
    result = run_python(probe, mode="solver", limits=limits, isolation=isolation)
    assert result.isolation == isolation
    assert result.text is not None
    seen = json.loads(result.text)
    assert seen["limits"] == {
        "RLIMIT_CPU": 8,
        "RLIMIT_AS": 768 * 1024 * 1024,
        "RLIMIT_NPROC": 32,
        "RLIMIT_FSIZE": limits.max_file_mb * 1024 * 1024,
        "RLIMIT_NOFILE": limits.max_open_files,
        "RLIMIT_CORE": 0,
    }
    if isolation == "none":
        return
    assert seen["interfaces"] == ["lo"]  # a network namespace of its own
    assert seen["sees_host_tmp"] is False
    assert seen["sees_root_home"] is False
    if os.geteuid() == 0:
        assert seen["uid"] == 65534


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_each_isolation_denies_and_solves(isolation: Isolation) -> None:
    with pytest.raises(ToolError, match="sandbox: reading '/etc/passwd' denied"):
        run_python(
            "def solution():\n    return open('/etc/passwd').read()\n", mode="solver", isolation=isolation
        )
    result = run_python(
        "def solution():\n    return solve(Eq(2*symbols('x'), 4))\n", mode="solver", isolation=isolation
    )
    assert result.text == "[2]"


def test_run_python_raises_typed_errors() -> None:
    with pytest.raises(ToolTimeout):
        run_python("while True: pass\n", mode="solver", limits=SandboxLimits(wall_timeout_s=1.5))
    with pytest.raises(ToolError, match="ZeroDivisionError: division by zero"):
        run_python("def solution():\n    return 1 / 0\n", mode="solver")


# ---- afterwards ----------------------------------------------------------------------------------
@pytest.fixture(scope="module", autouse=True)
def _no_leftovers() -> Iterator[None]:
    before = {p.name for p in Path("/tmp").glob("toolgym-sbx-*")}
    yield
    after = {p.name for p in Path("/tmp").glob("toolgym-sbx-*")}
    assert after - before == set(), "sandbox temp dirs left behind"


def test_solver_still_works_after_the_hostile_suite() -> None:
    ts = ToolSet([solver_tool])
    obs = call(
        ts,
        "```python\nfrom sympy import symbols, solve\ndef solution():\n    x = symbols('x')\n"
        "    return str(solve(x**2 - 4, x))\n```",
    )
    assert obs.error is None, obs.text
    assert obs.text == "[-2, 2]"
