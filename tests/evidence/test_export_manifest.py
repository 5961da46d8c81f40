"""Page exports carry a manifest (row schema, row count, sha256) and `overseer report
--from-export` checks every row against it: each shipped export recomputes its page unchanged,
and an edited export is refused with one line naming the first bad row (exit 2)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from overseer.bench.reports import check_row
from overseer.cli import main
from overseer.evidence.export import SCHEMA, read_export
from overseer.evidence.export import main as upgrade_main
from overseer.evidence.reading import page_tables_reading

DOCS = Path(__file__).resolve().parents[2] / "docs" / "evidence"
EXPORTS = sorted((DOCS / "data").glob("*.jsonl.gz"))


def _lines(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as fh:
        return [json.loads(line) for line in fh]


def _write(path: Path, lines: list[dict]) -> Path:
    with gzip.open(path, "wt") as fh:
        fh.write("".join(json.dumps(d) + "\n" for d in lines))
    return path


def _refused(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    code = main(["report", "--from-export", str(path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize("export", EXPORTS, ids=lambda p: p.name)
def test_each_shipped_export_recomputes_its_page_unchanged(export: Path) -> None:
    data, _ = read_export(export)
    page = (DOCS / export.name.removesuffix(".jsonl.gz")).with_suffix(".md").read_text()
    lines = page.splitlines()
    missing = [x for x in page_tables_reading(data) if x not in lines]
    assert missing == []
    man = _lines(export)[0]["manifest"]
    assert man["rows"] == len(_lines(export)) - 1 == len(man["row_sha256"])


def test_rows_of_the_wrong_type_are_refused_naming_the_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _lines(EXPORTS[0])
    lines[3]["correct"] = "maybe"
    lines[2]["prompt_tokens"] = "abc"
    err = _refused(_write(tmp_path / "x.jsonl.gz", lines), capsys)
    assert "row 2 (line 3," in err and "'prompt_tokens': expected int, got 'abc'" in err


def test_a_well_typed_edit_is_refused_by_its_digest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _lines(EXPORTS[0])
    row = next(i for i, d in enumerate(lines) if i and d["outcome"] == "wrong")
    lines[row].update(correct=True, outcome="right")  # consistent, so only the digest tells
    err = _refused(_write(tmp_path / "x.jsonl.gz", lines), capsys)
    assert f"row {row} (line {row + 1}," in err and "edited after export" in err


def test_inconsistent_counts_and_missing_rows_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _lines(EXPORTS[0])
    lines[1]["total_tokens"] += 1
    assert "is not prompt + completion" in _refused(_write(tmp_path / "a.jsonl.gz", lines), capsys)
    lines = _lines(EXPORTS[0])
    err = _refused(_write(tmp_path / "b.jsonl.gz", lines[:-1]), capsys)
    assert f"{len(lines) - 2} rows, the manifest says {len(lines) - 1}" in err


def test_an_export_without_a_manifest_is_refused_until_upgraded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _lines(EXPORTS[0])
    old = {k: v for k, v in lines[0].items() if k != "manifest"} | {"format": 1}
    path = _write(tmp_path / "old.jsonl.gz", [old, *lines[1:]])
    err = _refused(path, capsys)
    assert "export format 1 has no manifest" in err and "--upgrade FILE" in err
    assert f"benchmarks/evidence.py {lines[0]['claim']}" in err
    assert upgrade_main(["--upgrade", str(path)]) == 0
    assert read_export(path)[0].claim == lines[0]["claim"]
    assert main(["report", "--from-export", str(path)]) == 0


def test_an_old_export_with_a_bad_row_is_not_upgraded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _lines(EXPORTS[0])
    old = {k: v for k, v in lines[0].items() if k != "manifest"} | {"format": 1}
    lines[2]["correct"] = "maybe"
    path = _write(tmp_path / "old.jsonl.gz", [old, *lines[1:]])
    assert upgrade_main(["--upgrade", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "row 2 (line 3," in err and "'correct': expected bool, got 'maybe'" in err
    with pytest.raises(ValueError, match="format 1 has no manifest"):
        read_export(path)


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("seed", True, "'seed': expected int, got True"),
        ("score", "1", "'score': expected number, got '1'"),
        ("parsed", 3, "'parsed': expected str or null, got 3"),
        ("extra", [], "'extra': expected object, got []"),
    ],
)
def test_the_row_model_is_strict(field: str, value: object, expected: str) -> None:
    row = _lines(EXPORTS[0])[1]
    assert check_row(row, SCHEMA) is None
    assert expected in (check_row({**row, field: value}, SCHEMA) or "")
    assert check_row({k: v for k, v in row.items() if k != field}, SCHEMA) == f"no field {field!r}"
    assert check_row({**row, "bonus": 1}, SCHEMA) == "unexpected field 'bonus'"
