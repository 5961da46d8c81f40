"""Shared helper of the CLI tests: run `overseer` in process and capture what it printed."""

from __future__ import annotations

import pytest

from overseer.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
