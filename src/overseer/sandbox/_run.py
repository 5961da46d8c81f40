"""Spawn the launcher, collect bounded output, and turn its status line into a SandboxResult."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import IO, Any

from overseer.sandbox._limits import SandboxLimits, SandboxResult, SandboxUnavailable
from overseer.sandbox._plan import Plan, make_plan

_CHUNK = 65536
_DRAIN_S = 2.0  # how long to wait on pipes / the launcher once it has exited or been signalled
_REFUSE = "overseer.sandbox never runs code without kernel isolation, so it did not run it."
_HINT_USERNS = (
    "Run as root, or enable unprivileged user namespaces (sysctl user.max_user_namespaces>0, "
    "kernel.unprivileged_userns_clone=1, kernel.apparmor_restrict_unprivileged_userns=0)."
)
_HINT_ROOT = (
    "Running as root, so this kernel or container refuses mount/pid/net namespaces (a seccomp "
    "or LSM policy, or a missing CAP_SYS_ADMIN): run on a host or VM that allows them."
)


def _hint(plan: Plan) -> str:
    """What to do about a failed setup, for the mode we were in."""
    return f"{_REFUSE} {_HINT_USERNS if plan.isolation.startswith('userns') else _HINT_ROOT}"


class _Capped:
    """Keeps the first `limit` bytes of a stream and counts the rest, so memory stays bounded."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        """Record a chunk, storing only what still fits under the limit."""
        self.total += len(chunk)
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]

    def text(self) -> str:
        """The kept bytes as UTF-8 (bad bytes replaced), with a marker when something was cut."""
        out = bytes(self.data).decode("utf-8", errors="replace")
        if self.total > self.limit:
            out += (
                f"\n[overseer.sandbox: output truncated: {self.total} bytes written, "
                f"first {self.limit} kept]\n"
            )
        return out


def _stdin_file(plan: Plan) -> IO[bytes] | int:
    """The payload's stdin: the staged file, or /dev/null."""
    return open(plan.stdin_path, "rb") if plan.stdin_path else subprocess.DEVNULL


def _popen_kwargs(plan: Plan, status_w: int) -> dict[str, Any]:
    """Arguments shared by the sync and async spawns: own session, minimal env, status fd."""
    return {
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
        "pass_fds": (status_w,),
        "start_new_session": True,
        "close_fds": True,
        "env": plan.launcher_env,
    }


def _kill_group(proc: subprocess.Popen[bytes] | asyncio.subprocess.Process) -> None:
    """SIGKILL the launcher's process group (launcher and pid-ns init); only if not yet reaped."""
    if proc.returncode is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            proc.kill()


def _stop_sync(proc: subprocess.Popen[bytes]) -> None:
    """Cancel a run: the launcher kills and reaps its namespace on SIGTERM; SIGKILL if it won't."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            proc.wait(timeout=_DRAIN_S)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.wait()


async def _stop_async(proc: asyncio.subprocess.Process) -> None:
    """`_stop_sync` for an asyncio child."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), _DRAIN_S)
        except TimeoutError:
            _kill_group(proc)
            await asyncio.shield(proc.wait())


def _read_status(fd: int) -> bytes:
    """Read whatever the launcher reported, without blocking."""
    os.set_blocking(fd, False)
    chunks = []
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
    return b"".join(chunks)


def _finish(
    plan: Plan,
    status: bytes,
    out: _Capped,
    err: _Capped,
    killed: bool,
    launcher_rc: int | None,
    start: float,
) -> SandboxResult:
    """Interpret the launcher's status lines; raise SandboxUnavailable if isolation failed."""
    duration = time.monotonic() - start
    records: dict[str, Any] = {}
    for line in status.decode(errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            if isinstance(record, dict):
                records.update(record)
    if "error" in records:
        raise SandboxUnavailable(
            f"sandbox setup failed ({plan.isolation}): {records['error']}. {_hint(plan)}"
        )
    if "status" in records:
        returncode: int | None = os.waitstatus_to_exitcode(int(records["status"]))
        timed_out = False
    elif records.get("timed_out") or killed:
        returncode, timed_out = None, True
    else:
        tail = err.text()[-2000:]
        raise SandboxUnavailable(
            f"sandbox launcher exited with {launcher_rc} and no status; stderr: {tail!r}. "
            + _hint(plan)
        )
    return SandboxResult(
        returncode=returncode,
        stdout=out.text(),
        stderr=err.text(),
        timed_out=timed_out,
        duration_s=duration,
        isolation=plan.isolation,
    )


@dataclass
class _Job:
    """One run's plan, status pipe, capped output buffers and start time."""

    plan: Plan
    status_r: int
    status_w: int
    out: _Capped
    err: _Capped
    start: float = 0.0

    def result(self, killed: bool, launcher_rc: int | None) -> SandboxResult:
        """The run's result, from the launcher's status lines and the captured output."""
        status = _read_status(self.status_r)
        return _finish(self.plan, status, self.out, self.err, killed, launcher_rc, self.start)


@contextlib.contextmanager
def _job(
    code: str,
    files: Mapping[str, str] | None,
    stdin: str | None,
    limits: SandboxLimits | None,
) -> Iterator[_Job]:
    """Stage one run; on exit close the status pipe's read end and remove the staging dir."""
    plan = make_plan(code, files, stdin, limits)
    status_r, status_w = os.pipe()
    cap = plan.limits.max_output_bytes
    try:
        yield _Job(plan, status_r, status_w, _Capped(cap), _Capped(cap))
    finally:
        os.close(status_r)
        plan.cleanup()


@contextlib.contextmanager
def _spawning(job: _Job) -> Iterator[tuple[IO[bytes] | int, dict[str, Any]]]:
    """Start the clock and give the launcher's stdin and spawn arguments; once it is spawned
    (or failed to), the parent's copies of its stdin and of the status write end are closed."""
    job.start = time.monotonic()
    stdin_f = _stdin_file(job.plan)
    try:
        yield stdin_f, _popen_kwargs(job.plan, job.status_w)
    finally:
        if not isinstance(stdin_f, int):
            stdin_f.close()
        os.close(job.status_w)


def run_python(
    code: str,
    *,
    files: Mapping[str, str] | None = None,
    stdin: str | None = None,
    limits: SandboxLimits | None = None,
) -> SandboxResult:
    """Run untrusted Python `code` in an isolated child and wait for it (blocking)."""
    with _job(code, files, stdin, limits) as job:
        proc: subprocess.Popen[bytes] | None = None
        try:
            with _spawning(job) as (stdin_f, kwargs):
                proc = subprocess.Popen(
                    [*job.plan.argv, str(job.status_w)], stdin=stdin_f, **kwargs
                )
            killed = _pump_sync(proc, job.plan, job.out, job.err, job.start)
            return job.result(killed, proc.returncode)
        finally:
            if proc is not None:  # interrupted (e.g. KeyboardInterrupt) or an error above
                _stop_sync(proc)


def _pump_sync(
    proc: subprocess.Popen[bytes], plan: Plan, out: _Capped, err: _Capped, start: float
) -> bool:
    """Read both pipes until EOF and reap the launcher; True if the host backstop had to kill."""
    assert proc.stdout is not None and proc.stderr is not None
    deadline = start + plan.backstop_s
    killed = exited = False
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout.fileno(), selectors.EVENT_READ, out)
        sel.register(proc.stderr.fileno(), selectors.EVENT_READ, err)
        while sel.get_map():
            now = time.monotonic()
            if not exited and proc.poll() is not None:
                # The launcher only exits once its pid namespace is empty; the pipes should be at
                # EOF, unless some unrelated host fork inherited them: don't wait on that forever.
                exited, deadline = True, min(deadline, now + _DRAIN_S)
            if now >= deadline:
                if exited or killed:
                    break
                _kill_group(proc)
                killed, deadline = True, now + _DRAIN_S
                continue
            for key, _ in sel.select(min(deadline - now, 0.25)):
                chunk = os.read(key.fd, _CHUNK)
                if chunk:
                    key.data.add(chunk)
                else:
                    sel.unregister(key.fd)
    proc.stdout.close()
    proc.stderr.close()
    if proc.poll() is None:
        _kill_group(proc)
        killed = True
        proc.wait()
    return killed


async def _pump_async(stream: asyncio.StreamReader | None, sink: _Capped) -> None:
    """Copy one pipe into its capped buffer until EOF."""
    assert stream is not None
    while chunk := await stream.read(_CHUNK):
        sink.add(chunk)


async def arun_python(
    code: str,
    *,
    files: Mapping[str, str] | None = None,
    stdin: str | None = None,
    limits: SandboxLimits | None = None,
) -> SandboxResult:
    """Same as `run_python`, on asyncio subprocesses so the event loop is never blocked."""
    with _job(code, files, stdin, limits) as job:
        proc: asyncio.subprocess.Process | None = None
        pumps: asyncio.Future[Any] | None = None
        try:
            with _spawning(job) as (stdin_f, kwargs):
                proc = await asyncio.create_subprocess_exec(
                    *job.plan.argv, str(job.status_w), stdin=stdin_f, **kwargs
                )
            killed = False
            pumps = asyncio.gather(
                _pump_async(proc.stdout, job.out), _pump_async(proc.stderr, job.err)
            )
            try:
                await asyncio.wait_for(proc.wait(), job.plan.backstop_s)
            except TimeoutError:
                _kill_group(proc)
                killed = True
                await proc.wait()
            # The launcher only exits once its pid namespace is empty: the pipes are at EOF
            # unless an unrelated host fork inherited them, so bound the drain.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(pumps, _DRAIN_S)
            return job.result(killed, proc.returncode)
        finally:
            if proc is not None:  # cancelled, or an error above
                await _stop_async(proc)
            if pumps is not None and not pumps.done():
                pumps.cancel()
