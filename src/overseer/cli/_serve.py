"""`overseer serve MODEL --port N`: a local model over the OpenAI API for other clients."""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Annotated

import typer

from overseer.cli._app import app
from overseer.models.serve import serve_model


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
) -> None:
    """Serve a local model over the OpenAI chat-completions API (tool calls included) for
    LangGraph, the OpenAI Agents SDK, pydantic-ai or smolagents, until Ctrl-C or SIGTERM."""
    llm = serve_model(
        model,
        port=port,
        host=host,
        n_ctx=n_ctx,
        n_threads=threads,
        n_parallel=parallel,
        prompt_cache=prompt_cache,
    )
    try:
        print(f"overseer: serving {model} at {llm.base_url} (Ctrl-C stops)", flush=True)
        _wait_for_a_stop()
    finally:
        llm.close()


def _wait_for_a_stop() -> None:
    """Block until Ctrl-C or SIGTERM (both end the command with exit code 0)."""
    stop = threading.Event()

    def on_term(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
