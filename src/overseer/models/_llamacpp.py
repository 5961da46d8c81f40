"""In-process llama.cpp backend through the prebuilt `xllamacpp` wheel."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from overseer.models import _openai_shape as shape
from overseer.models._types import (
    Completion,
    ContextWindowError,
    Model,
    ModelOutputError,
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
    The same server also listens on `listen_host` (loopback by default): `base_url` is an
    OpenAI-compatible endpoint for HTTP clients such as smolagents.

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
        import xllamacpp

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
        params.hostnames = [listen_host]
        params.port = port
        self.name = name or path.stem
        self.path = path
        self.n_ctx = n_ctx
        self.prompt_cache = prompt_cache
        self.n_threads = threads  # stored results carry it (bench provenance)
        self.temperature = shape.backend_temperature(temperature)
        self._server: Any = xllamacpp.Server(params)

    @property
    def base_url(self) -> str:
        """The loopback OpenAI-compatible endpoint of this in-process server (ends in /v1)."""
        return str(self._server.listening_address).rstrip("/") + "/v1"

    def _complete(self, request: Request) -> Completion:
        if self._server is None:
            raise ModelRequestError(f"model {self.name}: used after close()")
        body = shape.build_request(request, self.temperature)
        if not self.prompt_cache:
            body["cache_prompt"] = False  # llama.cpp's own request field
        start = time.perf_counter()
        try:
            data = self._server.handle_chat_completions(body)
        except ValueError as exc:
            msg = f"model {self.name}: llama.cpp rejected the request: {exc}"
            raise ModelRequestError(msg) from None
        latency = time.perf_counter() - start
        if not isinstance(data, dict):
            raise ModelOutputError(f"model {self.name}: llama.cpp returned {type(data).__name__}")
        if "error" in data:
            err = data["error"]
            msg = err.get("message", err) if isinstance(err, dict) else err
            if shape.is_context_overflow(err):
                raise ContextWindowError(
                    f"model {self.name}: prompt over the context window (n_ctx {self.n_ctx}): {msg}"
                )
            raise ModelRequestError(f"model {self.name}: llama.cpp error: {msg}")
        return shape.parse_response(data, latency_s=latency, model=self.name)

    def close(self) -> None:
        self._server = None
