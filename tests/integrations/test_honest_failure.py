"""Honest failure (issue 48 item 3), the contract of the turn wording on each framework with
a scripted model: when refused calls close the tools, the closing turn leaves the agent free
to say it could not find the answer, the failing tool's error stays in view, and an answer
that states a value no tool result showed is asked again once (UNSEEN_NOTE), so a small
model's invented price does not stand where a plain run would have given no answer."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from overseer.integrations._guard import GuardSettings
from overseer.runtime._turns import NOT_FOUND_ANSWER, UNSEEN_NOTE
from overseer.runtime.steps import closed_turn

from .frameworks import FRAMEWORKS, run_agent
from .loopback import LoopbackServer, Reply, ToolCall, messages_text

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("loopback_only")]
QUESTION = "What is the current price of the Kestrel 40L hiking backpack?"
DOWN = "price service: unavailable (HTTP 503)"


@pytest.fixture(autouse=True, scope="module")
def _no_sdk_tracing() -> Iterator[None]:
    from agents import set_tracing_disabled

    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


def price(item: str) -> str:
    """Look up the current price of an item.

    Args:
        item: the item's name
    """
    return DOWN


def inventing(body: Mapping[str, Any], n: int) -> Reply:
    """Calls the price tool while it may; once closed, invents $12, unless told that value
    was in no tool result."""
    if body.get("tools"):
        return Reply(calls=(ToolCall("price", {"item": "Kestrel 40L"}),))
    told = any(UNSEEN_NOTE in t for t in messages_text(body, "user"))
    return Reply(text="I could not find the price." if told else "It is $12.")


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_closed_run_may_say_it_could_not_find_and_an_invented_value_is_asked_again(
    tmp_path: Path, framework: str
) -> None:
    with LoopbackServer(inventing) as srv:
        out = run_agent(framework, srv.base_url, [price], QUESTION, GuardSettings(),
                        trace_dir=tmp_path)  # fmt: skip
        requests = list(srv.requests)
    assert out.error is None, out.error
    closed = [r for r in requests if not r.get("tools")]
    assert messages_text(closed[0], "user")[-1] == closed_turn(QUESTION)
    assert "could not find it" in closed_turn(QUESTION)
    assert any(DOWN in t for t in messages_text(closed[0], "tool"))  # the error in view
    # asked again once (pydantic-ai sends it as a retry prompt, then the closing turn again)
    assert any(UNSEEN_NOTE in t for t in messages_text(closed[-1])), closed[-1]["messages"]
    assert out.answer == "I could not find the price."
    assert "12" not in out.answer and out.guard.last is not None
    assert out.guard.last.stats["reasked"] == 1


def test_a_value_the_tools_showed_is_not_asked_again() -> None:
    from overseer.runtime.steps import TurnPolicy

    turns = TurnPolicy()
    assert turns.reask("It is 310 m.", [], [], "How long?", seen={"310"}) is None
    assert turns.reask("It is 12.", [], [], "How long?", seen={"310"}) is not None
    assert turns.reask("It is 12.", [], [], "How long?", seen=None) is None  # tools open
    assert turns.reask("Job 42 is done.", [], [], "Is job 42 done?", seen=set()) is None


def stubborn(body: Mapping[str, Any], n: int) -> Reply:
    """Calls the price tool while it may; once closed, invents $12 however often it is told."""
    if body.get("tools"):
        return Reply(calls=(ToolCall("price", {"item": "Kestrel 40L"}),))
    return Reply(text="It is $12.")


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_value_invented_again_after_the_reask_becomes_could_not_find(
    tmp_path: Path, framework: str
) -> None:
    """Issue 48 item 3: overseer made the agent answer, so the value it still invents (no
    tool result supports it) does not stand; a plain answer saying so does."""
    with LoopbackServer(stubborn) as srv:
        out = run_agent(framework, srv.base_url, [price], QUESTION, GuardSettings(),
                        trace_dir=tmp_path)  # fmt: skip
    assert out.error is None, out.error
    assert out.answer == NOT_FOUND_ANSWER
    assert out.guard.last is not None and out.guard.last.stats["unsupported"] == 1


def _page(text: str) -> Any:
    def read_page(url: str) -> str:
        """Read a web page.

        Args:
            url: the page's address
        """
        return text

    return read_page


def _reader(answer: str) -> Any:
    def reply(body: Mapping[str, Any], n: int) -> Reply:
        if body.get("tools"):  # the same call until the loop breaker closes the tools
            return Reply(calls=(ToolCall("read_page", {"url": "https://shop.local/kestrel"}),))
        return Reply(text=answer)

    return reply


PAGE = (
    "Kestrel 40L hiking backpack\nPrice: 85 USD\nThe shop was mentioned 12 times in older "
    "accounts.\nThe Kestrel ships in 3 days."
)


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize(
    ("answer", "stands"),
    [
        ("It costs $85.", True),  # a labelled fact
        ("It ships in 3 days.", True),  # a sentence naming the question's subject
        ("It is $12.", False),  # filler prose that names nothing the question names
    ],
)
def test_only_a_value_a_tool_result_supports_stands_once_the_tools_closed(
    tmp_path: Path, framework: str, answer: str, stands: bool
) -> None:
    with LoopbackServer(_reader(answer)) as srv:
        out = run_agent(framework, srv.base_url, [_page(PAGE)], QUESTION, GuardSettings(),
                        trace_dir=tmp_path)  # fmt: skip
    assert out.error is None, out.error
    assert out.guard.last is not None and out.guard.last.stats["unsupported"] == (not stands)
    assert out.answer == (answer if stands else NOT_FOUND_ANSWER)


#: how qwen 0.5B answered smolagents' final-answer call on held-out search-never-finds tasks
WRITTEN = (
    "Calling tools:\n[{'id': 'call_2btdn0BvTTq36FH9faC_0', 'type': 'function', 'function': "
    "{'name': 'read_page', 'arguments': {'url': 'https://shop.local/kestrel'}}}]"
)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_tool_call_written_as_the_answer_once_the_tools_closed_is_no_answer(
    tmp_path: Path, framework: str
) -> None:
    with LoopbackServer(_reader(WRITTEN)) as srv:
        out = run_agent(framework, srv.base_url, [_page(PAGE)], QUESTION, GuardSettings(),
                        trace_dir=tmp_path)  # fmt: skip
    assert out.error is None, out.error
    assert out.answer == NOT_FOUND_ANSWER


def test_smolagents_final_answer_that_writes_a_tool_call_is_no_answer() -> None:
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    from overseer.integrations.smolagents import OverseerSupervisor

    with LoopbackServer(_reader(WRITTEN)) as srv:
        model = OpenAIServerModel(model_id="scripted", api_base=srv.base_url, api_key="none")
        agent = ToolCallingAgent(tools=[tool(_page(PAGE))], model=model, max_steps=8)
        sup = OverseerSupervisor(mode="rules")
        assert sup.attach(agent).run(QUESTION) == NOT_FOUND_ANSWER
    # with its tools open, overseer leaves an agent's own final answer alone
    with LoopbackServer(lambda body, n: Reply(text=WRITTEN)) as srv:
        model = OpenAIServerModel(model_id="scripted", api_base=srv.base_url, api_key="none")
        agent = ToolCallingAgent(tools=[tool(_page(PAGE))], model=model, max_steps=1)
        assert OverseerSupervisor(mode="rules").attach(agent).run(QUESTION) != NOT_FOUND_ANSWER


def test_smolagents_replaces_a_value_invented_again() -> None:
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    from overseer.integrations.smolagents import OverseerSupervisor

    with LoopbackServer(stubborn) as srv:  # closed: smolagents asks for an answer, no tools
        model = OpenAIServerModel(model_id="scripted", api_base=srv.base_url, api_key="none")
        agent = ToolCallingAgent(tools=[tool(price)], model=model, max_steps=8)
        sup = OverseerSupervisor(mode="rules")
        answer = sup.attach(agent).run(QUESTION)
    assert answer == NOT_FOUND_ANSWER
    assert sup.run.stats["unsupported"] == 1


def test_the_proxy_replaces_a_value_invented_again(tmp_path: Path) -> None:
    """An agent loop through the proxy: the same failing call each turn, until the refusals
    close the tools; the answer then invented twice comes back as "could not find it"."""
    import openai

    from overseer.proxy import Proxy, ProxySettings

    from ..proxy.mock_upstream import MockUpstream

    def upstream_reply(body: dict[str, Any]) -> dict[str, Any]:
        if body.get("tool_choice") == "none":
            return {"role": "assistant", "content": "It is $12."}
        call = {"id": f"c{len(body['messages'])}", "type": "function",
                "function": {"name": "price", "arguments": '{"item": "Kestrel 40L"}'}}  # fmt: skip
        return {"role": "assistant", "content": None, "tool_calls": [call]}

    up = MockUpstream(message=upstream_reply)
    proxy = Proxy(up.base_url, ProxySettings(trace_dir=tmp_path))
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    try:
        client = openai.OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
        for _ in range(8):  # the agent's loop: run each call it asks for, ask again
            got = client.chat.completions.create(model="mock", messages=messages, tools=TOOLS)
            reply = got.choices[0].message
            if not reply.tool_calls:
                break
            messages.append(reply.model_dump(exclude_none=True))
            messages += [{"role": "tool", "tool_call_id": c.id, "content": DOWN}
                         for c in reply.tool_calls]  # fmt: skip
    finally:
        proxy.close()
        up.close()
    sent = [body for _, body in up.requests]
    assert sent[-2].get("tool_choice") == "none"  # the refusals closed the tools
    assert any(UNSEEN_NOTE in str(m.get("content")) for m in sent[-1]["messages"])
    assert reply.content == NOT_FOUND_ANSWER


TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "price",
            "description": "Look up the current price of an item.",
            "parameters": {"type": "object", "properties": {"item": {"type": "string"}}},
        },
    }
]
