"""What the proxy reads of a chat-completions request, checked before it reads it (issue 51).

The proxy relays to any OpenAI-compatible upstream, so it checks only the parts it reads itself
(the upstream judges the rest): `messages` a non-empty list of objects with a known role, each
`content` a string, null or a list of objects, `tool_calls` a list of objects (each `function`
an object), `name` a string; and the fields that name a run or agent (`user`,
`metadata.overseer_run`, `metadata.overseer_agent`) printable ASCII, since they come back in
reply headers. A request that does not fit is one JSON 400 naming the field, and the
connection stays usable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from overseer.models import serve as front

ROLES = ("system", "developer", "user", "assistant", "tool", "function")
#: the longest run or agent name a request may carry
MAX_NAME = 256


def _message_error(i: int, m: Any) -> str | None:
    where = f"messages[{i}]"
    if not isinstance(m, Mapping):
        return f"{where}: expected a message object, got {m!r:.60}"
    if m.get("role") not in ROLES:
        return f"{where}: expected a role in {', '.join(ROLES)}, got role {m.get('role')!r:.40}"
    content = m.get("content")
    if not (content is None or isinstance(content, str | list)):
        return f"{where}.content: expected a string, null or a list of parts, got {content!r:.40}"
    for j, part in enumerate(content if isinstance(content, list) else ()):
        if not isinstance(part, Mapping):
            return f"{where}.content[{j}]: expected a content part object, got {part!r:.40}"
        if "text" in part and not isinstance(part["text"], str):
            return f"{where}.content[{j}].text: expected a string, got {part['text']!r:.40}"
    calls = m.get("tool_calls")
    if calls is not None and not (
        isinstance(calls, list) and all(isinstance(c, Mapping) for c in calls)
    ):
        return f"{where}.tool_calls: expected a list of tool call objects, got {calls!r:.60}"
    for j, call in enumerate(calls or ()):
        fn = call.get("function")
        if fn is not None and not isinstance(fn, Mapping):
            return f"{where}.tool_calls[{j}].function: expected an object, got {fn!r:.40}"
    if "name" in m and not isinstance(m["name"], str | None):
        return f"{where}.name: expected a string, got {m['name']!r:.40}"
    return None


def _name_error(where: str, value: Any) -> str | None:
    if value is None:
        return None
    ok = isinstance(value, str) and len(value) <= MAX_NAME and value.isprintable()
    if ok and value.isascii():
        return None
    return (
        f"{where}: expected printable ASCII of at most {MAX_NAME} characters (it names the "
        f"run or agent in reply headers), got {value!r:.60}"
    )


def request_error(body: Mapping[str, Any]) -> str | None:
    """One line naming what the proxy cannot read in `body`, or None."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return f"messages: expected a non-empty list of messages, got {messages!r:.80}"
    for i, m in enumerate(messages):
        bad = _message_error(i, m)
        if bad is not None:
            return bad
    meta = body.get("metadata")
    if meta is not None and not isinstance(meta, Mapping):
        return f"metadata: expected an object, got {meta!r:.60}"
    names = [("user", body.get("user"))]
    if isinstance(meta, Mapping):
        names += [(f"metadata.{k}", meta.get(k)) for k in ("overseer_run", "overseer_agent")]
    for where, value in names:
        bad = _name_error(where, value)
        if bad is not None:
            return bad
    return None


def check_request(body: Mapping[str, Any]) -> None:
    """Raise a 400 Fault naming what the proxy cannot read in `body`."""
    bad = request_error(body)
    if bad is not None:
        raise front.Fault(400, bad)
