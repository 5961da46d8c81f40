"""The attribution page's export carries a manifest and is checked row by row: the shipped file
passes, agrees with the Who&When annotations and with the page's all-logs table, and an edited
file is refused with one line naming the first bad row."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from overseer.traces import load_whowhen
from overseer.traces.export import read_attribution_export, write_attribution_export

DOCS = Path(__file__).resolve().parents[2] / "docs" / "evidence"
SHIPPED = DOCS / "attribution.jsonl"


def _rows() -> list[dict]:
    return [json.loads(x) for x in SHIPPED.read_text().splitlines()[1:]]


def test_the_shipped_export_passes_and_matches_the_annotations() -> None:
    rows = read_attribution_export(SHIPPED)
    truth = {t.id: t.annotation for s in ("alg", "hand") for t in load_whowhen(s)}
    for r in rows:
        a = truth[r["log"]]
        assert a is not None
        assert (r["agent_ok"], r["step_ok"]) == (r["agent"] == a.agent, r["step"] == a.step), r


def test_the_pages_all_logs_rows_are_the_exports() -> None:
    page = (DOCS / "attribution.md").read_text()
    counts: dict[tuple[str, str, bool], list[int]] = defaultdict(lambda: [0, 0, 0])
    for r in read_attribution_export(SHIPPED):
        if r["model"] == "-":
            c = counts[(r["split"], r["method"], r["with_truth"])]
            c[0], c[1], c[2] = c[0] + 1, c[1] + r["agent_ok"], c[2] + r["step_ok"]
    assert len(counts) == 2 * 6 * 2
    for (_, method, truth), (n, agent, step) in counts.items():
        row = f"| {method} | - | {'yes' if truth else 'no'} | {n} | {agent / n:.1%} ["
        assert row in page and f"] | {step / n:.1%} [" in page.split(row, 1)[1].split("\n")[0]


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("agent_ok", "maybe", "'agent_ok': expected bool, got 'maybe'"),
        ("prompt_tokens", "abc", "'prompt_tokens': expected int, got 'abc'"),
        ("calls", -1, "'calls': expected a count >= 0"),
        ("step_ok", True, "edited after export"),
    ],
)
def test_an_edited_row_is_refused_naming_it(
    tmp_path: Path, field: str, value: object, said: str
) -> None:
    lines = SHIPPED.read_text().splitlines()
    row = json.loads(lines[5])
    assert row[field] != value
    lines[5] = json.dumps({**row, field: value})
    path = tmp_path / "x.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError) as err:
        read_attribution_export(path)
    msg = str(err.value)
    assert len(msg.splitlines()) == 1 and "row 5 (line 6," in msg and said in msg, msg


def test_a_file_without_a_manifest_or_with_a_row_missing_is_refused(tmp_path: Path) -> None:
    old = tmp_path / "old.jsonl"
    old.write_text("".join(x + "\n" for x in SHIPPED.read_text().splitlines()[1:]))
    with pytest.raises(ValueError, match="regenerate it: python benchmarks/attribution_tables"):
        read_attribution_export(old)
    short = tmp_path / "short.jsonl"
    short.write_text("".join(x + "\n" for x in SHIPPED.read_text().splitlines()[:-1]))
    with pytest.raises(ValueError, match="2367 rows, the manifest says 2368"):
        read_attribution_export(short)


def test_the_writer_refuses_a_bad_row_and_round_trips_good_ones(tmp_path: Path) -> None:
    rows = _rows()[:3]
    path = write_attribution_export(rows, tmp_path / "a.jsonl")
    assert read_attribution_export(path) == rows
    with pytest.raises(ValueError, match=r"row 2 \(line 3, .*'seed': expected int"):
        write_attribution_export([rows[0], {**rows[1], "seed": "0"}], tmp_path / "b.jsonl")
    assert not (tmp_path / "b.jsonl").exists()
