"""Issue 51, Ray: once any local Ray run has written ~/.ray/auth_token, a cluster without token
auth is joined without a token (or the mismatch is one line saying what to do, exit 2); a
connection that fails leaves no result store behind; a bench on a busy cluster says it waits
for the cluster's CPUs. A fake GCS (a gRPC server answering as a GCS with or without token
auth does) stands for the clusters; the busy cluster is the module's local Ray."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import grpc
import pytest

import overseer.bench._ray_connect as rc
from overseer.bench import ResultStore, run_experiment
from overseer.bench._ray_connect import Target, check_auth, join, say_if_waiting, worker_died
from overseer.bench.backends import (
    RayBackend,
    RayConnectError,
    RayOptions,
    WorkerSpec,
    episode_backend,
    listed_configs,
)
from overseer.bench.solvers import DIRECT
from overseer.models import Model, ScriptedModel
from overseer.tasks import Task

TOKEN = "overseer-test-token-" + "7" * 12


class _GcsHandler(grpc.GenericRpcHandler):
    """Every call answered as a GCS answers: OK, or (with `token`) UNAUTHENTICATED unless
    the call carries that token, with the status text Ray's GCS sends."""

    def __init__(self, token: str | None) -> None:
        self.token = token

    def service(self, details: Any) -> Any:
        def answer(request: bytes, context: grpc.ServicerContext) -> bytes:
            sent = dict(context.invocation_metadata()).get("authorization")
            if self.token is not None and sent != f"Bearer {self.token}":
                context.abort(
                    grpc.StatusCode.UNAUTHENTICATED,
                    "InvalidAuthToken: Authentication token is missing or incorrect",
                )
            return b""

        return grpc.unary_unary_rpc_method_handler(answer)


@pytest.fixture
def start_gcs() -> Iterator[Callable[[str | None], Target]]:
    """Starts fake GCSs: `start_gcs(None)` without token auth, `start_gcs(TOKEN)` with it."""
    servers: list[grpc.Server] = []

    def start(token: str | None) -> Target:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        server.add_generic_rpc_handlers((_GcsHandler(token),))
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        servers.append(server)
        return Target(f"127.0.0.1:{port}", "--address")

    yield start
    for server in servers:
        server.stop(None)


@pytest.fixture
def token_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """This machine as after any local Ray run: ~/.ray/auth_token holds a token (another
    cluster's), RAY_AUTH_MODE unset; the environment is restored after the test."""
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("a-local-runs-token-" + "1" * 13)
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS"):
        monkeypatch.delenv(var, raising=False)
    return "a-local-runs-token-" + "1" * 13


class _JoinRay:
    """Records `init` calls; the RAY_AUTH_MODE each was made in."""

    def __init__(self) -> None:
        self.modes: list[str | None] = []

    def init(self, **kw: Any) -> None:
        self.modes.append(os.environ.get("RAY_AUTH_MODE"))


@pytest.mark.parametrize("token", [None, TOKEN], ids=["no token auth", "token auth"])
def test_a_cluster_is_joined_in_its_own_auth_mode_whatever_token_is_here(
    start_gcs: Callable[[str | None], Target],
    token_here: str,
    monkeypatch: pytest.MonkeyPatch,
    token: str | None,
) -> None:
    """Without token auth: joined without the local run's token (with it, the cluster's
    workers died unstarted: "could not build its model"); with: joined with its token."""
    target = start_gcs(token)
    if token is not None:  # the cluster's token is given as users give it
        monkeypatch.setenv("RAY_AUTH_TOKEN", token)
    fake = _JoinRay()
    join(fake, target)
    assert fake.modes == [None if token is None else "token"]
    assert check_auth(target) is (token is not None)


def test_token_mode_against_a_cluster_without_it_is_one_line(
    start_gcs: Callable[[str | None], Target], token_here: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = start_gcs(None)
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    fake = _JoinRay()
    with pytest.raises(RayConnectError) as err:
        join(fake, target)
    assert str(err.value) == (
        f"Ray cluster at {target.address} (from --address): the cluster does not use token "
        "auth, but RAY_AUTH_MODE=token here; unset RAY_AUTH_MODE (or set it to disabled) to "
        "join it"
    )
    assert fake.modes == []  # refused before Ray starts


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"RAY_AUTH_TOKEN": "not-the-token-" + "2" * 18}, "refused this machine's auth token"),
        ({"RAY_AUTH_TOKEN_PATH": "/nonexistent/token"}, "RAY_AUTH_TOKEN_PATH is set but file"),
        ({"RAY_AUTH_MODE": "disabled", "RAY_AUTH_TOKEN": TOKEN}, "RAY_AUTH_MODE=disabled here"),
        ({"HOME": "/nonexistent"}, "the cluster uses token auth, none is here"),
    ],
    ids=["a wrong token", "a token path naming no file", "auth disabled here", "no token"],
)
def test_each_token_mismatch_with_a_token_cluster_is_one_line(
    start_gcs: Callable[[str | None], Target],
    token_here: str,
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
    says: str,
) -> None:
    target = start_gcs(TOKEN)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    fake = _JoinRay()
    with pytest.raises(RayConnectError) as err:
        join(fake, target)
    line = str(err.value)
    assert says in line and "\n" not in line and fake.modes == []
    assert "RAY_AUTH_TOKEN" in line  # what to do: where the token goes


def test_workers_refused_by_a_token_driver_are_named_as_such(tmp_path: Path) -> None:
    """When the probe could not tell (ray://), the driver's log still names the mismatch."""
    node = SimpleNamespace(get_logs_dir_path=lambda: str(tmp_path))
    fake = SimpleNamespace(_private=SimpleNamespace(worker=SimpleNamespace(
        global_worker=SimpleNamespace(node=node))))  # fmt: skip
    died = RuntimeError("The actor died unexpectedly before finishing this task.")
    assert worker_died(fake, died).startswith("a Ray worker died before it was ready: The actor")
    log = tmp_path / f"python-core-driver-01000000ffff_{os.getpid()}.log"
    log.write_text("[W 1 2] server_call.h:384: Missing authorization header in request!\n")
    line = worker_died(fake, died)
    assert "joined with token auth" in line and "a cluster without it" in line
    assert line.endswith("set RAY_AUTH_MODE=disabled to join it")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _echo_model(**kw: Any) -> Model:
    return ScriptedModel('{"reasoning": "add", "answer": 2}')


SPEC = WorkerSpec(partial(listed_configs, [DIRECT]), _echo_model, takes_threads=True)


def test_a_cluster_that_cannot_be_joined_fails_when_the_backend_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Commands build their backend before they open their store: the failure comes first."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    address = f"127.0.0.1:{_closed_port()}"
    with pytest.raises(RayConnectError, match="cannot connect"):
        episode_backend("ray", SPEC, workers=1, ray=RayOptions(address=address))


def test_a_failed_connection_leaves_no_result_store(tmp_path: Path) -> None:
    store = tmp_path / "new" / "r.sqlite"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    done = subprocess.run(
        [sys.executable, "-m", "overseer.cli", "bench", "--suite", "gsm8k-sample", "--limit",
         "1", "--model", "smollm2-135m", "--backend", "ray", "--workers", "1", "--address",
         f"127.0.0.1:{_closed_port()}", "--store", str(store), "--no-progress"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "cannot connect" in line
    assert not store.exists() and not store.parent.exists()


def test_the_waiting_note_says_what_it_waits_for(capsys: pytest.CaptureFixture[str]) -> None:
    say_if_waiting(2, 1.0, (2.0, 2.0), "the Ray cluster at head:6379")
    assert capsys.readouterr().err == ""  # free: nothing said
    say_if_waiting(2, 1.0, (0.0, 2.0), "the Ray cluster at head:6379")
    assert capsys.readouterr().err == (
        "overseer: note: waiting for the Ray cluster at head:6379's resources: --workers 2 x "
        "--worker-cpus 1 needs 2 CPUs, 0 of its 2 are free (another run holds the rest); the "
        "run starts when they are free\n"
    )


class _Hold:
    """An actor that holds CPUs: another run's workers."""

    def ping(self) -> int:
        return 1


@pytest.mark.usefixtures("local_ray")  # tests/conftest.py: 2 CPUs
def test_a_bench_on_a_busy_cluster_says_it_waits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import ray

    holder: Any = ray.remote(num_cpus=2)(_Hold).remote()
    assert ray.get(holder.ping.remote()) == 1
    end = time.monotonic() + 30
    while ray.available_resources().get("CPU", 0.0) > 0 and time.monotonic() < end:
        time.sleep(0.2)
    task = Task("toy", "toy/0", "What is 1+1?", "2", "numeric")

    async def run(store: ResultStore) -> Any:
        asyncio.get_running_loop().call_later(2.0, ray.kill, holder)  # the other run ends
        return await run_experiment(configs=[DIRECT], tasks=[task], seeds=[0],
            model_name="scripted", load_model=_echo_model, store=store, progress=False,
            backend=RayBackend(SPEC, workers=1))  # fmt: skip

    with ResultStore(tmp_path / "r.sqlite") as store:
        summary = asyncio.run(run(store))
    assert summary.ran == 1
    notes = [ln for ln in capsys.readouterr().err.splitlines() if "waiting for" in ln]
    assert notes == [
        "overseer: note: waiting for the Ray instance's resources: --workers 1 x --worker-cpus "
        "1 needs 1 CPUs, 0 of its 2 are free (another run holds the rest); the run starts when "
        "they are free"
    ]


@pytest.mark.usefixtures("local_ray")
def test_the_probe_reads_a_real_token_cluster() -> None:
    """The module's local Ray (token auth unless RAY_AUTH_MODE says otherwise) answers the
    probe as the fake GCS does."""
    import ray

    address = ray.get_runtime_context().gcs_address
    tokens = os.environ.get("RAY_AUTH_MODE", "token") == "token"
    assert rc._ask_gcs(address, {}, 5.0) == ("UNAUTHENTICATED" if tokens else "OK")
    if tokens:
        assert rc._ask_gcs(address, rc._token_header(), 5.0) == "OK"
