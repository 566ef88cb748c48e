"""The sandbox against hostile code: every attempt comes back as a typed error and the host is
left as it was. Real child processes throughout; short limits keep the file fast."""

from __future__ import annotations

import contextlib
import dis
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import FunctionType

import pytest

from toolgym.actions import Observation, ToolCall
from toolgym.errors import ErrorKind, InfraError, ToolError, ToolTimeout
from toolgym.files import FileStore
from toolgym.tools import ToolContext, ToolSet
from toolgym.toolservers._sandbox_runner import HOOK_HELPERS, make_hook
from toolgym.toolservers.gta.plot import make_plot_tool
from toolgym.toolservers.gta.solver import make_solver_tool, solver_tool
from toolgym.toolservers.sandbox import (
    ALLOW_ROOT_ENV,
    Isolation,
    SandboxLimits,
    available_isolations,
    run_python,
)

HOSTILE = SandboxLimits(wall_timeout_s=8.0, cpu_time_s=8, memory_mb=512)
ISOLATIONS = available_isolations()
IS_ROOT = os.geteuid() == 0
WRAPPED = [i for i in ISOLATIONS if i != "none"]  # a wrapper process (bwrap, unshare) and mounts


@pytest.fixture
def allow_root_without_isolation(isolation: Isolation, monkeypatch: pytest.MonkeyPatch) -> None:
    """Isolation "none" as root runs only when the operator opts in (see test_no_root_code_...)."""
    if isolation == "none":
        monkeypatch.setenv(ALLOW_ROOT_ENV, "1")


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


def test_path_objects_inside_the_workdir_are_fine(ts: ToolSet) -> None:
    """pathlib's paths reach the hook as strs (the operation converts them first): the hook's
    refusal of path objects leaves them alone."""
    obs = call(
        ts,
        code("""
        import os, shutil
        from pathlib import Path
        def solution():
            Path("a.txt").write_text("x")
            Path("d").mkdir()
            Path("a.txt").rename(Path("d") / "b.txt")
            shutil.copy(Path("d") / "b.txt", Path("c.txt"))
            os.replace(Path("c.txt"), Path("e.txt"))
            os.remove(Path("d") / "b.txt")
            os.rmdir(Path("d"))
            return ",".join(sorted(p.name for p in Path(".").iterdir() if p.suffix == ".txt"))
    """),
    )
    assert obs.error is None, obs.text
    assert obs.text == "e.txt"


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
ATTEMPTS = """
import json

def attempt(fn):
    try:
        fn()
    except BaseException as exc:
        return "denied" if str(exc).startswith("sandbox:") else f"{type(exc).__name__}: {exc}"
    return "ALLOWED"

def solution():
    return json.dumps({name: attempt(fn) for name, fn in tries().items()})
"""


def attempts(ts: ToolSet, body: str) -> dict[str, str]:
    """The tricks of `body` (code whose `tries()` names a callable per trick), one sandbox run
    for all: trick -> "denied" when the sandbox refused it, else what happened."""
    obs = call(ts, code(body) + ATTEMPTS)
    assert obs.error is None, obs.text
    results: dict[str, str] = json.loads(obs.text)
    assert results
    return results


def allowed(results: dict[str, str]) -> dict[str, str]:
    return {name: r for name, r in results.items() if r != "denied"}


def test_process_ctypes_and_interpreter_tricks_are_denied(ts: ToolSet) -> None:
    """Each must end in the sandbox's PermissionError (or ImportError, AttributeError)."""
    results = attempts(
        ts,
        """
        import gc, os, subprocess, sys
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

        def reimport_posixsubprocess():
            sys.modules.pop("_posixsubprocess", None)
            import _posixsubprocess
            _posixsubprocess.fork_exec

        def tries():
            return {
                "fork_exec": lambda: __import__("_posixsubprocess").fork_exec(),
                "subprocess_fork_exec": lambda: subprocess._fork_exec(),
                "reimport_posixsubprocess": reimport_posixsubprocess,
                "memfd_create": lambda: os.memfd_create("x"),
                "posix_spawn": lambda: os.posix_spawn("/bin/true", ["true"], {}),
                "execv": lambda: os.execv("/bin/true", ["true"]),
                "kill": lambda: os.kill(1, 9),
                "settrace": lambda: sys.settrace(lambda *a: None),
                "gc_objects": lambda: gc.get_objects(),
                "code_replace": lambda: (lambda: 0).__code__.replace(co_consts=(1,)),
                "import_ctypes_util": lambda: __import__("ctypes.util"),
                "ctypes_pythonapi": lambda: __import__("ctypes").pythonapi.Py_GetVersion(),
                "ctypes_memmove": lambda: __import__("ctypes").memmove(0, 0, 1),
                "import_ctypes_c": lambda: __import__("_ctypes"),
                "ctypes_types_reachable": ctypes_types_reachable,
            }
    """,
    )
    assert allowed(results) == {}


def test_file_and_network_tricks_are_denied(ts: ToolSet, tmp_path: Path) -> None:
    """Each must end in the sandbox's PermissionError, whatever the code rebound first."""
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cr3t")
    results = attempts(
        ts,
        f"""
        import builtins, importlib.machinery, importlib.util, os, socket, sqlite3
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

        def native_from_workdir():
            with open("evil.bin", "wb") as fh:
                fh.write(b"\\x7fELF" + b"\\0" * 64)
            loader = importlib.machinery.ExtensionFileLoader("evil", os.path.abspath("evil.bin"))
            spec = importlib.util.spec_from_loader("evil", loader)
            importlib.util.module_from_spec(spec)

        def rename_to_so():
            open("lib.bin", "wb").close()
            os.rename("lib.bin", "lib.so")

        def tries():
            return {{
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
            }}
    """,
    )
    assert allowed(results) == {}
    assert not (tmp_path / "x.db").exists()


def test_the_hooks_helpers_cannot_be_rebound(ts: ToolSet, tmp_path: Path) -> None:
    """The hook's helpers are functions of the runner's module, which the code reaches as
    `__main__`: rebinding or deleting their code or defaults is denied, and rebinding the
    module's names changes no verdict (the hook and its helpers hold their own references)."""
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cr3t")
    results = attempts(
        ts,
        f"""
        import __main__
        def allow_all(*args, **kwargs):
            return None

        def rebound_names():
            for name in dir(__main__):
                if name.startswith("_hook_"):
                    setattr(__main__, name, allow_all)
            open({str(secret)!r}).read()

        def tries():
            found = {{"names": rebound_names}}
            for helper in __main__.HOOK_HELPERS:
                for attr, value in (("__code__", allow_all.__code__), ("__defaults__", ()), ("__kwdefaults__", {{}})):
                    found[f"{{helper.__name__}}.{{attr}}"] = lambda h=helper, a=attr, v=value: setattr(h, a, v)
                found[f"{{helper.__name__}}.del"] = lambda h=helper: delattr(h, "__defaults__")
            return found
    """,
    )
    assert len(results) == 1 + 4 * len(HOOK_HELPERS)  # the names, then each helper four ways
    assert allowed(results) == {}


def test_the_hook_depends_on_nothing_the_code_can_rebind() -> None:
    """Every function the hook calls is protected as the hook is (HOOK_HELPERS), keeps no
    closure cells and reads no global name but OSError: rebinding a module's or the builtins'
    names (os.fsdecode's `fspath`, say) changes no verdict."""
    hook = make_hook("/work", ("/usr",), [])
    assert isinstance(hook, FunctionType)
    reached: list[FunctionType] = []
    todo = [hook]
    while todo:
        fn = todo.pop()
        if fn not in reached:
            reached.append(fn)
            todo += [d for d in fn.__defaults__ or () if isinstance(d, FunctionType)]
    assert set(reached) == {hook, *HOOK_HELPERS}
    assert (hook.__defaults__ or ())[-1] == (hook, *HOOK_HELPERS)
    for fn in reached:
        assert fn.__closure__ is None, fn.__name__
        names = {i.argval for i in dis.get_instructions(fn) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
        assert names <= {"OSError"}, (fn.__name__, names)


def test_the_hook_checks_what_the_operation_reads(ts: ToolSet) -> None:
    """A path or module name is checked as the operation reads it: a bytes path whatever
    `isinstance` or `os.fspath` the code rebound, a str subclass by its characters, not by the
    `==`, `startswith` or `split` it overrides."""
    results = attempts(
        ts,
        """
        import builtins, importlib.machinery, importlib.util, os
        class Sly(str):
            __hash__ = str.__hash__
            def __eq__(self, other):
                return False
            def startswith(self, prefix, *args):
                return prefix == "/"
            def split(self, *args):
                return ["", "usr", "lib"]

        def patched(module, name, value, fn):
            real = getattr(module, name)
            setattr(module, name, value)
            try:
                fn()
            finally:
                setattr(module, name, real)

        def native_from_workdir():
            with open("evil.bin", "wb") as fh:
                fh.write(b"\\x7fELF" + b"\\0" * 64)
            loader = importlib.machinery.ExtensionFileLoader("evil", Sly(os.path.abspath("evil.bin")))
            importlib.util.module_from_spec(importlib.util.spec_from_loader("evil", loader))

        def tries():
            read = lambda: open(b"/etc/passwd").read()
            return {
                "bytes_path_isinstance": lambda: patched(builtins, "isinstance", lambda *a: False, read),
                "bytes_path_fspath": lambda: patched(os, "fspath", lambda path: "inside.txt", read),
                "import_ctypes": lambda: __import__(Sly("_ctypes")),
                "import_posixsubprocess": lambda: __import__(Sly("_posixsubprocess")),
                "native_from_workdir": native_from_workdir,
            }
    """,
    )
    assert results == dict.fromkeys(
        [
            "bytes_path_isinstance",
            "bytes_path_fspath",
            "import_ctypes",
            "import_posixsubprocess",
            "native_from_workdir",
        ],
        "denied",
    )


def test_sqlite_is_denied(ts: ToolSet) -> None:
    """SQLite opens files the audit hook never hears of (ATTACH and VACUUM INTO, from an
    in-memory database too; file: URIs), so the code gets no connection at all."""
    results = attempts(
        ts,
        """
        import sqlite3
        def tries():
            return {
                "attach": lambda: sqlite3.connect(":memory:").execute("ATTACH DATABASE '/etc/x.db' AS x"),
                "vacuum_into": lambda: sqlite3.connect(":memory:").execute("VACUUM INTO '/etc/x.db'"),
                "uri": lambda: sqlite3.connect("file:/etc/x.db?mode=rwc", uri=True),
                "workdir": lambda: sqlite3.connect("x.db"),
                "connection": lambda: sqlite3.Connection(":memory:"),
            }
    """,
    )
    assert results == dict.fromkeys(["attach", "vacuum_into", "uri", "workdir", "connection"], "denied")


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
def test_os_layers(isolation: Isolation, tmp_path: Path, allow_root_without_isolation: None) -> None:
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
def test_each_isolation_denies_and_solves(isolation: Isolation, allow_root_without_isolation: None) -> None:
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


# ---- root, symlinks, lifetime ----------------------------------------------------------------------
def run_script(
    python: str | Path, script: str, *args: str, env: dict[str, str] | None = None
) -> dict[str, object]:
    """Run `script` in a fresh interpreter; it prints one JSON object as its last line."""
    proc = subprocess.run(
        [str(python), "-c", textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("isolation", WRAPPED)
def test_a_venv_reached_through_a_symlinked_folder_uses_its_own_packages(
    isolation: Isolation, tmp_path: Path
) -> None:
    """`checkout -> ..`, then `checkout/.venv/bin/python`: Plot finds the venv's matplotlib and
    Solver imports the venv's sympy, not the base interpreter's."""
    if sys.prefix == sys.base_prefix:
        pytest.skip("needs the tests to run in a venv")
    import sympy

    venv = Path(sys.prefix)
    (tmp_path / "checkout").symlink_to(venv.parent, target_is_directory=True)
    python = tmp_path / "checkout" / venv.name / "bin" / Path(sys.executable).name
    seen = run_script(
        python,
        """
        import json, sys
        from toolgym.toolservers.sandbox import run_python
        solver = run_python("import sympy\\ndef solution():\\n    return sympy.__file__\\n",
                            mode="solver", isolation=sys.argv[1])
        plot = run_python("def solution():\\n    fig = plt.figure()\\n    plt.plot([1, 2], [3, 4])\\n"
                          "    return fig\\n", mode="plot", isolation=sys.argv[1])
        print(json.dumps({"prefix": sys.prefix, "sympy": solver.text, "png": plot.png[:8].hex()}))
        """,
        isolation,
    )
    assert str(seen["prefix"]).startswith(str(tmp_path / "checkout"))  # really through the link
    assert Path(str(seen["sympy"])).resolve() == Path(sympy.__file__).resolve()
    assert bytes.fromhex(str(seen["png"])) == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(not IS_ROOT, reason="the uid drop is for a server that runs as root")
def test_no_root_code_runs_as_uid_0_without_isolation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without namespaces the child drops to nobody, or, where nobody cannot reach the Python
    installation, the run is refused with one line that says how to opt in."""
    monkeypatch.delenv(ALLOW_ROOT_ENV, raising=False)
    try:
        result = run_python(
            "import os\ndef solution():\n    return os.getuid()\n", mode="solver", isolation="none"
        )
    except InfraError as exc:
        message = str(exc)
        assert "refusing to run model code as root" in message
        assert f"{ALLOW_ROOT_ENV}=1" in message and "\n" not in message
    else:
        assert result.text == "65534"


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_marshalled_code_objects_are_denied(isolation: Isolation, allow_root_without_isolation: None) -> None:
    """marshal hands out code objects the audit hook never saw built (arbitrary memory access);
    only importlib's loads of the installation's .pyc files get through."""
    hostile = code("""
        import importlib._bootstrap_external as external, importlib.machinery, json, marshal, os, types
        def attempt(fn):
            try:
                return f"ALLOWED: {fn()}"
            except BaseException as exc:
                return "denied" if str(exc).startswith("sandbox:") else f"{type(exc).__name__}: {exc}"

        def uid_code():
            return marshal.dumps(compile("import os; uid = os.getuid()", "x", "exec"))

        def run_loaded(loaded):
            scope = {}
            exec(loaded, scope)
            return scope["uid"]

        def sourceless_pyc():
            with open("evil.pyc", "wb") as fh:
                fh.write(external.MAGIC_NUMBER + bytes(12) + uid_code())
            loader = importlib.machinery.SourcelessFileLoader("evil", os.path.abspath("evil.pyc"))
            return run_loaded(loader.get_code("evil"))

        def solution():
            tries = {
                "loads": lambda: run_loaded(marshal.loads(uid_code())),
                "load": lambda: marshal.load(open("x.bin", "w+b")),
                "importlib": lambda: run_loaded(external._compile_bytecode(memoryview(uid_code()))),
                "sourceless_pyc": sourceless_pyc,
            }
            return json.dumps({name: attempt(fn) for name, fn in tries.items()})
    """)
    result = run_python(hostile, mode="solver", limits=HOSTILE, isolation=isolation)
    assert result.text is not None
    assert json.loads(result.text) == dict.fromkeys(
        ["loads", "load", "importlib", "sourceless_pyc"], "denied"
    )


def test_posixsubprocess_cannot_be_imported(ts: ToolSet) -> None:
    obs = call(ts, "import _posixsubprocess\ndef solution():\n    return 'imported'\n")
    assert_error(obs, ErrorKind.TOOL_ERROR, "sandbox: import of _posixsubprocess denied")


def running(pids: list[int]) -> list[int]:
    """Those of `pids` that still run (gone or a zombie: nothing of them is left to run)."""
    states = {}
    for pid in pids:
        try:
            states[pid] = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
    return [pid for pid, state in states.items() if state != "Z"]


def live_descendants(pid: int) -> list[int]:
    """`pid`'s descendants that still run (zombies do not count: nothing of them is left)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                parents[int(entry.name)] = int(fields[1])
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        kids = [p for p, pp in parents.items() if pp == parent]
        found += kids
        todo += kids
    return found


@pytest.mark.skipif(IS_ROOT and ISOLATIONS == ["none"], reason="root runs no code without isolation")
def test_a_killed_server_leaves_no_run_folder_and_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kill -9 of the process that runs the sandbox: its sandbox dies with it, and the next
    sandbox run removes the folder it left."""
    tmp = tmp_path / "tmp"
    tmp.mkdir(mode=0o777)
    tmp.chmod(0o777)
    env = {**os.environ, "TMPDIR": str(tmp)}
    server = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from toolgym.toolservers.sandbox import SandboxLimits, run_python\n"
            'run_python(\'import time\\nopen("started", "w").close()\\ndef solution():\\n'
            "    time.sleep(600)\\n', mode='solver', limits=SandboxLimits(wall_timeout_s=600))\n",
        ],
        env=env,
        stderr=subprocess.PIPE,
    )
    sandbox: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while not list(tmp.glob("toolgym-sbx-*/work/started")):
            assert server.poll() is None, server.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "the sandbox never started"
            time.sleep(0.05)
        sandbox = live_descendants(server.pid)
        assert sandbox
        server.kill()
        server.wait()
        deadline = time.monotonic() + 10
        while running(sandbox) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert running(sandbox) == [], "the sandbox outlived its server"
        assert [p.name for p in tmp.glob("toolgym-sbx-*")] != []  # the killed run's folder is left
        monkeypatch.setattr(tempfile, "tempdir", str(tmp))  # the next run, here, in the same folder
        assert run_python("def solution():\n    return 6 * 7\n", mode="solver").text == "42"
        assert list(tmp.iterdir()) == []
    finally:
        if server.poll() is None:
            server.kill()
        for pid in sandbox:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("isolation", WRAPPED)
def test_a_timed_out_plot_that_ignores_sigterm_leaves_no_zombie(isolation: Isolation) -> None:
    """The server is a child subreaper here, so any process of the sandbox orphaned by the kill
    would become its child: after the timeout it has none, neither running nor a zombie. (Without
    a wrapper, the runner is the server's own child and is reaped directly.)"""
    seen = run_script(
        sys.executable,
        """
        import ctypes, json, sys
        from pathlib import Path
        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
        from toolgym.errors import ToolTimeout
        from toolgym.toolservers.sandbox import SandboxLimits, run_python
        code = ("import signal, time\\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
                "def solution():\\n    time.sleep(60)\\n")
        try:
            run_python(code, mode="plot", limits=SandboxLimits(wall_timeout_s=5), isolation=sys.argv[1])
        except ToolTimeout:
            pass
        children = [c for t in Path("/proc/self/task").iterdir() for c in (t / "children").read_text().split()]
        states = {c: Path(f"/proc/{c}/stat").read_text().rsplit(")", 1)[1].split()[0] for c in children}
        print(json.dumps(states))
        """,
        isolation,
    )
    assert seen == {}


# ---- afterwards ----------------------------------------------------------------------------------
@pytest.fixture(scope="module", autouse=True)
def _no_leftovers() -> Iterator[None]:
    # only this process's run folders: other processes may be running sandboxes right now
    yield
    assert list(Path(tempfile.gettempdir()).glob(f"toolgym-sbx-{os.getpid()}-*")) == [], "run folders left"


def test_solver_still_works_after_the_hostile_suite() -> None:
    ts = ToolSet([solver_tool])
    obs = call(
        ts,
        "```python\nfrom sympy import symbols, solve\ndef solution():\n    x = symbols('x')\n"
        "    return str(solve(x**2 - 4, x))\n```",
    )
    assert obs.error is None, obs.text
    assert obs.text == "[-2, 2]"
