"""The supervisor's LLM decision: JSON under a schema, repaired or re-asked, never trusted blindly.

Only the actions the context permits are accepted. A reply naming another action is repaired
when it carries a usable parameter for a permitted one; otherwise the model is re-asked a
bounded number of times, and then the step is approved with the reason recorded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from overseer.models import (
    Message,
    Model,
    ModelError,
    StructuredOutputError,
    Usage,
    ask_structured,
)
from overseer.models.text import REPLY_CUT
from overseer.supervise._prompts import PARAM, Action, decision_schema, system_prompt
from overseer.supervise.filters import Context


@dataclass(frozen=True)
class Decision:
    """What the supervisor chose; `fallback` says why it fell back to approve, if it did."""

    context: Context
    action: Action
    analysis: str = ""
    parameter: str = ""
    attempts: int = 1
    repaired: str = ""
    fallback: str = ""
    usage: Usage = field(default_factory=Usage)


def check_reply(text: str, allowed: tuple[Action, ...]) -> tuple[Action, str, str, str]:
    """(action, analysis, parameter, repair note) from a reply; ValueError says what is wrong."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at char {exc.pos})") from None
    return _check_data(data, allowed)


def _check_data(data: Any, allowed: tuple[Action, ...]) -> tuple[Action, str, str, str]:
    """`check_reply` on the reply's decoded JSON."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    analysis = str(data.get("analysis", ""))
    params = data.get("parameters") or {}
    if not isinstance(params, Mapping):
        raise ValueError('"parameters" must be an object')
    action = data.get("action")
    repaired = ""
    if action not in allowed:
        usable = [a for a in allowed if (p := PARAM[a]) and str(params.get(p, "")).strip()]
        if len(usable) != 1:
            raise ValueError(f'"action" must be one of {list(allowed)}, got {action!r}')
        repaired = f"action {action!r} is not permitted here; used {usable[0]!r}"
        action = usable[0]
    p = PARAM[action]
    value = str(params.get(p, "")).strip() if p else ""
    if p and not value:
        raise ValueError(f'action "{action}" needs a non-empty parameters.{p}')
    return action, analysis, value, repaired


async def decide(
    model: Model,
    context: Context,
    allowed: tuple[Action, ...],
    window_text: str,
    *,
    max_reasks: int = 2,
    max_tokens: int = 768,
    max_tokens_cap: int | None = None,
    seed: int | None = 0,
) -> Decision:
    """Ask `model` for a decision on a rendered context window; approve (with the reason in
    `fallback`) when the model fails or no reply is valid. A reply cut off by its token limit
    is asked afresh with twice the limit, up to `max_tokens_cap` (see `_next_question`).
    """
    if not allowed:
        raise ValueError(f"{context}: no permitted action")
    cap = max(max_tokens, max_tokens_cap or max_tokens)
    first = _question(context, allowed, window_text)
    convo, limit, usage = first, max_tokens, Usage()
    for attempt in range(1, max_reasks + 2):
        try:
            got = await ask_structured(
                model,
                convo,
                schema=decision_schema(allowed),
                parse=lambda data: _check_data(data, allowed),
                max_reasks=0,
                max_tokens=limit,
                seed=seed,
            )
        except StructuredOutputError as exc:
            usage += exc.usage
            error = exc.errors[-1]
            nxt = _next_question(exc, allowed, first, convo, limit, cap)
            if isinstance(nxt, str):
                return Decision(context, "approve", attempts=attempt, fallback=nxt, usage=usage)
            convo, limit = nxt
            continue
        except ModelError as exc:
            # The failed call counts as an attempt; tokens of earlier replies are in the ledger.
            why = f"model error: {exc}"
            return Decision(context, "approve", attempts=attempt, fallback=why, usage=usage)
        action, analysis, value, repaired = got.value
        usage += got.usage
        return Decision(context, action, analysis, value, attempt, repaired, usage=usage)
    why = f"no valid decision after {max_reasks + 1} replies: {error}"
    return Decision(context, "approve", attempts=max_reasks + 1, fallback=why, usage=usage)


def _question(context: Context, allowed: tuple[Action, ...], window_text: str) -> list[Message]:
    """The supervisor's question: its instructions, then the rendered context window."""
    return [
        {"role": "system", "content": system_prompt(context, allowed)},
        {"role": "user", "content": f"{window_text}\n\nYour decision, as JSON:"},
    ]


def _next_question(
    exc: StructuredOutputError,
    allowed: tuple[Action, ...],
    first: list[Message],
    convo: list[Message],
    limit: int,
    cap: int,
) -> tuple[list[Message], int] | str:
    """After a rejected reply: the next conversation and token limit, or why to stop. A reply
    cut off by its limit is never re-asked with the same limit: the question is asked afresh
    with twice the limit (up to `cap`), and once the cap itself cut a reply the decision falls
    back. Any other invalid reply is shown back with what is wrong."""
    if exc.completion.finish_reason == "length":
        if limit >= cap:
            return f"reply cut off at the {limit}-token cap; not asked again"
        return first, min(cap, 2 * limit)
    shown: list[Message] = [
        {"role": "assistant", "content": exc.completion.text[:REPLY_CUT]},
        {"role": "user", "content": _reask(exc.errors[-1], allowed)},
    ]
    return convo + shown, limit


def _reask(error: str, allowed: tuple[Action, ...]) -> str:
    return (
        f"That reply is invalid: {error}. Reply again with one JSON object whose action "
        f"is one of {list(allowed)}."
    )


def reply_template(action: Action, analysis: str, parameter: str = "") -> dict[str, Any]:
    """A well-formed decision (for scripted models in tests and examples)."""
    p = PARAM[action]
    return {"analysis": analysis, "action": action, "parameters": {p: parameter} if p else {}}
