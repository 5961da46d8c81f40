"""The reader of tool calls written as text, and the schema that forces a call (the forms
small models write are in test_serve_toolcalls.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from overseer.models._toolcalls import (
    ANSWER_GRAMMAR,
    answer_only,
    force_tool_schema,
    parse_calls,
    tool_calls_from_text,
)

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
TOOLS = {"get_weather": WEATHER, "next_page": {"type": "object"}}
CALL = '{"name": "get_weather", "arguments": {"city": "Paris"}}'


def _body(**extra: Any) -> dict[str, Any]:
    tools = [
        {"type": "function", "function": {"name": n, "parameters": p}} for n, p in TOOLS.items()
    ]
    return {"messages": [{"role": "user", "content": "hi"}], "tools": tools, **extra}


def _reply(text: str | None, **message: Any) -> dict[str, Any]:
    msg = {"role": "assistant", "content": text, **message}
    choice = {"index": 0, "finish_reason": "stop", "message": msg}
    return {"id": "chatcmpl-abc", "choices": [choice], "usage": {"prompt_tokens": 3}}


@pytest.mark.parametrize(
    "text",
    [
        CALL,
        f"  {CALL}\n",
        f"```json\n{CALL}\n```",
        f"```\n{CALL}\n```",
        f"<tool_call>\n{CALL}\n</tool_call>",
        '{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}',  # string args
    ],
)
def test_a_call_in_each_written_form_is_read(text: str) -> None:
    assert parse_calls(text, TOOLS) == [("get_weather", {"city": "Paris"})]


def test_a_tool_may_be_named_by_its_parameter_schema_title() -> None:
    # the OpenAI Agents SDK titles a tool's parameters `TOOL_args`; qwen 0.5B copies that
    titled = {
        "fetch_page": {"title": "fetch_page_args"},
        "b": {"title": "same"},
        "c": {"title": "same"},
    }
    call = '{"name": "fetch_page_args", "arguments": {"url": "x"}}'
    assert parse_calls(call, titled) == [("fetch_page", {"url": "x"})]
    assert parse_calls('{"name": "same", "arguments": {}}', titled) == []  # two tools


def test_bare_calls_one_per_line_are_parallel_calls() -> None:
    # what qwen 0.5B wrote after reading a page (two calls, one per line)
    text = CALL + '\n{"name": "next_page", "arguments": {"n": 2}}'
    assert parse_calls(text, TOOLS) == [("get_weather", {"city": "Paris"}), ("next_page", {"n": 2})]
    assert parse_calls(text + "\nThat is all.", TOOLS) == []
    assert parse_calls(text + '\n{"name": "nope", "arguments": {}}', TOOLS) == []


def test_two_tagged_calls_are_two_calls() -> None:
    page = '{"name": "next_page", "arguments": {"n": 2}}'
    two = f"<tool_call>{CALL}</tool_call>\n<tool_call>{page}</tool_call>"
    assert parse_calls(two, TOOLS) == [("get_weather", {"city": "Paris"}), ("next_page", {"n": 2})]


@pytest.mark.parametrize(
    "text",
    [
        "The weather in Paris is sunny.",
        f"Sure! {CALL}",  # prose around the call
        f"{CALL} Done.",
        f"{CALL}.json\n```json\n{CALL}\n```",  # what qwen 0.5B wrote unconstrained
        '{"name": "send_email", "arguments": {}}',  # not one of the request's tools
        '{"name": "get_weather", "arguments": ["Paris"]}',  # arguments not an object
        '{"name": "get_weather", "arguments": "Paris"}',
        '{"city": "Paris"}',
        '{"name": "get_weather", "arguments": {}, "extra": 3}',  # a key no call form has
        '{"name": "get_weather", "arguments": {}, "parameters": {}}',
        '{"name": "get_weather", "arguments": {"city": "Paris"}',  # truncated
        f"<tool_call>{CALL}</tool_call> and then some",
        f"<tool_call>{CALL}</tool_call><tool_call>not json</tool_call>",
        "",
    ],
)
def test_anything_but_exactly_a_call_stays_text(text: str) -> None:
    assert parse_calls(text, TOOLS) == []
    reply = _reply(text)
    assert tool_calls_from_text(_body(), reply) is reply


def test_the_reply_becomes_an_openai_tool_call() -> None:
    out = tool_calls_from_text(_body(), _reply(CALL))
    (choice,) = out["choices"]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    (call,) = choice["message"]["tool_calls"]
    assert call["id"] == "call_abc_0" and call["type"] == "function"
    assert call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris"}
    assert out["usage"] == {"prompt_tokens": 3}


def test_no_tools_tool_choice_none_or_a_parsed_call_leave_the_reply_alone() -> None:
    plain = {"messages": [{"role": "user", "content": "hi"}]}
    reply = _reply(CALL)
    assert tool_calls_from_text(plain, reply) is reply
    assert tool_calls_from_text(_body(tool_choice="none"), reply) is reply
    parsed = _reply(None, tool_calls=[{"id": "x", "type": "function", "function": {}}])
    assert tool_calls_from_text(_body(), parsed) is parsed


def test_optional_calls_are_not_forced() -> None:
    body = _body(tool_choice="auto")
    assert force_tool_schema(body) is body
    assert force_tool_schema(_body()) == _body()


def test_required_is_a_schema_over_every_tool() -> None:
    out = force_tool_schema(_body(tool_choice="required"))
    assert out["tool_choice"] == "auto"
    schema = out["response_format"]["json_schema"]["schema"]
    names = [alt["properties"]["name"]["const"] for alt in schema["anyOf"]]
    assert names == ["get_weather", "next_page"]
    assert schema["anyOf"][0]["properties"]["arguments"] == WEATHER
    assert all(alt["additionalProperties"] is False for alt in schema["anyOf"])


def test_a_named_tool_is_a_schema_for_that_tool_only() -> None:
    choice = {"type": "function", "function": {"name": "next_page"}}
    schema = force_tool_schema(_body(tool_choice=choice))["response_format"]["json_schema"]
    assert schema["schema"]["properties"]["name"] == {"const": "next_page"}
    unknown = _body(tool_choice={"type": "function", "function": {"name": "nope"}})
    assert force_tool_schema(unknown) is unknown


def test_parameters_with_references_are_relaxed_to_any_object() -> None:
    body = _body(tool_choice="required")
    body["tools"][0]["function"]["parameters"] = {
        "$defs": {"C": {"type": "string"}},
        "type": "object",
        "properties": {"city": {"$ref": "#/$defs/C"}},
    }
    schema = force_tool_schema(body)["response_format"]["json_schema"]["schema"]
    assert schema["anyOf"][0]["properties"]["arguments"] == {"type": "object"}


def _history() -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "next_page", "arguments": "{}"}}
    return [
        {"role": "user", "content": "find it"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "Not here."},
    ]


def test_closed_tools_after_tool_use_get_the_answer_grammar() -> None:
    closed = {"messages": _history()}
    assert answer_only(closed)["grammar"] == ANSWER_GRAMMAR
    assert "grammar" not in closed  # the caller's body is not changed


@pytest.mark.parametrize(
    "body",
    [
        {"messages": [{"role": "user", "content": "hi"}]},  # no tool history
        {"messages": _history(), "response_format": {"type": "json_object"}},  # its own format
        {"messages": _history(), "grammar": 'root ::= "x"'},
    ],
)
def test_other_requests_keep_their_own_constraints(body: dict[str, Any]) -> None:
    assert answer_only(body) is body
    assert answer_only(_body()) == _body()  # tools open: calls are read, not prevented


def test_tools_offered_with_tool_choice_none_are_closed_too() -> None:
    """The proxy closes an agent's tools with `tool_choice: "none"` (the framework still sends
    its tools): the tools are dropped from what llama.cpp reads and the answer grammar applies,
    so qwen 0.5B cannot end a LangGraph run on a call written as text (seen through the proxy)."""
    body = {**_body(), "messages": _history(), "tool_choice": "none"}
    sent = answer_only(body)
    assert sent["grammar"] == ANSWER_GRAMMAR
    assert "tools" not in sent and "tool_choice" not in sent
    assert body["tool_choice"] == "none" and body["tools"]  # the caller's body is not changed
