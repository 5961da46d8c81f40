"""Exports cannot be bent silently (issue 51): the manifest covers the header (labels, the
paper's effects, meta) as well as the rows; each page ships the sha256 of its export's content
and `report --from-export` refuses a file of that claim with another content (rows edited and
the manifest recomputed, or passed through `--upgrade`); reading is bounded in size and ratio
(a gzip bomb, a corrupt or truncated deflate stream: one line, exit 2)."""

from __future__ import annotations

import gzip
import json
import shutil
import tracemalloc
import zlib
from pathlib import Path
from typing import Any

import pytest

from overseer.cli import main
from overseer.evidence._shipped import content_sha256, gunzip, page_digest
from overseer.evidence.export import _blob
from overseer.evidence.export import main as upgrade_main

DOCS = Path(__file__).resolve().parents[2] / "docs" / "evidence"
EXPORTS = sorted((DOCS / "data").glob("*.jsonl.gz"))
MASFLY = DOCS / "data" / "masfly.jsonl.gz"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines()]


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_bytes(gzip.compress("".join(json.dumps(d) + "\n" for d in lines).encode()))
    return path


def _refused(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    code = main(["report", "--from-export", str(path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    return err


def _flip_a_wrong_row(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A wrong answer made right, consistently (only a digest can tell)."""
    i = next(i for i, d in enumerate(lines) if i and d["outcome"] == "wrong")
    lines[i].update(correct=True, outcome="right", score=1.0)
    return lines


@pytest.mark.parametrize("export", EXPORTS, ids=lambda p: p.name)
def test_each_page_ships_the_digest_of_its_export(export: Path) -> None:
    page = DOCS / f"{export.name.removesuffix('.jsonl.gz')}.md"
    assert page_digest(page) == content_sha256(gunzip(export))
    assert main(["report", "--from-export", str(export)]) == 0


def test_an_edited_label_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = _lines(MASFLY)
    labels = lines[0]["parts"][0]["labels"]
    a, b = list(labels)[:2]
    labels[a], labels[b] = labels[b], labels[a]  # which results appear under which label
    err = _refused(_write(tmp_path / "x.jsonl.gz", lines), capsys)
    assert "the header (parts, labels, effects, meta) is not the one" in err


def test_an_edited_paper_effect_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _lines(MASFLY)
    lines[0]["effects"][0]["points"] = 0.01
    err = _refused(_write(tmp_path / "x.jsonl.gz", lines), capsys)
    assert "edited after export" in err and "header" in err


def test_a_re_signed_export_is_refused_by_its_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rows edited and the manifest recomputed: a copy anywhere, and the file in place in a
    copy of the docs (its page beside it)."""
    lines = _flip_a_wrong_row(_lines(MASFLY))
    head = {k: v for k, v in lines[0].items() if k != "manifest"}
    copy = tmp_path / "masfly.jsonl.gz"
    copy.write_bytes(_blob(head, lines[1:]))
    err = _refused(copy, capsys)
    assert "masfly.md ships" in err and "not the export that page was made from" in err
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs, ignore=shutil.ignore_patterns("*.png"))
    (docs / "data" / "masfly.jsonl.gz").write_bytes(copy.read_bytes())
    err = _refused(docs / "data" / "masfly.jsonl.gz", capsys)
    assert f"{docs / 'masfly.md'} ships" in err


def test_an_edited_export_passed_through_upgrade_is_refused_by_its_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _flip_a_wrong_row(_lines(MASFLY))
    old = {k: v for k, v in lines[0].items() if k != "manifest"} | {"format": 1}
    path = _write(tmp_path / "masfly.jsonl.gz", [old, *lines[1:]])
    assert upgrade_main(["--upgrade", str(path)]) == 0
    assert "masfly.md ships" in _refused(path, capsys)


def test_a_format_2_export_is_refused_until_upgraded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Format 2 had a manifest of the rows only; upgraded unchanged, it is the shipped one."""
    lines = _lines(MASFLY)
    man = {k: v for k, v in lines[0]["manifest"].items() if k != "header_sha256"}
    path = _write(
        tmp_path / "old.jsonl.gz", [{**lines[0], "format": 2, "manifest": man}, *lines[1:]]
    )
    assert "export format 2 has a manifest of its rows only" in _refused(path, capsys)
    assert upgrade_main(["--upgrade", str(path)]) == 0
    assert main(["report", "--from-export", str(path)]) == 0


def _bomb(path: Path, megabytes: int) -> Path:
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = b"\0" * (1 << 20)
    path.write_bytes(b"".join(z.compress(zeros) for _ in range(megabytes)) + z.flush())
    return path


def test_a_gzip_bomb_is_refused_before_it_is_inflated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bomb = _bomb(tmp_path / "bomb.jsonl.gz", 300)  # 300 KB that inflate to 300 MB
    tracemalloc.start()
    try:
        err = _refused(bomb, capsys)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "decompresses to over" in err and "100x its size" in err
    assert peak < 100_000_000
    big = tmp_path / "big.jsonl.gz"
    big.write_bytes(bomb.read_bytes() * 8)  # over 2 MB on disk: refused unread
    assert "over the 2,000,000 an export may take" in _refused(big, capsys)


@pytest.mark.parametrize("cut", ["corrupt", "truncated"])
def test_a_corrupt_or_truncated_deflate_stream_is_one_line(
    cut: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blob = MASFLY.read_bytes()
    # corrupt: the first deflate block's type made invalid (zlib.error, not a gzip CRC error)
    bad = blob[:10] + b"\xff" + blob[11:] if cut == "corrupt" else blob[: len(blob) // 2]
    path = tmp_path / "x.jsonl.gz"
    path.write_bytes(bad)
    err = _refused(path, capsys)
    assert str(path) in err and ("gzip" in err or "deflat" in err)
