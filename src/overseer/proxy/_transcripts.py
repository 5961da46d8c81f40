"""Where a chat request carries tool results, in the two shapes agents send them.

OpenAI's shape: an assistant message with `tool_calls`, then one `role: "tool"` message per
call, linked by `tool_call_id`. smolagents' shape (its OpenAI-compatible model flattens tool
roles): an assistant turn "Calling tools:\\n[{'id': ..., 'function': {'name': ..., 'arguments':
...}}]" (a Python literal), then a user turn "Observation:\\n<output>". The proxy judges both
the same way; a rewritten result keeps its shape (the prefix, the role).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ToolResult", "rewrite", "text_of", "tool_results"]

CALLING = "Calling tools:\n"
OBSERVED = "Observation:\n"


def text_of(content: Any) -> str:
    """A message's content as text (the text parts of a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    return "" if content is None else str(content)


@dataclass(frozen=True)
class ToolResult:
    """One tool result in a request: its message, the key it is judged under once, the call
    (tool name and argument text) and the output; `prefix` is kept when it is rewritten."""

    index: int
    key: str
    tool: str
    args: str
    output: str
    prefix: str = ""


def _args_text(args: Any) -> str:
    """A call's arguments as text: a string as it is, anything else as sorted JSON."""
    return args if isinstance(args, str) else json.dumps(args, sort_keys=True, default=str)


def _openai_calls(m: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """The (tool, arguments) of each call of one assistant message, by call id."""
    calls: dict[str, tuple[str, str]] = {}
    for c in m.get("tool_calls") or ():
        fn = c.get("function") if isinstance(c, Mapping) else None
        fn = fn if isinstance(fn, Mapping) else {}
        name, args = fn.get("name", ""), fn.get("arguments", "")
        calls[str(c.get("id"))] = (str(name), _args_text(args))
    return calls


def _text_calls(text: str) -> tuple[str, str, str] | None:
    """(id, tool, args) of a smolagents "Calling tools:" turn (its first call), else None."""
    try:
        calls = ast.literal_eval(text.removeprefix(CALLING))  # a literal, never code
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(calls, list) or not calls or not isinstance(calls[0], dict):
        return None
    got = [c.get("function") for c in calls if isinstance(c, dict)]
    fns: list[dict[str, Any]] = [f if isinstance(f, dict) else {} for f in got]
    names = [str(f.get("name", "")) for f in fns]
    args = [f.get("arguments", "") for f in fns]
    arg_text = json.dumps(args[0] if len(args) == 1 else args, sort_keys=True, default=str)
    return str(calls[0].get("id", "")), "+".join(names), arg_text


def tool_results(messages: Sequence[Any]) -> list[ToolResult]:
    """Every tool result the request carries, oldest first, in either shape. A result is
    matched to its call among the calls since the last assistant message before it that made
    any (call ids repeat across replies: some servers number them `call_0`, `call_1` in
    each); a result with no id is keyed by its place in the conversation."""
    calls: dict[str, tuple[str, str]] = {}
    out: list[ToolResult] = []
    pending: tuple[str, str, str] | None = None
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            continue
        role, text = m.get("role"), text_of(m.get("content"))
        if role == "assistant" and m.get("tool_calls"):
            calls = _openai_calls(m)
        if role == "tool":
            key = str(m.get("tool_call_id") or f"#{i}")
            name, args = calls.get(key, ("", ""))
            out.append(ToolResult(i, key, name, args, text))
        elif role == "assistant" and text.startswith(CALLING):
            pending = _text_calls(text)
        elif role == "user" and pending is not None and text.startswith(OBSERVED):
            key, name, args = pending
            out.append(ToolResult(i, key or f"#{i}", name, args, text[len(OBSERVED) :], OBSERVED))
            pending = None
    return out


def rewrite(messages: Sequence[Any], results: Sequence[ToolResult], texts: Sequence[str]) -> list:
    """The messages with each result's text replaced where `texts` differs from its output."""
    out = list(messages)
    for r, text in zip(results, texts, strict=True):
        if text != r.output:
            out[r.index] = dict(messages[r.index], content=r.prefix + text)
    return out
