"""Every script in examples/ run as a user runs it, against a scripted OpenAI-compatible server
(tests/integrations/loopback.py: a real HTTP server, replies from a script, usage from the
request's size), so each example's without/with comparison is checked in seconds.

The scripted model walks into the task's trap as a small model does: it opens the page, then
calls `next_page` with a new page number for as long as the tools are offered, and answers
only when overseer refused a call or no tool is offered; its answer holds "240 cm" only when
the fact was in what it was sent. The real model runs in test_examples_qwen.py.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
FRAMEWORKS = {
    "langgraph_agent.py": "langchain",
    "openai_agents_sdk.py": "agents",
    "proxy.py": None,
    "pydantic_ai_agent.py": "pydantic_ai",
    "smolagents_agent.py": "smolagents",
    "team.py": None,
}


def _loopback() -> ModuleType:
    path = ROOT / "tests" / "integrations" / "loopback.py"
    spec = importlib.util.spec_from_file_location("examples_loopback", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


lb = _loopback()


def _text(body: Mapping[str, Any]) -> str:
    out = []
    for m in body.get("messages", []):
        c = m.get("content")
        out.append(c if isinstance(c, str) else json.dumps(c))
    return "\n".join(out)


def page_and_loop(body: Mapping[str, Any], n: int) -> Any:
    """A small model on the task: page on while tools are offered and nothing was refused,
    writing down the fact once it read it (as a model's text beside its call does)."""
    text = _text(body)
    answer = "The aperture is 240 cm." if "240 cm" in text else "I could not find it."
    fmt = body.get("response_format")
    if fmt is not None:  # an overseer team agent: one JSON step under the schema
        offered = "fetch_page" in json.dumps(fmt)
        if not offered or "[overseer] Not run" in text:
            step = {"thought": "done", "action": "answer", "answer": answer}
        elif "Tinbel Observatory" not in text and "fetch_page(" not in text:
            step = {"thought": "open", "action": "fetch_page", "args": {"url": "u"}}
        else:  # its thought keeps what it read, as a model's does
            seen = "the page says 240 cm; " if "240 cm" in text else ""
            step = {"thought": seen + "next page", "action": "next_page", "args": {"n": n + 1}}
        return lb.Reply(text=json.dumps(step))
    tools = [t.get("function", {}).get("name") for t in body.get("tools") or []]
    if not tools or "[overseer] Not run" in text:
        if "final_answer" in tools:  # smolagents answers through its final_answer tool
            return lb.Reply(calls=(lb.ToolCall("final_answer", {"answer": answer}),))
        return lb.Reply(text=answer)
    if not any(m.get("role") == "assistant" for m in body.get("messages", [])):
        return lb.Reply(calls=(lb.ToolCall("fetch_page", {"url": "https://wiki.local/Tinbel"}),))
    seen = "The page says 240 cm; checking the next page." if "240 cm" in text else ""
    return lb.Reply(text=seen, calls=(lb.ToolCall("next_page", {"n": n + 1}),))


@pytest.fixture
def scripted() -> Iterator[Any]:
    with lb.LoopbackServer(page_and_loop, model="qwen2.5-coder-0.5b") as srv:
        yield srv


def run_example(name: str, base_url: str, *args: str, timeout: float = 300) -> dict[str, Any]:
    """Run examples/NAME as a script; return its `result:` line, printing its output."""
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name), "--base-url", base_url, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )
    print(proc.stdout, proc.stderr[-3000:])
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("result: ")]
    assert len(lines) == 1, proc.stdout
    return dict(json.loads(lines[0].removeprefix("result: ")))


@pytest.mark.parametrize("name", sorted(FRAMEWORKS))
def test_example_cuts_the_page_and_the_loop(name: str, scripted: Any) -> None:
    module = FRAMEWORKS[name]
    if module is not None and importlib.util.find_spec(module) is None:
        pytest.fail(f"{name} needs {module}: scripts/setup.sh installs it (the dev extra)")
    res = run_example(name, scripted.base_url, "--page-chars", "6000", "--max-calls", "8")
    # the page was cut (purification) and the paging loop refused (loop breaker) ...
    assert res["acted"].get("purification", 0) >= 1, res
    assert res["acted"].get("loop_breaker", 0) >= 1, res
    # ... so the run with overseer cost fewer tokens, as the server counted them, and its
    # answer was written from a request that still held the fact
    assert 0 < res["tokens_with"] < res["tokens_without"], res
    assert 0 < res["after_page_with"] < res["after_page_without"], res
    assert res["right_with"], res
    assert res["tokens_with"] + res["tokens_without"] == scripted.prompt_tokens + (
        scripted.completion_tokens
    )


def test_example_refuses_a_missing_server() -> None:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / "team.py"), "--base-url", "http://127.0.0.1:9/v1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    assert "no OpenAI-compatible server answers at http://127.0.0.1:9/v1" in proc.stderr
    assert "Traceback" not in proc.stderr
