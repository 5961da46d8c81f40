"""A user's rule is one small class that runs unchanged on every host (issue 49 item 2): the
`ToolQuota` of examples/user_rule.py on a team, on LangGraph, the OpenAI Agents SDK and
pydantic-ai (through `GuardSettings(plugins=...)`), on smolagents and on the proxy; each host
refuses the call over the quota and reports the rule's own stats, composed after the rule
tier."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import openai
import pytest

from overseer.integrations._guard import GuardSettings

from .frameworks import FRAMEWORKS, run_agent
from .loopback import LoopbackServer, Reply, ToolCall

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("loopback_only")]
ROOT = Path(__file__).resolve().parents[2]


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("user_rule", ROOT / "examples" / "user_rule.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ToolQuota = _example().ToolQuota


@pytest.fixture(autouse=True, scope="module")
def _no_sdk_tracing() -> Iterator[None]:
    from agents import set_tracing_disabled

    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


def _lookups(ran: list[str]) -> Any:
    def lookup(q: str) -> str:
        """Look a word up.

        Args:
            q: the word
        """
        ran.append(q)
        return f"entry for {q}: see also {q}-{len(ran)}"  # a new output each time

    return lookup


def _four_lookups(body: Mapping[str, Any], n: int) -> Reply:
    """Four lookups of new words, then an answer (smolagents' through final_answer)."""
    offered = {t["function"]["name"] for t in body.get("tools") or []}
    step = sum(m.get("role") == "assistant" for m in body.get("messages", []))
    if step < 4 and "lookup" in offered:
        return Reply(calls=(ToolCall("lookup", {"q": f"w{step}"}),))
    if "final_answer" in offered:
        return Reply(calls=(ToolCall("final_answer", {"answer": "done"}),))
    return Reply(text="done")


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_users_rule_runs_on_each_framework_adapter(tmp_path: Path, framework: str) -> None:
    ran: list[str] = []
    quota = ToolQuota(2)
    with LoopbackServer(_four_lookups) as srv:
        out = run_agent(
            framework, srv.base_url, [_lookups(ran)], "Look up four words.",
            GuardSettings(plugins=(quota,)), trace_dir=tmp_path,
        )  # fmt: skip
    assert ran == ["w0", "w1"], (framework, ran, out.error)
    stats = out.guard.last.stats if out.guard.last else {}
    assert stats["plugins"]["quota"]["refused"] >= 1
    names = list(stats["plugins"])  # composed after overseer's own rule plug-ins
    assert names[-1] == "quota" and {"purification", "loop_breaker"} <= set(names[:-1])


def test_a_users_rule_runs_on_smolagents() -> None:
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    from overseer.integrations.smolagents import OverseerSupervisor

    ran: list[str] = []
    with LoopbackServer(_four_lookups) as srv:
        model = OpenAIServerModel(model_id="scripted", api_base=srv.base_url, api_key="none")
        agent = ToolCallingAgent(tools=[tool(_lookups(ran))], model=model, max_steps=6)
        sup = OverseerSupervisor(mode="rules", plugins=[ToolQuota(2)])
        sup.attach(agent).run("Look up four words.")
    assert ran == ["w0", "w1"]
    assert sup.run.stats["plugins"]["quota"]["refused"] >= 1


async def test_a_users_rule_runs_on_a_team(tmp_path: Path) -> None:
    from overseer.models import ScriptedModel
    from overseer.runtime import AgentSpec, Executor, TeamSpec, ToolResult

    ran: list[str] = []

    class Lookup:
        name, description, kind = "lookup", "Look a word up.", "tool"
        parameters: ClassVar[dict[str, Any]] = {
            "type": "object",
            "properties": {"q": {"type": "string"}},
        }

        async def call(self, args: Mapping[str, object]) -> ToolResult:
            ran.append(str(args["q"]))
            return ToolResult(f"entry for {args['q']}")

    steps = [{"thought": "", "action": "lookup", "args": {"q": f"w{i}"}} for i in range(4)]
    model = ScriptedModel([*steps, {"thought": "", "action": "answer", "answer": "done"}])
    team = TeamSpec(agents=[AgentSpec(name="researcher", tools=["lookup"])], decision="last")
    res = await Executor(
        model, supervisors=[ToolQuota(2)], tools={"lookup": Lookup()}, trace_dir=tmp_path
    ).run(team, "Look up four words.")
    assert ran == ["w0", "w1"] and res.answer == "done"


def test_a_users_rule_runs_on_the_proxy(tmp_path: Path) -> None:
    from overseer.proxy import Proxy, ProxySettings

    from ..proxy.mock_upstream import MockUpstream

    messages: list[Any] = [{"role": "user", "content": "Look up three words."}]
    for i in range(3):
        call = {"id": f"c{i}", "type": "function",
                "function": {"name": "lookup", "arguments": f'{{"q": "w{i}"}}'}}  # fmt: skip
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"entry for w{i}"},
        ]
    up = MockUpstream()
    proxy = Proxy(up.base_url, ProxySettings(trace_dir=tmp_path, plugins=(ToolQuota(2),)))
    try:
        client = openai.OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
        client.chat.completions.create(model="mock", messages=messages)
    finally:
        proxy.close()
        up.close()
    (_, sent), *_ = up.requests
    tools = [m["content"] for m in sent["messages"] if m["role"] == "tool"]
    assert tools[:2] == ["entry for w0", "entry for w1"] and tools[2].startswith("[quota]")
