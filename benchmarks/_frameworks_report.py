"""The store and the report of benchmarks/framework_tasks.py: each run a `Row` in SQLite
(`Store`), each arm paired with its base on the same tasks (`Pairing`), the tables printed and
the evidence page written from the store.

Not a package: the entry point puts this folder on `sys.path`.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from _frameworks_runners import ARMS, FRAMEWORKS

# -- one run, the store ---------------------------------------------------------------------


@dataclass
class Row:
    """One run of one framework on one task in one arm, as stored."""

    model: str
    framework: str
    arm: str
    seed: int
    task: str
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    evaluated_tokens: int = 0
    evaluated_from: str = "none"
    page_tokens: int = 0  # prompt tokens of the first request that carries the fetched page
    answer: str | None = None
    right: bool = False
    error: str | None = None
    acted: dict[str, int] = field(default_factory=dict)
    tools: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    commit: str = ""  # the code the run used (`+dirty`: src/ differed from it)
    kind: str = "answerable"  # the task's kind (pageloop.KINDS)
    invented: bool = False  # an unanswerable task answered with a value it could not have read
    last_request: dict[str, Any] | None = None  # the run's last chat request, for replays


class Store:
    """Rows in SQLite, keyed by (model, framework, arm, seed, task): a rerun skips them."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path)
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS runs (model, framework, arm, seed, task, row TEXT, "
            "PRIMARY KEY (model, framework, arm, seed, task))"
        )
        self.db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")

    def has(self, *key: object) -> bool:
        """Whether the run (model, framework, arm, seed, task) is stored."""
        sql = "SELECT 1 FROM runs WHERE (model, framework, arm, seed, task) = (?, ?, ?, ?, ?)"
        return self.db.execute(sql, key).fetchone() is not None

    def put(self, r: Row, *, arm: str | None = None) -> None:
        """Store `r` under its key, or under `arm` instead of its own (an archived run)."""
        key = (r.model, r.framework, arm or r.arm, r.seed, r.task)
        self.db.execute(
            "INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?, ?)", (*key, json.dumps(asdict(r)))
        )
        self.db.commit()

    def absorb(self, path: Path, *, replace: bool = False) -> int:
        """Add the rows of a gzipped JSON-lines export the store does not have; how many.
        `replace`: a row the store has is superseded instead (a rerun at newer code): the old
        one is archived under the key `ARM-COMMIT`, which the tables do not read. Without it,
        another run of a stored key is kept as that history (an export lists an arm's archived
        runs after its current one, so a store rebuilt from it is the store it came from)."""
        import gzip

        added = 0
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                r = Row(**json.loads(line))
                key = (r.model, r.framework, r.arm, r.seed, r.task)
                stored = self._stored(key)
                if stored is not None and not replace:
                    added += self._keep_as_history(r, stored)
                    continue
                if stored is not None:
                    self._archive(key, stored)
                self.put(r)
                added += 1
        return added

    def _stored(self, key: tuple[str, str, str, int, str]) -> dict[str, Any] | None:
        """The stored run of `key`, as its JSON object, or None."""
        sql = "SELECT row FROM runs WHERE (model, framework, arm, seed, task) = (?, ?, ?, ?, ?)"
        found = self.db.execute(sql, key).fetchone()
        return None if found is None else dict(json.loads(found[0]))

    def _keep_as_history(self, r: Row, stored: dict[str, Any]) -> int:
        """Store `r`, a run other than `stored` of its key, under `ARM-COMMIT`; 0 when it is
        the stored run or that history is already kept."""
        old = f"{r.arm}-{r.commit or 'old'}"
        if stored == asdict(r) or self.has(r.model, r.framework, old, r.seed, r.task):
            return 0
        self.put(r, arm=old)
        return 1

    def _archive(self, key: tuple[str, str, str, int, str], stored: dict[str, Any]) -> None:
        """Move the stored run `key` to the key of its arm and commit (`with-b5ea3c1`)."""
        where = "WHERE (model, framework, arm, seed, task) = (?, ?, ?, ?, ?)"
        old = f"{key[2]}-{stored.get('commit') or 'old'}"
        self.db.execute(f"UPDATE OR REPLACE runs SET arm = ? {where}", (old, *key))
        self.db.commit()

    def export(self, path: Path) -> int:
        """Write every row as gzipped JSON lines, in key order (what `absorb` reads back);
        how many."""
        import gzip

        sql = "SELECT row FROM runs ORDER BY model, framework, arm, seed, task"
        rows = [v for (v,) in self.db.execute(sql)]
        with path.open("wb") as out, gzip.GzipFile("", "wb", fileobj=out, mtime=0) as f:
            f.write("".join(f"{v}\n" for v in rows).encode("utf-8"))  # same rows, same bytes
        return len(rows)

    def rows(self) -> list[Row]:
        """The stored runs, less the ones kept under another arm's key (an older run of an
        arm, archived as `with-COMMIT` when it was rerun): they are history, not a result."""
        sql = "SELECT row FROM runs WHERE json_extract(row, '$.arm') = arm"
        return [Row(**json.loads(v)) for (v,) in self.db.execute(sql)]

    def note(self, key: str, value: str | None = None) -> str | None:
        """Read (or, with a value, write) one line of the run's provenance."""
        if value is not None:
            self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
            self.db.commit()
        found = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if found is None else str(found[0])


# -- paired summaries, tables, the page -----------------------------------------------------

Ratio = tuple[float, float, float]  # sum(arm) / sum(base), paired bootstrap 95% interval


@dataclass(frozen=True)
class Pairing:
    """One arm of one framework against `base` on the tasks both ran."""

    arm: str
    base: str
    runs: list[tuple[Row, Row]]  # (base, arm) per common task

    def ratio(self, pick: Callable[[Row], int], where: Callable[[Row], bool] = bool) -> Ratio:
        from overseer.bench.stats import bootstrap_ratio

        sel = [(pick(b), pick(a)) for b, a in self.runs if where(a)]
        return bootstrap_ratio([s[0] for s in sel], [s[1] for s in sel], seed=0)

    def cells(self) -> list[str]:
        """One table row (the base's own row has no comparison)."""
        from overseer.stats import mcnemar_exact

        arm, n, own = [a for _, a in self.runs], len(self.runs), self.arm == self.base
        wins = sum(a.right and not b.right for b, a in self.runs)
        losses = sum(b.right and not a.right for b, a in self.runs)
        pages = [r.page_tokens for r in arm if r.page_tokens]
        tok, ev = (lambda r: r.prompt_tokens), (lambda r: r.evaluated_tokens)
        acted, quiet = (
            self.ratio(tok, lambda r: bool(r.acted)),
            self.ratio(tok, lambda r: not r.acted),
        )
        paired = [f"{wins}/{losses}", f"{mcnemar_exact(wins, losses):.2f}"]
        return [
            self.arm if own else f"{self.arm} vs {self.base}", str(n),
            f"{sum(r.answer is not None and r.error is None for r in arm)}/{n}",
            f"{sum(r.right for r in arm)}/{n}", *(["", ""] if own else paired),
            f"{sum(map(tok, arm)):,}", "" if own else _x(self.ratio(tok)),
            f"{sum(map(ev, arm)):,}", "" if own else _x(self.ratio(ev)),
            f"{sum(bool(r.acted) for r in arm)}/{n}", "" if own else _x(acted, False),
            "" if own else _x(quiet, False), f"{sum(pages) / max(1, len(pages)):,.0f}",
        ]  # fmt: skip


def _x(r: Ratio, interval: bool = True) -> str:
    if r[0] != r[0]:
        return "-"
    return f"{r[0]:.2f}x ({r[1]:.2f}-{r[2]:.2f})" if interval else f"{r[0]:.2f}x"


def pair(rows: Sequence[Row], framework: str, arm: str, base: str = "without") -> Pairing | None:
    """`arm` against `base` for `framework` on their common (model, seed, task) runs."""

    def of(name: str) -> dict[tuple[str, int, str], Row]:
        mine = (r for r in rows if (r.framework, r.arm) == (framework, name))
        return {(r.model, r.seed, r.task): r for r in mine}

    b, a = of(base), of(arm)
    keys = sorted(b.keys() & a.keys())
    return Pairing(arm, base, [(b[k], a[k]) for k in keys]) if keys else None


COLUMNS = (
    "arm", "n", "answered", "right", "W/L vs base", "McNemar p", "prompt tokens",
    "x base [95%]", "evaluated", "x base [95%] ", "acted on", "x where acted",
    "x where none", "page request",
)  # fmt: skip


def pairings(rows: Sequence[Row], framework: str) -> list[Pairing]:
    """Every arm against `without`, then masking off against masking on (issue 39 item 6)."""
    found = [pair(rows, framework, arm) for arm in ARMS]
    found.append(pair(rows, framework, "nomask", base="with"))
    return [p for p in found if p is not None]


def print_tables(rows: Sequence[Row]) -> None:
    """A rich table per framework."""
    from rich.console import Console
    from rich.table import Table

    for fw in FRAMEWORKS:
        t = Table(title=f"{fw}: server-side prompt tokens and answers, paired on the same tasks")
        for col in COLUMNS:
            t.add_column(col, justify="left" if col == "arm" else "right")
        for p in pairings(rows, fw):
            t.add_row(*p.cells())
        if t.row_count:
            Console(width=200).print(t)


def markdown(rows: Sequence[Row]) -> list[str]:
    """The tables of the page, one block per framework."""
    out = []
    for fw in FRAMEWORKS:
        if ps := pairings(rows, fw):
            out += [f"**{fw}**", "", "| " + " | ".join(c.strip() for c in COLUMNS) + " |"]
            out += [
                "|" + "---|" * len(COLUMNS),
                *("| " + " | ".join(p.cells()) + " |" for p in ps),
                "",
            ]
    return out


def pooled(rows: Sequence[Row], arm: str) -> tuple[float, int, int, int]:
    """Over all frameworks: `arm`'s prompt tokens over `without`'s, right (arm, without), n."""
    runs = [x for fw in FRAMEWORKS if (p := pair(rows, fw, arm)) for x in p.runs]
    base = sum(b.prompt_tokens for b, _ in runs)
    ratio = sum(a.prompt_tokens for _, a in runs) / base if base else float("nan")
    return ratio, sum(a.right for _, a in runs), sum(b.right for b, _ in runs), len(runs)


def criteria(rows: Sequence[Row]) -> list[str]:
    """Issue 39 item 5's three conditions, read from the `with` pairing of each framework."""
    out = []
    for fw in FRAMEWORKS:
        if (p := pair(rows, fw, "with")) is None:
            continue
        right = [sum(r.right for r in side) for side in zip(*p.runs, strict=True)]
        acted = p.ratio(lambda r: r.prompt_tokens, lambda r: bool(r.acted))[0]
        quiet = p.ratio(lambda r: r.prompt_tokens, lambda r: not r.acted)[0]
        marks = [right[1] >= right[0], not acted > 0.5, quiet != quiet or abs(quiet - 1) < 0.01]
        said = [f"right {right[1]} vs {right[0]}", f"{_x((acted,) * 3, False)} where acted",
                f"{_x((quiet,) * 3, False)} where none acted" if quiet == quiet
                else "no run where none acted"]  # fmt: skip
        out.append(
            f"- {fw}: "
            + "; ".join(
                f"{t} ({'met' if m else 'missed'})" for t, m in zip(said, marks, strict=True)
            )
        )
    return out


def calls_as_text(rows: Sequence[Row]) -> str:
    """Issue 40 item 6: runs whose answer is a tool call written as text (the framework took
    a call the server did not return as `tool_calls` for the final answer), per arm."""
    from overseer.models.serve import parse_calls

    tools = {name: {} for name in ("fetch_page", "next_page", "search", "cached_copy")}
    said = []
    for arm in ARMS:
        mine = [r for r in rows if r.arm == arm]
        if mine:
            k = sum(bool(r.answer and parse_calls(r.answer, tools)) for r in mine)
            said.append(f"`{arm}` {k} of {len(mine)}")
    return (
        "Answers that are a tool call written as text (issue 40 item 6: a call `serve` did not "
        "return as `tool_calls`, taken by the framework as its answer): " + ", ".join(said) + "."
    )


def masking(rows: Sequence[Row]) -> str:
    """Issue 39 item 6: masking on (`with`) against off (`nomask`), pooled over frameworks."""
    runs = [x for fw in FRAMEWORKS if (p := pair(rows, fw, "nomask", "with")) for x in p.runs]
    on = [sum(r.prompt_tokens for r, _ in runs), sum(r.evaluated_tokens for r, _ in runs)]
    off = [sum(r.prompt_tokens for _, r in runs), sum(r.evaluated_tokens for _, r in runs)]
    if not runs or not all(off):
        return "Masking on against off (issue 39 item 6): not run."
    return (
        f"Masking on against off (issue 39 item 6), {len(runs)} paired runs: prompt tokens "
        f"{on[0]:,} on vs {off[0]:,} off ({on[0] / off[0]:.2f}x); prompt tokens llama.cpp "
        f"evaluated {on[1]:,} on vs {off[1]:,} off ({on[1] / off[1]:.2f}x)."
    )


PAGE_HEAD = """# Real framework agents on generated page-and-loop tasks — with overseer {w} prompt \
tokens (proxy {p}), right {right} vs {base} of {n} runs

Issue 39 items 5-6 and issue 40 item 5: the four frameworks' own agents on tasks of
`src/overseer/tasks/pageloop.py`, written by `benchmarks/framework_tasks.py` (its docstring says
what the arms are and how tokens are counted). Code: {commit}; {date}, {minutes} minutes of runs:

    {server}
    {command}

Task seed {seeds} (29 is the development seed; the held-out seeds named in the module, and seeds
nobody has seen, are the reviewers'), {tasks} tasks, {runs} runs. Evaluated tokens read from:
{sources}; the server's prompt cache {cache}. `x base`: the arm's tokens over its base's on the
same tasks (paired bootstrap 95% interval); `x where acted` / `x where none`: prompt tokens on
the runs where a rule of the arm acted / did not; `page request`: mean prompt tokens of the first
request after fetch_page ran; W/L: right where the base was wrong / the reverse (exact McNemar p).
"""


def write_page(path: Path, rows: Sequence[Row], store: Store) -> None:
    """The evidence page from the stored rows and the run's provenance."""
    w, p = pooled(rows, "with"), pooled(rows, "proxy")
    keys, commits = ("command", "date", "server", "cache"), [r.commit for r in rows]
    head = PAGE_HEAD.format(
        w=_x((w[0],) * 3, False), p=_x((p[0],) * 3, False), right=w[1], base=w[2], n=w[3],
        seeds=", ".join(str(s) for s in sorted({r.seed for r in rows})),
        tasks=len({r.task for r in rows}), runs=len(rows),
        sources=", ".join(sorted({s for r in rows for s in r.evaluated_from.split(",")})),
        minutes=round(sum(r.seconds for r in rows) / 60),
        commit=", ".join(f"{c or '?'} ({n} runs)" for c, n in Counter(commits).most_common()),
        **{k: store.note(k) or "?" for k in keys},
    )  # fmt: skip
    acted = {arm: Counter[str]() for arm in ARMS[1:] if any(r.arm == arm for r in rows)}
    for r in rows:
        if r.arm in acted:
            acted[r.arm].update(r.acted)
    errors = Counter(r.error.split(":")[0] for r in rows if r.error)
    lines = [
        head, *markdown(rows), "What acted (summed over the arm's runs):", "",
        *(f"- `{arm}`: " + (", ".join(f"{k} {v}" for k, v in sorted(c.items())) or "nothing")
          for arm, c in acted.items()), "",
        "Runs ended by an error or a framework cap (no answer): "
        + (", ".join(f"{k} {v}" for k, v in errors.most_common()) or "none") + ".", "",
        "Issue 39 item 5, per framework (`with` vs `without`): answers right with >= without; "
        "prompt tokens <= 0.5x where a rule acted; equal where none did:", "",
        *criteria(rows), "", masking(rows), "", calls_as_text(rows), "",
        "Each run:", "", *answers(rows), "",
    ]  # fmt: skip
    path.write_text("\n".join(lines), encoding="utf-8")


def answers(rows: Sequence[Row]) -> list[str]:
    """Each run in one line: the answer, right or wrong, calls, tools run and what acted."""
    out = ["| framework | arm | task | answer | right | calls | tools run | what acted |"]
    out.append("|---|---|---|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: (FRAMEWORKS.index(r.framework), ARMS.index(r.arm), r.task)):
        said = " ".join((r.answer or f"none ({(r.error or '').split(':')[0]})").split())[:70]
        said = said.replace("|", "/").replace("`", "'")
        tools = ", ".join(f"{k} {v}" for k, v in sorted(r.tools.items()))
        acted = ", ".join(f"{k} {v}" for k, v in sorted(r.acted.items())) or "-"
        right = "yes" if r.right else "no"
        out.append(f"| {r.framework} | {r.arm} | {r.task} | `{said}` | {right} | {r.calls} "
                   f"| {tools} | {acted} |")  # fmt: skip
    return out
