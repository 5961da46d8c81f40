"""Host-side preparation of one sandboxed run: validation, staging directory, launcher spec."""

from __future__ import annotations

import json
import math
import os
import secrets
import shutil
import site
import sys
import sysconfig
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

from overseer.sandbox._limits import SandboxLimits, SandboxUnavailable

WORKDIR = "/sandbox"
MAIN_FILE = "main.py"
LAUNCHER = str(Path(__file__).with_name("_launcher.py"))
# Root mode: each run gets its own unprivileged uid, so RLIMIT_NPROC counts that run alone.
UID_BASE, UID_SPAN = 1_600_000_000, 400_000_000
ISOLATION_ROOT = "netns+mountns+pidns+ipcns+utsns+pivot_root+unprivileged-uid"
ISOLATION_USERNS = "userns+netns+mountns+pidns+ipcns+utsns+pivot_root+no-caps"
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")


def validate_files(files: Mapping[str, str] | None) -> dict[str, str]:
    """Check `files` names are plain relative paths inside the workdir; ValueError names the key."""
    out: dict[str, str] = {}
    for name, text in (files or {}).items():
        if not isinstance(name, str) or not name or "\x00" in name or "\\" in name:
            raise ValueError(
                f"invalid sandbox file name {name!r}: must be a non-empty relative path"
            )
        parts = PurePosixPath(name).parts
        if name.startswith("/") or ".." in parts or name.endswith("/"):
            raise ValueError(f"invalid sandbox file name {name!r}: must stay inside the workdir")
        if PurePosixPath(*parts).as_posix() == MAIN_FILE:
            raise ValueError(f"invalid sandbox file name {name!r}: reserved for the program itself")
        if not isinstance(text, str):
            raise ValueError(f"sandbox file {name!r} must be text (str), got {type(text).__name__}")
        out[PurePosixPath(*parts).as_posix()] = text
    return out


def _is_system(path: str) -> bool:
    """True for paths the launcher already binds (/usr and the merged-/usr links)."""
    return any(path == d or path.startswith(d + "/") for d in _SYSTEM_DIRS)


@cache
def python_layout() -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """The base interpreter, the prefixes to bind at their host paths, the site dirs to hide."""
    exe = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    prefixes = {os.path.realpath(p) for p in (sys.base_prefix, sys.base_exec_prefix)}
    prefixes.add(os.path.dirname(os.path.dirname(exe)))
    binds = sorted(p for p in prefixes if not _is_system(p))
    binds = [p for p in binds if not any(p.startswith(q + "/") for q in binds)]
    scheme = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})
    candidates = {scheme["purelib"], scheme["platlib"]}
    candidates.update(site.getsitepackages([sys.base_prefix, sys.base_exec_prefix]))
    hide = sorted({os.path.realpath(p) for p in candidates if os.path.isdir(p)})
    return exe, tuple(binds), tuple(hide)


def root_mode() -> bool:
    """True when we can drop the payload to a fresh unprivileged uid (we are root)."""
    return os.geteuid() == 0


def fresh_uid() -> int:
    """A random uid for one run (root mode), so no two concurrent sandboxes share NPROC counts."""
    return UID_BASE + secrets.randbelow(UID_SPAN)


def _rlimits(limits: SandboxLimits) -> dict[str, int]:
    """The rlimits the payload gets, in the launcher's key names."""
    import resource

    nofile_hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nofile = 1024 if nofile_hard == resource.RLIM_INFINITY else min(1024, nofile_hard)
    return {
        "as": limits.memory_mb * 2**20,
        "cpu": limits.effective_cpu_s,
        "fsize": limits.max_file_mb * 2**20,
        "nproc": limits.max_processes,
        "core": 0,
        "nofile": nofile,
    }


@dataclass
class Plan:
    """Everything one run needs on the host; `cleanup` removes the staging directory."""

    argv: list[str]
    staging: str
    stdin_path: str | None
    limits: SandboxLimits
    isolation: str
    launcher_env: dict[str, str] = field(default_factory=dict)

    @property
    def backstop_s(self) -> float:
        """Host-side deadline in case the launcher itself hangs (it enforces the real time-out)."""
        return self.limits.timeout_s + 5.0

    def cleanup(self) -> None:
        """Delete the staging directory (the child's tmpfs contents vanished with its namespace)."""
        shutil.rmtree(self.staging, ignore_errors=True)


def _stage(spec: dict[str, Any], stdin: str | None) -> tuple[str, str | None]:
    """A fresh staging directory holding the launcher spec and stdin (removed on failure);
    returns it and the stdin file's path, if any."""
    staging = tempfile.mkdtemp(prefix="overseer-sandbox-")
    try:
        os.mkdir(os.path.join(staging, "root"))
        with open(os.path.join(staging, "spec.json"), "w", encoding="utf-8") as f:
            json.dump(spec, f)
        stdin_path = None
        if stdin is not None:
            stdin_path = os.path.join(staging, "stdin")
            with open(stdin_path, "w", encoding="utf-8", errors="replace") as f:
                f.write(stdin)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return staging, stdin_path


def _child_env(exe: str) -> dict[str, str]:
    """The whole environment of the sandboxed Python: nothing of ours leaks in."""
    return {
        "PATH": f"{os.path.dirname(exe)}:/usr/local/bin:/usr/bin:/bin",
        "HOME": WORKDIR,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
    }


def make_plan(
    code: str, files: Mapping[str, str] | None, stdin: str | None, limits: SandboxLimits | None
) -> Plan:
    """Validate inputs and write the launcher spec into a fresh root-only staging directory."""
    if not isinstance(code, str):
        raise TypeError(f"code must be str, got {type(code).__name__}")
    checked = validate_files(files)
    limits = limits if limits is not None else SandboxLimits()
    if not sys.platform.startswith("linux"):
        raise SandboxUnavailable(
            f"overseer.sandbox needs Linux namespaces; this is {sys.platform}. Run the code "
            "scorers on Linux (as root, or with unprivileged user namespaces enabled)."
        )
    exe, binds, hide = python_layout()
    as_root = root_mode()
    uid = fresh_uid() if as_root else 0
    size_mb = sum(len(t.encode()) for t in (code, *checked.values())) / 2**20
    tmpfs_mb = max(64, 4 * limits.max_file_mb)
    spec: dict[str, Any] = {
        "mode": "root" if as_root else "userns",
        "uid": uid,
        "gid": uid,
        "timeout_s": limits.timeout_s,
        "rlimits": _rlimits(limits),
        "python": exe,
        "argv": [exe, "-s", MAIN_FILE],
        "env": _child_env(exe),
        "binds": list(binds),
        "hide": list(hide),
        "workdir": WORKDIR,
        "main": MAIN_FILE,
        "code": code,
        "files": checked,
        "tmpfs_mb": tmpfs_mb,
        "work_mb": tmpfs_mb + math.ceil(size_mb),
    }
    staging, stdin_path = _stage(spec, stdin)
    return Plan(
        argv=[exe, "-I", "-S", LAUNCHER, staging],
        staging=staging,
        stdin_path=stdin_path,
        limits=limits,
        isolation=ISOLATION_ROOT if as_root else ISOLATION_USERNS,
        launcher_env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
    )
