"""The closed answer format a task declares, as a JSON Schema for constrained decoding.

A multiple-choice task is answered with one of its option letters, a numeric task with one
number; both after a short piece of reasoning in the same JSON object, so the model may think
first and the answer is still always readable (llama.cpp turns the schema into a grammar, an
OpenAI-compatible server into `response_format`). Code and free text have no closed format.
"""

from __future__ import annotations

from typing import Any

from overseer.tasks._types import Task

#: characters of reasoning allowed before the answer, per kind (keeps the reply inside its
#: token budget, so the JSON always closes)
REASONING_CHARS = {"mc": 600, "numeric": 900}


def answer_schema(task: Task) -> dict[str, Any] | None:
    """The JSON Schema of a closed answer to `task`: {"reasoning": str, "answer": ...}, the
    answer an option letter (mc) or a number (numeric); None for code and free text."""
    if task.kind == "mc":
        n = len(task.choices) or 4
        answer: dict[str, Any] = {"type": "string", "enum": list("ABCDEFGHIJ"[:n])}
    elif task.kind == "numeric":
        answer = {"type": "number"}
    else:
        return None
    return {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string", "maxLength": REASONING_CHARS[task.kind]},
            "answer": answer,
        },
        "required": ["reasoning", "answer"],
        "additionalProperties": False,
    }


def closed_instructions(task: Task) -> str:
    """How to fill the closed answer of `task` (said in the prompt: the grammar alone does not
    tell the model what the fields mean)."""
    what = "the letter of your choice" if task.kind == "mc" else "the final number alone"
    return (
        'Reply with one JSON object: {"reasoning": "<a few short sentences>", "answer": '
        f"<{what}>}}. Keep the reasoning brief."
    )
