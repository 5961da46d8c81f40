"""Reading model text: the code of a completion, and the stand-in token count of a text.

Shared by the task scorers, the games and the plug-ins (MASFly's Watcher reads the code an
agent wrote), so none of them reaches into another package for it. `REPLY_CUT` is how much of
a rejected reply is shown back to the model when it is asked again.
"""

from __future__ import annotations

import re

from overseer.models._scripted import count_tokens
from overseer.models._structured import REPLY_CUT

__all__ = ["REPLY_CUT", "count_tokens", "extract_code"]

_FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)


def _defines(code: str, entry: str) -> bool:
    return re.search(rf"^\s*def\s+{re.escape(entry)}\s*\(", code, re.MULTILINE) is not None


def extract_code(completion: str, entry: str | None = None) -> str:
    """The code of a completion: of its ```python blocks (an unclosed last one included), the
    last that defines `entry`, else the longest; without blocks, the text itself."""
    blocks = _FENCE.findall(completion)
    if not blocks:
        return completion
    if entry is not None:
        defining = [b for b in blocks if _defines(b, entry)]
        if defining:
            return str(defining[-1])
    return str(max(blocks, key=len))
