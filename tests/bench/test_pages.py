"""`overseer report --out/--csv/--jsonl` and trace pages, on a store filled by a scripted run."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from sklearn.metrics import roc_auc_score

from overseer.bench import ResultStore
from overseer.bench._plots import label_offsets, pareto_front
from overseer.bench._traces import interventions
from overseer.bench.pages import COLUMNS, trace_html, write_report
from overseer.cli import main
from overseer.runtime import read_trace

from .conftest import ReportData


def records(data: ReportData) -> list:
    with ResultStore(data.store, readonly=True) as rs:
        return list(rs.records())


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_pareto_front_keeps_only_unbeaten_points() -> None:
    pts = [(100.0, 0.5), (50.0, 0.5), (200.0, 0.9), (300.0, 0.8), (10.0, float("nan"))]
    assert pareto_front(pts) == [1, 2]  # 100 tokens at 0.5 is beaten by 50 at 0.5


def test_interventions_name_the_plugin_and_the_supervisor_context() -> None:
    events = [
        {"event": "supervision", "agent": "a", "round": 0, "step": 1, "context": "error"},
        {"event": "verdict", "agent": "a", "round": 0, "step": 1, "by": "sup", "action": "replace"},
        {
            "event": "verdict",
            "agent": "b",
            "round": 0,
            "step": 0,
            "by": "mon",
            "action": "rollback",
        },
        {"event": "verdict", "round": 1, "by": "mon", "action": "rollback"},
    ]
    got = interventions(events)
    assert got == {("sup:error", "replace"): 1, ("mon", "rollback"): 2}


def test_report_writes_every_section_with_its_plots_and_trace_links(
    scripted_data: ReportData, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # traces are found beside the store, not only in the cwd
    recs = records(scripted_data)
    files = write_report(
        recs,
        tmp_path / "rep",
        store=scripted_data.store,
        order=["direct"],
        prune=[scripted_data.prune],
        monitor=[scripted_data.monitor],
    )
    names = {p.name for p in files.images}
    assert {
        "accuracy_tokens.png",
        "tokens_by_kind.png",
        "interventions.png",
        "outcomes_0.png",
        "outcomes_1.png",
        "prune_0.png",
        "monitor_resets.png",
        "monitor_roc_0.png",
    } <= names
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in files.images)
    assert not files.warnings and len(files.traces) == 6  # the two team configs x 3 tasks
    html = files.html.read_text()
    assert html.count('<img src="data:image/png;base64,') == len(files.images)
    assert not re.search(r'(src|href)="(https?:)?//', html), "the page must need no network"
    md = files.markdown.read_text()
    for target in re.findall(r"\]\(([^)]+)\)", md):
        assert (files.markdown.parent / target).is_file(), target
    for target in re.findall(r'href="([^"]+)"', html):
        assert (files.html.parent / target).is_file(), target
    # every team result's cell links its own trace page; the errored result says error
    assert md.count("](traces/") == 6 and "| toy | toy/1 | 0 | right |" in md
    assert re.search(r"\| toy \| toy/1 \| 0 \|[^\n]*\| error \|", md)


def test_interventions_table_counts_the_verdicts_of_the_traces(
    scripted_data: ReportData, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recs = records(scripted_data)
    expected: dict[str, int] = {}
    for r in recs:
        if r.key.config == "complete+guard":
            for e in read_trace(scripted_data.root / str(r.extra["trace"])):
                if e["event"] == "verdict":
                    expected[e["action"]] = expected.get(e["action"], 0) + 1
    assert expected.get("guide") and expected.get("rollback")
    monkeypatch.chdir(scripted_data.root)  # no store given: traces are found from the cwd
    md = write_report(recs, tmp_path / "rep").markdown.read_text()
    for action, n in expected.items():
        assert f"| complete+guard | guard | {action} | {n} |" in md


def test_monitor_train_keeps_validation_estimates_for_the_roc(scripted_data: ReportData) -> None:
    doc = json.loads(scripted_data.monitor.read_text())
    roc = doc["meta"]["validation_roc"]["accuser"]
    assert len(roc["lowest"]) == len(roc["success"]) == doc["meta"]["validation_games"] == 20
    assert roc["tau"] == doc["roles"]["accuser"]["tau"]
    auc = roc_auc_score([not s for s in roc["success"]], [-x for x in roc["lowest"]])
    assert 0.5 < auc <= 1.0  # failed games have the higher entropy: the monitor separates them


def test_trace_page_shows_team_agents_and_highlighted_interventions(
    scripted_data: ReportData,
) -> None:
    rec = next(r for r in records(scripted_data) if r.key.config == "complete+guard")
    events = list(read_trace(scripted_data.root / str(rec.extra["trace"])))
    events.append(
        {
            **events[-1],
            "event": "message",
            "sender": "a2",
            "round": 9,
            "seq": 99,
            "content": "<script>alert(1)</script>",
        }
    )
    page = trace_html(events, title="guarded")
    assert page.count("<circle") == 3 and page.count("<line") == 3  # complete team of 3
    assert all(f"<h2>Agent a{i}</h2>" in page for i in (1, 2, 3))
    assert 'class="verdict"><b>verdict: guide</b> by guard' in page
    assert 'class="rollback"><b>rollback: rollback</b> by guard' in page
    assert "<script>" not in page and "&lt;script&gt;alert(1)" in page
    a1 = page.split("<h2>Agent a1</h2>")[1].split("<h2>")[0]
    assert "verdict: guide" in a1 and "It is A." in a1  # a1's guidance sits among its messages


def test_cli_report_out_csv_jsonl(
    scripted_data: ReportData, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, c, j = tmp_path / "rep", tmp_path / "rows.csv", tmp_path / "rows.jsonl"
    code, stdout, err = cli(
        capsys,
        "report",
        "--store",
        str(scripted_data.store),
        "--out",
        str(out),
        "--csv",
        str(c),
        "--jsonl",
        str(j),
        "--prune",
        str(scripted_data.prune),
        "--monitor",
        str(scripted_data.monitor),
    )
    assert code == 0, err
    assert "complete+guard" in stdout  # the table is still printed
    assert f"report: {out / 'index.html'}" in err and (out / "report.md").is_file()
    rows = list(csv.DictReader(c.open()))
    lines = [json.loads(x) for x in j.read_text().splitlines()]
    assert len(rows) == len(lines) == len(records(scripted_data)) == 30
    assert list(rows[0]) == list(COLUMNS)
    flaky = {r["task_id"]: r for r in rows if r["config"] == "flaky"}
    assert flaky["toy/1"]["outcome"] == "error" and "solver broke" in flaky["toy/1"]["error"]
    team = next(x for x in lines if x["config"] == "complete")
    assert team["tokens_agent"] + team["tokens_decision"] == team["total_tokens"] > 0
    assert team["trace"] == team["extra"]["trace"] and team["outcome"] == "right"


def test_cli_report_bad_inputs_are_one_line(
    scripted_data: ReportData, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(scripted_data.store)
    code, _, err = cli(capsys, "report", "--store", store, "--prune", str(scripted_data.prune))
    assert code == 2 and "give --out DIR" in err and len(err.strip().splitlines()) == 1
    old = tmp_path / "old.json"
    doc = json.loads(scripted_data.monitor.read_text())
    del doc["meta"]["validation_roc"]
    old.write_text(json.dumps(doc))
    code, _, err = cli(
        capsys, "report", "--store", store, "--out", str(tmp_path / "r"), "--monitor", str(old)
    )
    assert code == 2 and f"--monitor {old}: no validation estimates" in err
    code, _, err = cli(
        capsys, "report", "--store", store, "--out", str(tmp_path / "r2"), "--configs", "nosuch"
    )
    assert code == 2 and "no stored results match" in err


def test_cli_trace_html(
    scripted_data: ReportData, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = next(r for r in records(scripted_data) if r.key.config == "complete+guard")
    target = tmp_path / "page.html"
    trace = scripted_data.root / str(rec.extra["trace"])
    code, out, _ = cli(capsys, "trace", "html", str(trace), "--out", str(target))
    assert code == 0 and str(target) in out and "<svg" in target.read_text()
    code, _, err = cli(capsys, "trace", "html", str(tmp_path / "none.jsonl"))
    assert code == 2 and "not found" in err


def test_labels_of_equal_points_stack_instead_of_overlapping() -> None:
    offsets = label_offsets([(100.0, 0.5), (100.0, 0.5), (5000.0, 0.5), (101.0, 0.51)])
    assert offsets[0] == (5.0, 5.0) and offsets[2] == (-5.0, 5.0)  # far apart: one line each
    assert len({offsets[0], offsets[1], offsets[3]}) == 3  # three equal points: three lines
    # near, not equal, points on the right (a label is wide): stacked, drawn left of the point
    near = label_offsets([(300.0, 0.77), (1243.0, 0.5), (1415.0, 0.5), (1473.0, 0.5)])
    assert [o[0] for o in near] == [5.0, -5.0, -5.0, -5.0]
    assert len({o[1] for o in near[1:]}) == 3
