"""Coroutines that never suspend (AgentDojo's and the travel suite's tools and checks are
`async` but await nothing), run to their value without an event loop."""

from __future__ import annotations

from typing import Any


def drive(coro: Any, what: str) -> Any:
    """The value of `coro`, run by one `send`; `what` names it in the error when it awaits
    something after all (a RuntimeError: it would need a loop)."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError(f"{what} awaited something; expected none")
