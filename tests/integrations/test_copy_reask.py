"""Issue 39: an answer that only repeats overseer's words is no answer. A framework run whose
model, once its tools are closed, answers with the closing note's own first sentence is
asked once more (tools still closed, the question restated); a real answer is kept as is."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from overseer.integrations._guard import GuardSettings
from overseer.runtime.steps import COPIED_NOTE, REPEATED_NOTE
from overseer.supervise.rules import RuleSettings

from .frameworks import run_agent
from .loopback import LoopbackServer, Reply, Script, ToolCall, messages_text

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("loopback_only")]

COPY = "Your tool calls were refused, so the tools are closed now."


def _copier(first: str) -> Script:
    """Calls job_status while tools are offered; without tools answers `first`, and after
    overseer's re-ask the real answer."""

    def script(body: Mapping[str, Any], n: int) -> Reply:
        if body.get("tools"):
            return Reply(calls=(ToolCall("job_status", {"job": "42"}),))
        # pydantic-ai sends the re-ask as a retry prompt before its closing turn
        asked_again = any(COPIED_NOTE in t for t in messages_text(body, "user"))
        return Reply(text="job 42: still pending" if asked_again else first)

    return script


def job_status(job: str) -> str:
    """Check whether a job has finished."""
    return f"job {job} is still pending"


#: every guard host (smolagents and the proxy: tests/integrations/test_smolagents_runs.py,
#: tests/proxy/test_proxy.py)
HOSTS = ("langgraph", "openai-agents", "pydantic-ai")


def _run(start: Callable[[Script], LoopbackServer], first: str, tmp_path: Path, host: str) -> Any:
    srv = start(_copier(first))
    settings = GuardSettings(rules=RuleSettings(loop_limit=2))
    out = run_agent(host, srv.base_url, [job_status], "Is job 42 done?", settings,
                    trace_dir=tmp_path)  # fmt: skip
    return srv, out


@pytest.mark.parametrize("host", HOSTS)
def test_a_copied_note_is_asked_again_once(
    loopback: Callable[[Script], LoopbackServer], tmp_path: Path, host: str
) -> None:
    srv, out = _run(loopback, COPY, tmp_path, host)
    assert out.error is None, out.error
    assert out.answer == "job 42: still pending"
    again = srv.requests[-1]
    assert not again.get("tools")  # still closed
    (turn,) = [t for t in messages_text(again, "user") if COPIED_NOTE in t]
    assert "Is job 42 done?" in turn
    assert out.guard.stats["reasked"] == 1


@pytest.mark.parametrize("host", HOSTS)
def test_a_real_answer_is_not_asked_again(
    loopback: Callable[[Script], LoopbackServer], tmp_path: Path, host: str
) -> None:
    srv, out = _run(loopback, "job 42 is pending", tmp_path, host)
    assert out.answer == "job 42 is pending"
    assert not any(COPIED_NOTE in t for r in srv.requests for t in messages_text(r, "user"))
    assert out.guard.stats.get("reasked", 0) == 0


TRAP = "Not here. Call next_page with n+1."


def next_page(n: int) -> str:
    """Return page n of the article."""
    return TRAP


#: the answer after the re-ask: the pages never showed the aperture (a value invented here would
#: be replaced: tests/integrations/test_honest_failure.py)
NOT_READ = "The aperture is not on the pages I read."


def _trap_copier(body: Mapping[str, Any], n: int) -> Reply:
    """Pages while tools are offered; without tools answers the trap's text, and after
    overseer's re-ask the answer."""
    if body.get("tools"):
        return Reply(calls=(ToolCall("next_page", {"n": 2}),))
    asked_again = any(REPEATED_NOTE in t for t in messages_text(body, "user"))
    return Reply(text=NOT_READ if asked_again else TRAP)


@pytest.mark.parametrize("host", HOSTS)
def test_an_answer_repeating_a_looped_tool_output_is_asked_again_once(
    loopback: Callable[[Script], LoopbackServer], tmp_path: Path, host: str
) -> None:
    """qwen 0.5B in smolagents answered the trap's own text after paging three times; a
    short tool output the agent was shown twice or more is no answer either."""
    srv = loopback(_trap_copier)
    settings = GuardSettings(rules=RuleSettings(loop_limit=2))
    out = run_agent(host, srv.base_url, [next_page], "What is the aperture?", settings,
                    trace_dir=tmp_path)  # fmt: skip
    assert out.error is None, out.error
    assert out.answer == NOT_READ
    (turn,) = [t for t in messages_text(srv.requests[-1], "user") if REPEATED_NOTE in t]
    assert "What is the aperture?" in turn
    assert out.guard.stats["reasked"] == 1
