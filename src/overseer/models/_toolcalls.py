"""OpenAI `tool_calls` for local models that write a tool call as plain text.

llama.cpp parses tool calls in the format the model's chat template declares (for
Qwen2.5-Coder: `<tool_call>{...}</tool_call>`), but small models often drop the tags and write
the bare object, fence it in ```json, leave a `>` of the tag, add a `"type"` key, write
`parameters` for `arguments`, echo the tool's schema back, or run on writing calls until the
token limit cuts the last one; the server then returns the call as text, which a framework
takes for the final answer. The chat front of `LlamaCppModel` passes every reply to a request
that offered tools through `tool_calls_from_text`: a reply with no parsed calls whose whole text
is calls to tools the request offered (`parse_calls` lists the forms) becomes OpenAI tool calls;
text with anything else in it (prose around a call, a tool not offered, arguments that are not
an object) stays text. `force_tool_schema` turns `tool_choice="required"` (or a named tool)
into a JSON schema that constrains the output to such an object, so even a model whose template
knows no tools produces one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

# the whole text in a ``` fence (```json, ```python, bare ```)
_FENCE = re.compile(r"\A```[\w-]*[ \t]*\n(.*?)\n?```\Z", re.S)


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
    Unchanged when the request has tools, no tool history, or its own output constraint.
    Tools offered with `tool_choice: "none"` are closed too (the proxy closes them so): they are
    dropped from what llama.cpp is sent, and the grammar applies."""
    own = ("grammar", "json_schema", "response_format")
    if body.get("tool_choice") == "none":
        body = {k: v for k, v in body.items() if k not in ("tools", "tool_choice")}
    if tool_names(body) or not _used_tools(body) or any(body.get(k) for k in own):
        return body
    return dict(body, grammar=ANSWER_GRAMMAR)


#: the keys a call written as text may have: OpenAI's and the common variants (`parameters`
#: for `arguments`, an extra `"type": "function"`, an id, the tool's description echoed back)
_CALL_KEYS = frozenset({"name", "arguments", "parameters", "type", "id", "description"})
#: keys that only a JSON schema has (an echoed parameter schema, not argument values)
_SCHEMA_KEYS = frozenset(
    {"type", "description", "title", "enum", "default", "items", "properties", "required",
     "anyOf", "oneOf", "allOf", "format", "examples", "additionalProperties", "$ref"}
)  # fmt: skip


def _is_schema(value: object) -> bool:
    return isinstance(value, dict) and bool(value) and set(value) <= _SCHEMA_KEYS


#: what a tool's definition or argument schema, written back whole, may hold
_ECHO_KEYS = _SCHEMA_KEYS | {"name", "parameters", "arguments", "strict", "$defs", "$schema"}


def _schema_echo(obj: object, tools: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether `obj` is a tool's argument schema (or its whole definition) written back, with
    no argument value in it: schema keys only, an offered tool's name or schema title if it
    names one, and `properties` that are all schemas. qwen 0.5B under the Agents SDK wrote
    its call, then the `TOOL_args` schema it was given (in the tool's definition, `strict`
    and all); that echo is no second call and no reply, so the call before it stands."""
    fn = obj.get("function") if isinstance(obj, dict) else None
    if isinstance(fn, dict) and isinstance(obj, dict) and set(obj) <= {"type", "id", "function"}:
        obj = fn
    if not isinstance(obj, dict) or not obj or set(obj) - _ECHO_KEYS:
        return False
    tool = _tool_named(obj["name"], tools) if "name" in obj else None
    if "name" in obj and tool is None:
        return False
    inner = obj.get("parameters", obj.get("arguments", obj))
    props = inner.get("properties") if isinstance(inner, dict) else None
    declared = tools[tool].get("properties") if tool is not None else None
    if not isinstance(props, dict) or (isinstance(declared, Mapping) and "properties" in declared):
        return False  # no schema, or a tool whose own argument is named "properties"
    return all(_is_schema(v) for v in props.values())


def _arguments(value: object, params: Mapping[str, Any]) -> dict[str, Any] | None:
    """A call's arguments: an object, or a JSON string of one; when the model echoed the
    tool's parameter schema back, the values it wrote in place of property schemas (often
    none: the tool then answers that an argument is missing, and the model can try again)."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, dict):
        return None
    own = params.get("properties")
    declared = set(own) if isinstance(own, Mapping) else set()
    props = value.get("properties")
    if value.get("type") == "object" and isinstance(props, dict) and "properties" not in declared:
        return {k: v for k, v in props.items() if not _is_schema(v)}
    return value


def _as_call(obj: object, tools: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(name, arguments) when `obj` is one call to a tool the request offered: `{"name",
    "arguments"}` with at most the variant keys of `_CALL_KEYS`, or OpenAI's `{"type":
    "function", "function": {...}}` (also an echoed tool definition)."""
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict) and set(obj) <= {"type", "id", "function"}:
        obj = obj["function"]
    assert isinstance(obj, dict)
    if "name" not in obj or set(obj) - _CALL_KEYS or {"arguments", "parameters"} <= set(obj):
        return None
    tool = _tool_named(obj["name"], tools)
    if tool is None:
        return None
    args = _arguments(obj.get("arguments", obj.get("parameters")), tools[tool])
    return None if args is None else (tool, args)


_TAG = re.compile(r"</?tool_call>")


def _unwrap(text: str) -> str:
    """The text inside a ``` fence, without <tool_call> tags or the `>` a model leaves of one."""
    text = text.strip()
    fence = _FENCE.match(text)
    if fence:
        text = fence.group(1).strip()
    if text.startswith(("<tool_call>", ">")):
        text = text.split("<tool_response>", 1)[0]  # the tool's reply, as the model imagines it
        text = _TAG.sub("\n", text).lstrip(">").strip()
    return text


def parse_calls(
    text: str, tools: Mapping[str, Any], *, cut: bool = False
) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls `text` consists of, or [] when it is anything else (prose around a
    call, a tool the request did not offer, arguments that are not an object, malformed JSON).
    Read: bare JSON objects one after another (or a JSON array of them), fenced, in
    <tool_call> tags or after a lone `>`, in OpenAI's shape or with `parameters` for
    `arguments`, an extra `type` or `id`, or the tool's schema echoed back. Objects after the
    calls that are not calls (the model writing the tool's reply itself, `{"error": ...}`)
    are dropped, and so is a tool's schema echoed back after a call (`_schema_echo`). `cut`
    (the reply stopped at its token limit): a run of calls whose last one
    was cut gives the others."""
    text = _unwrap(text)
    if not text or not tools:
        return []
    imagined = not text.startswith("[")
    if text.startswith("["):
        try:
            parts: list[Any] = json.loads(text)
        except ValueError:
            return []
        if not isinstance(parts, list):
            return []
    else:
        parts, rest = _objects(text)
        if rest and not (cut and parts and rest.startswith("{")):  # a cut call is dropped
            return []
    parts = parts[:1] + [p for p in parts[1:] if not _schema_echo(p, tools)]
    calls = [_as_call(p, tools) for p in parts]
    n = calls.index(None) if None in calls else len(calls)
    if n == 0 or (n < len(calls) and (not imagined or _call_like(parts[n]))):
        return []  # nothing, or a call that is not one the request offered, or broken
    # after the calls, an object that is no call is the model imagining the tool's reply
    return [c for c in calls[:n] if c is not None]


def _call_like(obj: object) -> bool:
    return isinstance(obj, dict) and ("name" in obj or "function" in obj)


def _objects(text: str) -> tuple[list[Any], str]:
    """The JSON objects `text` begins with, one after another with white space or commas
    between (qwen writes parallel calls one per line), and the rest of the text after them
    ("" when they are the whole text; prose, or an object cut short, otherwise)."""
    decoder, pos = json.JSONDecoder(), 0
    parts: list[Any] = []
    while pos < len(text):
        if text[pos] != "{":
            return parts, text[pos:]
        try:
            obj, end = decoder.raw_decode(text, pos)
        except ValueError:
            return parts, text[pos:]
        parts.append(obj)
        pos = end
        while pos < len(text) and (text[pos].isspace() or text[pos] == ","):
            pos += 1
    return parts, ""


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
    calls = parse_calls(text, tools, cut=choices[0].get("finish_reason") == "length")
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
