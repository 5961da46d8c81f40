"""The character attributes of WhoDunitEnv (the seed's appendix B, table 4), in table order.

The first 12 are the asymmetric variant's set, all 20 the symmetric variant's; a game with
`n_attributes = a` uses the first `a`. Each attribute has two or three values.
"""

from __future__ import annotations

ATTRIBUTES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("hat", ("brown", "black")),
    ("mood", ("happy", "sad")),
    ("shirt_color", ("pink", "green")),
    ("hobby", ("basketball", "dancing")),
    ("pants", ("long", "short")),
    ("pants_color", ("brown", "black")),
    ("eye_color", ("blue", "brown", "green")),
    ("eye_glasses", ("circular", "square")),
    ("shirt", ("button-up", "tee")),
    ("shoe_color", ("red", "white")),
    ("hair", ("long", "short")),
    ("watch", ("bronze", "silver")),
    ("socks", ("dotted", "white")),
    ("jacket", ("yellow", "jean")),
    ("height", ("short", "tall")),
    ("age", ("young", "old")),
    ("build", ("medium", "muscular")),
    ("personality", ("introverted", "extroverted")),
    ("interests", ("sports", "arts")),
    ("occupation", ("professional", "student")),
)

MAX_ATTRIBUTES = len(ATTRIBUTES)


def attribute_table(n: int) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The first `n` attributes; n outside 1..20 is an error naming the range."""
    if not 1 <= n <= MAX_ATTRIBUTES:
        raise ValueError(f"n_attributes: expected 1..{MAX_ATTRIBUTES}, got {n}")
    return ATTRIBUTES[:n]


def combinations(n: int) -> int:
    """How many distinct characters `n` attributes can describe."""
    total = 1
    for _, values in attribute_table(n):
        total *= len(values)
    return total
