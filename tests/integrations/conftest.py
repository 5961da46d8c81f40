"""Fixtures of the framework integration tests: the scripted loopback chat server, and a
guard that fails a test whose code (or a framework thread) connects off loopback."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .loopback import LoopbackServer, Script


@pytest.fixture
def loopback() -> Iterator[Callable[[Script], LoopbackServer]]:
    """Start scripted OpenAI-compatible servers on 127.0.0.1; all are closed after the test."""
    servers: list[LoopbackServer] = []

    def start(script: Script) -> LoopbackServer:
        srv = LoopbackServer(script)
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.close()


@pytest.fixture
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every connection a test (or an SDK thread) opens must go to 127.0.0.1."""
    left: list[Any] = []
    connect = socket.socket.connect

    def guarded(sock: socket.socket, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and address[0] != "127.0.0.1":
            left.append(address)
            raise OSError(f"test tried to leave loopback: {address}")
        connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    yield
    assert not left, f"connections off loopback: {left}"
