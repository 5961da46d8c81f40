"""Replay recorded closing turns with each candidate wording: which keeps the answer (issue 48).

The closing turn is the user turn overseer adds when it closes an agent's tools (after refused
calls, or at the last step). Its wording is chosen here without new agent runs: each recorded
request of `benchmarks/framework_tasks.py` whose last message is a closing turn is sent again
to the same model with that last message written in each wording of
`overseer.runtime.steps.CLOSED_WORDINGS`, and once with no closing turn at all (`none`: the
request as it was, minus that message). Each reply is scored as the run was (right: the gold
number, or for an unanswerable task, saying it could not be found with no value; invented: a
value on a task that has none). A wording is kept only where it is right at least as often as
`none`. Replies are stored (SQLite, keyed by request and wording): a rerun resumes.

    taskset -c 0 python benchmarks/closing_replay.py results/peers-dev.sqlite \\
        --serve 'qwen2.5-coder-0.5b --threads 1 --n-ctx 32768' --store results/closing.sqlite

Tune on development runs only (seed 29): the held-out stores are for checking.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import shlex
import sqlite3
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from openai import OpenAI

from overseer.runtime.steps import CLOSED_WORDINGS, closed_turn
from overseer.stats import mcnemar_exact
from overseer.tasks.pageloop import UNANSWERABLE, PageTask, invents, score_answer, task_by_id

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from _frameworks_report import Row, Store  # noqa: E402
from _frameworks_runners import overseer  # noqa: E402

NONE = "none"


def closing_of(row: Row, task: PageTask) -> int | None:
    """The index of the closing turn in the row's last request (a user turn after the first
    that restates the task's prompt in one of the wordings), or None."""
    messages = (row.last_request or {}).get("messages") or []
    known = {closed_turn(task.prompt, w) for w in CLOSED_WORDINGS}
    for i in range(len(messages) - 1, 0, -1):
        m = messages[i]
        if m.get("role") == "user" and str(m.get("content")) in known:
            return i
    return None


def variants(request: dict[str, Any], at: int, task: PageTask) -> Iterator[tuple[str, list]]:
    """(wording, messages): the request's messages with the closing turn in each wording, and
    without it (`none`)."""
    messages = request["messages"]
    for w in CLOSED_WORDINGS:
        turn = {"role": "user", "content": closed_turn(task.prompt, w)}
        yield w, [*messages[:at], turn, *messages[at + 1 :]]
    yield NONE, [*messages[:at], *messages[at + 1 :]]


class Replies:
    """Replies in SQLite keyed by (request digest, wording): a rerun asks only what is new."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path)
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS replies (digest TEXT, wording TEXT, text TEXT, "
            "PRIMARY KEY (digest, wording))"
        )

    def get(self, digest: str, wording: str) -> str | None:
        sql = "SELECT text FROM replies WHERE (digest, wording) = (?, ?)"
        found = self.db.execute(sql, (digest, wording)).fetchone()
        return None if found is None else str(found[0])

    def put(self, digest: str, wording: str, text: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO replies VALUES (?, ?, ?)", (digest, wording, text))
        self.db.commit()


def ask(client: OpenAI, request: dict[str, Any], messages: list) -> str:
    """The model's text reply to `request` with `messages` (temperature 0, its token cap)."""
    body = {k: v for k, v in request.items() if k not in ("messages", "stream", "stream_options")}
    body.update(messages=messages, temperature=0.0)
    reply = client.chat.completions.create(**body)
    msg = reply.choices[0].message
    if msg.tool_calls:  # a call where only an answer may come: no answer
        return ""
    return msg.content or ""


def replay(rows: Sequence[Row], replies: Replies, client: OpenAI | None) -> list[dict[str, Any]]:
    """One result per (row with a closing turn, wording): right and invented."""
    out = []
    for row in rows:
        task = task_by_id(row.task)
        at = closing_of(row, task)
        if at is None or row.last_request is None:
            continue
        digest = hashlib.sha256(json.dumps(row.last_request, sort_keys=True).encode()).hexdigest()
        for wording, messages in variants(row.last_request, at, task):
            text = replies.get(digest, wording)
            if text is None and client is None:
                continue  # no server: the table of the replies stored so far
            if text is None:
                text = ask(client, row.last_request, messages)
                replies.put(digest, wording, text)
            right = row.error is None and score_answer(task, text).correct
            invented = task.kind in UNANSWERABLE and invents(task, text)  # a value, none there
            out.append({"row": row, "wording": wording, "kind": task.kind, "answer": text,
                        "right": right, "invented": invented})  # fmt: skip
    return out


def tables(results: Sequence[dict[str, Any]]) -> None:
    """One table per family (the fact can be had / it cannot), then both together."""
    for name, keep in (
        ("answerable", lambda r: r["kind"] not in UNANSWERABLE),
        ("unanswerable", lambda r: r["kind"] in UNANSWERABLE),
        ("all", lambda r: True),
    ):
        print(f"\n{name}:")
        table([r for r in results if keep(r)])


def table(results: Sequence[dict[str, Any]]) -> None:
    """Per wording: n, right, invented, and the exact McNemar test of right against `none`."""
    by: dict[str, dict[int, dict[str, Any]]] = {}
    for r in results:
        by.setdefault(r["wording"], {})[id(r["row"])] = r
    common = set.intersection(*(set(g) for g in by.values())) if by else set()
    by = {w: {k: g[k] for k in common} for w, g in by.items()}  # the requests every wording has
    base = by.get(NONE, {})
    print("| wording | n | right | invented | vs none: wins / losses, p |")
    print("|---|---|---|---|---|")
    for w, got in by.items():
        wins = sum(g["right"] and not base[k]["right"] for k, g in got.items() if k in base)
        losses = sum(base[k]["right"] and not g["right"] for k, g in got.items() if k in base)
        p = mcnemar_exact(wins, losses) if w != NONE else 1.0
        right = sum(g["right"] for g in got.values())
        invented = sum(g["invented"] for g in got.values())
        print(f"| {w} | {len(got)} | {right} | {invented} | {wins} / {losses}, p = {p:.2f} |")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("stores", nargs="+", type=Path, help="framework_tasks.py stores")
    ap.add_argument("--serve", help="`overseer serve SERVE` for the replays, e.g. "
                    "'qwen2.5-coder-0.5b --threads 1 --n-ctx 32768'")  # fmt: skip
    ap.add_argument("--base-url", help="or a running OpenAI-compatible server (neither: the "
                    "table of the replies stored so far)")  # fmt: skip
    ap.add_argument("--store", type=Path, default=Path("results/closing-replay.sqlite"))
    ap.add_argument("--seed", type=int, default=29, help="the runs' task seed (29: development)")
    a = ap.parse_args(argv)
    for path in a.stores:
        if not path.is_file():
            ap.error(f"store {path}: expected a framework_tasks.py store, no such file")
    rows = [r for p in a.stores for r in Store(p).rows() if r.seed == a.seed]
    replies = Replies(a.store)
    with contextlib.ExitStack() as stack:
        url = a.base_url
        if a.serve:
            serve = ("serve", *shlex.split(a.serve))
            url = stack.enter_context(overseer(*serve, health="/health", wait_s=600))
        client = OpenAI(base_url=url, api_key="none", max_retries=0, timeout=600) if url else None
        results = replay(rows, replies, client)
    print(f"{len({id(r['row']) for r in results})} recorded closing turns, seed {a.seed}")
    tables(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
