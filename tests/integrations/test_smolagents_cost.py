"""The smolagents callback's cost benchmark runs and shows what issue 31 asks: no token when no
rule fires, and (benchmarks/smolagents_callback.py) its table on a scripted model."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest


@pytest.fixture(scope="module")
def bench(benchmark_script: Callable[[str], ModuleType]) -> ModuleType:
    return benchmark_script("smolagents_callback")


def test_no_rule_firing_costs_no_token(bench: ModuleType) -> None:
    plain = bench.measure(bench.clean, None, 1, 12)
    sup = bench.measure(bench.clean, 2, 1, 12)
    assert sup.firings == 0 and plain.calls == sup.calls == 7
    assert sup.prompt_tokens == plain.prompt_tokens  # token for token
    assert 0 < sup.hooks < sup.seconds


def test_unparsable_calls_end_early_with_escalation_and_cost_more_without(
    bench: ModuleType,
) -> None:
    plain = bench.measure(bench.text_calls, None, 1, 12)
    esc = bench.measure(bench.text_calls, 2, 1, 12)
    notes = bench.measure(bench.text_calls, 0, 1, 12)
    # with escalation: three unparsable replies (loop_limit 3), two refused, then the answer
    assert plain.calls == 13 and esc.calls == 6
    assert esc.prompt_tokens < plain.prompt_tokens < notes.prompt_tokens


def test_the_benchmark_prints_its_table(
    bench: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    assert bench.main(["--repeats", "1"]) == 0
    out = capsys.readouterr().out
    for cell in ("clean", "text-calls", "loop", "with, no escalation", "1.000x", "callback / step"):
        assert cell in out
