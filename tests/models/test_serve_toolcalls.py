"""Tool calls a small local model writes as text (issue 40, item 6), one test per form: each is
returned by `serve` as OpenAI `tool_calls` when the request offered that tool, never as the
answer text; the same text without that tool on offer stays text."""

from __future__ import annotations

import json
from typing import Any

import pytest

from overseer.models._toolcalls import parse_calls, tool_calls_from_text

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "the city"}},
    "required": ["city"],
}
TOOLS = {"get_weather": WEATHER, "next_page": {"type": "object", "properties": {"n": {}}}}
CALL = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
PAGE = '{"name": "next_page", "arguments": {"n": 2}}'
PARIS = ("get_weather", {"city": "Paris"})
ECHO = {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}

FORMS: list[tuple[str, str, list[Any]]] = [
    ("bare JSON", CALL, [PARIS]),
    ("after a lone >", f">{CALL}", [PARIS]),
    ("after a lone > and a newline", f">\n{CALL}\n", [PARIS]),
    ("fenced json", f"```json\n{CALL}\n```", [PARIS]),
    ("fenced python", f"```python\n{CALL}\n```", [PARIS]),
    ("in tool_call tags", f"<tool_call>\n{CALL}\n</tool_call>", [PARIS]),
    (
        "an extra type key",
        '{"type": "function", "name": "get_weather", "arguments": {"city": "Paris"}}',
        [PARIS],
    ),
    (
        "parameters for arguments",
        '{"name": "get_weather", "parameters": {"city": "Paris"}}',
        [PARIS],
    ),
    (
        "OpenAI's shape",
        json.dumps(
            {
                "type": "function",
                "id": "c1",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ),
        [PARIS],
    ),
    ("no arguments", '{"name": "next_page"}', [("next_page", {})]),
    # what qwen 0.5B wrote after an error tool result: the call, then the reply it imagined
    (
        "a call then the tool's reply imagined",
        '{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
        '{"error": "missing required argument \'city\'"}',
        [PARIS],
    ),
    (
        "tagged, then the tool's reply imagined",
        f"<tool_call>\n{CALL}\n</tool_call>\n<tool_response>\nSunny.\n</tool_response>",
        [PARIS],
    ),
    ("parallel calls, one per line", f"{CALL}\n{PAGE}", [PARIS, ("next_page", {"n": 2})]),
    ("parallel calls, comma separated", f"{CALL},\n{PAGE}", [PARIS, ("next_page", {"n": 2})]),
    ("a JSON array of calls", f"[{CALL}, {PAGE}]", [PARIS, ("next_page", {"n": 2})]),
    ("the schema echoed back", json.dumps(ECHO), [("get_weather", {})]),
    (
        "the schema echoed back with a value in place",
        json.dumps(
            {
                "name": "get_weather",
                "description": "Weather of a city",
                "parameters": {"type": "object", "properties": {"city": "Paris"}},
            }
        ),
        [PARIS],
    ),
]


@pytest.mark.parametrize(("form", "text", "calls"), FORMS, ids=[f[0] for f in FORMS])
def test_each_written_form_is_read_as_calls(form: str, text: str, calls: list[Any]) -> None:
    assert parse_calls(text, TOOLS) == calls


def _body(tools: dict[str, Any] = TOOLS, **extra: Any) -> dict[str, Any]:
    offered = [
        {"type": "function", "function": {"name": n, "parameters": p}} for n, p in tools.items()
    ]
    return {"messages": [{"role": "user", "content": "hi"}], "tools": offered, **extra}


def _reply(text: str, finish: str = "stop") -> dict[str, Any]:
    choice = {
        "index": 0,
        "finish_reason": finish,
        "message": {"role": "assistant", "content": text},
    }
    return {"id": "chatcmpl-x", "choices": [choice]}


@pytest.mark.parametrize(("form", "text", "calls"), FORMS, ids=[f[0] for f in FORMS])
def test_each_form_reaches_the_client_as_tool_calls(form: str, text: str, calls: list[Any]) -> None:
    (choice,) = tool_calls_from_text(_body(), _reply(text))["choices"]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    got = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in
           choice["message"]["tool_calls"]]  # fmt: skip
    assert got == calls


@pytest.mark.parametrize(("form", "text", "calls"), FORMS, ids=[f[0] for f in FORMS])
def test_a_form_naming_a_tool_not_offered_stays_text(
    form: str, text: str, calls: list[Any]
) -> None:
    other = {"send_email": {"type": "object"}}
    reply = _reply(text)
    assert tool_calls_from_text(_body(other), reply) is reply


def test_a_run_of_calls_cut_at_the_token_limit_gives_the_complete_ones() -> None:
    run = f'{CALL}\n{PAGE}\n{{"name": "next_page", "argum'
    assert parse_calls(run, TOOLS, cut=True) == [PARIS, ("next_page", {"n": 2})]
    assert parse_calls(f'<tool_call>{CALL}</tool_call>\n<tool_call>{{"na', TOOLS, cut=True) == [
        PARIS
    ]
    (choice,) = tool_calls_from_text(_body(), _reply(run, finish="length"))["choices"]
    assert [c["function"]["name"] for c in choice["message"]["tool_calls"]] == [
        "get_weather",
        "next_page",
    ]
    # not cut by the limit: a broken tail is not a call, the text stays text
    assert parse_calls(run, TOOLS) == []
    reply = _reply(run)
    assert tool_calls_from_text(_body(), reply) is reply


@pytest.mark.parametrize(
    "text",
    [
        f"Sure! {CALL}",  # prose around a call: possibly an answer, left as text
        f"{CALL} Done.",
        '{"name": "get_weather", "arguments": {"city": "Par',  # one call, cut: nothing whole
        '{"name": "get_weather", "arguments": "Paris"}',
        '{"name": "get_weather", "arguments": {}, "extra": 1}',
        "> The weather is sunny.",
        "[1, 2]",
        f'{{"answer": 42}}\n{CALL}',  # an object that is not a call comes first
        f'[{CALL}, {{"error": 1}}]',  # an array: every item a call, or text
        "<tool_response>Sunny.</tool_response>",
    ],
)
def test_text_that_is_not_only_calls_stays_text(text: str) -> None:
    assert parse_calls(text, TOOLS, cut=True) == []
