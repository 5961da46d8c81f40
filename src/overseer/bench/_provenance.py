"""Where a stored result came from: the code (commit, overseer version), the engine (xllamacpp
version), the model file (its pinned sha256, or an HTTP model's name and base URL), and the
settings that change outputs (thread count, prefix cache). Every stored result carries one,
so a report can refuse to pair results made by different code or weights."""

from __future__ import annotations

import importlib.metadata as md
import subprocess
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

UNKNOWN = "unknown"
#: The fields of a stamp, in the order a report prints them.
FIELDS = ("commit", "overseer", "xllamacpp", "model_file", "threads", "prompt_cache")
#: The fields that make two results unfit to pair (different code or different weights).
PAIRING = ("commit", "model_file")


def _git(root: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def code_commit(root: Path | None = None) -> str:
    """The commit of the checkout the code runs from ('+dirty' when tracked files changed);
    "unknown" outside a checkout (an installed wheel)."""
    root = root or Path(__file__).resolve().parent
    head = _git(root, "rev-parse", "HEAD")
    if not head:
        return UNKNOWN
    changed = _git(root, "status", "--porcelain", "--untracked-files=no")
    return head + ("+dirty" if changed else "")


def _version(dist: str) -> str:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return UNKNOWN


def model_file(model_name: str, model: object | None = None) -> str:
    """A local model's pinned sha256 (verified when its file was assembled), or an HTTP
    model's name and base URL; "unknown" for anything else (a scripted model)."""
    if model_name.startswith("openai:"):
        base = getattr(model, "base_url", None) or "default base URL"
        return f"{model_name} at {base}"
    from overseer.models import ModelError, model_card

    try:
        return "sha256:" + model_card(model_name).sha256
    except ModelError:
        return UNKNOWN


def stamp(
    model_name: str,
    model: object | None = None,
    *,
    root: Path | None = None,
    commit: str | None = None,
) -> dict[str, str]:
    """The provenance of results made now with this model (threads and cache flag read from
    the loaded model where it has them, else "unknown"). `commit`: the code's commit as read
    when the run loaded it (a checkout may move on while a long run writes results)."""
    threads = getattr(model, "n_threads", None)
    cache = getattr(model, "prompt_cache", None)
    if model_name.startswith("openai:"):
        threads, cache = "server's", "server's"
    return {
        "commit": commit or code_commit(root),
        "overseer": _version("overseer-agents"),  # the distribution's name
        "xllamacpp": _version("xllamacpp"),
        "model_file": model_file(model_name, model),
        "threads": UNKNOWN if threads is None else str(threads),
        "prompt_cache": {None: UNKNOWN, True: "on", False: "off"}.get(cache, str(cache)),
    }


def complete(prov: Mapping[str, object] | None) -> dict[str, str]:
    """Every field of a stamp, "unknown" where missing (results stored before stamps)."""
    prov = prov or {}
    return {f: str(prov.get(f) or UNKNOWN) for f in FIELDS}


def describe(prov: Mapping[str, str]) -> str:
    """One line: commit abc, overseer 0.1.0, xllamacpp x, model sha256:..., threads 1, ..."""
    p = complete(prov)
    return (
        f"commit {p['commit']}, overseer {p['overseer']}, xllamacpp {p['xllamacpp']}, "
        f"model {p['model_file']}, threads {p['threads']}, prompt cache {p['prompt_cache']}"
    )


def distinct(provs: Iterable[Mapping[str, str]]) -> list[tuple[dict[str, str], int]]:
    """The distinct stamps and how many results carry each, most common first."""
    counts: dict[tuple[str, ...], int] = defaultdict(int)
    for p in provs:
        c = complete(p)
        counts[tuple(c[f] for f in FIELDS)] += 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [(dict(zip(FIELDS, k, strict=True)), n) for k, n in ranked]


def mixed(provs: Iterable[Mapping[str, str]], fields: Iterable[str] = PAIRING) -> str | None:
    """None when the stamps agree on `fields`; else what differs, e.g.
    "commit differs: abc (12 results), def (3 results)"."""
    wanted = tuple(fields)
    seen = distinct(provs)
    for f in wanted:
        values: dict[str, int] = defaultdict(int)
        for p, n in seen:
            values[p[f]] += n
        if len(values) > 1:
            parts = ", ".join(f"{v} ({n} results)" for v, n in sorted(values.items()))
            return f"{f} differs: {parts}"
    return None
