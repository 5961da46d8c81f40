"""Issue 51, serve: with the Agents SDK, qwen2.5-coder-0.5b (through `overseer serve`) wrote a
valid tool call and then echoed the argument schema it was given; 4 of 124 such replies reached
the framework as text. Each echo shape parses as the call before it (no second, empty call),
and the reply reaches the client as that one tool call."""

from __future__ import annotations

import json
from typing import Any

import pytest

from overseer.models._toolcalls import parse_calls, tool_calls_from_text

#: the parameter schema the Agents SDK sends for `def read_box(box: str)` (strict mode)
ARGS = {
    "properties": {"box": {"title": "Box", "type": "string"}},
    "required": ["box"],
    "title": "read_box_args",
    "type": "object",
    "additionalProperties": False,
}
DEFINITION = {"name": "read_box", "description": "Read a box.", "parameters": ARGS, "strict": True}
TOOLS = {"read_box": ARGS, "next_page": {"type": "object", "properties": {"n": {}}}}
CALL = '{"name": "read_box", "arguments": {"box": "B7"}}'

ECHOES: list[tuple[str, Any]] = [
    ("the argument schema", ARGS),
    ("the tool's definition, strict", DEFINITION),
    ("the definition in OpenAI's shape", {"type": "function", "function": DEFINITION}),
    ("name and parameters", {"name": "read_box", "parameters": ARGS}),
    ("name and the schema as arguments", {"name": "read_box", "arguments": ARGS}),
    ("the schema named by its title", {"name": "read_box_args", "type": "object",
                                       "properties": ARGS["properties"]}),
]  # fmt: skip


@pytest.mark.parametrize(("shape", "echo"), ECHOES, ids=[e[0] for e in ECHOES])
@pytest.mark.parametrize("sep", ["\n", "\n\n", ",\n"], ids=["newline", "blank line", "comma"])
def test_a_call_then_its_schema_echoed_is_that_call(shape: str, echo: Any, sep: str) -> None:
    text = CALL + sep + json.dumps(echo)
    assert parse_calls(text, TOOLS) == [("read_box", {"box": "B7"})]
    assert parse_calls(f"<tool_call>\n{CALL}\n</tool_call>\n{json.dumps(echo)}", TOOLS) == [
        ("read_box", {"box": "B7"})
    ]


def test_the_reply_reaches_the_client_as_one_tool_call() -> None:
    offered = [{"type": "function", "function": DEFINITION}]
    body = {"messages": [{"role": "user", "content": "open B7"}], "tools": offered}
    text = CALL + "\n" + json.dumps({"type": "function", "function": DEFINITION})
    reply = {"id": "chatcmpl-x", "choices": [{"index": 0, "finish_reason": "stop",
             "message": {"role": "assistant", "content": text}}]}  # fmt: skip
    (choice,) = tool_calls_from_text(body, reply)["choices"]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    (call,) = choice["message"]["tool_calls"]
    assert call["function"]["name"] == "read_box"
    assert json.loads(call["function"]["arguments"]) == {"box": "B7"}


@pytest.mark.parametrize(
    "text",
    [
        # a schema alone is still read as a call (its values in place), as before
        json.dumps({"name": "read_box", "parameters": ARGS}),
        # a real second call, with values, stays a second call
        CALL + "\n" + '{"name": "read_box", "arguments": {"box": "C1"}}',
    ],
)
def test_what_is_no_echo_is_read_as_before(text: str) -> None:
    calls = parse_calls(text, TOOLS)
    assert calls and calls[0][0] == "read_box"
    if "C1" in text:
        assert calls == [("read_box", {"box": "B7"}), ("read_box", {"box": "C1"})]


@pytest.mark.parametrize(
    "echo",
    [
        {"name": "send_email", "parameters": ARGS},  # a tool not offered: not its echo
        {"name": "read_box", "parameters": {"type": "object", "properties": {"box": "C1"}}},
    ],
    ids=["a tool not offered", "a value in place"],
)
def test_an_object_that_is_no_echo_is_not_dropped_as_one(echo: dict[str, Any]) -> None:
    got = parse_calls(CALL + "\n" + json.dumps(echo), TOOLS)
    if echo["name"] == "send_email":
        assert got == []  # a call to a tool not offered: the text stays text, as before
    else:
        assert got == [("read_box", {"box": "B7"}), ("read_box", {"box": "C1"})]
