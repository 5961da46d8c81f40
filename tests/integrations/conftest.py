"""Fixtures of the framework integration tests: the scripted loopback chat server."""

from __future__ import annotations

from collections.abc import Callable, Iterator

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
