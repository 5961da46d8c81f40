"""What every example shares: the page-and-loop task, the model server, the token count, the
printout. Not part of overseer: plain Python an example imports from its own folder.

The task: answer one question whose fact sits in the middle of a long, noisy web page
(`fetch_page`), with a second tool (`next_page`) that always says "not here, try the next
page" (a trap: a small model pages on and on). Without overseer the agent reads the whole
page on every later call and pages until the framework's cap; with overseer's rule tier
the page is cut to the passages about the question (purification) and the paging loop is
refused after two identical results (loop breaker), so the agent answers.

Tokens are counted as the model server reports them (`usage` of every reply), by overseer's
counting relay (`UsageMeter`) between the agent and the server, the same way with and without
overseer.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field

from overseer.proxy import UsageMeter

MODEL = "qwen2.5-coder-0.5b"
URL = "https://wiki.local/Tinbel"
QUESTION = (
    f"What is the aperture of the Tinbel telescope? Open {URL} with fetch_page and answer from it."
)
FACT = "The Tinbel telescope has a primary mirror aperture of 240 cm."
RIGHT = re.compile(r"\b240\s*(cm|centimet)", re.I)
TRAP = "Not here. Call next_page with n+1."


def noisy_page(chars: int = 12_000) -> str:
    """A page of about `chars` characters: navigation, unrelated articles, the fact about
    40% in, and a footer that sends the reader to next_page."""
    nav = "Home | News | Sport | Weather | Shop | Login | Help | Contact\n"
    footer = "\nEnd of page 1 of 12. The article continues: call next_page with n=2.\n"
    parts, i, size = [f"Tinbel Observatory - Wiki\n{nav}"], 0, 0
    while size < chars - len(footer):
        if i == int(chars * 0.4) // 190:
            parts.append(f"Instruments. {FACT} The dome opened in 1987.\n\n")
        parts.append(
            f"Article {i}: local news on the harbour ferries and the city budget for week {i}. "
            f"Readers discussed schedules and costs at length.\n{nav}\n"
        )
        size += len(parts[-1])
        i += 1
    return "".join(parts)[: chars - len(footer)] + footer


@dataclass
class Tools:
    """The task's two tools, counting the calls that really ran."""

    page: str
    ran: Counter[str] = field(default_factory=Counter)

    def fetch_page(self, url: str) -> str:
        """Open a web page and return its text."""
        self.ran["fetch_page"] += 1
        return self.page

    def next_page(self, n: int) -> str:
        """Return page n of the article last opened."""
        self.ran["next_page"] += 1
        return TRAP


# -- the model server -------------------------------------------------------------------------


def _reachable(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(base_url.rstrip("/") + "/models", timeout=3) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def overseer_command() -> list[str]:
    """The `overseer` command: on PATH, else beside this Python (a venv not activated)."""
    exe = shutil.which("overseer") or shutil.which("overseer", path=os.path.dirname(sys.executable))
    return [exe] if exe else [sys.executable, "-m", "overseer.cli"]


def ensure_server(base_url: str | None, port: int, model: str = MODEL) -> str:
    """The OpenAI base URL of a running server: `base_url` if given, else the one on
    127.0.0.1:`port`, else `overseer serve MODEL --port PORT` started now (stopped at exit)."""
    if base_url:
        if not _reachable(base_url):
            sys.exit(f"example: no OpenAI-compatible server answers at {base_url}")
        return base_url
    url = f"http://127.0.0.1:{port}/v1"
    if _reachable(url):
        return url
    cmd = overseer_command()
    threads = str(len(os.sched_getaffinity(0)))  # never more threads than the cores we may use
    cmd += ["serve", model, "--port", str(port), "--threads", threads]
    print(f"starting: overseer serve {model} --port {port} (the model loads in seconds)")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def stop() -> None:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()

    atexit.register(stop)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = (proc.stderr.read() if proc.stderr else "").strip().splitlines()
            sys.exit(f"example: `overseer serve {model}` exited: {err[-1] if err else '?'}")
        if _reachable(url):
            return url
        time.sleep(1)
    stop()
    sys.exit(f"example: `overseer serve {model}` did not answer at {url} within 300 s")


class TokenCount(UsageMeter):
    """A relay on 127.0.0.1 in front of an OpenAI-compatible server that sums the `usage` the
    server reports for each chat completion (streamed replies included): overseer's
    `UsageMeter`, plus each request's prompt tokens in order (`prompts`)."""

    @property
    def prompts(self) -> list[int]:
        """Each chat completion's prompt tokens, in order."""
        return [c.prompt_tokens for c in self.completions]


# -- options and the printout -------------------------------------------------------------


def options(doc: str | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=(doc or "").split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    ap.add_argument("--base-url", help="an OpenAI-compatible server (default: overseer serve)")
    ap.add_argument("--port", type=int, default=8080, help="port of `overseer serve` (8080)")
    ap.add_argument("--model", default=MODEL, help=f"model name to ask for ({MODEL})")
    ap.add_argument("--max-calls", type=int, default=8, help="model calls per run, at most (8)")
    ap.add_argument("--page-chars", type=int, default=12_000, help="page length (12,000)")
    return ap.parse_args()


@dataclass
class Outcome:
    """One run: what the server counted, which tools ran, the answer (None: none given)."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    tools: Counter[str]
    answer: str | None
    note: str = ""
    prompts: tuple[int, ...] = ()

    @property
    def after_page(self) -> int:
        """Prompt tokens of the second request: the first that carries the fetched page (the
        first request, identical in both runs, fetches it); 0 when the run made one call."""
        return self.prompts[1] if len(self.prompts) > 1 else 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def right(self) -> bool:
        return bool(self.answer and RIGHT.search(self.answer))


def outcome(count: TokenCount, tools: Tools, answer: object, note: str = "") -> Outcome:
    text = None if answer is None else " ".join(str(answer).split())
    return Outcome(
        count.calls,
        count.prompt_tokens,
        count.completion_tokens,
        tools.ran,
        text or None,
        note,
        tuple(count.prompts),
    )


def report(title: str, without: Outcome, with_: Outcome, acted: dict[str, int]) -> None:
    """The example's printout; the last line is machine-readable (`result: {...}`)."""
    print(f"\n{title}")
    print(f"question: {QUESTION}  (right answer: 240 cm)")
    for name, o in (("without overseer", without), ("with overseer", with_)):
        tools = ", ".join(f"{k} {v}" for k, v in sorted(o.tools.items())) or "none"
        said = repr(o.answer[:100]) if o.answer else f"none ({(o.note or 'no answer')[:120]})"
        print(
            f"  {name:17} {o.calls:2} model calls, {o.tokens:7,} tokens "
            f"(prompt {o.prompt_tokens:,}); tools run: {tools}"
        )
        print(f"  {'':17} answer: {said} -> {'right' if o.right else 'wrong'}")
    ratio = with_.tokens / without.tokens if without.tokens else float("nan")
    fired = ", ".join(f"{k} {v}" for k, v in sorted(acted.items()) if v) or "nothing"
    print(f"  tokens with / without overseer: {ratio:.2f}x")
    print(
        f"  prompt tokens of the request after the page: {with_.after_page:,} with, "
        f"{without.after_page:,} without"
    )
    print(f"  what acted: {fired}")
    summary = {
        "tokens_without": without.tokens,
        "tokens_with": with_.tokens,
        "right_without": without.right,
        "right_with": with_.right,
        "acted": {k: v for k, v in acted.items() if v},
        "after_page_with": with_.after_page,
        "after_page_without": without.after_page,
    }
    print("result: " + json.dumps(summary, sort_keys=True))
