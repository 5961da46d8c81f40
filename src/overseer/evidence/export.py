"""A page's results, exported beside it (docs/evidence/data/CLAIM.jsonl.gz, at most 2 MB):
one header line with the page's parts, the paper's effects and a manifest, then one line per
result (tokens per actor, provenance, whether a mechanism acted). The manifest declares the
row schema, the row count, the sha256 of the rows, a short digest of each and the sha256 of
the header (parts, labels, effects, meta). `read_export` checks the header's shape and every
row against the manifest, then the file's content against the digest its page ships (see
`_shipped`), and gives back the data the page's tables are computed from, so anyone can
recompute them without the store; a file that does not match is refused with one line naming
the first bad row or field (`overseer report --from-export`: exit 2)."""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from overseer.bench.reports import ROW_SCHEMA, ResultKey, check_row, record_from_json, record_json
from overseer.evidence._shipped import MAX_BYTES, check_shipped, gunzip
from overseer.evidence.claims import Effect
from overseer.evidence.runs import Part
from overseer.evidence.tables import PageData, records_of
from overseer.manifest import (
    canonical,
    check_manifest_header,
    check_manifest_rows,
    json_object,
    make_manifest,
)

#: 3: the manifest covers the header too (2: only the rows; 1: no manifest; both refused
#: until `--upgrade`d)
FORMAT = 3
#: an export row: a result's `record_json`, what kind of line it is and whether it was acted on
SCHEMA: dict[str, str] = {"kind": "str", **ROW_SCHEMA, "acted": "bool?"}
DATA_DIR = "data"
_STRICT = ConfigDict(strict=True, extra="forbid")


class _PartHead(BaseModel):
    """One part of a page as its export's header keeps it."""

    model_config = _STRICT
    title: str
    configs: list[str] = Field(min_length=1)
    baseline: str
    labels: dict[str, str]
    metric: str
    note: str
    keys: list[list[str | int]]

    @model_validator(mode="after")
    def _baseline_is_a_config(self) -> _PartHead:
        kinds = (str, str, str, str, int)
        for k in self.keys:
            if len(k) != 5 or not all(type(x) is t for x, t in zip(k, kinds, strict=False)):
                raise ValueError(f"a key is [config, model, suite, task_id, seed], got {k!r:.60}")
        if self.baseline not in self.configs:
            raise ValueError(f"baseline {self.baseline!r} is not one of the part's configs")
        return self


class _EffectHead(BaseModel):
    """A paper's effect as the header keeps it (`claims.Effect`), in the range the power and
    reading code accept: points within +-100, a token ratio > 0 and not 1."""

    model_config = _STRICT
    what: str
    config: str
    baseline: str
    part: int = Field(ge=0)
    points: float | None = Field(ge=-100, le=100)
    ratio: float | None = Field(gt=0, allow_inf_nan=False)
    kind: Literal["gain", "saving"]
    requires: str

    @model_validator(mode="after")
    def _ratio_not_one(self) -> _EffectHead:
        if self.ratio == 1:
            raise ValueError("ratio 1 is no effect")
        return self


class _Header(BaseModel):
    """A page export's header line (format 3)."""

    model_config = _STRICT
    kind: Literal["page"]
    format: int
    claim: str = Field(min_length=1)
    parts: list[_PartHead]
    effects: list[_EffectHead]
    meta: dict[str, Any]
    manifest: dict[str, Any]


def export_path(docs_dir: Path, claim: str) -> Path:
    """Where a claim's page export goes."""
    return docs_dir / DATA_DIR / f"{claim}.jsonl.gz"


def manifest(rows: list[dict[str, Any]], head: Mapping[str, Any]) -> dict[str, Any]:
    """The row schema, the row count, the sha256 of the rows, each row's digest and the
    sha256 of the header `head` (without its manifest)."""
    return make_manifest(rows, SCHEMA, head)


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
    head = {**head, "manifest": manifest(rows, head)}
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


def _lines(path: Path, text: bytes | None = None) -> list[dict[str, Any]]:
    """The JSON objects of the file (or of its content `text`), one per line; ValueError
    naming the file and the first bad line (the gzip read is bounded: see `_shipped.gunzip`)."""
    if text is None:
        text = _content(path)
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a page export (gzip JSON Lines): {exc}") from None
    lines = enumerate(decoded.splitlines(), 1)
    return [json_object(path, i, line) for i, line in lines if line.strip()]


def _content(path: Path) -> bytes:
    try:
        return gunzip(path)
    except OSError as exc:
        raise ValueError(f"{path}: cannot read ({exc.strerror or exc})") from None


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


def check_header(path: Path, head: Mapping[str, Any]) -> None:
    """The header's shape (parts, effects, meta: `_Header`) and its manifest's digest of it;
    ValueError with one line naming the file and the first field that does not fit."""
    try:
        _Header.model_validate(head)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "header"
        got = f", got {err['input']!r:.40}" if err["type"] != "missing" else ""
        raise ValueError(f"{path}: header field {where!r}: {err['msg']}{got}") from None
    check_manifest_header(path, head)


def _header_line(path: Path, lines: list[dict[str, Any]]) -> dict[str, Any]:
    if not lines or lines[0].get("kind") != "page":
        raise ValueError(f"{path}: expected a page header on the first line")
    fmt = lines[0].get("format")
    if fmt in (1, 2):
        why = "has no manifest, so its rows" if fmt == 1 else "has a manifest of its rows only, so"
        raise ValueError(
            f"{path}: export format {fmt} {why} cannot be checked"
            f"{'' if fmt == 1 else ' with its header'}; regenerate it: python "
            f"benchmarks/evidence.py {lines[0].get('claim', 'CLAIM')} (from its store), or "
            "python -m overseer.evidence.export --upgrade FILE (checks each row, then writes "
            "the manifest; the page's digest then tells an upgraded file from the shipped one)"
        )
    if fmt != FORMAT:
        raise ValueError(
            f"{path}: export format {fmt!r:.20}, expected {FORMAT} (a header with a manifest)"
        )
    return lines[0]


def read_export(path: Path) -> tuple[PageData, dict[str, Any]]:
    """The page data and the meta of an export; ValueError with one line naming the file (and
    the first bad row) when it is not one: missing, not gzip JSON Lines (or over the size and
    ratio bounds), no page header or manifest, a header or row that does not fit the manifest,
    a result the header names is missing, content other than its page's digest says."""
    if not path.is_file():
        raise ValueError(f"{path}: no such export file")
    text = _content(path)
    lines = _lines(path, text)
    head = _header_line(path, lines)
    check_header(path, head)
    check_rows(path, head, lines[1:])
    check_shipped(path, head["claim"], text)
    return _page_data(path, head, lines[1:]), head["meta"]


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
    """Rewrite an export of format 1 (no manifest) or 2 (a manifest of its rows only) with the
    manifest of format 3, after checking each of its rows against the row schema (format 2:
    against its manifest) and the header's shape; an export of the current format is checked
    and left. An upgraded file is not its page's shipped export unless its content is."""
    lines = _lines(path)
    fmt = lines[0].get("format") if lines else None
    if not lines or lines[0].get("kind") != "page" or fmt not in (1, 2, FORMAT):
        raise ValueError(f"{path}: expected a page header of format 1, 2 or {FORMAT}")
    head, rows = dict(lines[0]), lines[1:]
    if fmt == FORMAT:
        read_export(path)
        return path
    if fmt == 2:
        check_rows(path, head, rows)
    for i, d in enumerate(rows, 1):
        problem = check_row(d, SCHEMA)
        if problem is not None:
            raise ValueError(f"{path}: {_where(i, d)}: {problem}")
    head = {**head, "format": FORMAT}
    head.pop("manifest", None)
    blob = _blob(head, rows)
    check_header(path, {**head, "manifest": manifest(rows, head)})
    path.write_bytes(blob)
    return path


def main(argv: list[str] | None = None) -> int:
    """`python -m overseer.evidence.export --upgrade FILE...`: give format-1 and format-2
    exports the manifest of format 3 (each row checked first); one line per file, exit 2 on the
    first that fails."""
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
