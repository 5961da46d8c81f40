"""The files `overseer report` writes (--out DIR, --csv, --jsonl), its provenance checks and
lines (--mix); an evidence page recomputed from its export (--from-export) is in
`_report_export`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from overseer.cli import _io
from overseer.cli._app import InputError
from overseer.cli._report_export import print_export, provenance_rows
from overseer.errors import PathError, path_error

__all__ = [
    "CsvOut",
    "FromExport",
    "JsonlOut",
    "Mix",
    "MonitorFiles",
    "OutDir",
    "Outputs",
    "PruneFiles",
    "print_export",
    "print_provenance",
    "provenance_rows",
    "refuse_mixed",
    "write_outputs",
]

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
            n = write_csv(records, outputs.csv)
            err.print(f"csv: {n} rows in {_io.shown(outputs.csv)}")
        if outputs.jsonl is not None:
            n = write_jsonl(records, outputs.jsonl)
            err.print(f"jsonl: {n} lines in {_io.shown(outputs.jsonl)}")
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
        f"report: {_io.shown(files.html)} (Markdown: {_io.shown(files.markdown)}); "
        f"{len(files.images)} plots, {len(files.traces)} trace pages"
    )
    for w in files.warnings:
        err.print(f"warning: {w}")


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
