"""Fixed, stdlib-only launcher that builds the namespaces and runs the untrusted code inside.

Run as `python -I -S _launcher.py STAGING_DIR STATUS_FD`; never imported by the package.
Process tree: outer (this process: enforces the time-out) -> init (pid 1 of a new pid
namespace: builds a private root, then reaps) -> payload (rlimits, unprivileged, execs Python).
When init exits the kernel kills everything left in its pid namespace, so nothing outlives a run.
Every outcome is reported as one JSON line on STATUS_FD: {"status": wait_status},
{"timed_out": true} or {"error": "..."}.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import platform
import resource
import select
import signal
import sys
import time
from typing import Any

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 24, 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}

SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib64", "lib32", "libx32")
ETC_KEEP = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "nsswitch.conf",
    "hosts",
    "host.conf",
    "os-release",
    "mime.types",
    "protocols",
    "services",
    "alternatives",
    "locale.alias",
)
DEVICES = ("null", "zero", "full", "random", "urandom")
RLIMITS = {
    "as": "RLIMIT_AS",
    "cpu": "RLIMIT_CPU",
    "fsize": "RLIMIT_FSIZE",
    "nproc": "RLIMIT_NPROC",
    "core": "RLIMIT_CORE",
    "nofile": "RLIMIT_NOFILE",
}

libc = ctypes.CDLL(None, use_errno=True)


def report(fd: int, **fields: Any) -> None:
    """Send one status line to the host (atomic: well under PIPE_BUF)."""
    os.write(fd, (json.dumps(fields)[:3000] + "\n").encode())


def check(ret: int, what: str) -> None:
    """Turn a failed libc call into an OSError that names the operation."""
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(src: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    """mount(2) with errors that name the target."""
    enc = [s.encode() if s is not None else None for s in (src, target, fstype, data or None)]
    check(libc.mount(enc[0], enc[1], enc[2], ctypes.c_ulong(flags), enc[3]), f"mount {target}")


def bind_ro(src: str, target: str) -> None:
    """Bind `src` at `target` read-only, nosuid, nodev (keeping a host noexec, which is locked)."""
    mount(src, target, None, MS_BIND)
    extra = MS_NOEXEC if os.statvfs(src).f_flag & os.ST_NOEXEC else 0
    mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | extra)


def tmpfs(target: str, opts: str, flags: int = MS_NOSUID | MS_NODEV) -> None:
    """Mount a fresh size-capped tmpfs: the only writable places the payload gets."""
    mount("tmpfs", target, "tmpfs", flags, opts)


def graft(src: str, target: str) -> None:
    """Make host path `src` appear read-only at `target`: copy a symlink, bind a file or dir."""
    if os.path.islink(src):
        os.symlink(os.readlink(src), target)
    elif os.path.isdir(src):
        os.makedirs(target, exist_ok=True)
        bind_ro(src, target)
    elif os.path.exists(src):
        open(target, "w").close()  # an empty mount point
        bind_ro(src, target)


def build_root(spec: dict[str, Any]) -> None:
    """Assemble a minimal private root in a tmpfs and pivot into it; the host tree is gone after."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing we mount propagates to the host
    root = os.path.join(spec["staging"], "root")
    tmpfs(root, "size=8m,mode=755")
    for name in SYSTEM_DIRS:
        graft("/" + name, os.path.join(root, name))
    os.makedirs(root + "/etc")
    for name in ETC_KEEP:
        graft("/etc/" + name, f"{root}/etc/{name}")
    uid, gid, work = spec["uid"], spec["gid"], spec["workdir"]
    with open(root + "/etc/passwd", "w") as f:
        f.write(
            f"root:x:0:0::/root:/bin/sh\nsandbox:x:{uid}:{gid}::{work}:/bin/sh\n"
            "nobody:x:65534:65534::/nonexistent:/usr/sbin/nologin\n"
        )
    with open(root + "/etc/group", "w") as f:
        f.write(f"root:x:0:\nsandbox:x:{gid}:\nnogroup:x:65534:\n")
    for path in spec["binds"]:  # the interpreter's prefix, at its host path (RPATH is absolute)
        if not os.path.lexists(root + path):
            graft(path, root + path)
    for path in spec["hide"]:  # site-packages: the payload gets the standard library only
        if os.path.isdir(root + path):
            tmpfs(root + path, "size=4k,mode=755", MS_NOSUID | MS_NODEV | MS_RDONLY)
    os.makedirs(root + "/dev")
    for name in DEVICES:
        open(f"{root}/dev/{name}", "w").close()  # an empty mount point
        mount(f"/dev/{name}", f"{root}/dev/{name}", None, MS_BIND)
    for i, name in enumerate(("stdin", "stdout", "stderr")):
        os.symlink(f"/proc/self/fd/{i}", f"{root}/dev/{name}")
    os.symlink("/proc/self/fd", root + "/dev/fd")
    size = f"size={spec['tmpfs_mb']}m"
    for path in ("/dev/shm", "/tmp", "/var/tmp"):
        os.makedirs(root + path)
        tmpfs(root + path, f"{size},mode=1777")
    os.makedirs(root + work)
    tmpfs(root + work, f"size={spec['work_mb']}m,mode=755,uid={uid},gid={gid}")
    os.makedirs(root + "/proc")
    with contextlib.suppress(OSError):  # some user-namespace setups forbid it: then no /proc
        mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.chdir(root)
    nr = SYS_PIVOT_ROOT.get(platform.machine())
    if nr is not None and libc.syscall(nr, b".", b".") == 0:
        check(libc.umount2(b".", MNT_DETACH), "umount old root")
    else:  # e.g. an initramfs root: chroot instead (the payload has no caps to escape it)
        os.chroot(".")
    os.chdir("/")
    mount(None, "/", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def write_files(spec: dict[str, Any]) -> None:
    """Write the program and the extra files into the fresh working directory, owned by the uid."""
    work = spec["workdir"]
    for rel, text in [*spec["files"].items(), (spec["main"], spec["code"])]:
        path = os.path.normpath(os.path.join(work, rel))
        if not path.startswith(work + "/"):
            raise ValueError(f"file name escapes the working directory: {rel!r}")
        parent = os.path.dirname(path)
        os.makedirs(parent, exist_ok=True)
        while parent != work:  # directories we created belong to the payload too
            os.chown(parent, spec["uid"], spec["gid"])
            parent = os.path.dirname(parent)
        with open(path, "w", encoding="utf-8", errors="replace") as f:
            f.write(text)
        os.chown(path, spec["uid"], spec["gid"])


def exec_payload(spec: dict[str, Any], err_w: int) -> None:
    """In the forked payload: cap resources, drop every privilege, exec the interpreter."""
    os.setsid()
    for key, value in spec["rlimits"].items():
        soft, hard = (value, value + 1) if key == "cpu" else (value, value)
        resource.setrlimit(getattr(resource, RLIMITS[key]), (soft, hard))
    if spec["mode"] == "root":
        os.setgroups([])
        os.setgid(spec["gid"])
        os.setuid(spec["uid"])  # from here on RLIMIT_NPROC is enforced, and no capabilities
    else:  # user namespace: we are its root; empty the bounding set so exec grants no caps
        for cap in range(64):  # past the last cap the kernel just answers EINVAL
            libc.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0)
        libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")  # no setuid binaries
    check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
    os.chdir(spec["workdir"])
    os.closerange(3, err_w)
    os.closerange(err_w + 1, 1 << 16)
    os.execve(spec["python"], spec["argv"], spec["env"])


def run_init(spec: dict[str, Any], status_fd: int) -> None:
    """pid 1 of the sandbox: build the root, start the payload, reap until it exits, report."""
    try:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        check(
            libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS),
            "unshare(mount, net, ipc, uts)",
        )
        libc.sethostname(b"sandbox", 7)
        build_root(spec)
        write_files(spec)
        err_r, err_w = os.pipe()  # close-on-exec: EOF without data means the exec worked
        pid = os.fork()
        if pid == 0:
            try:
                os.close(err_r)
                exec_payload(spec, err_w)
            except BaseException as exc:
                os.write(err_w, f"payload exec failed: {exc!r}".encode()[:2000])
            os._exit(127)
        os.close(err_w)
        failure = os.read(err_r, 4096)
        if failure:
            os.kill(pid, signal.SIGKILL)
            raise RuntimeError(failure.decode(errors="replace"))
        while True:
            reaped, status = os.wait()
            if reaped == pid:
                report(status_fd, status=status)
                break
    except BaseException as exc:
        report(status_fd, error=f"{type(exc).__name__}: {exc}")
        os._exit(70)
    os._exit(0)  # the kernel now kills whatever the payload left behind in this pid namespace


def enter_user_namespace() -> None:
    """Become root of a fresh user namespace mapped to our own uid (the non-root path)."""
    uid, gid = os.geteuid(), os.getegid()
    check(libc.unshare(CLONE_NEWUSER | CLONE_NEWPID), "unshare(user, pid)")
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"0 {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"0 {gid} 1")


def wait_with_timeout(pid: int, timeout: float) -> bool:
    """Wait for `pid` to exit; True if it did before `timeout` seconds."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
            time.sleep(0.005)
        return False
    try:
        return bool(select.select([pidfd], [], [], timeout)[0])
    finally:
        os.close(pidfd)


class Cancelled(Exception):
    """The host asked us to stop the run early."""


def on_sigterm(signum: int, frame: object) -> None:
    """Turn SIGTERM into an exception that interrupts the wait."""
    raise Cancelled


def main() -> None:
    """Outer process: make the namespaces, fork init, kill it at the time-out, reap it."""
    staging, status_fd = sys.argv[1], int(sys.argv[2])
    os.umask(0o022)  # the payload's uid must be able to traverse what we create
    try:
        with open(os.path.join(staging, "spec.json"), encoding="utf-8") as f:
            spec = json.load(f)
        spec["staging"] = staging
        if spec["mode"] == "root":
            check(libc.unshare(CLONE_NEWPID), "unshare(pid)")
        else:
            enter_user_namespace()
        pid = os.fork()
    except BaseException as exc:
        report(status_fd, error=f"{type(exc).__name__}: {exc}")
        sys.exit(70)
    if pid == 0:
        run_init(spec, status_fd)
    finished = False
    signal.signal(signal.SIGTERM, on_sigterm)  # the host cancels a run with SIGTERM
    try:
        finished = wait_with_timeout(pid, spec["timeout_s"])
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    except Cancelled:
        finished = False
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if not finished:
        os.kill(pid, signal.SIGKILL)  # init's death makes the kernel kill its whole pid namespace
        report(status_fd, timed_out=True)
    os.waitpid(pid, 0)  # returns only once every process of the namespace is gone


if __name__ == "__main__":
    main()
