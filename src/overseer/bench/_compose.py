"""The composition grammar of bench configurations: a team source, then bus plug-ins in order.

    CONFIG := SOURCE ("+" PLUGIN)*
    SOURCE := a registered configuration (a preset like complete, chain, debate; a workload
              team like baseline; masfly) | pruned:SPEC (a pruned team written by
              `overseer prune`)
    PLUGIN := supervise:MODE | monitor:FILE | watcher

A plug-in's argument may itself hold `+` (the supervise mode `rules+llm`, a file name): a name
is split only where the next piece starts with a known source or plug-in name, so
`complete+supervise:rules+llm+monitor:m.json` is `complete`, `supervise:rules+llm`,
`monitor:m.json`. Dropping a term is that term's ablation.
"""

from __future__ import annotations

from collections.abc import Callable

#: The grammar in one paragraph (for `overseer bench --help` and error messages).
GRAMMAR = (
    "A configuration is a team source, then '+'-separated bus plug-ins in order: "
    "SOURCE[+supervise:MODE][+monitor:FILE][+watcher]. Sources: a registered name (direct, "
    "a preset like complete/chain/debate, the workload team baseline, masfly) or "
    "pruned:SPEC (a team written by `overseer prune`). A name is split at '+' only before a "
    "known source or plug-in name, so a mode like rules+llm or a file name may hold '+'. "
    "Example: complete+supervise:llm+monitor:m.json; dropping a term is its ablation."
)


def split_config(name: str, starts_term: Callable[[str], bool]) -> list[str]:
    """`name` cut at each `+` followed by a piece for which `starts_term` holds (a known
    source or plug-in); other `+` stay inside the term they are in."""
    pieces = name.split("+")
    terms = [pieces[0]]
    for piece in pieces[1:]:
        if piece and starts_term(piece):
            terms.append(piece)
        else:
            terms[-1] = f"{terms[-1]}+{piece}"
    return terms
