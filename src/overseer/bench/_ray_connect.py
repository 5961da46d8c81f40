"""How the Ray backend reaches Ray: the cluster a run joins, token auth, and one-line errors.

The address is found the ways Ray documents: `--address` (host:port, ray://host:port, `auto`
for the recorded cluster, `local` to start Ray here), then `RAY_ADDRESS`, then the cluster the
last `ray start --head` recorded in Ray's temp directory; with none of them, Ray starts on this
machine for the run, with no more CPUs than the cores this process may use. A cluster that
uses token auth is joined with the token Ray would use (`RAY_AUTH_TOKEN`,
`RAY_AUTH_TOKEN_PATH` or `~/.ray/auth_token`), as `ray start --head` does; its GCS is asked
first, so a cluster without token auth is joined without one though a token is at hand (any
local Ray run writes ~/.ray/auth_token), and a token mismatch is named before anything starts.
Every Ray-side failure becomes a `RayConnectError` whose message is one line.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import socket
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from overseer.errors import install_hint

AUTH_HINT = (
    "if the cluster uses token auth (RAY_AUTH_MODE=token on its head), give this machine its "
    "token: RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token"
)
TOKEN_FIX = (
    "give this machine the cluster's token: RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or "
    "~/.ray/auth_token"
)
NODE_HINT = (
    "every node needs overseer with the ray extra and the model's package "
    "(or use --model openai:NAME with a server every node reaches)"
)


TOKEN_LOGGER = "ray._private.authentication.authentication_token_setup"


STALE_HINT = " If that record is stale, `ray stop` clears it, or pass --address local."


class RayConnectError(RuntimeError):
    """A Ray-side failure (cannot connect, auth, version mismatch, a worker that cannot start),
    with a one-line message naming what failed; commands print it and exit 2."""


def one_line(exc: BaseException) -> str:
    """The gist of a Ray exception on one line: a traceback's last line, else all of it."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    if not lines:
        return type(exc).__name__
    if any(ln.startswith("Traceback") for ln in lines):
        return lines[-1]
    return " ".join(" ".join(lines).split())


@dataclass(frozen=True)
class Target:
    """The cluster to join (`address` None: start Ray here) and where its address came from."""

    address: str | None
    source: str

    @property
    def client(self) -> bool:
        """True for a Ray Client address (ray://), which needs the `ray[client]` packages."""
        return self.address is not None and self.address.startswith("ray://")


def find_target(explicit: str | None) -> Target:
    """--address, else RAY_ADDRESS, else the cluster `ray start` recorded, else local Ray.
    As in Ray, "local" starts Ray here whatever is recorded and "auto" is the recorded
    cluster (none recorded: a RayConnectError saying how to start one)."""
    env = os.environ.get("RAY_ADDRESS", "").strip()
    for given, source in ((explicit, "--address"), (env, "RAY_ADDRESS")):
        if given == "local":
            return Target(None, source)
        if given == "auto":
            found = _recorded()
            if found is None:
                raise RayConnectError(
                    f"{source} auto: no Ray cluster is recorded on this machine; start one "
                    "with `ray start --head`, or pass --address local to start Ray for this run"
                )
            return found
        if given:
            return Target(given, source)
    return _recorded() or Target(None, "local")


def _recorded() -> Target | None:
    """The cluster the last `ray start --head` on this machine recorded, if any."""
    try:
        from ray._common.utils import get_ray_address_file
        from ray._private.utils import read_ray_address
    except ImportError:  # pragma: no cover - another Ray than the pinned one
        return None
    recorded = read_ray_address()
    if not recorded:
        return None
    return Target(recorded, f"the cluster `ray start` recorded in {get_ray_address_file(None)}")


def host_port(address: str) -> tuple[str, int]:
    """The host and port of a Ray address (HOST:PORT or ray://HOST:PORT); any other form,
    an http:// URL included, is one RayConnectError line saying what is expected."""
    scheme, sep, rest = address.partition("://")
    if not sep:
        rest = address
    elif scheme != "ray":
        rest = ""  # e.g. http://HOST:8265, the dashboard: not an address Ray joins
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise RayConnectError(f"Ray address {address!r}: expected HOST:PORT or ray://HOST:PORT")
    return host.strip("[]"), int(port)


#: a client's HTTP/2 connection preface and an empty SETTINGS frame (RFC 9113, 3.4 and 6.5)
_H2_HELLO = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_SETTINGS = 0x04


def check_reachable(target: Target, timeout_s: float = 5.0) -> None:
    """Fail in seconds, not after Ray's minutes of retries, when nothing listens there or what
    listens is not Ray: Ray's GCS and Ray Client speak gRPC, whose server answers an HTTP/2
    preface with a SETTINGS frame; a web server or anything else does not."""
    assert target.address is not None
    host, port = host_port(target.address)
    where = f"Ray cluster at {target.address} (from {target.source})"
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as conn:
            conn.sendall(_H2_HELLO)
            head = _read(conn, 9)
    except OSError as exc:
        raise RayConnectError(
            f"{where}: cannot connect ({exc.strerror or exc}); is its head running "
            "(`ray start --head`)?"
            + ("" if target.source in ("--address", "RAY_ADDRESS") else STALE_HINT)
        ) from None
    if len(head) < 9 or head[3] != _SETTINGS:
        got = repr(head[:16]) if head else "no reply"
        raise RayConnectError(
            f"{where}: something listens there but does not answer as Ray does (no gRPC "
            f"reply; got {got}); expected the head's GCS port (HOST:6379) or Ray Client's "
            "(ray://HOST:10001)"
        )


def _read(conn: socket.socket, n: int) -> bytes:
    """Up to `n` bytes, fewer if the peer closes or stays silent past the socket's time-out."""
    got = b""
    with contextlib.suppress(TimeoutError, OSError):
        while len(got) < n:
            chunk = conn.recv(n - len(got))
            if not chunk:
                break
            got += chunk
    return got


#: a cheap call every GCS answers; one with token auth refuses it when the token is missing
_CLUSTER_ID = "/ray.rpc.NodeInfoGcsService/GetClusterId"


def _ask_gcs(address: str, headers: dict[str, str], timeout_s: float) -> str | None:
    """The gRPC status (its name: "OK", "UNAUTHENTICATED", ...) of GetClusterId at `address`
    sent with `headers`; None without grpc (the ray[client] extra) to ask with."""
    try:
        import grpc
    except ImportError:  # pragma: no cover - the ray extra pins ray[client], which has grpc
        return None
    with grpc.insecure_channel(address) as channel:
        try:
            channel.unary_unary(_CLUSTER_ID)(b"", timeout=timeout_s, metadata=[*headers.items()])
        except grpc.RpcError as exc:
            code = exc.code()
            return str(getattr(code, "name", code))
    return "OK"


def _token_header() -> dict[str, str]:
    """The authorization header of the token Ray would use here (RAY_AUTH_TOKEN,
    RAY_AUTH_TOKEN_PATH, ~/.ray/auth_token), {} when there is none."""
    try:
        from ray._raylet import AuthenticationTokenLoader  # type: ignore[attr-defined]
    except ImportError:  # pragma: no cover - another Ray than the pinned one
        return {}
    loader = AuthenticationTokenLoader.instance()
    loader.reset_cache()  # the environment may have changed since it was last read
    with _token_errors():
        if not loader.has_token(ignore_auth_mode=True):
            return {}
        return dict(loader.get_token_for_http_header())


@contextlib.contextmanager
def _token_errors() -> Iterator[None]:
    """Ray's error for a token it cannot read (RAY_AUTH_TOKEN_PATH naming no file) is a
    paragraph; its first sentence is the RayConnectError line."""
    try:
        yield
    except Exception as exc:  # ray.exceptions.AuthenticationError, from the C++ loader
        first = one_line(exc).split(". ", 1)[0]
        raise RayConnectError(f"this machine's Ray auth token: {first}; {TOKEN_FIX}") from None


def _auth_mode() -> str:
    return os.environ.get("RAY_AUTH_MODE", "").strip().lower()


def check_auth(target: Target, timeout_s: float = 5.0) -> bool | None:
    """Whether to join `target` with a token, asked of its GCS (a cluster with token auth
    refuses a call without one): a cluster without token auth is joined without, though
    ~/.ray/auth_token exists (any local Ray run writes one; joined with it, the cluster's
    workers were refused by the driver and died unstarted). A mismatch this machine must fix
    (RAY_AUTH_MODE set against the cluster, no token, a token refused) is a RayConnectError
    line; None when it cannot be told (ray://, or no answer either way)."""
    if target.address is None or target.client:
        return None
    where = f"Ray cluster at {target.address} (from {target.source})"
    bare = _ask_gcs(target.address, {}, timeout_s)
    if bare == "OK":
        if _auth_mode() == "token":
            raise RayConnectError(
                f"{where}: the cluster does not use token auth, but RAY_AUTH_MODE=token here; "
                "unset RAY_AUTH_MODE (or set it to disabled) to join it"
            )
        return False
    if bare != "UNAUTHENTICATED":
        return None
    if _auth_mode() == "disabled":
        raise RayConnectError(
            f"{where}: the cluster uses token auth, but RAY_AUTH_MODE=disabled here; unset "
            f"RAY_AUTH_MODE and {TOKEN_FIX}"
        )
    header = _token_header()
    if not header or _ask_gcs(target.address, header, timeout_s) == "UNAUTHENTICATED":
        why = "refused this machine's auth token" if header else "uses token auth, none is here"
        raise RayConnectError(f"{where}: the cluster {why}; {TOKEN_FIX}")
    return True


def use_token_if_present() -> None:
    """Join in token mode when RAY_AUTH_MODE is unset and a token is at hand: the rule
    `ray start --head` applies, so a head that picked up ~/.ray/auth_token can be joined."""
    if "RAY_AUTH_MODE" in os.environ:
        return
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:  # pragma: no cover - another Ray than the pinned one
        return
    with _no_token_notice(), _token_errors():
        maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


@contextlib.contextmanager
def _no_token_notice() -> Iterator[None]:
    """Ray's "token authentication is enabled" warning is not news to this command."""
    log = logging.getLogger(TOKEN_LOGGER)
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def _needs_client_extra(target: Target) -> None:
    if not target.client:
        return
    try:
        import grpc  # noqa: F401  # the ray[client] extra
    except ImportError:
        raise RayConnectError(
            f"Ray address {target.address}: ray:// needs Ray Client: {install_hint('ray')} "
            "(it pins ray[client]), or use the head's HOST:6379 address"
        ) from None


@contextlib.contextmanager
def _stderr_to_file() -> Iterator[Path]:
    """Ray's C++ core retries a refused connection with a warning a second on fd 2; while
    joining, fd 2 goes to a file, kept (and named in the error) only if joining fails."""
    fd, name = tempfile.mkstemp(prefix="overseer-ray-join-", suffix=".log")
    saved = os.dup(2)
    sys.stderr.flush()
    os.dup2(fd, 2)
    try:
        yield Path(name)
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


def _why(exc: Exception, log: Path) -> str:
    """Ray's reason, with the fix when the cluster refused this machine's token."""
    text = log.read_text(errors="replace")
    if "InvalidAuthToken" in text or "Unauthenticated" in text:
        return f"the cluster refused this machine's auth token; {AUTH_HINT} (Ray's log: {log})"
    hint = f"; {AUTH_HINT}" if isinstance(exc, ConnectionError) else ""
    return f"{one_line(exc)}{hint} (Ray's log: {log})"


def preflight(target: Target) -> bool | None:
    """What can be checked of the cluster at `target` before Ray starts, in seconds, each
    failure one RayConnectError line: Ray Client installed for ray://, a Ray head listening,
    this machine's token auth matching the cluster's; whether to join with a token (None:
    Ray's rule, `use_token_if_present`). Commands call it before they create any file."""
    _needs_client_extra(target)
    check_reachable(target)
    return check_auth(target)


def join(ray: Any, target: Target) -> None:
    """Connect to the cluster at `target`; any failure is one RayConnectError line."""
    if preflight(target) is not False:
        use_token_if_present()
    with _stderr_to_file() as log:
        try:
            ray.init(address=target.address, log_to_driver=False, logging_level=logging.WARNING)
        except Exception as exc:  # ConnectionError, RuntimeError, ValueError, Ray's own
            failed: Exception | None = exc
        else:
            failed = None
    if failed is None:
        log.unlink(missing_ok=True)
        return
    raise RayConnectError(
        f"Ray cluster at {target.address} (from {target.source}): {_why(failed, log)}"
    )


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - no affinity on this platform
        return os.cpu_count() or 1


def _n(count: int, noun: str) -> str:
    """`count` and `noun`, plural unless one ("1 core", "2 cores")."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _needs(workers: int, cpus: float) -> str:
    """What the workers ask for, as the options that ask it, for the lines below."""
    return f"--workers {workers} x --worker-cpus {cpus:g} needs {workers * cpus:g} CPUs"


def check_cpus(workers: int, cpus: float, have: float, where: str) -> None:
    """RayConnectError when `workers` actors of `cpus` CPUs each cannot all be placed where
    there are `have` CPUs: Ray would wait for them forever, silently."""
    if workers * cpus <= have + 1e-9:
        return
    fit = max(0, math.floor(have / cpus + 1e-9))
    fix = (
        f"use --workers {fit} or fewer, or a smaller --worker-cpus"
        if fit
        else f"not even one worker fits: use --worker-cpus {have:g} or less"
    )
    raise RayConnectError(f"{_needs(workers, cpus)}; {where} has {have:g}: {fix}")


def say_if_waiting(workers: int, cpus: float, free_of: tuple[float, float], where: str) -> None:
    """One notice line on stderr when `workers` actors of `cpus` CPUs each fit `where` but
    not its free CPUs (`free_of`: free, of all): another run holds them, and Ray would wait
    silently until it lets go."""
    free, have = free_of
    if workers * cpus <= free + 1e-9:
        return
    print(
        f"overseer: note: waiting for {where}'s resources: {_needs(workers, cpus)}, "
        f"{free:g} of its {have:g} are free (another run holds the rest); the run starts "
        "when they are free",
        file=sys.stderr,
        flush=True,
    )


def _driver_refused_calls(ray: Any) -> bool:
    """Whether this driver's core log says it refused calls that carried no token: it joined
    with token auth a cluster without it, whose workers then died unstarted."""
    try:
        logs = Path(ray._private.worker.global_worker.node.get_logs_dir_path())
    except (AttributeError, TypeError):  # no node (not joined), or another Ray
        return False
    for log in logs.glob(f"python-core-driver-*_{os.getpid()}.log"):
        with contextlib.suppress(OSError):
            if "Missing authorization header" in log.read_text(errors="replace"):
                return True
    return False


def worker_died(ray: Any, exc: BaseException) -> str:
    """The line for a worker actor that died before it was ready: the token mismatch when
    the driver's log shows it, else Ray's reason and what every node needs."""
    if _driver_refused_calls(ray):
        return (
            "the Ray workers died unstarted: this machine joined with token auth "
            "(RAY_AUTH_MODE=token, or a token in RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or "
            "~/.ray/auth_token) a cluster without it, and refused its calls; set "
            "RAY_AUTH_MODE=disabled to join it"
        )
    return f"a Ray worker died before it was ready: {one_line(exc)}; {NODE_HINT}"


def local_workers(workers: int, cpus: float, cores: int) -> int:
    """The workers a local start runs on `cores` cores: all of them when they fit, else as
    many as fit, said in one notice line on stderr (Ray started here never gets more CPUs
    than the cores, so without --threads no more llama.cpp threads run than cores: the
    results are the same, only fewer episodes run at once); RayConnectError when not even
    one worker of `cpus` CPUs fits."""
    fit = math.floor(cores / cpus + 1e-9)
    if fit >= workers:
        return workers
    if fit < 1:
        check_cpus(workers, cpus, cores, "this machine (Ray started here)")
    print(
        f"overseer: note: {_needs(workers, cpus)}; this machine has {_n(cores, 'core')}: "
        f"running {_n(fit, 'worker')} (Ray started here gets no more CPUs than cores)",
        file=sys.stderr,
        flush=True,
    )
    return fit


def start_local(ray: Any, num_cpus: int) -> None:
    """Start Ray on this machine for one run: `num_cpus` CPUs, no dashboard, no usage stats,
    whatever cluster is recorded or named in RAY_ADDRESS (address "local")."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        with _no_token_notice():
            ray.init(
                address="local",
                num_cpus=num_cpus,
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.WARNING,
            )
    except Exception as exc:
        raise RayConnectError(f"local Ray could not start: {one_line(exc)}") from None
