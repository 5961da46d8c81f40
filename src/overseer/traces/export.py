"""The attribution page's export (docs/evidence/attribution.jsonl): one header line with a
manifest (row schema, row count, sha256 of the rows and a digest of each), then one line per
stored attribution. `read_attribution_export` checks every row against the manifest and
refuses a file that does not match with one line naming the first bad row, so an edited
export (`"agent_ok": "maybe"`, `"prompt_tokens": "abc"`, a flipped flag) cannot pass for the
one the page was made from."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from overseer.manifest import (
    canonical,
    check_manifest_rows,
    json_object,
    make_manifest,
    schema_problem,
)
from overseer.traces.evaluate import Row

KIND = "attribution-export"
FORMAT = 1
#: the JSON type of each field of a row ("?": null allowed); what the manifest declares
SCHEMA: dict[str, str] = {
    **dict.fromkeys(("method", "model", "split", "log", "outcome"), "str"),
    "with_truth": "bool",
    "seed": "int",
    "agent": "str?",
    "step": "int?",
    "notes": "object",
    **dict.fromkeys(("prompt_tokens", "completion_tokens", "calls"), "int"),
    "seconds": "number",
    "agent_ok": "bool",
    "step_ok": "bool",
}


def export_row(r: Row) -> dict[str, Any]:
    """One stored attribution as an export row (see SCHEMA)."""
    a = r.attribution
    return {
        "method": r.method,
        "model": r.model,
        "split": r.split,
        "log": r.log_id,
        "with_truth": r.with_truth,
        "seed": r.seed,
        "agent": a.agent,
        "step": a.step,
        "outcome": a.outcome,
        "notes": a.notes,
        "prompt_tokens": a.prompt_tokens,
        "completion_tokens": a.completion_tokens,
        "calls": a.calls,
        "seconds": round(a.seconds, 2),
        "agent_ok": r.agent_ok,
        "step_ok": r.step_ok,
    }


def write_attribution_export(rows: Iterable[Mapping[str, Any]], path: Path) -> Path:
    """Write the header (with the manifest of `rows`) and the rows, one JSON object a line;
    ValueError naming the first row that does not fit SCHEMA (nothing is written then)."""
    rows = [dict(r) for r in rows]
    for i, d in enumerate(rows, 1):
        problem = _row_problem(d)
        if problem is not None:
            raise ValueError(f"{path}: {_where(i, d)}: {problem}")
    head = {"kind": KIND, "format": FORMAT, "manifest": make_manifest(rows, SCHEMA)}
    text = "".join(line + "\n" for line in [canonical(head), *map(canonical, rows)])
    path.write_text(text, encoding="utf-8")
    return path


def _row_problem(d: Mapping[str, Any]) -> str | None:
    """The first field of an export row that does not fit SCHEMA, or a bad count (None: ok)."""
    problem = schema_problem(d, SCHEMA)
    if problem is None:
        negative = [k for k in ("prompt_tokens", "completion_tokens", "calls") if d[k] < 0]
        if negative or d["seconds"] < 0:
            problem = f"field {(negative or ['seconds'])[0]!r}: expected a count >= 0"
    return problem


def _where(i: int, d: Mapping[str, Any]) -> str:
    """Row i (1-based, line i + 1) and its key as far as it can be read."""
    key = " ".join(str(d.get(k, "?")) for k in ("method", "model", "split", "log"))
    return f"row {i} (line {i + 1}, {key})"


def _objects(path: Path) -> list[dict[str, Any]]:
    """The file's JSON objects, one a line; ValueError naming the first line that is not."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not an attribution export: {exc}") from None
    return [json_object(path, i, line) for i, line in enumerate(text.splitlines(), 1)]


def read_attribution_export(path: Path) -> list[dict[str, Any]]:
    """The rows of an attribution export, each checked against the header's manifest;
    ValueError with one line naming the file (and the first bad row) otherwise."""
    lines = _objects(path)
    head = lines[0] if lines else {}
    if head.get("kind") != KIND or head.get("format") != FORMAT:
        raise ValueError(
            f"{path}: expected a header line of kind {KIND!r}, format {FORMAT} (with a "
            "manifest); regenerate it: python benchmarks/attribution_tables.py --store "
            "STORE --export FILE"
        )
    check_manifest_rows(path, head.get("manifest"), SCHEMA, lines[1:], _row_problem, _where)
    return lines[1:]


__all__ = [
    "FORMAT",
    "KIND",
    "SCHEMA",
    "export_row",
    "read_attribution_export",
    "write_attribution_export",
]
