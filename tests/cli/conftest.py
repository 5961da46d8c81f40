"""Shared helpers of the CLI tests: run `overseer` in process and capture what it printed;
load no model (`no_model`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from overseer.cli import main
from overseer.models import ScriptedModel


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


class WordTokenizer:
    """A tokenizer stand-in for `replay` (counting words): no model is loaded."""

    @classmethod
    def load(cls, name: str, **kw: Any) -> WordTokenizer:
        return cls()

    def count(self, text: str) -> int:
        return len(text.split())

    def close(self) -> None:
        pass


@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """`replay` counts words and every model command gets a scripted model answering "1"."""
    monkeypatch.setattr("overseer.traces.replay.ModelTokenizer", WordTokenizer)
    reply = json.dumps({"thought": "t", "action": "answer", "answer": "1"})
    model = ScriptedModel(lambda messages: reply)  # the same reply to every call
    monkeypatch.setattr("overseer.models.load_model", lambda *a, **kw: model)
