"""A page's results, exported beside it (docs/evidence/data/CLAIM.jsonl.gz, at most 2 MB):
one header line with the page's parts and the paper's effects, then one line per result
(tokens per actor, provenance, whether a mechanism acted). `read_export` gives back the data
the page's tables are computed from, so anyone can recompute them without the store."""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from overseer.bench.reports import ResultKey, record_from_json, record_json
from overseer.evidence.claims import Effect
from overseer.evidence.runs import Part
from overseer.evidence.tables import PageData, records_of

FORMAT = 1
MAX_BYTES = 2_000_000
DATA_DIR = "data"


def export_path(docs_dir: Path, claim: str) -> Path:
    """Where a claim's page export goes."""
    return docs_dir / DATA_DIR / f"{claim}.jsonl.gz"


def _header(data: PageData, meta: Mapping[str, Any]) -> dict[str, Any]:
    parts = [
        {
            "title": p.title,
            "configs": list(p.configs),
            "baseline": p.baseline,
            "labels": dict(p.labels),
            "metric": p.metric,
            "note": p.note,
            "keys": [list(dataclasses.astuple(r.key)) for r in p.records],
        }
        for p in data.parts
    ]
    return {
        "kind": "page",
        "format": FORMAT,
        "claim": data.claim,
        "parts": parts,
        "effects": [dataclasses.asdict(e) for e in data.effects],
        "meta": dict(meta),
    }


def _slim(row: dict[str, Any]) -> dict[str, Any]:
    """A row without what the tables do not need: long answers cut, extra kept to scalars."""
    extra = {k: v for k, v in row["extra"].items() if isinstance(v, (int, float, str, bool))}
    return {**row, "answer": row["answer"][:200], "extra": extra}


def _gz(lines: list[str]) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as fh:  # mtime 0: same data, same bytes
        fh.write("".join(line + "\n" for line in lines).encode())
    return buf.getvalue()


def write_export(data: PageData, path: Path, meta: Mapping[str, Any] | None = None) -> Path:
    """Write the page's export (gzip JSON Lines); long answers and extras are cut when the
    whole would pass MAX_BYTES, and ValueError names the file when even that is too large."""
    rows = []
    for rec in sorted(records_of(data), key=lambda r: dataclasses.astuple(r.key)):
        rows.append({"kind": "result", **record_json(rec), "acted": data.acted.get(rec.key)})
    head = json.dumps(_header(data, meta or {}), sort_keys=True)
    blob = _gz([head, *(json.dumps(r, sort_keys=True, default=str) for r in rows)])
    if len(blob) > MAX_BYTES:
        slim = [json.dumps(_slim(r), sort_keys=True, default=str) for r in rows]
        blob = _gz([head, *slim])
    if len(blob) > MAX_BYTES:
        raise ValueError(f"{path}: the export takes {len(blob):,} bytes, over {MAX_BYTES:,}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(blob)
    return path


def _lines(path: Path) -> list[dict[str, Any]]:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a page export (gzip JSON Lines): {exc}") from None


def read_export(path: Path) -> tuple[PageData, dict[str, Any]]:
    """The page data and the meta of an export; ValueError naming the file when it is not
    one (missing, not gzip JSON Lines, no page header, a bad result line)."""
    if not path.is_file():
        raise ValueError(f"{path}: no such export file")
    lines = _lines(path)
    if not lines or lines[0].get("kind") != "page" or lines[0].get("format") != FORMAT:
        raise ValueError(f"{path}: expected a page header (format {FORMAT}) on the first line")
    head = lines[0]
    try:
        recs = {}
        acted: dict[ResultKey, bool | None] = {}
        for d in lines[1:]:
            rec = record_from_json(d)
            recs[rec.key] = rec
            acted[rec.key] = d.get("acted")
        parts = [
            Part(
                p["title"],
                [recs[ResultKey(*k)] for k in p["keys"]],
                p["configs"],
                p["baseline"],
                p["labels"],
                p["metric"],
                p["note"],
            )
            for p in head["parts"]
        ]
        effects = tuple(Effect(**e) for e in head["effects"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(
            f"{path}: a bad line or a result the header names is missing "
            f"({type(exc).__name__}: {exc})"
        ) from None
    return PageData(head["claim"], parts, acted, effects), head.get("meta", {})
