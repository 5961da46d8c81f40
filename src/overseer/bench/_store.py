"""SQLite result store: one row per (config, model, suite, task, seed), written as each finishes."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from overseer.errors import PathError, ensure_dir
from overseer.models import Usage

SCHEMA_VERSION = 2  # 2: a provenance column (see overseer.bench._provenance)
_BUSY_S = 30.0  # seconds a bench waits for another one holding the store

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
    provenance TEXT,
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
    #: commit, versions, model file, threads, prompt cache (bench._provenance); {}: unknown
    provenance: Mapping[str, str] = field(default_factory=dict)

    @property
    def usage(self) -> Usage:
        return sum(self.usage_by_actor.values(), Usage())


def _quick_check(db: sqlite3.Connection) -> None:
    """Read every page once (never writes): a truncated or damaged file fails here."""
    rows = db.execute("PRAGMA quick_check").fetchall()
    if rows != [("ok",)]:
        raise sqlite3.DatabaseError(f"database disk image is malformed: {rows[0][0]}")


def _ro_uri(path: Path) -> str:
    """A read-only URI; immutable (no -wal/-shm files made) when no writer has a WAL open."""
    uri = f"file:{quote(os.fsencode(path.resolve()))}?mode=ro"  # any file name (not UTF-8 too)
    return uri if path.with_name(path.name + "-wal").exists() else uri + "&immutable=1"


def _set_wal(db: sqlite3.Connection) -> None:
    """Switch `db` to WAL. SQLite answers "database is locked" at once, without its busy
    handler, when another connection is switching the same new file too (a deadlock it
    avoids), so the switch is retried until the busy timeout is spent."""
    deadline = time.monotonic() + _BUSY_S
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _open_checked(uri: str) -> sqlite3.Connection:
    """A read-only connection to `uri` whose pages all read back."""
    db = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=_BUSY_S)
    try:
        _quick_check(db)
    except BaseException:
        db.close()
        raise
    return db


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


class StoreError(PathError, ValueError):
    """A result store that cannot be used: corrupt, read-only, misplaced or of another schema."""


_HEADER = b"SQLite format 3\x00"


def _sqlite_header_ok(path: Path) -> bool:
    """True for an empty file or one that starts with the SQLite header (read, never written)."""
    with path.open("rb") as fh:
        head = fh.read(len(_HEADER))
    return head in (b"", _HEADER)


class ResultStore:
    """A results file that survives kills: every record is committed as soon as it is added.

    Safe to share between threads of one process (one connection behind a lock; WAL mode).
    `readonly=True` opens with a `mode=ro` URI and never writes (reports on read-only files).
    Every fault (corrupt, read-only, misplaced) is a `StoreError` naming the path.
    """

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self._prov_col = "provenance"
        self._lock = threading.Lock()
        self._check_file()
        with self._guard("open"):
            self._db = self._connect_ro() if readonly else self._connect_rw()
        try:
            self._check_schema()
        except BaseException:
            self._db.close()
            raise

    def _check_file(self) -> None:
        """Refuse a missing (read-only), misplaced or non-SQLite file before SQLite touches it."""
        if self.readonly and not self.path.is_file():
            raise StoreError(f"result store {self.path}: no such file")
        if not self.readonly:
            try:
                ensure_dir(self.path.parent, "result store directory")
            except PathError as exc:
                raise StoreError(str(exc)) from exc
        if self.path.exists() and not self.path.is_file():
            raise StoreError(f"result store {self.path}: exists and is not a file")
        if self.path.is_file() and not _sqlite_header_ok(self.path):
            raise StoreError(
                f"result store {self.path}: not a usable SQLite file (no SQLite header); "
                "nothing was changed"
            )

    def _connect_rw(self) -> sqlite3.Connection:
        if self.path.is_file() and self.path.stat().st_size > 0:
            _open_checked(_ro_uri(self.path)).close()  # a damaged file is refused untouched
        db = sqlite3.connect(self.path, check_same_thread=False, timeout=_BUSY_S)
        try:
            _set_wal(db)
        except BaseException:
            db.close()
            raise
        return db

    def _connect_ro(self) -> sqlite3.Connection:
        uri = _ro_uri(self.path)
        try:
            return _open_checked(uri)
        except sqlite3.OperationalError:
            if uri.endswith("immutable=1"):
                raise
            # A live WAL in a read-only directory without its -shm file: read it as immutable.
            return _open_checked(uri + "&immutable=1")

    def _check_schema(self) -> None:
        row = self._read_version() if self.readonly else self._create_schema()
        if row is None:
            raise StoreError(f"result store {self.path}: not a result store (no schema version)")
        if int(row[0]) == 1 and self.readonly:
            self._prov_col = "NULL"  # version 1 had no provenance: its rows read as "unknown"
        elif int(row[0]) not in (1, SCHEMA_VERSION):
            raise StoreError(
                f"result store {self.path}: schema version {row[0]}, expected {SCHEMA_VERSION}"
            )

    def _read_version(self) -> tuple[str] | None:
        with self._guard("open"):
            has_meta = self._db.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
            ).fetchone()
            if not has_meta:
                return None
            return self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()

    def _create_schema(self) -> tuple[str] | None:
        """Create the tables and the version (a new store) or migrate a version-1 store, in
        one write transaction taken up front (BEGIN IMMEDIATE): two benches opening the same
        new store at once wait for each other instead of both inserting the version."""
        with self._guard("open"):
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for stmt in _DDL.split(";"):
                    if stmt.strip():
                        self._db.execute(stmt)
                self._db.execute(
                    "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )
                row = self._read_version()
                if row is not None and int(row[0]) == 1:
                    self._migrate_v1()
                    row = (str(SCHEMA_VERSION),)
                self._db.commit()
            except BaseException:
                self._db.rollback()
                raise
        return row

    def _migrate_v1(self) -> None:
        """Version 1 had no provenance column: add it (its rows read as "unknown"); called
        inside `_create_schema`'s write transaction."""
        self._db.execute("ALTER TABLE results ADD COLUMN provenance TEXT")
        self._db.execute(
            "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),)
        )

    @contextmanager
    def _guard(self, action: str) -> Iterator[None]:
        """Turn SQLite's errors into one StoreError naming the store and the problem."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            text = str(exc)
            if "readonly" in text or "read-only" in text:
                problem = "read-only (`overseer report` can still read it)"
            elif isinstance(exc, sqlite3.OperationalError) and "malformed" not in text:
                problem = f"cannot {action} ({text})"
            else:
                problem = f"not a usable SQLite file ({text}); nothing was changed"
            raise StoreError(f"result store {self.path}: {problem}") from exc

    def done_keys(self) -> set[ResultKey]:
        """Keys stored without error: a rerun skips these and retries the errored ones."""
        with self._lock, self._guard("read"):
            rows = self._db.execute(
                "SELECT config, model, suite, task_id, seed FROM results WHERE error IS NULL"
            ).fetchall()
        return {ResultKey(*r) for r in rows}

    def add(self, rec: ResultRecord) -> None:
        """Insert or replace one record and commit it at once."""
        k = rec.key
        u = rec.usage
        with self._lock, self._guard("write"), self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO results VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
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
                    json.dumps(dict(rec.provenance), sort_keys=True) if rec.provenance else None,
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
            f"usage_by_actor, latency_s, error, extra, finished_at, {self._prov_col} "
            "FROM results WHERE 1=1"
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
        with self._lock, self._guard("read"):
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
                provenance=json.loads(r[14]) if r[14] else {},
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
