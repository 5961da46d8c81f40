"""An embedded model served over HTTP for other clients: one call, or `overseer serve`.

The framework adapters (LangGraph, the OpenAI Agents SDK, pydantic-ai, smolagents) talk to a
model over the OpenAI chat-completions API. `serve_model` loads a named local model with
llama.cpp in process and listens on a chosen host and port (tool calls come back as OpenAI
`tool_calls`, see `LlamaCppModel`); the same object is also an overseer `Model`.

    from overseer.models.serve import serve_model
    llm = serve_model("qwen2.5-coder-0.5b", port=8080)  # http://127.0.0.1:8080/v1
    ...
    llm.close()

`model_path` gives the verified GGUF file of a named model (for a server of your own).
"""

from __future__ import annotations

from pathlib import Path

from overseer.models._llamacpp import LlamaCppModel
from overseer.models._registry import model_path
from overseer.models.errors import ModelRequestError

__all__ = ["model_path", "serve_model"]


def serve_model(
    spec: str,
    *,
    port: int = 0,
    host: str = "127.0.0.1",
    n_ctx: int = 8192,
    n_threads: int | None = None,
    n_parallel: int = 1,
    cache: str | Path | None = None,
    prompt_cache: bool = True,
) -> LlamaCppModel:
    """Load the named local model `spec` and serve it on `host`:`port` (0: a free port); its
    `base_url` is the OpenAI-compatible endpoint, `close()` stops it. A port outside 0-65535,
    a port in use, or a model not installed is a ModelError naming it."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ModelRequestError(f"port: expected an integer from 0 to 65535, got {port!r}")
    if spec.startswith("openai:"):
        raise ModelRequestError(
            f"model {spec}: expected a local model name (an openai: model is served already)"
        )
    return LlamaCppModel(
        model_path(spec, cache=cache),
        name=spec,
        n_ctx=n_ctx,
        n_threads=n_threads,
        n_parallel=n_parallel,
        port=port,
        listen_host=host,
        prompt_cache=prompt_cache,
    )
