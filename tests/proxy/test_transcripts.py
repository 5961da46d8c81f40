"""Tool results in a request, in OpenAI's shape and in smolagents' text shape (its OpenAI
model flattens tool roles into "Calling tools:" / "Observation:" turns): found, keyed by call
id, rewritten in their own shape; a call list that is not a Python literal is never run."""

from __future__ import annotations

from typing import Any

from overseer.proxy._transcripts import CALLING, OBSERVED, rewrite, tool_results


def _smol(i: int, url: str, output: str) -> list[dict[str, Any]]:
    call = {"id": f"call_{i}", "type": "function",
            "function": {"name": "fetch_page", "arguments": {"url": url}}}  # fmt: skip
    return [
        {"role": "assistant", "content": [{"type": "text", "text": CALLING + str([call])}]},
        {"role": "user", "content": [{"type": "text", "text": OBSERVED + output}]},
    ]


def test_smolagents_turns_are_tool_results_keyed_by_call_id() -> None:
    msgs = [{"role": "user", "content": "Q?"}, *_smol(0, "a", "page A"), *_smol(1, "b", "B")]
    found = tool_results(msgs)
    assert [(r.index, r.key, r.tool, r.output) for r in found] == [
        (2, "call_0", "fetch_page", "page A"),
        (4, "call_1", "fetch_page", "B"),
    ]
    assert found[0].args == '{"url": "a"}'
    out = rewrite(msgs, found, ["cut A", "B"])
    assert out[2]["content"] == OBSERVED + "cut A" and out[4] is msgs[4]  # unchanged: same


def test_openai_tool_messages_are_found_by_their_call() -> None:
    call = {"id": "c1", "type": "function",
            "function": {"name": "fetch", "arguments": '{"url": "x"}'}}  # fmt: skip
    msgs = [
        {"role": "user", "content": "Q?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "out"},
    ]
    (r,) = tool_results(msgs)
    assert (r.index, r.key, r.tool, r.args, r.output, r.prefix) == (
        2, "c1", "fetch", '{"url": "x"}', "out", "",
    )  # fmt: skip


def test_an_observation_without_a_parsable_call_turn_is_left_alone() -> None:
    evil = "__import__('os').system('touch /tmp/pwned')"
    msgs = [
        {"role": "assistant", "content": CALLING + evil},
        {"role": "user", "content": OBSERVED + "text"},
        {"role": "user", "content": OBSERVED + "no call before it"},
    ]
    assert tool_results(msgs) == []
