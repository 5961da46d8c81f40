"""Any OpenAI client, overseen by changing its base URL to `overseer proxy`.

    pip install overseer-agents
    python examples/proxy.py                      # starts `overseer serve qwen2.5-coder-0.5b`

The agent here is a plain tool loop on the `openai` SDK (what most frameworks do underneath).
It runs twice: against the model server directly, then through `overseer proxy --upstream URL`
(started by this script), which applies the rule tier to every request. Headers name the run
and the agent, so all requests of one run share one ledger and one loop memory. The task and
the token count are in _shared.py; the proxy's trace of the run says what acted.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

from _shared import (
    QUESTION,
    TokenCount,
    Tools,
    ensure_server,
    noisy_page,
    options,
    outcome,
    overseer_command,
    report,
)
from openai import OpenAI

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "fetch_page",
            "description": "Open a web page and return its text.",
            "parameters": {
                "type": "object",
                "properties": {"url": {"type": "string"}},
                "required": ["url"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "next_page",
            "description": "Return page n of the article last opened.",
            "parameters": {
                "type": "object",
                "properties": {"n": {"type": "integer"}},
                "required": ["n"],
            },
        },
    },
]


def agent(client: OpenAI, model: str, tools: Tools, max_calls: int) -> str | None:
    """A minimal tool-calling loop: call the model, run the tools it asks for, until it answers."""
    messages: list[dict] = [{"role": "user", "content": QUESTION}]
    for _ in range(max_calls):
        reply = client.chat.completions.create(
            model=model, messages=messages, tools=TOOLS, max_tokens=128, temperature=0
        )
        msg = reply.choices[0].message
        if not msg.tool_calls:
            return msg.content
        messages.append(msg.model_dump(exclude_none=True))
        for call in msg.tool_calls:
            args = json.loads(call.function.arguments or "{}")
            fn = getattr(tools, call.function.name, None)
            try:
                result = fn(**args) if fn else f"unknown tool {call.function.name}"
            except TypeError as exc:  # arguments that do not fit the tool
                result = f"error: {exc}"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return None


def why_none(answer: str | None, max_calls: int) -> str:
    """Why a run has no answer: the loop ran out of calls (None), or the reply was empty."""
    return f"stopped at {max_calls} calls" if answer is None else "an empty reply"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_proxy(upstream: str, trace_dir: str) -> tuple[subprocess.Popen, str]:
    """`overseer proxy --upstream URL` on a free port; its base URL once it answers."""
    port = free_port()
    args = ["--upstream", upstream, "--port", str(port), "--trace-dir", trace_dir]
    cmd = [*overseer_command(), "proxy", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(120):
        if proc.poll() is not None:
            sys.exit(f"example: the proxy exited: {(proc.stderr.read() if proc.stderr else '')}")
        try:
            with urllib.request.urlopen(url + "/models", timeout=2):
                return proc, url
        except OSError as exc:
            if getattr(exc, "code", None):  # an HTTP error: the proxy is up
                return proc, url
            time.sleep(0.5)
    proc.terminate()
    sys.exit(f"example: the proxy did not answer at {url}")


def rules_fired(trace_dir: str) -> dict[str, int]:
    """What the rule tier did, from the `rule` events of the proxy's traces."""
    fired: Counter[str] = Counter()
    for path in Path(trace_dir).glob("**/*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event.get("event") == "rule":
                fired[str(event.get("rule"))] += 1
    return dict(fired)


def main() -> None:
    a = options(__doc__)
    url, page = ensure_server(a.base_url, a.port, a.model), noisy_page(a.page_chars)
    tools = Tools(page)
    with TokenCount(url) as count:
        answer = agent(OpenAI(base_url=count.base_url, api_key="none"), a.model, tools, a.max_calls)
        without = outcome(count, tools, answer, why_none(answer, a.max_calls))
    tools = Tools(page)
    with TokenCount(url) as count, tempfile.TemporaryDirectory() as traces:
        proc, proxy_url = start_proxy(count.base_url, traces)
        try:
            client = OpenAI(
                base_url=proxy_url,
                api_key="none",  # passed through to the upstream, never logged
                default_headers={"X-Overseer-Run": "example-1", "X-Overseer-Agent": "researcher"},
            )
            answer = agent(client, a.model, tools, a.max_calls)
        finally:
            proc.terminate()  # the proxy ends every run's trace on SIGTERM
            proc.wait(timeout=60)
        with_ = outcome(count, tools, answer, why_none(answer, a.max_calls))
        acted = rules_fired(traces)
    report("any OpenAI client through `overseer proxy --upstream URL`", without, with_, acted)


if __name__ == "__main__":
    main()
