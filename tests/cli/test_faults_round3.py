"""Issue 43, rows 1, 2, 3 and 5: bad trajectory files are one line naming the file (exit 2),
and Ctrl-C during `replay` says what it finished instead of claiming kept results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from overseer.cli import main

from .conftest import WordTokenizer


def _one_line(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("overseer: error: "), err
    return lines[0]


@pytest.mark.parametrize("command", ["replay", "attribute"])
def test_row1_deeply_nested_json_is_one_line(
    command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = tmp_path / "nested.json"
    f.write_text("[" * 200_000)
    err = _one_line(capsys, command, str(f))
    assert str(f) in err and "nested too deeply" in err


@pytest.mark.parametrize("command", ["replay", "attribute"])
@pytest.mark.parametrize("in_dir", [False, True], ids=["file", "folder"])
def test_rows2_3_non_utf8_file_is_named(
    command: str, in_dir: bool, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = tmp_path / "logs" / "bad.json"
    f.parent.mkdir()
    f.write_bytes(b'{"history": "\xff"}')
    err = _one_line(capsys, command, str(f.parent if in_dir else f))
    assert str(f) in err and "not UTF-8" in err and "0xff" in err


def test_row1_deep_json_lines_row_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = tmp_path / "t.jsonl"
    f.write_text('{"event": "run_start"}\n' + "[" * 100_000 + "\n")
    err = _one_line(capsys, "replay", str(f))
    assert f"{f}, line 2" in err and "nested too deeply" in err


def _chat(tmp: Path, n: int) -> Path:
    d = tmp / "chats"
    d.mkdir()
    for i in range(n):
        msgs = [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": "a"}]
        (d / f"c{i}.json").write_text(json.dumps(msgs))
    return d


def test_row5_ctrl_c_during_replay_prints_what_finished(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import overseer.traces.replay as rp

    real = rp.replay
    done: list[str] = []

    def replay(t: Any, tok: Any, settings: Any) -> Any:
        if len(done) == 2:
            raise KeyboardInterrupt
        done.append(t.id)
        return real(t, tok, settings)

    monkeypatch.setattr(rp, "ModelTokenizer", WordTokenizer)
    monkeypatch.setattr(rp, "replay", replay)
    code = main(["replay", str(_chat(tmp_path, 4))])
    out, err = capsys.readouterr()
    assert code == 130
    assert err.strip().splitlines()[-1] == (
        "overseer: interrupted; 2 of 4 logs replayed (printed above); replay stores nothing"
    )
    assert "finished results are kept" not in err
    assert all(i in out for i in done) and "total (2 logs)" in out


def test_row5_ctrl_c_before_any_log_says_none_finished(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import overseer.traces.replay as rp

    def replay(t: Any, tok: Any, settings: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(rp, "ModelTokenizer", WordTokenizer)
    monkeypatch.setattr(rp, "replay", replay)
    code = main(["replay", str(_chat(tmp_path, 3))])
    out, err = capsys.readouterr()
    assert code == 130 and out == ""
    assert "0 of 3 logs replayed (none finished); replay stores nothing" in err
