"""A scripted OpenAI-compatible upstream on 127.0.0.1 (starlette on uvicorn), recording what it
was sent: the proxy's tests and benchmarks/proxy_overhead.py relay to it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from overseer.models.serve import HttpServer

USAGE = {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}


def completion(
    text: str = "ok", model: str = "mock", message: dict[str, Any] | None = None
) -> dict[str, Any]:
    message = message or {"role": "assistant", "content": text}
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": "chatcmpl-mock",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": USAGE,
    }


def chunks(text: str = "ok", model: str = "mock") -> list[bytes]:
    head = {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1, "model": model}
    out = [
        dict(head, choices=[{"index": 0, "delta": {"role": "assistant", "content": w}}])
        for w in text.split(" ")
    ]
    out.append(dict(head, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]))
    out.append(dict(head, choices=[], usage=USAGE))
    return [b"data: " + json.dumps(c).encode() + b"\n\n" for c in out] + [b"data: [DONE]\n\n"]


class MockUpstream:
    """`base_url` ends in /v1; `requests` holds (headers, body) of each chat request."""

    def __init__(
        self,
        *,
        record: bool = True,
        reply: Callable[[dict[str, Any]], str] | None = None,
        message: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.record = record
        self.reply = reply  # the reply's text from the request body (else "ok")
        self.message = message  # the reply's whole message (tool calls) from the request body
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )
        self._http = HttpServer(app, "127.0.0.1", 0)

    @property
    def base_url(self) -> str:
        return self._http.url + "/v1"

    def close(self) -> None:
        self._http.stop()

    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "mock", "object": "model"}]})

    async def _chat(self, request: Request) -> Response:
        body = json.loads(await request.body())
        if self.record:
            self.requests.append((dict(request.headers), body))
        if body.get("stream"):
            parts = chunks()

            async def gen() -> Any:
                for p in parts:
                    yield p

            return StreamingResponse(gen(), media_type="text/event-stream")
        if self.message is not None:
            reply = completion(message=self.message(body))
        else:
            reply = completion(self.reply(body) if self.reply else "ok")
        if body.get("logprobs"):  # one token per word, fixed logprobs, top_logprobs alternatives
            k = int(body.get("top_logprobs") or 0)
            words = str(reply["choices"][0]["message"].get("content") or "").split()
            reply["choices"][0]["logprobs"] = {"content": [
                {"token": w, "logprob": -0.25, "top_logprobs": [{"token": w, "logprob": -0.25}]
                 + [{"token": f"alt{j}", "logprob": -2.0 - j} for j in range(1, k)]}
                for w in words
            ]}  # fmt: skip
        return JSONResponse(reply)
