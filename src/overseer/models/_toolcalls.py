"""OpenAI `tool_calls` for local models that write a tool call as plain JSON text.

llama.cpp parses tool calls in the format the model's chat template declares (for
Qwen2.5-Coder: `<tool_call>{...}</tool_call>`), but small models often drop the tags and write
the bare object, or fence it in ```json, and the server then returns the call as text. The
chat front of `LlamaCppModel` passes every reply through `tool_calls_from_text`: a reply with
no parsed calls whose whole text is calls (bare JSON objects one after another, one fenced
object, or <tool_call> blocks) becomes OpenAI tool calls, strictly: each call a JSON object
with exactly `name` (one of the request's tools, by its name or its parameter schema's
title) and `arguments` (a JSON object), nothing else in the text, or the text stays text.
`force_tool_schema` turns `tool_choice="required"` (or a named tool) into a JSON schema that
constrains the output to such an object, so even a model whose template knows no tools
produces one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

# the whole text: a ```json (or bare ```) fence, or one or more <tool_call> blocks, or bare JSON
_FENCE = re.compile(r"\A```(?:json)?\s*\n(.*?)\n?```\Z", re.S)
_TAGGED = re.compile(r"\s*<tool_call>\s*(.*?)\s*</tool_call>\s*", re.S)


def tool_names(body: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The request's function tools by name (their parameter schemas), {} when it has none."""
    out: dict[str, Mapping[str, Any]] = {}
    for tool in body.get("tools") or ():
        fn = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            params = fn.get("parameters")
            out[fn["name"]] = params if isinstance(params, Mapping) else {"type": "object"}
    return out


def _forced_names(body: Mapping[str, Any], tools: Mapping[str, Any]) -> list[str]:
    """The tools a request's `tool_choice` forces a call to ([] when the call is optional)."""
    choice = body.get("tool_choice")
    if choice == "required":
        return list(tools)
    if isinstance(choice, Mapping):
        name = (choice.get("function") or {}).get("name")
        return [name] if isinstance(name, str) and name in tools else []
    return []


def _arguments_schema(params: Mapping[str, Any]) -> dict[str, Any]:
    """A tool's parameter schema for the grammar; one with references (their targets would
    move under anyOf) is relaxed to any object."""
    text = json.dumps(params)
    if '"$ref"' in text or '"$defs"' in text or '"definitions"' in text:
        return {"type": "object"}
    return dict(params)


def force_tool_schema(body: dict[str, Any]) -> dict[str, Any]:
    """The request as sent to llama.cpp: when `tool_choice` forces a call, a JSON-schema
    `response_format` for `{"name": TOOL, "arguments": {...}}` (llama.cpp's own grammar for
    `required` lets the model write free text first); otherwise the body unchanged."""
    tools = tool_names(body)
    forced = _forced_names(body, tools)
    if not forced:
        return body
    calls = [
        {
            "type": "object",
            "properties": {"name": {"const": n}, "arguments": _arguments_schema(tools[n])},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for n in forced
    ]
    schema = calls[0] if len(calls) == 1 else {"anyOf": calls}
    out = dict(body, tool_choice="auto")
    out["response_format"] = {
        "type": "json_schema",
        "json_schema": {"name": "tool_call", "schema": schema},
    }
    return out


def _tool_named(name: object, tools: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The tool `name` names: its own name, or the `title` of exactly one tool's parameter
    schema (the OpenAI Agents SDK titles them `TOOL_args`, and small models copy that)."""
    if not isinstance(name, str):
        return None
    if name in tools:
        return name
    titled = [n for n, params in tools.items() if params.get("title") == name]
    return titled[0] if len(titled) == 1 else None


# A reply that cannot begin as a call written as text: its first character is not `{`, `[`,
# `<`, a backtick (a fence: qwen 0.5B wrote ```python around a call) or white space.
ANSWER_GRAMMAR = r"""root ::= [^{<`\[ \t\r\n] [^\x00]*
"""


def _used_tools(body: Mapping[str, Any]) -> bool:
    """Whether the conversation so far holds tool calls (or their results)."""
    return any(
        isinstance(m, Mapping) and (m.get("tool_calls") or m.get("role") == "tool")
        for m in body.get("messages") or ()
    )


def answer_only(body: dict[str, Any]) -> dict[str, Any]:
    """The request as sent to llama.cpp when it closes the tools of a conversation that used
    them (no `tools` now, as an adapter that asks for an answer sends): a grammar so the reply
    cannot begin as a call written as text, which the client could only take for its answer.
    Unchanged when the request has tools, no tool history, or its own output constraint."""
    own = ("grammar", "json_schema", "response_format")
    if tool_names(body) or not _used_tools(body) or any(body.get(k) for k in own):
        return body
    return dict(body, grammar=ANSWER_GRAMMAR)


def _one_call(text: str, tools: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(name, arguments) when `text` is exactly one JSON call object naming a known tool."""
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    if not isinstance(obj, dict) or set(obj) != {"name", "arguments"}:
        return None
    name, args = obj["name"], obj["arguments"]
    if isinstance(args, str):  # some models write the arguments as a JSON string
        try:
            args = json.loads(args)
        except ValueError:
            return None
    tool = _tool_named(name, tools)
    if tool is None or not isinstance(args, dict):
        return None
    return tool, args


def parse_calls(text: str, tools: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls `text` consists of, or [] when it is anything else (prose around a call,
    an unknown tool, arguments that are not an object, a second object, malformed JSON)."""
    text = text.strip()
    if not text or not tools:
        return []
    fence = _FENCE.match(text)
    if fence:
        text = fence.group(1).strip()
    if text.startswith("<tool_call>"):
        blocks = list(_TAGGED.finditer(text))
        if not blocks or not _covers(blocks, text):
            return []
        parts = [b.group(1) for b in blocks]
    else:
        parts = _objects(text)
    calls = [_one_call(p, tools) for p in parts]
    if not calls or any(c is None for c in calls):
        return []
    return [c for c in calls if c is not None]


def _objects(text: str) -> list[str]:
    """The JSON objects `text` consists of, one after another with only white space between
    (qwen writes parallel calls one per line); [] when anything else is there."""
    decoder, parts, pos = json.JSONDecoder(), [], 0
    while pos < len(text):
        if text[pos] != "{":
            return []
        try:
            _, end = decoder.raw_decode(text, pos)
        except ValueError:
            return []
        parts.append(text[pos:end])
        pos = end
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return parts


def _covers(blocks: list[re.Match[str]], text: str) -> bool:
    """Whether the <tool_call> blocks, end to end, are the whole text."""
    pos = 0
    for b in blocks:
        if b.start() != pos:
            return False
        pos = b.end()
    return pos == len(text)


def tool_calls_from_text(body: Mapping[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    """`reply` (a non-streamed chat completion) with its text turned into `tool_calls` when the
    request offered tools and the text is exactly a call to one of them; otherwise unchanged."""
    tools = tool_names(body)
    if not tools or body.get("tool_choice") == "none":
        return reply
    choices = reply.get("choices") or []
    if len(choices) != 1:
        return reply
    message = choices[0].get("message") or {}
    text = message.get("content")
    if message.get("tool_calls") or not isinstance(text, str):
        return reply
    calls = parse_calls(text, tools)
    if not calls:
        return reply
    ident = str(reply.get("id") or "chatcmpl").removeprefix("chatcmpl-")
    tool_calls = [
        {
            "id": f"call_{ident}_{i}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        for i, (name, args) in enumerate(calls)
    ]
    new_message = dict(message, content=None, tool_calls=tool_calls)
    choice = dict(choices[0], message=new_message, finish_reason="tool_calls")
    return dict(reply, choices=[choice])
