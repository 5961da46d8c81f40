"""Behavioural tests for overseer.sandbox: each one runs real code and checks isolation held."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from overseer.sandbox import (
    SandboxLimits,
    SandboxResult,
    SandboxUnavailable,
    _plan,
    arun_python,
    run_python,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")


@pytest.fixture(scope="module", autouse=True)
def _isolation_available() -> None:
    """As root (CI) isolation must work; unprivileged, skip if user namespaces are disabled."""
    if os.geteuid() != 0:
        try:
            run_python("pass")
        except SandboxUnavailable as exc:
            pytest.skip(f"no kernel isolation for an unprivileged user here: {exc}")


FAST = SandboxLimits(timeout_s=1.0)


@pytest.fixture
def used_uids(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Records the per-run uids this test's sandboxes got (root mode)."""
    uids: list[int] = []
    real = _plan.fresh_uid

    def record() -> int:
        uids.append(real())
        return uids[-1]

    monkeypatch.setattr(_plan, "fresh_uid", record)
    return uids


def _pids_of_uids(uids: list[int]) -> list[int]:
    """Host pids still running under one of `uids`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        uid = int(next(ln for ln in status.splitlines() if ln.startswith("Uid:")).split()[1])
        if uid in uids:
            found.append(int(entry))
    return found


def _assert_no_survivors(uids: list[int]) -> None:
    """No process of this test's sandboxes is left on the host (uids are per run as root)."""
    if os.geteuid() == 0:
        assert uids, "expected root mode to hand out per-run uids"
    assert _pids_of_uids(uids) == []


def _pids_with_marker(marker: str) -> list[int]:
    """Host pids whose command line contains `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


def test_normal_run_stdout_returncode_and_isolation_label() -> None:
    result = run_python("import sys\nprint('hello', 6 * 7)\nsys.exit(0)")
    assert isinstance(result, SandboxResult)
    assert result.ok and result.returncode == 0 and not result.timed_out
    assert result.stdout == "hello 42\n" and result.stderr == ""
    assert "netns" in result.isolation and "mountns" in result.isolation
    assert 0 < result.duration_s < 5


def test_nonzero_exit_code_is_reported() -> None:
    result = run_python("raise SystemExit(3)")
    assert result.returncode == 3 and not result.ok


def test_files_are_importable_including_packages() -> None:
    files = {
        "solution.py": "def add(a, b):\n    return a + b\n",
        "pkg/__init__.py": "",
        "pkg/m.py": "X = 5\n",
    }
    code = "from solution import add\nfrom pkg.m import X\nassert add(2, 3) == X\nprint('passed')"
    result = run_python(code, files=files)
    assert result.ok, result.stderr
    assert result.stdout == "passed\n"


def test_stdin_is_fed_to_the_code() -> None:
    result = run_python("print(input()[::-1]); print(input())", stdin="abc\nsecond\n")
    assert result.stdout == "cba\nsecond\n"


def test_exception_gives_nonzero_returncode_and_traceback() -> None:
    result = run_python("def f():\n    return 1 / 0\nf()")
    assert result.returncode == 1 and not result.ok
    assert "Traceback (most recent call last)" in result.stderr
    assert "ZeroDivisionError" in result.stderr


def test_infinite_loop_times_out_and_kills_whole_tree(used_uids: list[int]) -> None:
    marker = f"sbx-marker-{uuid.uuid4().hex}"
    code = f"""
import os, subprocess, sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "{marker}"])
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "{marker}"],
                 start_new_session=True)
if os.fork() == 0:
    os.setsid()
    os.execv(sys.executable, [sys.executable, "-c", "while True: pass", "{marker}"])
print("spawned", flush=True)
while True:
    pass
"""
    start = time.monotonic()
    result = run_python(code, limits=FAST)
    elapsed = time.monotonic() - start
    assert result.timed_out and result.returncode is None and not result.ok
    assert result.stdout == "spawned\n"
    assert elapsed < 3.0
    assert _pids_with_marker(marker) == []
    _assert_no_survivors(used_uids)


def test_background_processes_die_when_the_program_exits() -> None:
    marker = f"sbx-marker-{uuid.uuid4().hex}"
    code = f"""
import subprocess, sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "{marker}"],
                 start_new_session=True)
print("bye")
"""
    result = run_python(code)
    assert result.ok and result.stdout == "bye\n"
    assert _pids_with_marker(marker) == []


def test_fork_bomb_is_contained(used_uids: list[int]) -> None:
    start = time.monotonic()
    result = run_python("import os\nwhile True: os.fork()", limits=SandboxLimits(timeout_s=5))
    assert time.monotonic() - start < 7
    assert not result.ok
    assert result.timed_out or "BlockingIOError" in result.stderr
    _assert_no_survivors(used_uids)
    # the host can still start processes
    assert subprocess.run(["true"], check=False).returncode == 0


def test_memory_hog_fails() -> None:
    result = run_python("data = bytearray(2 * 1024**3)\nprint('allocated')")
    assert result.returncode not in (0, None)
    assert "allocated" not in result.stdout
    assert "MemoryError" in result.stderr


def test_cpu_limit_kills_a_busy_loop_before_the_wall_clock() -> None:
    result = run_python("while True: pass", limits=SandboxLimits(timeout_s=8, cpu_s=1))
    assert not result.timed_out
    assert result.returncode is not None and result.returncode < 0  # SIGXCPU / SIGKILL
    assert result.duration_s < 4


def test_file_size_limit() -> None:
    code = "f = open('big.bin', 'wb')\nf.write(b'x' * (3 * 1024 * 1024))\nf.close()"
    result = run_python(code, limits=SandboxLimits(max_file_mb=1))
    assert result.returncode != 0
    assert "File too large" in result.stderr


def test_writes_outside_workdir_never_reach_the_host(tmp_path: Path) -> None:
    tag = uuid.uuid4().hex
    secret = tmp_path / "host-secret.txt"
    secret.write_text("top secret")
    targets = [
        str(tmp_path / "escape.txt"),
        f"/tmp/sbx-escape-{tag}",
        f"/var/tmp/sbx-escape-{tag}",
        f"/dev/shm/sbx-escape-{tag}",
        f"/root/sbx-escape-{tag}",
        f"/sbx-escape-{tag}",
        f"/usr/sbx-escape-{tag}",
    ]
    code = f"""
import json, os
results = {{}}
for path in {targets!r}:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("pwned")
        results[path] = "written"
    except OSError as exc:
        results[path] = type(exc).__name__
try:
    results["read"] = open({str(secret)!r}).read()
except OSError as exc:
    results["read"] = type(exc).__name__
open("inside.txt", "w").write("fine")
print(json.dumps(results))
"""
    result = run_python(code)
    assert result.ok, result.stderr
    seen = json.loads(result.stdout)
    # the scratch dirs are private tmpfs: writing works there but stays in the sandbox
    assert seen[f"/tmp/sbx-escape-{tag}"] == "written"
    assert seen[f"/dev/shm/sbx-escape-{tag}"] == "written"
    assert seen["read"] != "top secret"  # the host tree is not even visible
    for path in targets:
        assert not os.path.exists(path), path
    assert not list(tmp_path.glob("escape*"))


def test_network_is_unreachable_even_to_host_loopback() -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    port = listener.getsockname()[1]
    code = f"""
import socket
print(socket.if_nameindex())
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=3).sendall(b"leak")
    print("CONNECTED")
except OSError as exc:
    print("blocked", exc.errno)
"""
    try:
        result = run_python(code)
        assert result.ok, result.stderr
        assert "CONNECTED" not in result.stdout
        assert "blocked" in result.stdout
        assert "[(1, 'lo')]" in result.stdout  # a fresh netns: nothing but a downed loopback
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        listener.close()


def test_environment_is_minimal_and_secrets_do_not_leak(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-very-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-very-secret")
    result = run_python("import json, os\nprint(json.dumps(dict(os.environ)))\nprint(os.getcwd())")
    assert result.ok, result.stderr
    env_line, cwd = result.stdout.splitlines()
    env = json.loads(env_line)
    assert "very-secret" not in result.stdout
    assert set(env) == {"PATH", "HOME", "LANG", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED"}
    assert env["HOME"] == cwd and env["PYTHONHASHSEED"] == "0"


def test_huge_output_is_truncated_with_marker() -> None:
    limits = SandboxLimits(max_output_bytes=1000)
    result = run_python(
        "import sys\nprint('x' * 1_000_000)\nsys.stderr.write('é' * 10_000)", limits=limits
    )
    assert result.ok
    assert result.stdout.startswith("x" * 1000)
    assert len(result.stdout) < 1200 and "truncated" in result.stdout
    assert len(result.stderr.encode()) < 1300 and "truncated" in result.stderr


def test_endless_output_stays_bounded_until_timeout() -> None:
    limits = SandboxLimits(timeout_s=1.0, max_output_bytes=5000)
    result = run_python("while True:\n    print('spam' * 1000)", limits=limits)
    assert result.timed_out
    assert len(result.stdout) < 5200 and "truncated" in result.stdout


def test_undecodable_output_is_replaced() -> None:
    result = run_python("import sys\nsys.stdout.buffer.write(b'ok \\xff\\xfe end')")
    assert result.stdout == "ok \ufffd\ufffd end"


@pytest.mark.parametrize("name", ["/etc/passwd", "../evil.py", "a/../../evil.py", "", "main.py"])
def test_bad_file_names_raise_value_error(name: str) -> None:
    with pytest.raises(ValueError, match="invalid sandbox file name") as info:
        run_python("print(1)", files={name: "x = 1"})
    assert repr(name) in str(info.value)


def test_limits_validation_and_cpu_default() -> None:
    assert SandboxLimits(timeout_s=2.5).effective_cpu_s == 4
    assert SandboxLimits(cpu_s=7).effective_cpu_s == 7
    with pytest.raises(ValueError, match="timeout_s"):
        SandboxLimits(timeout_s=0)
    with pytest.raises(ValueError, match="memory_mb"):
        SandboxLimits(memory_mb=-1)


def test_setup_failure_raises_sandbox_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    exe, _, hide = _plan.python_layout()
    monkeypatch.setattr(_plan, "python_layout", lambda: (exe, ("/nonexistent-sbx",), hide))
    with pytest.raises(SandboxUnavailable, match="exec failed"):
        run_python("print('must not run')")


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and util-linux"
)
def test_disabled_user_namespaces_raise_sandbox_unavailable() -> None:
    # Inside a user namespace whose own max_user_namespaces is 0, the unprivileged path
    # cannot get isolation: it must refuse (never run the code unsandboxed) and say why.
    script = (
        "from overseer.sandbox import _plan, run_python, SandboxUnavailable\n"
        "_plan.root_mode = lambda: False\n"
        "try:\n"
        "    print('RAN', run_python('print(1)'))\n"
        "except SandboxUnavailable as exc:\n"
        "    print('UNAVAILABLE', exc)\n"
    )
    shell = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" -c "$1"'
    src = str(Path(_plan.__file__).resolve().parents[2])
    proc = subprocess.run(
        ["unshare", "-U", "-r", "sh", "-c", shell, sys.executable, script],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": src},
        check=False,
    )
    assert "UNAVAILABLE" in proc.stdout, proc.stdout + proc.stderr
    assert "RAN" not in proc.stdout
    assert "user namespaces" in proc.stdout


def test_user_namespace_mode_isolates_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_plan, "root_mode", lambda: False)
    code = """
import os, socket
try:
    socket.create_connection(("127.0.0.1", 9), timeout=2)
except OSError:
    print("net blocked")
try:
    open("/usr/sbx-userns-escape", "w")
except OSError:
    print("fs blocked")
print(sorted(os.listdir("/")))
"""
    result = run_python(code)
    assert result.ok, result.stderr
    assert result.isolation.startswith("userns+")
    assert "net blocked" in result.stdout and "fs blocked" in result.stdout
    assert "work" not in result.stdout  # the host tree is not visible


async def test_async_concurrent_runs_are_all_correct() -> None:
    codes = [f"import time\ntime.sleep(0.3)\nprint({i} * {i})" for i in range(4)]
    results = await asyncio.gather(*(arun_python(c) for c in codes))
    assert [r.stdout for r in results] == [f"{i * i}\n" for i in range(4)]
    assert all(r.ok for r in results)


async def test_async_timeout_does_not_block_the_event_loop(used_uids: list[int]) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.05)
            ticks += 1

    task = asyncio.create_task(ticker())
    try:
        result = await arun_python("while True: pass", limits=FAST)
    finally:
        task.cancel()
    assert result.timed_out and result.returncode is None
    assert ticks >= 10
    _assert_no_survivors(used_uids)


def test_threaded_concurrent_runs_are_all_correct() -> None:
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda i: run_python(f"print('t{i}')", stdin=str(i)), range(4)))
    assert [r.stdout for r in results] == [f"t{i}\n" for i in range(4)]


async def test_cancelling_arun_python_tears_the_sandbox_down(used_uids: list[int]) -> None:
    marker = f"sbx-marker-{uuid.uuid4().hex}"
    code = f"""
import subprocess, sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "{marker}"])
while True:
    pass
"""
    task = asyncio.create_task(arun_python(code, limits=SandboxLimits(timeout_s=20)))
    for _ in range(100):
        if _pids_with_marker(marker):
            break
        await asyncio.sleep(0.05)
    assert _pids_with_marker(marker), "the sandboxed grandchild never started"
    start = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - start < 2.5
    assert _pids_with_marker(marker) == []
    _assert_no_survivors(used_uids)
