"""Where a decision sits in a generation: the tokens of chosen JSON values.

The monitor reads uncertainty at these positions only (the seed's "decision tokens"): in a
game move, the numbers after keys such as "action" and "character"; in a team agent's step,
the whole text of the "answer" value. `logprobs_of` reads a chat-completion choice's token
logprobs, for hosts that relay a server's replies (the framework guard, the proxy).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from overseer.models._openai_shape import logprobs_of
from overseer.models._types import TokenLogprob

__all__ = ["decision_positions", "logprobs_of", "value_spans"]

_VALUE = re.compile(r"-?\d+(?:\.\d+)?")


def value_spans(text: str, keys: Sequence[str], *, numbers: bool = True) -> list[tuple[int, int]]:
    """Character spans of the values of `keys` in a JSON text (keys at any depth).

    With `numbers` (the games' decisions), every number in a value is a span: a number
    (`"character": 3`), a string holding one (`"fish": "12"`) or a list (`[1, 4]`); a value
    without a number gives no span. Otherwise the whole value is one span (an answer text).
    """
    spans: list[tuple[int, int]] = []
    for key in keys:
        for m in re.finditer(r'"' + re.escape(key) + r'"\s*:\s*', text):
            start = m.end()
            end = _value_end(text, start)
            if not numbers:
                spans.append((start, end))
                continue
            for n in _VALUE.finditer(text, start, end):
                spans.append((n.start(), n.end()))
    return sorted(set(spans))


def _value_end(text: str, start: int) -> int:
    """Where the JSON value starting at `start` ends (scanning brackets and strings)."""
    if start >= len(text):
        return start
    if text[start] == '"':
        i = start + 1
        while i < len(text) and text[i] != '"':
            i += 2 if text[i] == "\\" else 1
        return min(i + 1, len(text))
    if text[start] in "[{":
        depth, i, in_str = 0, start, False
        while i < len(text):
            c = text[i]
            if in_str:
                if c == "\\":
                    i += 1
                elif c == '"':
                    in_str = False
            elif c == '"':
                in_str = True
            elif c in "[{":
                depth += 1
            elif c in "]}":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        return len(text)
    m = re.compile(r"[^,}\]\s]*").match(text, start)
    return m.end() if m else start


def decision_positions(
    tokens: Sequence[TokenLogprob], keys: Sequence[str], *, numbers: bool = True
) -> list[int]:
    """Indices of the generated tokens that overlap the values after `keys` (see value_spans).

    Spans are found in the concatenated token texts, so the indices are exact even where the
    backend's text and tokens differ in whitespace.
    """
    text = "".join(t.token for t in tokens)
    spans = value_spans(text, keys, numbers=numbers)
    out: list[int] = []
    pos = 0
    for i, t in enumerate(tokens):
        a, b = pos, pos + len(t.token)
        pos = b
        if any(a < e and s < b for s, e in spans):
            out.append(i)
    return out
