"""`overseer report --from-export FILE`: an evidence page's tables and Reading recomputed from
its export, and the provenance lines every report prints."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from overseer.cli import _io
from overseer.cli._app import InputError

if TYPE_CHECKING:
    from overseer.bench import ResultRecord


def print_export(path: Path, json_out: bool) -> None:
    """The tables and the Reading of an evidence page, recomputed from its export."""
    from overseer.evidence.export import read_export
    from overseer.evidence.reading import reading_lines
    from overseer.evidence.tables import page_tables, records_of

    try:
        data, meta = read_export(path)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    except _io.READ_ERRORS as exc:
        raise _io.unreadable(f"--from-export {path}", exc) from None
    lines = [*page_tables(data), *reading_lines(data)]
    prov = provenance_rows(records_of(data))
    if json_out:
        _io.emit_json(
            {
                "export": str(path),
                "claim": data.claim,
                "meta": meta,
                "markdown": "\n".join(lines),
                "provenance": prov,
            }
        )
        return
    from rich.console import Console

    out = Console(highlight=False, markup=False, soft_wrap=True)
    out.print("\n".join(lines))
    out.print("provenance:")
    for p in prov:
        out.print(f"  {p['text']} ({p['results']} results)")


def provenance_rows(records: Sequence[ResultRecord]) -> list[dict[str, object]]:
    """The distinct provenance stamps of the records, how many carry each, and a line."""
    from overseer.bench.reports import describe_provenance, distinct_provenance

    seen = distinct_provenance(r.provenance for r in records)
    return [{**p, "results": n, "text": describe_provenance(p)} for p, n in seen]
