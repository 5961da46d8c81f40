"""What every framework adapter does on a real run (issue 32), the same test for LangGraph,
the OpenAI Agents SDK and pydantic-ai on the scripted loopback server: refusals in a row close
the tools (or end the run with its stop reason), cached prompt tokens reach the ledger and the
trace, and run ids stay unique across runs and processes sharing a trace directory."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from overseer.integrations._guard import GuardSettings, RunStopped
from overseer.runtime import read_trace
from overseer.runtime.books import list_traces
from overseer.runtime.steps import closed_turn
from overseer.supervise.rules import RuleSettings

from .frameworks import FRAMEWORKS, Outcome, run_agent
from .loopback import (
    PAGE_QUESTION,
    LoopbackServer,
    Script,
    long_page,
    messages_text,
    page_script,
    stubborn,
)

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("loopback_only")]

Start = Callable[[Script], LoopbackServer]
PAGE = long_page()
LOOP = RuleSettings(loop_limit=2)


@pytest.fixture(autouse=True, scope="module")
def _no_sdk_tracing() -> Iterator[None]:
    """The Agents SDK's trace exporter would post to api.openai.com: off for the module."""
    from agents import set_tracing_disabled

    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


def _status_tool(runs: list[str]) -> Callable[[str], str]:
    def job_status(job: str) -> str:
        """Check whether a job has finished."""
        runs.append(job)
        return f"job {job} is still pending"

    return job_status


def fetch_page(url: str) -> str:
    """Open a web page and return its text."""
    return PAGE


def _run_end(tmp_path: Path) -> dict:
    (path,) = tmp_path.glob("*.jsonl")
    return [e for e in read_trace(path, validate=True) if e["event"] == "run_end"][-1]


def _stubborn_run(start: Start, framework: str, tmp_path: Path, on: str) -> tuple:
    runs: list[str] = []
    srv = start(stubborn("job_status", {"job": "42"}, answer="job 42: still pending"))
    settings = GuardSettings(rules=LOOP, on_refusals=on)  # type: ignore[arg-type]
    out = run_agent(
        framework, srv.base_url, [_status_tool(runs)], "Is job 42 done?", settings,
        trace_dir=tmp_path,
    )  # fmt: skip
    return srv, runs, out


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_refusals_in_a_row_close_the_tools_and_the_model_answers(
    loopback: Start, tmp_path: Path, framework: str
) -> None:
    srv, runs, out = _stubborn_run(loopback, framework, tmp_path, "answer")
    assert out.error is None, out.error
    # two calls ran, the next two were refused, then one request without tools: the answer
    assert runs == ["42", "42"] and out.guard.stats["blocked"] == 2
    assert [bool(r.get("tools")) for r in srv.requests] == [True] * 4 + [False]
    closing = messages_text(srv.requests[-1], "user")[-1]  # its own user turn, last
    assert closing == closed_turn("Is job 42 done?")  # the question, leave to say not found
    assert not any(closing in t for t in messages_text(srv.requests[-1], "tool"))
    assert out.answer == "job 42: still pending"
    assert _run_end(tmp_path)["stop_reason"] == "done"


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_refusals_in_a_row_end_the_run_with_its_stop_reason(
    loopback: Start, tmp_path: Path, framework: str
) -> None:
    srv, runs, out = _stubborn_run(loopback, framework, tmp_path, "stop")
    assert runs == ["42", "42"] and len(srv.requests) == 4  # no model call after the stop
    end = _run_end(tmp_path)
    assert end["stop_reason"] == "refusals" and end["error"] is None
    assert out.error is None and out.answer.startswith("[overseer] stopped: researcher: 2")
    assert end["answer"] == out.answer


def test_the_agents_sdk_raises_run_stopped_where_it_cannot_end_the_run_itself(
    loopback: Start, tmp_path: Path
) -> None:
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, StopAtTools, function_tool
    from openai import AsyncOpenAI

    from overseer.integrations.openai_agents import Overseer

    runs: list[str] = []
    srv = loopback(stubborn("job_status", {"job": "42"}))
    model = OpenAIChatCompletionsModel("scripted", AsyncOpenAI(base_url=srv.base_url, api_key="x"))
    own = StopAtTools(stop_at_tool_names=["never"])  # the agent's own tool_use_behavior
    tool = function_tool(_status_tool(runs))
    agent = Agent(name="researcher", model=model, tools=[tool], tool_use_behavior=own)
    ov = Overseer(GuardSettings(rules=LOOP, on_refusals="stop"), trace_dir=tmp_path)
    with pytest.raises(RunStopped, match="researcher: 2 tool calls in a row were refused"):
        ov.run_sync(agent, "Is job 42 done?", run_config=RunConfig(tracing_disabled=True))
    assert runs == ["42", "42"] and len(srv.requests) == 4
    assert _run_end(tmp_path)["stop_reason"] == "refusals"


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_refusals_do_not_escalate_when_switched_off(
    loopback: Start, tmp_path: Path, framework: str
) -> None:
    runs: list[str] = []
    srv = loopback(stubborn("job_status", {"job": "42"}))
    settings = GuardSettings(rules=LOOP, answer_after_refusals=0)
    out = run_agent(framework, srv.base_url, [_status_tool(runs)], "Is job 42 done?", settings)
    # tools stay open: the model goes on calling until the framework's own limit stops it
    assert runs == ["42", "42"] and out.guard.stats["blocked"] >= 3
    assert all(r.get("tools") for r in srv.requests)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_cached_prompt_tokens_reach_the_ledger_and_the_trace(
    loopback: Start, tmp_path: Path, framework: str
) -> None:
    srv = loopback(page_script())
    out = run_agent(framework, srv.base_url, [fetch_page], PAGE_QUESTION, trace_dir=tmp_path)
    assert out.error is None and out.answer == "240 cm"
    assert srv.cached_tokens > 0  # the second request repeats the first one's messages
    assert out.guard.ledger.total.cached_prompt_tokens == srv.cached_tokens
    (path,) = tmp_path.glob("*.jsonl")
    events = list(read_trace(path, validate=True))
    calls = [e for e in events if e["event"] == "model_call"]
    assert [c["gen_ai.usage.cache_read_input_tokens"] for c in calls] == [
        u["prompt_tokens_details"]["cached_tokens"] for u in srv.usages
    ]
    assert events[-1]["usage"]["cached_input_tokens"] == srv.cached_tokens
    assert events[-1]["by_actor"]["agent:researcher"][1] == srv.cached_tokens


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_each_run_has_its_own_id_and_trace_file(
    loopback: Start, tmp_path: Path, framework: str
) -> None:
    srv = loopback(page_script())
    outs: list[Outcome] = []
    for _ in range(2):
        outs.append(
            run_agent(framework, srv.base_url, [fetch_page], PAGE_QUESTION, trace_dir=tmp_path)
        )
    runs = list_traces(tmp_path)
    assert len(runs) == 2 and len({r.run for r in runs}) == 2
    assert {o.guard.ledger.run for o in outs} == {r.run for r in runs}
    assert all(not r.run.startswith("guard-") and r.stop_reason == "done" for r in runs)


_CHILD = """
import sys
from pathlib import Path
sys.path.insert(0, {root!r})
from tests.integrations.frameworks import run_agent
from tests.integrations.test_adapter_runs import fetch_page
out = run_agent("langgraph", {url!r}, [fetch_page], "aperture?", trace_dir=Path({dir!r}))
assert out.error is None, out.error
print(out.guard.ledger.run)
"""


def test_two_processes_sharing_a_trace_directory_write_two_runs(
    loopback: Start, tmp_path: Path
) -> None:
    srv = loopback(page_script())
    root = str(Path(__file__).resolve().parents[2])
    code = textwrap.dedent(_CHILD).format(root=root, url=srv.base_url, dir=str(tmp_path))
    children = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    ids = [c.communicate(timeout=120)[0].strip() for c in children]
    assert [c.returncode for c in children] == [0, 0]
    runs = list_traces(tmp_path)
    assert len(runs) == 2 and sorted(r.run for r in runs) == sorted(ids) and ids[0] != ids[1]
    for r in runs:  # one run per file, none appended to another's
        starts = [e for e in read_trace(r.path) if e["event"] == "run_start"]
        assert len(starts) == 1 and r.stop_reason == "done"
