"""The HTTP faces run on uvloop (issue 50: the proxy's relay path about a third faster than on
asyncio's own loop, `benchmarks/proxy_overhead.py`), wherever it is installed."""

from __future__ import annotations

import asyncio
import sys

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from overseer.models.serve import HttpServer


async def _loop_kind(request: Request) -> PlainTextResponse:
    return PlainTextResponse(type(asyncio.get_running_loop()).__module__)


@pytest.mark.skipif(sys.platform == "win32", reason="uvloop has no Windows build")
def test_a_served_app_runs_on_uvloop() -> None:
    server = HttpServer(Starlette(routes=[Route("/loop", _loop_kind)]), "127.0.0.1", 0)
    try:
        with httpx.Client(trust_env=False) as client:
            got = client.get(f"{server.url}/loop")
    finally:
        server.stop()
    assert got.status_code == 200 and got.text.startswith("uvloop"), got.text
