"""`overseer report`: the comparison of a result store (or an evidence export), printed; and
the summary rows `bench` prints after a run (so `_bench_run` needs nothing of `_bench`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from overseer.cli import _io, _report
from overseer.cli._app import InputError, app, csv_list, out_console
from overseer.cli._lab import need_lab

if TYPE_CHECKING:
    from overseer.bench import ResultStore

DEFAULT_STORE = Path("results") / "results.sqlite"


def _rows(rs: ResultStore, *, suite, model, configs, baseline) -> dict:
    """The summary rows and the paired comparison of the stored results, JSON-ready."""
    from overseer.cli._report_text import report_doc

    records = list(rs.records(suite=suite, model=model, configs=configs))
    return report_doc(records, configs or [], baseline)


def _print_summary(
    console: Console,
    rs: ResultStore,
    *,
    suite: str | None,
    model: str | None,
    configs: list[str] | None,
    baseline: str | None,
) -> None:
    from overseer.cli._report_text import print_report

    records = list(rs.records(suite=suite, model=model, configs=configs))
    print_report(console, records, configs or [], baseline)


PairedWith = Annotated[
    str | None, typer.Option(help="Config the others are paired with (tokens, accuracy).")
]


@app.command("report")
def report_cmd(
    store: Annotated[Path, typer.Option(help="SQLite result store.")] = DEFAULT_STORE,
    suite: Annotated[str | None, typer.Option(help="Only this suite.")] = None,
    model: Annotated[str | None, typer.Option(help="Only this model.")] = None,
    configs: Annotated[str | None, typer.Option(help="Only these configurations.")] = None,
    baseline: PairedWith = None,
    json_out: _io.JsonOut = False,
    errors: Annotated[bool, typer.Option("--errors", help="Also list errored results.")] = False,
    out: _report.OutDir = None,
    csv: _report.CsvOut = None,
    jsonl: _report.JsonlOut = None,
    prune: _report.PruneFiles = None,
    monitor: _report.MonitorFiles = None,
    from_export: _report.FromExport = None,
    mix: _report.Mix = False,
) -> None:
    """Print the comparison of a result store (opened read-only) without running anything: a
    summary per configuration (errors apart from wrong answers), then each configuration paired
    with the baseline (default: the first of --configs, else the one run first) on the same
    task and seed: n, accuracy difference, exact McNemar p, wins/losses/ties, and the net
    token ratio with its paired bootstrap 95% interval. --out writes the HTML report with
    plots, --csv/--jsonl the per-result rows. Results from different commits or model files
    are not paired unless --mix (see the provenance lines); --from-export FILE recomputes an
    evidence page's tables from its export instead of reading a store."""
    need_lab("overseer report")
    from overseer.bench import ResultStore
    from overseer.bench.reports import errors_table

    if from_export is not None:
        _report.print_export(from_export, json_out)
        return
    if not store.is_file():
        raise InputError(f"--store: no result store at {store}")
    names = csv_list(configs, "--configs") if configs else None
    outputs = _report.Outputs.of(out, csv, jsonl, prune, monitor)
    console = out_console()
    with ResultStore(store, readonly=True) as rs:
        chosen = list(rs.records(suite=suite, model=model, configs=names))
        if not mix:
            _report.refuse_mixed(chosen)
        _report.write_outputs(rs, outputs, suite, model, names, baseline)
        if json_out:
            doc = _rows(rs, suite=suite, model=model, configs=names, baseline=baseline)
            prov = _report.provenance_rows(chosen)
            _io.emit_json({"store": str(store), **doc, "provenance": prov})
            return
        _print_summary(console, rs, suite=suite, model=model, configs=names, baseline=baseline)
        _report.print_provenance(console, chosen)
        if errors:
            console.print(errors_table(rs.records(suite=suite, model=model, configs=names)))
