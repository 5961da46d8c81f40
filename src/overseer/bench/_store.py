"""SQLite result store: one row per (config, model, suite, task, seed), written as each finishes."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from overseer.models import Usage

SCHEMA_VERSION = 1

_DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    config TEXT NOT NULL,
    model TEXT NOT NULL,
    suite TEXT NOT NULL,
    task_id TEXT NOT NULL,
    seed INTEGER NOT NULL,
    answer TEXT NOT NULL,
    parsed TEXT,
    correct INTEGER NOT NULL,
    score REAL NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    cached_prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    usage_by_actor TEXT NOT NULL,
    latency_s REAL NOT NULL,
    error TEXT,
    extra TEXT NOT NULL,
    finished_at REAL NOT NULL,
    PRIMARY KEY (config, model, suite, task_id, seed)
);
"""


@dataclass(frozen=True)
class ResultKey:
    """What identifies one result; a rerun skips keys already stored without error."""

    config: str
    model: str
    suite: str
    task_id: str
    seed: int


@dataclass(frozen=True)
class ResultRecord:
    """One solved (or failed) task: answer, score, tokens per actor, latency and error."""

    key: ResultKey
    answer: str
    parsed: str | None
    correct: bool
    score: float
    usage_by_actor: Mapping[str, Usage]
    latency_s: float
    error: str | None = None
    extra: Mapping[str, object] = field(default_factory=dict)
    finished_at: float = 0.0

    @property
    def usage(self) -> Usage:
        return sum(self.usage_by_actor.values(), Usage())


def _usage_json(usage: Mapping[str, Usage]) -> str:
    return json.dumps(
        {
            actor: [u.prompt_tokens, u.cached_prompt_tokens, u.completion_tokens]
            for actor, u in usage.items()
        },
        sort_keys=True,
    )


def _usage_from_json(text: str) -> dict[str, Usage]:
    return {
        actor: Usage(prompt_tokens=p, cached_prompt_tokens=c, completion_tokens=o)
        for actor, (p, c, o) in json.loads(text).items()
    }


class ResultStore:
    """A results file that survives kills: every record is committed as soon as it is added.

    Safe to share between threads of one process (one connection behind a lock; WAL mode).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_DDL)
            row = self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise ValueError(f"result store {self.path}: not a usable SQLite file ({exc})") from exc
        if row is None:
            with self._db:
                self._db.execute(
                    "INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
                )
        elif int(row[0]) != SCHEMA_VERSION:
            raise ValueError(
                f"result store {self.path}: schema version {row[0]}, expected {SCHEMA_VERSION}"
            )

    def done_keys(self) -> set[ResultKey]:
        """Keys stored without error: a rerun skips these and retries the errored ones."""
        with self._lock:
            rows = self._db.execute(
                "SELECT config, model, suite, task_id, seed FROM results WHERE error IS NULL"
            ).fetchall()
        return {ResultKey(*r) for r in rows}

    def add(self, rec: ResultRecord) -> None:
        """Insert or replace one record and commit it at once."""
        k = rec.key
        u = rec.usage
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO results VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    k.config,
                    k.model,
                    k.suite,
                    k.task_id,
                    k.seed,
                    rec.answer,
                    rec.parsed,
                    int(rec.correct),
                    rec.score,
                    u.prompt_tokens,
                    u.cached_prompt_tokens,
                    u.completion_tokens,
                    _usage_json(rec.usage_by_actor),
                    rec.latency_s,
                    rec.error,
                    json.dumps(dict(rec.extra), sort_keys=True, default=str),
                    rec.finished_at or time.time(),
                ),
            )

    def records(
        self,
        *,
        suite: str | None = None,
        model: str | None = None,
        configs: list[str] | None = None,
    ) -> Iterator[ResultRecord]:
        """Stored records, optionally filtered, in a stable order."""
        sql = (
            "SELECT config, model, suite, task_id, seed, answer, parsed, correct, score, "
            "usage_by_actor, latency_s, error, extra, finished_at FROM results WHERE 1=1"
        )
        args: list[object] = []
        if suite is not None:
            sql += " AND suite = ?"
            args.append(suite)
        if model is not None:
            sql += " AND model = ?"
            args.append(model)
        if configs:
            sql += f" AND config IN ({','.join('?' * len(configs))})"
            args.extend(configs)
        sql += " ORDER BY config, model, suite, task_id, seed"
        with self._lock:
            rows = self._db.execute(sql, args).fetchall()
        for r in rows:
            yield ResultRecord(
                key=ResultKey(*r[:5]),
                answer=r[5],
                parsed=r[6],
                correct=bool(r[7]),
                score=r[8],
                usage_by_actor=_usage_from_json(r[9]),
                latency_s=r[10],
                error=r[11],
                extra=json.loads(r[12]),
                finished_at=r[13],
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
