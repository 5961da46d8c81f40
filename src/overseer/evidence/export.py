"""A page's results, exported beside it (docs/evidence/data/CLAIM.jsonl.gz, at most 2 MB):
one header line with the page's parts, the paper's effects and a manifest, then one line per
result (tokens per actor, provenance, whether a mechanism acted). The manifest declares the
row schema, the row count, the sha256 of the rows and a short digest of each. `read_export`
checks every row against it and gives back the data the page's tables are computed from, so
anyone can recompute them without the store; a file that does not match is refused with one
line naming the first bad row (`overseer report --from-export`: exit 2)."""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from overseer.bench.reports import ROW_SCHEMA, ResultKey, check_row, record_from_json, record_json
from overseer.evidence.claims import Effect
from overseer.evidence.runs import Part
from overseer.evidence.tables import PageData, records_of
from overseer.manifest import canonical, check_manifest_rows, json_object, make_manifest

FORMAT = 2  # 2: the header carries a manifest (1 had none and is refused)
#: an export row: a result's `record_json`, what kind of line it is and whether it was acted on
SCHEMA: dict[str, str] = {"kind": "str", **ROW_SCHEMA, "acted": "bool?"}
MAX_BYTES = 2_000_000
DATA_DIR = "data"


def export_path(docs_dir: Path, claim: str) -> Path:
    """Where a claim's page export goes."""
    return docs_dir / DATA_DIR / f"{claim}.jsonl.gz"


def manifest(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The row schema, the row count, the sha256 of the rows and each row's digest."""
    return make_manifest(rows, SCHEMA)


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


def _blob(head: dict[str, Any], rows: list[dict[str, Any]]) -> bytes:
    head = {**head, "manifest": manifest(rows)}
    return _gz([json.dumps(head, sort_keys=True), *(canonical(r) for r in rows)])


def write_export(data: PageData, path: Path, meta: Mapping[str, Any] | None = None) -> Path:
    """Write the page's export (gzip JSON Lines); long answers and extras are cut when the
    whole would pass MAX_BYTES, and ValueError names the file when even that is too large."""
    rows = []
    for rec in sorted(records_of(data), key=lambda r: dataclasses.astuple(r.key)):
        rows.append({"kind": "result", **record_json(rec), "acted": data.acted.get(rec.key)})
    blob = _blob(_header(data, meta or {}), rows)
    if len(blob) > MAX_BYTES:
        blob = _blob(_header(data, meta or {}), [_slim(r) for r in rows])
    if len(blob) > MAX_BYTES:
        raise ValueError(f"{path}: the export takes {len(blob):,} bytes, over {MAX_BYTES:,}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(blob)
    return path


def _lines(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of the file, one per line; ValueError naming the first bad line."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a page export (gzip JSON Lines): {exc}") from None
    lines = enumerate(text.splitlines(), 1)
    return [json_object(path, i, line) for i, line in lines if line.strip()]


def _where(i: int, d: Mapping[str, Any]) -> str:
    """Row i (1-based, line i + 1) and its key as far as it can be read."""
    key = " ".join(str(d.get(k, "?")) for k in ("config", "task_id")) + f" seed {d.get('seed')}"
    return f"row {i} (line {i + 1}, {key})"


def _row_problem(d: Mapping[str, Any]) -> str | None:
    """What is wrong with one export row by the schema (None: nothing)."""
    problem = check_row(d, SCHEMA)
    if problem is None and d["kind"] != "result":
        problem = f"field 'kind': expected 'result', got {d['kind']!r}"
    return problem


def check_rows(path: Path, head: Mapping[str, Any], rows: list[dict[str, Any]]) -> None:
    """Every row against the header's manifest: schema, digest, count and sha256; ValueError
    with one line naming the file and the first row that does not match."""
    check_manifest_rows(path, head.get("manifest"), SCHEMA, rows, _row_problem, _where)


def _header_line(path: Path, lines: list[dict[str, Any]]) -> dict[str, Any]:
    if not lines or lines[0].get("kind") != "page":
        raise ValueError(f"{path}: expected a page header on the first line")
    fmt = lines[0].get("format")
    if fmt == 1:
        raise ValueError(
            f"{path}: export format 1 has no manifest, so its rows cannot be checked; "
            f"regenerate it: python benchmarks/evidence.py {lines[0].get('claim', 'CLAIM')} "
            "(from its store), or python -m overseer.evidence.export --upgrade FILE (checks "
            "each row's types, then writes the manifest)"
        )
    if fmt != FORMAT:
        raise ValueError(
            f"{path}: export format {fmt}, expected {FORMAT} (a header with a manifest)"
        )
    return lines[0]


def read_export(path: Path) -> tuple[PageData, dict[str, Any]]:
    """The page data and the meta of an export; ValueError with one line naming the file (and
    the first bad row) when it is not one: missing, not gzip JSON Lines, no page header or
    manifest, a row that does not fit the manifest, a result the header names is missing."""
    if not path.is_file():
        raise ValueError(f"{path}: no such export file")
    lines = _lines(path)
    head = _header_line(path, lines)
    check_rows(path, head, lines[1:])
    return _page_data(path, head, lines[1:]), head.get("meta", {})


def _page_data(path: Path, head: Mapping[str, Any], rows: list[dict[str, Any]]) -> PageData:
    try:
        recs = {}
        acted: dict[ResultKey, bool | None] = {}
        for d in rows:
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
            f"{path}: a bad header or a result the header names is missing "
            f"({type(exc).__name__}: {exc})"
        ) from None
    return PageData(head["claim"], parts, acted, effects)


def upgrade_export(path: Path) -> Path:
    """Rewrite an export of format 1 (no manifest) with its manifest, after checking each of
    its rows against the row schema; an export of the current format is checked and left."""
    lines = _lines(path)
    if not lines or lines[0].get("kind") != "page" or lines[0].get("format") not in (1, FORMAT):
        raise ValueError(f"{path}: expected a page header of format 1 or {FORMAT}")
    head, rows = dict(lines[0]), lines[1:]
    if head["format"] == FORMAT:
        check_rows(path, head, rows)
        return path
    for i, d in enumerate(rows, 1):
        problem = check_row(d, SCHEMA)
        if problem is not None:
            raise ValueError(f"{path}: {_where(i, d)}: {problem}")
    head.pop("manifest", None)
    path.write_bytes(_blob({**head, "format": FORMAT}, rows))
    read_export(path)
    return path


def main(argv: list[str] | None = None) -> int:
    """`python -m overseer.evidence.export --upgrade FILE...`: give format-1 exports their
    manifest (each row checked first); one line per file, exit 2 on the first that fails."""
    import argparse
    import sys

    ap = argparse.ArgumentParser(prog="python -m overseer.evidence.export")
    ap.add_argument("--upgrade", type=Path, nargs="+", required=True, metavar="FILE")
    for path in ap.parse_args(argv).upgrade:
        try:
            upgrade_export(path)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"{path}: format {FORMAT}, manifest checked")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
