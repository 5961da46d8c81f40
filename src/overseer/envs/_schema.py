"""The JSON Schema of a game move, shared by the three games: a closed object whose every
property is required, so constrained decoding can emit that object and nothing else."""

from __future__ import annotations

from typing import Any


def closed_object(props: dict[str, Any]) -> dict[str, Any]:
    """A JSON object schema with exactly the properties `props`, all of them required."""
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }
