"""The five seed claims as data (claims.toml beside this file): the paper's figure (a small
table with where it comes from), our protocol (model, data, n, what differs and why), the
sizes a run can take and the per-episode times the default size was chosen from."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA = Path(__file__).with_name("claims.toml")


@dataclass(frozen=True)
class PaperFigure:
    """A figure of the seed paper, reduced to the rows this claim is about."""

    source: str  # the paper (title, authors, year, arXiv id), and its table or figure
    columns: Sequence[str]
    rows: Sequence[Sequence[str]]
    note: str = ""


@dataclass(frozen=True)
class Effect:
    """A paper's effect the page tests: `config` against `baseline` (label or configuration
    name prefixes) in the page's part `part`. `points`: the paper's accuracy difference in
    points; `ratio`: its token ratio. `kind` "gain" claims the accuracy change; "saving"
    claims fewer tokens at accuracy kept."""

    what: str
    config: str
    baseline: str
    part: int = 0
    points: float | None = None
    ratio: float | None = None
    kind: str = "gain"
    requires: str = ""  # another effect (its `what` prefix) that must be reproduced first


@dataclass(frozen=True)
class Claim:
    """One seed claim: what the paper says, how we test it, and run sizes (knob -> value)."""

    name: str
    title: str
    claim: str  # the paper's claim in one or two sentences
    paper: PaperFigure
    protocol: str  # model, data, what differs from the paper and why
    sizes: Mapping[str, Mapping[str, int]]
    timing: str = ""  # the per-episode times the default size was chosen from
    needs: Sequence[str] = field(default=())  # claims whose artefacts this one reuses
    effects: Sequence[Effect] = field(default=())  # the paper's effects, read on the page

    def size(self, name: str) -> Mapping[str, int]:
        """The knobs of a named size; ValueError naming the sizes there are."""
        if name not in self.sizes:
            raise ValueError(
                f"size: expected one of {', '.join(self.sizes)} for {self.name}, got {name!r}"
            )
        return self.sizes[name]


def _claim(name: str, d: Mapping[str, Any]) -> Claim:
    p = d["paper"]
    paper = PaperFigure(
        p["source"], tuple(p["columns"]), tuple(map(tuple, p["rows"])), p.get("note", "")
    )
    effects = tuple(Effect(**e) for e in d.get("effects", ()))
    for e in effects:
        if e.kind not in ("gain", "saving"):
            raise ValueError(f"claim {name}: effect kind expected gain or saving, got {e.kind!r}")
    return Claim(
        name,
        d["title"],
        d["claim"],
        paper,
        d["protocol"],
        d["sizes"],
        d.get("timing", ""),
        tuple(d.get("needs", ())),
        effects,
    )


def load_claims(path: Path = DATA) -> dict[str, Claim]:
    """The claims of a TOML file like claims.toml; ValueError naming the file and the field."""
    with path.open("rb") as f:
        data = tomllib.load(f)
    try:
        return {name: _claim(name, d) for name, d in data.items()}
    except KeyError as exc:
        raise ValueError(f"{path}: a claim lacks the field {exc}") from None
    except TypeError as exc:
        raise ValueError(f"{path}: a claim's effect has a bad field ({exc})") from None


CLAIMS: dict[str, Claim] = load_claims()


def get_claim(name: str) -> Claim:
    """The claim of that name; ValueError naming the claims there are."""
    if name not in CLAIMS:
        raise ValueError(f"claim: expected one of {', '.join(CLAIMS)}, got {name!r}")
    return CLAIMS[name]
