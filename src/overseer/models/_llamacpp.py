"""In-process llama.cpp backend through the prebuilt `xllamacpp` wheel."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from overseer.errors import require
from overseer.models import _openai_shape as shape
from overseer.models._front import ChatFront
from overseer.models._types import (
    Completion,
    ContextWindowError,
    Model,
    ModelCancelledError,
    ModelRequestError,
    Request,
)


def default_threads() -> int:
    """llama.cpp threads: every core we may use (contention beyond that costs 20x)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


class LlamaCppModel(Model):
    """A GGUF model loaded once and served in process by llama.cpp's own server loop.

    llama.cpp queues concurrent requests across `n_parallel` slots, so one instance is safe
    to share between threads and asyncio tasks. Each slot keeps its prompt's KV cache, so a
    prompt that starts like an earlier one is served partly from cache (`cached_prompt_tokens`).
    The model is also served over HTTP on `listen_host`:`port` (loopback and a free port by
    default): `base_url` is an OpenAI-compatible endpoint for HTTP clients (smolagents,
    LangChain, the OpenAI Agents SDK, pydantic-ai). A request with `tools` gets OpenAI
    `tool_calls` even when the model writes its call as bare JSON (see `_toolcalls`), and a
    forced `tool_choice` constrains the output to a call.

    `prompt_cache=False` re-evaluates every prompt in full: slower, but the same prompt then
    always gives the same greedy output (a cached prefix was computed in other batches, and
    the rounding differences can flip a token), which A/B comparisons of configs need.
    A prompt longer than `n_ctx` raises ContextWindowError; `temperature`, when set,
    replaces every request's own.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        name: str | None = None,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        n_parallel: int = 1,
        port: int = 0,
        listen_host: str = "127.0.0.1",
        verbose: bool = False,
        prompt_cache: bool = True,
        temperature: float | None = None,
    ) -> None:
        xllamacpp = require("xllamacpp", "local", "a local model (llama.cpp in process)")
        path = Path(path)
        if not path.is_file():
            raise ModelRequestError(f"model file {path}: expected an existing GGUF file")
        if n_ctx < 256:
            raise ModelRequestError(f"n_ctx: expected >= 256, got {n_ctx}")
        if n_parallel < 1:
            raise ModelRequestError(f"n_parallel: expected >= 1, got {n_parallel}")
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        # llama.cpp splits n_ctx across slots; give every slot the full window.
        params.n_ctx = n_ctx * n_parallel
        params.n_parallel = n_parallel
        threads = n_threads or default_threads()
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.verbosity = 3 if verbose else -1
        params.warmup = False
        params.hostnames = ["127.0.0.1"]  # llama.cpp's own listener: behind the front only
        params.port = 0
        self.name = name or path.stem
        self.path = path
        self.n_ctx = n_ctx
        self.prompt_cache = prompt_cache
        self.n_threads = threads  # stored results carry it (bench provenance)
        self.temperature = shape.backend_temperature(temperature)
        self._live: set[threading.Event] = set()  # stop flags of the calls in progress
        self._server: Any = xllamacpp.Server(params)
        self._native = str(self._server.listening_address).rstrip("/")
        self._front = self._serve(listen_host, port)

    def _serve(self, host: str, port: int) -> ChatFront:
        """The OpenAI-compatible HTTP front on host:port (see `_front`)."""
        try:
            return ChatFront(
                self._server.handle_chat_completions,
                self._native,
                host,
                port,
                name=self.name,
                model_file=str(self.path),
            )
        except OSError as exc:
            self._server = None
            msg = f"listen on {host}:{port}: cannot serve the model there ({exc})"
            raise ModelRequestError(msg) from None

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible HTTP endpoint serving this model (ends in /v1)."""
        return self._front.url + "/v1"

    def count_tokens(self, text: str) -> int:
        """Tokens of `text` by this model's own tokenizer (the in-process server's /tokenize);
        used when a reply comes back without usage."""
        url = self._native + "/tokenize"
        data = json.dumps({"content": text}).encode()
        req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:  # loopback, our own server
            return len(json.loads(resp.read())["tokens"])

    def _complete(self, request: Request) -> Completion:
        return self._generate(request, threading.Event())

    async def _acomplete(self, request: Request) -> Completion:
        """In a worker thread; cancelling the caller (Ctrl-C, a deadline) stops generation at
        the next token, so the thread ends promptly instead of finishing the reply."""
        stop = threading.Event()
        try:
            return await asyncio.to_thread(self._generate, request, stop)
        except asyncio.CancelledError:
            stop.set()
            raise

    def _generate(self, request: Request, stop: threading.Event) -> Completion:
        """One streamed completion, stopped between two tokens once `stop` is set (or the
        model is closed); a KeyboardInterrupt raised in the callback stops it too."""
        if self._server is None:
            raise ModelRequestError(f"model {self.name}: used after close()")
        body = shape.build_request(request, self.temperature)
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        if not self.prompt_cache:
            body["cache_prompt"] = False  # llama.cpp's own request field
        collect = _Stream(stop, request.top_logprobs > 0)
        self._live.add(stop)
        start = time.perf_counter()
        try:
            self._server.handle_chat_completions(body, collect)
        except ValueError as exc:
            msg = f"model {self.name}: llama.cpp rejected the request: {exc}"
            raise ModelRequestError(msg) from None
        finally:
            self._live.discard(stop)
        latency = time.perf_counter() - start
        if collect.interrupt is not None:
            raise collect.interrupt
        if collect.error is not None:
            self._raise(collect.error)
        if collect.stopped:
            raise ModelCancelledError(f"model {self.name}: the call was cancelled")
        data = collect.response()
        return shape.parse_response(
            data, latency_s=latency, model=self.name, count=self.count_tokens, request=request
        )

    def _raise(self, err: Any) -> None:
        msg = err.get("message", err) if isinstance(err, dict) else err
        if shape.is_context_overflow(err):
            raise ContextWindowError(
                f"model {self.name}: prompt over the context window (n_ctx {self.n_ctx}): {msg}"
            )
        raise ModelRequestError(f"model {self.name}: llama.cpp error: {msg}")

    def close(self) -> None:
        """Stop every call in progress (at its next token), then drop the model."""
        for stop in list(self._live):
            stop.set()
        if self._server is not None:
            self._front.close()
        self._server = None


class _Stream:
    """Collects the chunks of one streamed chat completion into the non-streamed shape; its
    answer to each chunk tells llama.cpp whether to stop (True) before the next token."""

    def __init__(self, stop: threading.Event, logprobs: bool) -> None:
        self.stop, self.want_logprobs = stop, logprobs
        self.text: list[str] = []
        self.logprobs: list[Any] = []
        self.finish, self.usage = "", None
        self.error: Any = None
        self.stopped = False
        self.interrupt: BaseException | None = None

    def __call__(self, chunk: Any) -> bool:
        try:
            return self._take(chunk)
        except BaseException as exc:  # e.g. Ctrl-C delivered while this runs in the main thread
            self.interrupt = exc
            return True

    def _take(self, chunk: Any) -> bool:
        if not isinstance(chunk, dict) or "error" in chunk:
            self.error = chunk.get("error", chunk) if isinstance(chunk, dict) else chunk
            return True
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            if delta.get("content"):
                self.text.append(delta["content"])
            self.logprobs.extend((choice.get("logprobs") or {}).get("content") or ())
            self.finish = choice.get("finish_reason") or self.finish
        self.usage = chunk.get("usage") or self.usage
        if self.stop.is_set() and not self.finish:
            self.stopped = True
            return True
        return False

    def response(self) -> dict[str, Any]:
        """The collected reply as a non-streamed chat completion."""
        message = {"role": "assistant", "content": "".join(self.text)}
        choice: dict[str, Any] = {"index": 0, "finish_reason": self.finish, "message": message}
        if self.want_logprobs:
            choice["logprobs"] = {"content": self.logprobs}
        return {"choices": [choice], "usage": self.usage}
