"""Chat completions between their two shapes, and the model file's path kept off the wire.

The front asks llama.cpp for every reply as a stream, so that a call can stop between two
tokens when its client leaves; `Assembled` builds the one-piece reply a non-streamed client
asked for from those chunks (text, tool calls merged by index, logprobs, usage, timings), and
`sse_chunks` turns a one-piece reply back into the chunks of a stream. `Redacted` replaces the
GGUF file's path in what llama.cpp's own endpoints say (`/props`, `/slots`, a completion's
`model`) by the name the model is served as.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any


def sse_chunks(reply: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """A complete chat completion as the chunks of a stream: the message, the finish reason,
    and (when asked) the usage."""
    (choice,) = reply["choices"]
    message = choice.get("message") or {}
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        delta["tool_calls"] = [dict(c, index=i) for i, c in enumerate(message["tool_calls"])]
    head: dict[str, Any] = {k: reply[k] for k in ("id", "created", "model") if k in reply}
    head["object"] = "chat.completion.chunk"
    out = [
        dict(head, choices=[{"index": 0, "delta": delta, "finish_reason": None}]),
        dict(head, choices=[{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]),
    ]
    if include_usage and reply.get("usage"):
        out.append(dict(head, choices=[], usage=reply["usage"]))
    return out


class Assembled:
    """The chunks of one streamed chat completion, gathered into the non-streamed reply."""

    _HEAD = ("id", "created", "model", "system_fingerprint", "usage", "timings")

    def __init__(self) -> None:
        self.head: dict[str, Any] = {}
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.logprobs: list[Any] | None = None
        self.finish: str | None = None

    def add(self, chunk: dict[str, Any]) -> None:
        """One chunk (llama.cpp's `chat.completion.chunk`)."""
        self.head.update({k: chunk[k] for k in self._HEAD if chunk.get(k) is not None})
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                self.text.append(delta["content"])
            if isinstance(delta.get("reasoning_content"), str):
                self.reasoning.append(delta["reasoning_content"])
            for call in delta.get("tool_calls") or ():
                self._call(call)
            content = (choice.get("logprobs") or {}).get("content")
            if content is not None:
                self.logprobs = (self.logprobs or []) + list(content)
            self.finish = choice.get("finish_reason") or self.finish

    def _call(self, part: dict[str, Any]) -> None:
        call = self.calls.setdefault(
            int(part.get("index", len(self.calls))),
            {"type": "function", "function": {"name": "", "arguments": ""}},
        )
        if part.get("id"):
            call["id"] = part["id"]
        fn = part.get("function") or {}
        call["function"]["name"] += fn.get("name") or ""
        call["function"]["arguments"] += fn.get("arguments") or ""

    def reply(self) -> dict[str, Any]:
        """The chat completion as llama.cpp answers a non-streamed request."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.text)}
        if self.calls:
            message["tool_calls"] = [self.calls[i] for i in sorted(self.calls)]
            message["content"] = message["content"] or None
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        choice: dict[str, Any] = {
            "finish_reason": self.finish or "stop",
            "index": 0,
            "message": message,
        }
        if self.logprobs is not None:
            choice["logprobs"] = {"content": self.logprobs}
        return {"choices": [choice], "object": "chat.completion", **self.head}


class Redacted:
    """Bytes with every occurrence of `secret` replaced by `shown`, also across the chunks
    of a stream (a tail that could begin a match is held back until the next chunk)."""

    def __init__(self, secret: str, shown: str) -> None:
        self.secret, self.shown = secret.encode(), shown.encode()

    def whole(self, data: bytes) -> bytes:
        return data.replace(self.secret, self.shown) if self.secret else data

    async def stream(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        keep = max(len(self.secret) - 1, 0)
        held = b""
        async for chunk in chunks:
            data = self.whole(held + chunk)
            cut = len(data) - keep if keep else len(data)
            held = data[cut:] if cut > 0 else data
            if cut > 0:
                yield data[:cut]
        if held:
            yield self.whole(held)
