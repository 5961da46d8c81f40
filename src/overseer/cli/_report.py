"""The files `overseer report` writes (--out DIR, --csv, --jsonl), its provenance checks and
lines (--mix), an evidence page recomputed from its export (--from-export), and
`overseer trace html`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from overseer.cli._app import InputError
from overseer.cli._trace import trace_app
from overseer.errors import PathError, path_error

if TYPE_CHECKING:
    from overseer.bench import ResultRecord, ResultStore

OutDir = Annotated[
    Path | None,
    typer.Option(
        "--out",
        help="Write DIR/index.html (self-contained), DIR/report.md, plots in DIR/img and one "
        "page per run trace in DIR/traces.",
    ),
]
CsvOut = Annotated[Path | None, typer.Option("--csv", help="Write one CSV row per result.")]
JsonlOut = Annotated[Path | None, typer.Option("--jsonl", help="Write one JSON line per result.")]
PruneFiles = Annotated[
    list[Path] | None,
    typer.Option(
        "--prune",
        help="An AgentPrune training record (the .train.json beside a pruned spec, or the "
        "spec): its learned edge probabilities as a heatmap (--out; repeatable).",
    ),
]
MonitorFiles = Annotated[
    list[Path] | None,
    typer.Option(
        "--monitor",
        help="A trained monitor file: its ROC on the validation games (--out; repeatable).",
    ),
]


@dataclass(frozen=True)
class Outputs:
    """The files asked of `overseer report` besides the printed table."""

    out: Path | None = None
    csv: Path | None = None
    jsonl: Path | None = None
    prune: tuple[Path, ...] = ()
    monitor: tuple[Path, ...] = ()

    @classmethod
    def of(cls, out, csv, jsonl, prune, monitor) -> Outputs:
        """Checked options: --prune/--monitor only with --out, and their files must exist."""
        extra = [*(prune or []), *(monitor or [])]
        if extra and out is None:
            raise InputError("--prune/--monitor: they add plots to the report; give --out DIR")
        for f in extra:
            if not f.exists() and not f.with_name(f.name + ".json").exists():
                raise InputError(f"{f}: not found")
        return cls(out, csv, jsonl, tuple(prune or ()), tuple(monitor or ()))


@contextmanager
def _output_errors(outputs: Outputs) -> Iterator[None]:
    """A file that cannot be written (a read-only directory, a full disk) is one line naming it."""
    try:
        yield
    except PathError:
        raise
    except OSError as exc:
        where = Path(exc.filename) if exc.filename else (outputs.out or outputs.csv or Path("."))
        raise path_error("report output", where, exc) from None


def write_outputs(
    rs: ResultStore,
    outputs: Outputs,
    suite: str | None,
    model: str | None,
    configs: list[str] | None,
    baseline: str | None,
) -> None:
    """Write the asked files from the store's matching results; one line each on stderr. A
    file that cannot be written (a read-only directory, a full disk) is one line naming it."""
    from overseer.bench.pages import write_csv, write_jsonl, write_report

    err = Console(stderr=True, highlight=False, markup=False, soft_wrap=True)
    with _output_errors(outputs):
        records = list(rs.records(suite=suite, model=model, configs=configs))
        if outputs.csv is not None:
            err.print(f"csv: {write_csv(records, outputs.csv)} rows in {outputs.csv}")
        if outputs.jsonl is not None:
            err.print(f"jsonl: {write_jsonl(records, outputs.jsonl)} lines in {outputs.jsonl}")
        if outputs.out is None:
            return
        base = baseline or (configs[0] if configs else None)
        try:
            files = write_report(
                records,
                outputs.out,
                store=rs.path,
                baseline=base,
                order=configs or (),
                prune=outputs.prune,
                monitor=outputs.monitor,
            )
        except ValueError as exc:
            raise InputError(str(exc)) from None
    err.print(
        f"report: {files.html} (Markdown: {files.markdown}); "
        f"{len(files.images)} plots, {len(files.traces)} trace pages"
    )
    for w in files.warnings:
        err.print(f"warning: {w}")


@trace_app.command("html")
def trace_html_cmd(
    file: Annotated[Path, typer.Argument(help="A trace .jsonl file.")],
    out: Annotated[
        Path | None, typer.Option(help="The page to write (default: FILE.html).")
    ] = None,
) -> None:
    """Write a run trace as an HTML page: team graph, each agent's messages, verdicts and
    rollbacks highlighted."""
    from overseer.bench.pages import trace_html
    from overseer.runtime import read_trace

    if not file.is_file():
        raise InputError(f"trace file {file}: not found")
    try:
        events = list(read_trace(file))
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if not events:
        raise InputError(f"trace file {file}: no events")
    target = out or file.with_suffix(".html")
    target.write_text(trace_html(events, title=file.stem), encoding="utf-8")
    Console(highlight=False, markup=False, soft_wrap=True).print(f"trace page: {target}")


FromExport = Annotated[
    Path | None,
    typer.Option(
        "--from-export",
        help="An evidence page's export (docs/evidence/data/CLAIM.jsonl.gz): recompute and "
        "print the page's tables and reading from it (no store needed).",
    ),
]
Mix = Annotated[
    bool,
    typer.Option(
        "--mix",
        help="Pair results made by different commits or model files (refused otherwise).",
    ),
]


def print_export(path: Path, json_out: bool) -> None:
    """The tables and the Reading of an evidence page, recomputed from its export."""
    from overseer.cli import _io
    from overseer.evidence.export import read_export
    from overseer.evidence.reading import reading_lines
    from overseer.evidence.tables import page_tables, records_of

    try:
        data, meta = read_export(path)
    except ValueError as exc:
        raise InputError(str(exc)) from None
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


def refuse_mixed(records: Sequence[ResultRecord]) -> None:
    """InputError (exit 2) naming what differs when results to be paired (same suite and
    model) come from different commits or model files."""
    from collections import defaultdict

    from overseer.bench.reports import mixed_provenance

    groups: dict[tuple[str, str], list[ResultRecord]] = defaultdict(list)
    for r in records:
        groups[(r.key.suite, r.key.model)].append(r)
    for (suite, model), recs in sorted(groups.items()):
        what = mixed_provenance(r.provenance for r in recs)
        if what:
            raise InputError(f"results of {suite} / {model}: {what}; pass --mix to pair them")


def print_provenance(console: Console, records: Sequence[ResultRecord]) -> None:
    """One line per distinct provenance stamp under the tables."""
    for p in provenance_rows(records):
        console.print(f"provenance: {p['text']} ({p['results']} results)")
