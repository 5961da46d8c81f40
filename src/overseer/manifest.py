"""The manifest every export of rows carries (row schema, row count, sha256 of the rows and a
short digest of each; the sha256 of the header too where the header carries content), the
check of rows and header against it, and the strict pydantic model a row schema is validated
with. Kept at the bottom of the package so
that page exports (`evidence`) and attribution exports (`traces`) share one implementation
without one importing the other."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

DIGEST_CHARS = 12  # each row's digest in the manifest: the first characters of its sha256
KEYS = frozenset({"schema", "rows", "sha256", "row_sha256"})


def canonical(row: Mapping[str, Any]) -> str:
    """A row as the one JSON text its digest is made of (sorted keys, no spaces chosen)."""
    return json.dumps(row, sort_keys=True, default=str)


#: the Python type each schema kind is validated as (pydantic, strict: no coercion, so "abc"
#: is not an int and "maybe" not a bool; an int is never a bool, a number may be an int)
_KINDS: dict[str, Any] = {
    "str": str,
    "int": int,
    "number": float,
    "bool": bool,
    "object": dict[str, Any],
}


@functools.lru_cache(maxsize=8)
def row_model(schema: tuple[tuple[str, str], ...]) -> type[BaseModel]:
    """The strict pydantic model of a row schema (field -> kind, "?" allows null): every
    field required, no other field allowed."""
    fields: dict[str, Any] = {}
    for name, kind in schema:
        py = _KINDS[kind.removesuffix("?")]
        fields[name] = (py | None if kind.endswith("?") else py, ...)
    config = ConfigDict(strict=True, extra="forbid")
    return create_model("ExportRow", __config__=config, **fields)


def schema_problem(d: Mapping[str, Any], schema: Mapping[str, str]) -> str | None:
    """The first field of `d` that does not fit `schema`, in words (None: every field fits)."""
    try:
        row_model(tuple(schema.items())).model_validate(d)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else "?"
        if err["type"] == "missing":
            return f"no field {field!r}"
        if err["type"] == "extra_forbidden":
            return f"unexpected field {field!r}"
        kind = schema.get(field, "?").replace("?", " or null")
        return f"field {field!r}: expected {kind}, got {err['input']!r:.40}"
    return None


def _digest(row: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical(row).encode()).hexdigest()[:DIGEST_CHARS]


def header_sha256(head: Mapping[str, Any]) -> str:
    """The sha256 of a header's canonical JSON, its manifest left out."""
    rest = {k: v for k, v in head.items() if k != "manifest"}
    return hashlib.sha256(canonical(rest).encode()).hexdigest()


def make_manifest(
    rows: Sequence[Mapping[str, Any]],
    schema: Mapping[str, str],
    head: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The manifest of `rows`: their schema, count, the sha256 of their canonical JSON (one
    per line) and each row's digest (so a reader names the first row that was changed); with
    `head`, the sha256 of the header it goes in (its labels, effects, meta: all but itself)."""
    man = {
        "schema": dict(schema),
        "rows": len(rows),
        "sha256": hashlib.sha256("\n".join(canonical(r) for r in rows).encode()).hexdigest(),
        "row_sha256": [_digest(r) for r in rows],
    }
    return man if head is None else {**man, "header_sha256": header_sha256(head)}


class _Manifest(BaseModel):
    """The shape of a manifest, checked before any of it is used."""

    model_config = ConfigDict(strict=True, extra="forbid")
    schema_: dict[str, str] = Field(alias="schema")
    rows: int = Field(ge=0)
    sha256: str
    row_sha256: list[str]
    header_sha256: str | None = None


def check_manifest_header(path: Path, head: Mapping[str, Any]) -> None:
    """The header against its manifest's header_sha256 (ValueError with one line naming the
    file when the header was edited after export, or the manifest does not cover it)."""
    man = head.get("manifest")
    want = man.get("header_sha256") if isinstance(man, dict) else None
    if not isinstance(want, str):
        raise ValueError(f"{path}: the manifest does not cover the header (no header_sha256)")
    if header_sha256(head) != want:
        raise ValueError(
            f"{path}: the header (parts, labels, effects, meta) is not the one the manifest's "
            "header_sha256 was made of (edited after export)"
        )


def check_manifest_rows(
    path: Path,
    man: object,
    schema: Mapping[str, str],
    rows: Sequence[Mapping[str, Any]],
    problem: Callable[[Mapping[str, Any]], str | None],
    where: Callable[[int, Mapping[str, Any]], str],
) -> None:
    """Every row against the manifest `man`: `problem` (its schema check), its digest, then the
    count and the sha256 of the whole; ValueError with one line naming the file and the first
    row that does not match (`where(i, row)` says which, i 1-based)."""
    if not isinstance(man, dict) or not set(man) >= KEYS:
        raise ValueError(f"{path}: the header has no manifest (schema, rows, sha256)")
    try:
        _Manifest.model_validate(man)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(x) for x in err["loc"])
        raise ValueError(f"{path}: the manifest's {field!r}: {err['msg']}") from None
    if man["schema"] != dict(schema):
        raise ValueError(f"{path}: the manifest's row schema is not this overseer's")
    digests = man["row_sha256"]
    for i, d in enumerate(rows, 1):
        found = problem(d)
        if found is None and (i > len(digests) or digests[i - 1] != _digest(d)):
            found = "not the row the manifest's sha256 was made of (edited after export)"
        if found is not None:
            raise ValueError(f"{path}: {where(i, d)}: {found}")
    if len(rows) != man["rows"] or len(digests) != man["rows"]:
        raise ValueError(f"{path}: {len(rows)} rows, the manifest says {man['rows']}")
    if make_manifest(rows, schema)["sha256"] != man["sha256"]:
        raise ValueError(f"{path}: the rows do not match the manifest's sha256")


__all__ = [
    "DIGEST_CHARS",
    "canonical",
    "check_manifest_header",
    "check_manifest_rows",
    "header_sha256",
    "make_manifest",
    "row_model",
    "schema_problem",
]


def json_object(path: Path, i: int, line: str) -> dict[str, Any]:
    """Line `i` of an export as a JSON object; ValueError naming the file and line otherwise."""
    try:
        d = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: line {i} is not JSON ({exc})") from None
    if not isinstance(d, dict):
        raise ValueError(f"{path}: line {i} is not a JSON object")
    return d
