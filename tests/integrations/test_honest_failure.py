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
from overseer.runtime._turns import UNSEEN_NOTE
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
