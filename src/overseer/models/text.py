"""Reading model text: the code of a completion, and the stand-in token count of a text.

Shared by the task scorers, the games and the plug-ins (MASFly's Watcher reads the code an
agent wrote), so none of them reaches into another package for it. `REPLY_CUT` is how much of
a rejected reply is shown back to the model when it is asked again.
"""

from __future__ import annotations

import ast
import re

from overseer.models._scripted import count_tokens
from overseer.models._structured import REPLY_CUT

__all__ = ["REPLY_CUT", "count_tokens", "extract_code"]

_FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)


def _defines(code: str, entry: str) -> bool:
    return re.search(rf"^\s*def\s+{re.escape(entry)}\s*\(", code, re.MULTILINE) is not None


def _parses(code: str) -> bool:
    try:
        ast.parse(code)  # parsed only, never run
    except (SyntaxError, ValueError):
        return False
    return True


def _parsable_head(code: str, entry: str) -> str:
    """`code` cut to its longest head of whole lines that parses and still defines `entry`,
    when the whole does not parse: trailing prose or a broken example after the function no
    longer sinks it (as HumanEval's stop sequences cut a completion); else `code` itself."""
    if _parses(code):
        return code
    lines = code.splitlines(keepends=True)
    for end in range(len(lines) - 1, 0, -1):
        head = "".join(lines[:end])
        if _defines(head, entry) and _parses(head):
            return head
    return code


def extract_code(completion: str, entry: str | None = None) -> str:
    """The code of a completion: of its ```python blocks (an unclosed last one included), the
    last that defines `entry` (cut to a head that parses, see `_parsable_head`), else the
    longest; without blocks, the text itself."""
    blocks = _FENCE.findall(completion)
    if not blocks:
        return completion
    if entry is not None:
        defining = [b for b in blocks if _defines(b, entry)]
        if defining:
            return _parsable_head(str(defining[-1]), entry)
    return str(max(blocks, key=len))
