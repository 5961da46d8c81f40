"""Evidence pages with the current writer: power, the Reading, provenance, the export that
recomputes the tables (`overseer report --from-export`), the README-rows check, `--mix`."""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from pathlib import Path

import pytest

import overseer.models
from overseer.cli import main
from overseer.evidence import run_claim
from overseer.evidence.export import export_path, read_export
from overseer.evidence.page import ROW_MARK
from overseer.evidence.reading import page_tables_reading
from overseer.evidence.readme import END, START, check, page_row, updated
from overseer.models import ScriptedModel

ROOT = Path(__file__).resolve().parents[2]


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def reply(messages: list) -> object:
    if "final decision-maker" in messages[-1]["content"]:
        return "Answer: B"
    if messages[0]["role"] == "system" and "multiple-choice" in messages[0]["content"]:
        return "Answer: C"
    return {"thought": "t", "action": "answer", "answer": "I think B. Answer: B"}


@pytest.fixture(scope="module")
def prune_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The prune claim at size tiny on a scripted model: its page and its store."""
    tmp = tmp_path_factory.mktemp("ev")
    mp = pytest.MonkeyPatch()
    mp.setattr(overseer.models, "load_model", lambda name, **kw: ScriptedModel(reply))
    try:
        page = run_claim("prune", size="tiny", model="scripted", out_dir=tmp / "r",
                         docs_dir=tmp / "d", command="cmd", progress=False)  # fmt: skip
    finally:
        mp.undo()
    return page, tmp / "r" / "prune-tiny.sqlite"


def test_page_has_power_reading_provenance_controls_and_its_row(
    prune_page: tuple[Path, Path],
) -> None:
    text = prune_page[0].read_text()
    for needle in ("Power (minimum detectable effect", "pairs needed for it", "## Reading",
                   "Provenance of the results", "commit ", "xllamacpp ",
                   "random pruning, equal edge count", "full team, no attack",
                   "--from-export docs/evidence/data/prune.jsonl.gz", "| unparsed |"):  # fmt: skip
        assert needle in text, needle
    # the Reading closes the page (only the README row's comment follows), computed
    reading = text[text.index("## Reading") :]
    assert reading.count("\n- **") == 4  # four effects of the prune claim, one line each
    # the attack does not hurt the scripted team, so robustness is untested, not read
    assert "**untested**" in reading
    row = page_row(text)
    assert row is not None and row.startswith("| [prune](docs/evidence/prune.md) |")
    assert row.count(" | ") == 5  # six cells
    # the pruned team acts on every task when pruning removed an edge (a structural action)
    assert "| pruned team (0/1 spatial, 0/0 temporal edges) | 2 | 0 | 0 | 2/2 |" in text


def test_export_recomputes_the_page_tables(
    prune_page: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    page, _ = prune_page
    path = export_path(page.parent, "prune")
    assert path.stat().st_size < 2_000_000
    with gzip.open(path, "rt") as fh:
        head = json.loads(fh.readline())
    assert head["kind"] == "page" and head["claim"] == "prune"
    data, meta = read_export(path)
    assert meta["command"] == "cmd"
    tables = page_tables_reading(data)
    text = page.read_text()
    for line in tables:  # every table and reading line of the export is on the page
        assert line in text.splitlines(), line
    code, out, err = cli(capsys, "report", "--from-export", str(path))
    assert code == 0, err
    printed = out.splitlines()
    assert all(line in printed for line in tables if line)
    assert any(line.startswith("provenance:") for line in printed)


def test_bad_export_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "x.jsonl.gz"
    bad.write_bytes(gzip.compress(b'{"kind": "result"}\n'))
    for f in (bad, tmp_path / "missing.jsonl.gz"):
        code, _, err = cli(capsys, "report", "--from-export", str(f))
        assert code == 2 and str(f.name) in err
        assert len(err.strip().splitlines()) == 1


def test_report_refuses_results_of_two_commits_unless_mix(
    prune_page: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil
    import sqlite3

    store = tmp_path / "s.sqlite"
    shutil.copy(prune_page[1], store)
    code, out, _ = cli(capsys, "report", "--store", str(store))
    assert code == 0 and "provenance: commit " in out
    db = sqlite3.connect(store)
    db.execute("UPDATE results SET provenance = json_set(provenance, '$.commit', 'other') "
               "WHERE config = 'direct'")  # fmt: skip
    db.commit()
    db.close()
    code, _, err = cli(capsys, "report", "--store", str(store))
    assert code == 2 and "commit differs" in err and "--mix" in err
    assert len(err.strip().splitlines()) == 1
    code, out, _ = cli(capsys, "report", "--store", str(store), "--mix", "--json")
    assert code == 0
    assert len(json.loads(out)["provenance"]) == 2


def test_readme_rows_are_the_pages_rows() -> None:
    """The README's evidence rows are what the pages carry (scripts/readme_rows.py)."""
    assert check(ROOT / "README.md", ROOT / "docs" / "evidence") is None


def test_readme_rows_update_and_check(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "prune.md").write_text(f"# p\n\n{ROW_MARK}| [prune](x) | 2 | h | d | m | r | -->\n")
    (docs / "other.md").write_text("# no row\n")
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{START}\nold\n{END}\nafter\n")
    assert check(readme, docs) is not None
    readme.write_text(updated(readme.read_text(), docs))
    assert check(readme, docs) is None and "| [prune](x) | 2 | h | d | m | r |" in (
        readme.read_text()
    )
    spec = importlib.util.spec_from_file_location("readme_rows", ROOT / "scripts/readme_rows.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["readme_rows"] = mod
    spec.loader.exec_module(mod)
    (docs / "prune.md").write_text(f"{ROW_MARK}| [prune](x) | 3 | h | d | m | r | -->\n")
    assert mod.main(["--readme", str(readme), "--docs-dir", str(docs), "--check"]) == 1
    assert mod.main(["--readme", str(readme), "--docs-dir", str(docs)]) == 0
    assert mod.main(["--readme", str(readme), "--docs-dir", str(docs), "--check"]) == 0
    readme.write_text("no markers\n")
    assert mod.main(["--readme", str(readme), "--docs-dir", str(docs)]) == 2
