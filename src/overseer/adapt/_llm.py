"""What a failed structured ask of a MASFly planner cost and why (the planners then fall back)."""

from __future__ import annotations

from overseer.models import ModelError, StructuredOutputError, Usage


def failure(exc: ModelError) -> tuple[list[str], Usage]:
    """(errors, tokens) of a failed `ask_structured`: every rejected reply's error, or the
    model error (the tokens of replies before a model error are only in the ledger)."""
    if isinstance(exc, StructuredOutputError):
        return list(exc.errors), exc.usage
    return [f"model error: {exc}"], Usage()
