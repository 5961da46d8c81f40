"""LangGraph closes a run that a model error or a cancellation ends (issue 49 item 4): the
trace gets its `run_end` with that stop reason and the guard keeps no live run, as the Agents
SDK and pydantic-ai adapters do."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from overseer.integrations.langgraph import OverseerMiddleware
from overseer.runtime import read_trace

from .loopback import LoopbackServer, Reply

pytestmark = pytest.mark.usefixtures("loopback_only")


def _agent(base_url: str, mw: OverseerMiddleware) -> Any:
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    def lookup(q: str) -> str:
        """Look a word up."""
        return f"entry for {q}"

    chat = ChatOpenAI(model="scripted", base_url=base_url, api_key="none", max_retries=0)
    return create_agent(chat, [tool(lookup)], middleware=[mw])


def _run_end(tmp_path: Path) -> dict[str, Any]:
    (path,) = tmp_path.glob("*.jsonl")
    return [e for e in read_trace(path, validate=True) if e["event"] == "run_end"][-1]


def test_a_model_error_closes_the_run_as_error(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on: the server is down
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mw = OverseerMiddleware(trace_dir=tmp_path)
    with pytest.raises(Exception, match="Connection"):
        _agent(f"http://127.0.0.1:{port}/v1", mw).invoke(
            {"messages": [{"role": "user", "content": "Look up tower."}]}
        )
    end = _run_end(tmp_path)
    assert end["stop_reason"] == "error" and "Connection" in (end.get("error") or "")
    assert mw.guard._live == {}  # no run left open in the guard


def test_a_cancelled_run_is_closed_as_cancelled(tmp_path: Path) -> None:
    def slow(body: Mapping[str, Any], n: int) -> Reply:
        import time

        time.sleep(5)  # the model is still thinking when the caller gives up
        return Reply(text="done")

    mw = OverseerMiddleware(trace_dir=tmp_path)

    async def main(url: str) -> None:
        task = asyncio.ensure_future(
            _agent(url, mw).ainvoke({"messages": [{"role": "user", "content": "Look up."}]})
        )
        await asyncio.sleep(1.0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with LoopbackServer(slow) as srv:
        asyncio.run(main(srv.base_url))
    assert _run_end(tmp_path)["stop_reason"] == "cancelled"
    assert mw.guard._live == {}
