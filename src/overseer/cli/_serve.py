"""`overseer serve MODEL --port N`: a local model over the OpenAI API for other clients."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Annotated

import typer

from overseer.cli._app import app

#: the default body cap, MiB (overseer.models.serve.MAX_BODY_BYTES; not imported for --help)
MAX_BODY_MB = 16.0


@app.command("serve")
def serve_cmd(
    model: Annotated[str, typer.Argument(help="A local model name (see `overseer models`).")],
    port: Annotated[int, typer.Option(help="Port to listen on (0: a free one).")] = 8080,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    n_ctx: Annotated[int, typer.Option(help="Context window per slot.")] = 8192,
    threads: Annotated[int | None, typer.Option(help="llama.cpp threads (all cores).")] = None,
    parallel: Annotated[int, typer.Option(help="Requests served at once (slots).")] = 1,
    prompt_cache: Annotated[
        bool, typer.Option(help="llama.cpp's prefix cache (off: equal prompts, equal replies).")
    ] = True,
    max_body_mb: Annotated[
        float, typer.Option(help="Largest request body in MiB (larger: 413).", min=0.001)
    ] = MAX_BODY_MB,
) -> None:
    """Serve a local model over the OpenAI chat-completions API (tool calls included) for
    LangGraph, the OpenAI Agents SDK, pydantic-ai or smolagents, on uvicorn + starlette, as
    MODEL (the only name /v1/models lists and requests may ask for). Ctrl-C or SIGTERM drains:
    new connections are refused, streams stop at their next token with an error event, the
    other requests in flight are answered, then exit code 0 (a second signal exits at once,
    code 1)."""
    from overseer.models.serve import in_flight, serve_model

    llm = serve_model(
        model,
        port=port,
        host=host,
        n_ctx=n_ctx,
        n_threads=threads,
        n_parallel=parallel,
        prompt_cache=prompt_cache,
        max_body_bytes=int(max_body_mb * 2**20),
    )
    try:
        print(f"overseer: serving {model} at {llm.base_url} (Ctrl-C stops)", flush=True)
        _wait_for_a_stop()
        _exit_at_once_on_a_second_stop(lambda: in_flight(llm))
        print(f"overseer: stopping; draining {in_flight(llm)} requests in flight", flush=True)
    finally:
        llm.close()  # returns once no call is inside llama.cpp


def _wait_for_a_stop() -> None:
    """Block until Ctrl-C or SIGTERM."""
    stop = threading.Event()

    def on_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
    while not stop.wait(0.5):
        pass


def _exit_at_once_on_a_second_stop(left: Callable[[], int]) -> None:
    """While draining, a second Ctrl-C or SIGTERM ends the process at once with exit code 1,
    without unwinding the threads still inside llama.cpp (nothing is torn down under them)."""

    def on_stop(signum: int, frame: FrameType | None) -> None:
        print(f"overseer: stopped at once; {left()} requests in flight dropped", file=sys.stderr)
        sys.stderr.flush()
        os._exit(1)

    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
