"""A recording pass-through HTTP proxy on 127.0.0.1, for e2e tests on a real model server.

It forwards every request to the server unchanged and keeps each chat-completions exchange
(request body, reply), so a test can read what reached the model at each step and the
usage the server itself reported (overseer's `UsageMeter`; a streamed reply is relayed too,
its `reply` holding only the usage and timings it carried, so `tool_calls` reads non-streamed
replies only: what the framework runs use).

    with RecordingProxy(model.base_url) as proxy:
        ChatOpenAI(base_url=proxy.base_url, ...)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from overseer.proxy import UsageMeter


@dataclass(frozen=True)
class Exchange:
    """One chat completion: what the framework sent and what the server answered."""

    request: dict[str, Any]
    reply: dict[str, Any]

    @property
    def prompt_tokens(self) -> int:
        return int((self.reply.get("usage") or {}).get("prompt_tokens") or 0)

    @property
    def cached_tokens(self) -> int:
        details = (self.reply.get("usage") or {}).get("prompt_tokens_details") or {}
        return int(details.get("cached_tokens") or 0)

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return list((self.reply["choices"][0].get("message") or {}).get("tool_calls") or [])

    def text(self) -> str:
        """Every message of the request as one text (content and tool-call arguments)."""
        out = []
        for m in self.request.get("messages", []):
            content = m.get("content")
            out.append(content if isinstance(content, str) else json.dumps(content))
            out.extend(json.dumps(c) for c in m.get("tool_calls") or [])
        return "\n".join(out)


class RecordingProxy(UsageMeter):
    """Forwards to `target` (an OpenAI base URL ending in /v1) and records the exchanges:
    overseer's `UsageMeter` (`prompt_tokens`, `cached_tokens`, `base_url`, `close`), each
    recorded completion also read as an `Exchange`."""

    @property
    def exchanges(self) -> list[Exchange]:
        """Each chat completion answered with 200, in the order the replies ended."""
        return [Exchange(c.request, c.reply) for c in self.completions]
