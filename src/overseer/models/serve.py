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
The HTTP stack is uvicorn + starlette (`_front`): `HttpServer` runs any ASGI app the same way
(a socket bound at once with a deep backlog, uvicorn in a thread of its own, malformed requests
answered with one JSON error), and `Fault`, `read_body`, `read_json_object` and `error_body`
are the front's request reading and OpenAI-shaped errors, for other HTTP faces (the proxy).
"""

from __future__ import annotations

from pathlib import Path

from overseer.models._http_server import (
    BACKLOG,
    MAX_BODY_BYTES,
    Fault,
    HttpServer,
    error_body,
    listening_socket,
    read_body,
    read_json_object,
    relayed,
    send_upstream,
    uvicorn_settings,
)
from overseer.models._llamacpp import LlamaCppModel
from overseer.models._registry import model_path
from overseer.models._toolcalls import parse_calls
from overseer.models.errors import ModelRequestError

__all__ = [
    "BACKLOG",
    "MAX_BODY_BYTES",
    "Fault",
    "HttpServer",
    "error_body",
    "in_flight",
    "listening_socket",
    "model_path",
    "parse_calls",
    "read_body",
    "read_json_object",
    "relayed",
    "send_upstream",
    "serve_model",
    "uvicorn_settings",
]


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
    max_body_bytes: int = MAX_BODY_BYTES,
) -> LlamaCppModel:
    """Load the named local model `spec` and serve it on `host`:`port` (0: a free port) as
    `spec`; its `base_url` is the OpenAI-compatible endpoint, `close()` drains and stops it
    (streams stop at their next token with an error event, other requests are answered).
    Request bodies over `max_body_bytes` get 413. A port outside 0-65535, a port in use, or a
    model not installed is a ModelError naming it."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ModelRequestError(f"port: expected an integer from 0 to 65535, got {port!r}")
    if max_body_bytes < 1:
        raise ModelRequestError(f"max_body_bytes: expected >= 1, got {max_body_bytes!r}")
    if spec.startswith("openai:"):
        raise ModelRequestError(
            f"model {spec}: expected a local model name (an openai: model is served already)"
        )
    llm = LlamaCppModel(
        model_path(spec, cache=cache),
        name=spec,
        n_ctx=n_ctx,
        n_threads=n_threads,
        n_parallel=n_parallel,
        port=port,
        listen_host=host,
        prompt_cache=prompt_cache,
    )
    llm._front.max_body_bytes = max_body_bytes
    return llm


def in_flight(llm: LlamaCppModel) -> int:
    """Requests of `llm`'s HTTP front inside (or queued for) llama.cpp now."""
    return llm._front.in_flight
