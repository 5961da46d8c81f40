"""A scripted model for unit tests of logic: replies from a list or a function, plausible usage."""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from overseer.models._types import Completion, Model, ModelError, Request, TokenLogprob, Usage

if TYPE_CHECKING:
    from overseer.models._types import Message

Reply = str | Mapping[str, Any]
ReplyFn = Callable[[list["Message"]], Reply]


def count_tokens(text: str) -> int:
    """A deterministic stand-in tokenizer: about one token per 4 characters, at least 1 per word."""
    return max(len(text.split()), math.ceil(len(text) / 4)) if text else 0


class ScriptedModel(Model):
    """Replies in order from `replies` (a list) or by calling `replies(messages)`.

    A reply that is a dict is sent as JSON text. An Exception instance in the list is raised.
    Usage counts prompt and reply with `count_tokens`; `calls` records every request.
    With `logprobs_fn`, each reply token gets logprobs from `logprobs_fn(token_index, token)`.
    """

    def __init__(
        self,
        replies: Sequence[Reply | Exception] | ReplyFn,
        *,
        name: str = "scripted",
        latency_s: float = 0.0,
        logprobs_fn: Callable[[int, str], TokenLogprob] | None = None,
    ) -> None:
        self.name = name
        self._replies = replies
        self._index = 0
        self._lock = threading.Lock()
        self.latency_s = latency_s
        self.logprobs_fn = logprobs_fn
        self.calls: list[dict[str, Any]] = []

    def _next(self, messages: list[Message]) -> Reply:
        if callable(self._replies):
            return self._replies(messages)
        with self._lock:
            if self._index >= len(self._replies):
                raise ModelError(
                    f"scripted model {self.name}: ran out of replies after {self._index} calls"
                )
            reply = self._replies[self._index]
            self._index += 1
        if isinstance(reply, Exception):
            raise reply
        return reply

    def _logprobs(self, text: str, k: int) -> tuple[TokenLogprob, ...]:
        tokens = text.split() or [text]
        if self.logprobs_fn is not None:
            return tuple(self.logprobs_fn(i, t) for i, t in enumerate(tokens))
        # Confident by default: the chosen token holds ~90% of the mass.
        rest = math.log(0.1 / max(k - 1, 1))
        alts = tuple((f"<alt{j}>", rest) for j in range(1, k))
        return tuple(TokenLogprob(t, math.log(0.9), ((t, math.log(0.9)), *alts)) for t in tokens)

    def _respond(self, request: Request) -> Completion:
        msgs = list(request.messages)
        with self._lock:
            self.calls.append(
                {
                    "messages": msgs,
                    "max_tokens": request.max_tokens,
                    "temperature": request.temperature,
                    "stop": request.stop,
                    "schema": request.schema,
                    "top_logprobs": request.top_logprobs,
                    "seed": request.seed,
                }
            )
        reply = self._next(msgs)
        text = reply if isinstance(reply, str) else json.dumps(reply)
        prompt = sum(count_tokens(m["content"]) + 4 for m in msgs)
        k = request.top_logprobs
        return Completion(
            text=text,
            usage=Usage(prompt_tokens=prompt, completion_tokens=count_tokens(text)),
            latency_s=self.latency_s,
            model=self.name,
            finish_reason="stop",
            logprobs=self._logprobs(text, k) if k else None,
        )

    def _complete(self, request: Request) -> Completion:
        if self.latency_s:
            time.sleep(self.latency_s)
        return self._respond(request)

    async def _acomplete(self, request: Request) -> Completion:
        """Like `_complete`, but waits its fixed latency without holding a thread."""
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        return self._respond(request)
