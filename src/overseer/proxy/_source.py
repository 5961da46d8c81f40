"""Refusal at the source (issue 50, item 5): a tool call the loop breaker refuses is taken out
of the model's reply before the client sees it, so the client never runs it.

Without it the proxy can only refuse a repeated call AS ITS TOOL RESULT on the next request,
after the client has run the tool (a tool with side effects has had them). With
`ProxySettings.refuse_at_source` on, each tool call of a non-streamed reply is put to the loop
breaker when the reply arrives: the calls it lets run go to the client (and are not counted a
second time when their results come back); when it refuses some and lets none run, the model
is asked again with its reply and the refusal notes as those calls' results, at most twice,
the second time with its tools closed (`tool_choice: "none"`); refused calls are never passed
on. Streamed replies are relayed as they come (their repeats are refused as tool results).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from overseer.proxy._relay import Call

#: how often one request may ask the model again for refused calls
ASKS = 2

#: sends a request upstream, books its reply, returns it and its status
Ask = Callable[[dict[str, Any]], Awaitable[tuple[bytes, int]]]


def _calls(reply: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool calls of a reply's first choice."""
    choices = reply.get("choices") or [{}]
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    return [c for c in calls or () if isinstance(c, dict)]


def _named(call: dict[str, Any]) -> tuple[str, str]:
    got = call.get("function")
    fn: dict[str, Any] = got if isinstance(got, dict) else {}
    args = fn.get("arguments", "")
    return str(fn.get("name", "")), args if isinstance(args, str) else json.dumps(args)


def _without(reply: dict[str, Any], refused: list[dict[str, Any]]) -> bytes:
    """The reply with the refused calls taken out (no call left: an answer, `stop`)."""
    choice = dict(reply["choices"][0])
    message = dict(choice["message"])
    kept = [c for c in _calls(reply) if c not in refused]
    message["tool_calls"] = kept or None
    if not kept:
        message.pop("tool_calls")
        choice["finish_reason"] = "stop"
    choice["message"] = message
    out = dict(reply, choices=[choice, *reply["choices"][1:]])
    return json.dumps(out, ensure_ascii=False, separators=(",", ":")).encode()


def _again(body: dict[str, Any], reply: dict[str, Any], refused: list[Any], last: bool) -> Any:
    """The request once more: the reply's refused calls, each answered by its refusal note."""
    said = dict(reply["choices"][0]["message"], tool_calls=[c for c, _ in refused])
    notes = [{"role": "tool", "tool_call_id": c.get("id"), "content": n} for c, n in refused]
    again = dict(body, messages=[*body["messages"], said, *notes])
    if last:
        again["tool_choice"] = "none"
    return again


async def refuse_at_source(
    data: bytes, body: dict[str, Any], call: Call, ask: Ask
) -> tuple[bytes, int]:
    """A booked 200 reply as the client may see it (see the module docstring)."""
    for n in range(ASKS + 1):
        try:
            reply = json.loads(data)
        except ValueError:
            return data, 200
        calls = _calls(reply) if isinstance(reply, dict) else []
        if not calls:
            return data, 200
        notes = await call.run.source(call.agent, [_named(c) for c in calls])
        refused = [(c, note) for c, note in zip(calls, notes, strict=True) if note is not None]
        if not refused:
            return data, 200
        if len(refused) < len(calls) or n == ASKS:
            return _without(reply, [c for c, _ in refused]), 200
        body = _again(body, reply, refused, last=n == ASKS - 1)
        data, status = await ask(body)
        if status != 200:
            return data, status
    return data, 200
