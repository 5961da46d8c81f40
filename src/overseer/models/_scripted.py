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


Script = Sequence[Reply | Exception] | ReplyFn


class _Source:
    """Replies in order from a list, or from a function of the messages."""

    def __init__(self, script: Script, label: str) -> None:
        self.script = script
        self.label = label
        self.index = 0
        self.lock = threading.Lock()

    def next(self, messages: list[Message]) -> Reply:
        if callable(self.script):
            return self.script(messages)
        with self.lock:
            if self.index >= len(self.script):
                raise ModelError(f"{self.label}: ran out of replies after {self.index} calls")
            reply = self.script[self.index]
            self.index += 1
        if isinstance(reply, Exception):
            raise reply
        return reply


class ScriptedModel(Model):
    """Replies in order from `replies` (a list) or by calling `replies(messages)`.

    `by_actor` gives some actors their own script (a list or a function), chosen by the
    request's `actor` (a run's metered model names it: an agent's name, "supervisor",
    "decision", "verifier", ...); every other caller gets `replies`. A reply that is a dict
    is sent as JSON text. An Exception instance in a list is raised. Usage counts prompt and
    reply with `count_tokens`; `calls` records every request (with its actor). With
    `logprobs_fn`, each reply token gets logprobs from `logprobs_fn(token_index, token)`.
    """

    def __init__(
        self,
        replies: Script = (),
        *,
        by_actor: Mapping[str, Script] | None = None,
        name: str = "scripted",
        latency_s: float = 0.0,
        logprobs_fn: Callable[[int, str], TokenLogprob] | None = None,
    ) -> None:
        self.name = name
        self._default = _Source(replies, f"scripted model {name}")
        self._by_actor = {
            a: _Source(r, f"scripted model {name} (actor {a})") for a, r in (by_actor or {}).items()
        }
        self._lock = threading.Lock()
        self.latency_s = latency_s
        self.logprobs_fn = logprobs_fn
        self.calls: list[dict[str, Any]] = []

    def _next(self, messages: list[Message], actor: str = "") -> Reply:
        return self._by_actor.get(actor, self._default).next(messages)

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
                    "actor": request.actor,
                }
            )
        reply = self._next(msgs, request.actor)
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
