"""Issue 43, rows 6 to 11: Ray addresses users type (`auto`, `local`), a port where no Ray
listens, more workers than CPUs (on a cluster or a local start), and a head that dies mid-run:
each is one line (RayConnectError, exit 2), in seconds, never a silent wait."""

from __future__ import annotations

import http.server
import socket
import threading
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import overseer.bench._ray as ray_mod
from overseer.bench._ray_connect import Target, check_reachable, find_target, start_local
from overseer.bench._ray_watch import HeadWatch
from overseer.bench.backends import RayBackend, RayConnectError, WorkerSpec, listed_configs


def _record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, address: str | None) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    if address is not None:
        (tmp_path / "ray").mkdir()
        (tmp_path / "ray" / "ray_current_cluster").write_text(address + "\n")


@pytest.mark.parametrize("via_env", [False, True], ids=["--address", "RAY_ADDRESS"])
def test_row6_auto_is_the_recorded_cluster(
    via_env: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(tmp_path, monkeypatch, "10.1.2.3:6379")
    if via_env:
        monkeypatch.setenv("RAY_ADDRESS", "auto")
    target = find_target(None if via_env else "auto")
    assert target.address == "10.1.2.3:6379" and "ray_current_cluster" in target.source


def test_row6_auto_with_nothing_recorded_says_how_to_start_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(tmp_path, monkeypatch, None)
    with pytest.raises(RayConnectError, match="no Ray cluster is recorded") as err:
        find_target("auto")
    assert "ray start --head" in str(err.value) and "--address local" in str(err.value)


class _FakeRay:
    """Records `init` calls; `cpus` is what `cluster_resources` reports."""

    def __init__(self, cpus: float = 2.0) -> None:
        self.inits: list[dict[str, Any]] = []
        self.cpus = cpus

    def is_initialized(self) -> bool:
        return False

    def init(self, **kw: Any) -> None:
        self.inits.append(kw)

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": self.cpus}


def test_row7_local_starts_here_whatever_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(tmp_path, monkeypatch, "127.0.0.1:1")  # a stale record
    assert find_target("local") == Target(None, "--address")
    fake = _FakeRay()
    start_local(fake, 2)
    assert fake.inits[0]["address"] == "local" and fake.inits[0]["num_cpus"] == 2


def _echo_model(**kw: Any) -> Any:
    from overseer.models import ScriptedModel

    return ScriptedModel("1")


def _backend(workers: int, address: str | None = None) -> RayBackend:
    spec = WorkerSpec(partial(listed_configs, []), _echo_model)
    return RayBackend(spec, workers=workers, address=address)


def test_row11_a_local_start_never_reserves_more_cpus_than_cores(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(ray_mod, "usable_cores", lambda: 2)
    monkeypatch.setattr(ray_mod, "find_target", lambda address: Target(None, "local"))
    fake = _FakeRay()
    started, _, workers = _backend(4)._init(fake)
    assert started and workers == 2 and fake.inits[0]["num_cpus"] == 2  # clamped, not 4
    assert capsys.readouterr().err.strip() == (
        "overseer: note: --workers 4 x --worker-cpus 1 needs 4 CPUs; this machine has 2 "
        "cores: running 2 workers (Ray started here gets no more CPUs than cores)"
    )
    started, _, workers = _backend(2)._init(fake)
    assert workers == 2 and fake.inits[1]["num_cpus"] == 2
    assert capsys.readouterr().err == ""  # they fit: nothing said


def test_row11_a_worker_bigger_than_the_machine_is_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ray_mod, "usable_cores", lambda: 2)
    monkeypatch.setattr(ray_mod, "find_target", lambda address: Target(None, "local"))
    fake = _FakeRay()
    spec = WorkerSpec(partial(listed_configs, []), _echo_model)
    with pytest.raises(RayConnectError) as err:
        RayBackend(spec, workers=1, cpus_per_worker=4)._init(fake)
    assert str(err.value) == (
        "--workers 1 x --worker-cpus 4 needs 4 CPUs; this machine (Ray started here) has 2: "
        "not even one worker fits: use --worker-cpus 2 or less"
    )
    assert fake.inits == []  # refused before Ray starts


def test_row9_more_workers_than_the_cluster_has_cpus_is_one_line() -> None:
    with pytest.raises(RayConnectError) as err:
        _backend(3)._fits(_FakeRay(cpus=2), Target("head:6379", "--address"), 3)
    assert str(err.value) == (
        "--workers 3 x --worker-cpus 1 needs 3 CPUs; the Ray cluster at head:6379 has 2: "
        "use --workers 2 or fewer, or a smaller --worker-cpus"
    )
    _backend(2)._fits(_FakeRay(cpus=2), Target("head:6379", "--address"), 2)


def _serve(handler: type[http.server.BaseHTTPRequestHandler]) -> http.server.HTTPServer:
    server = http.server.HTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_row8_a_non_ray_server_is_refused_in_seconds() -> None:
    server = _serve(http.server.SimpleHTTPRequestHandler)
    try:
        address = f"127.0.0.1:{server.server_address[1]}"
        with pytest.raises(RayConnectError) as err:
            check_reachable(Target(address, "--address"))
        assert "does not answer as Ray does" in str(err.value) and address in str(err.value)
        assert "got b'<!DOCTYPE'" in str(err.value)  # what answered
    finally:
        server.shutdown()


def test_row8_a_grpc_server_passes_the_probe() -> None:
    """A server that answers the HTTP/2 preface with SETTINGS (as gRPC does) is let through."""
    listener = socket.create_server(("127.0.0.1", 0))

    def answer() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(64)
            conn.sendall(b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")

    threading.Thread(target=answer, daemon=True).start()
    try:
        check_reachable(Target(f"127.0.0.1:{listener.getsockname()[1]}", "--address"))
    finally:
        listener.close()


def test_row10_a_head_gone_mid_run_is_one_line() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    lost: list[str] = []
    said = threading.Event()

    def on_lost(line: str) -> None:
        lost.append(line)
        said.set()

    watch = HeadWatch(Target(f"127.0.0.1:{port}", "--address"), every_s=0.05, on_lost=on_lost)
    watch.start()
    listener.close()  # the head dies
    assert said.wait(30)
    watch.stop()
    assert len(lost) == 1 and "\n" not in lost[0]
    assert lost[0].startswith(f"overseer: error: the Ray cluster at 127.0.0.1:{port}")
    assert "results stored so far are kept" in lost[0] and "resume" in lost[0]


def test_row10_a_live_head_is_left_alone() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    lost: list[str] = []
    probed = threading.Event()
    watch = HeadWatch(Target(f"127.0.0.1:{port}", "--address"), every_s=0.05, on_lost=lost.append)
    real_alive = watch._alive

    def alive() -> bool:
        ok = real_alive()
        probed.set()
        return ok

    watch._alive = alive  # type: ignore[method-assign]
    watch.start()
    assert probed.wait(30)
    watch.stop()
    listener.close()
    assert lost == []
