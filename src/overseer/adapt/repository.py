"""The SOP repository: cases (query, need analysis, SOP) with embeddings, in SQLite.

Export and import as JSON so people can read and edit the cases; import re-embeds them.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from overseer.adapt.embed import TextEmbedder, cosine
from overseer.adapt.sop import SOP, Need, check_sop
from overseer.errors import READ_ERRORS, PathError, check_sqlite_file, read_failure

Mode = Literal["hybrid", "query", "need"]
MODES: tuple[str, ...] = ("hybrid", "query", "need")


class RepositoryError(ValueError):
    """A repository file or JSON export that cannot be used; the message names it."""


class Case(BaseModel):
    """One case: the query it came from, its need analysis and the SOP that solved it."""

    model_config = ConfigDict(extra="forbid")

    id: int | None = None
    query: str
    need: Need
    sop: SOP
    domain: str = ""
    source: str = ""


@dataclass(frozen=True)
class Hit:
    """A retrieved case with its hybrid score and the two similarities behind it."""

    case: Case
    score: float
    query_sim: float
    need_sim: float


def to_blob(v: np.ndarray) -> bytes:
    return np.asarray(v, dtype=np.float32).tobytes()


def from_blob(b: bytes) -> np.ndarray:
    return np.frombuffer(b, dtype=np.float32)


def insert_embedded(
    db: sqlite3.Connection,
    table: str,
    values: dict[str, Any],
    embedder: TextEmbedder,
    need_text: str,
) -> int:
    """Insert one row of `values` with the embeddings of its query and need text and its
    creation time (columns q_emb, n_emb, created); commit and return the new row's id."""
    q, n = embedder.embed([values["query"], need_text])
    row = {**values, "q_emb": to_blob(q), "n_emb": to_blob(n), "created": time.time()}
    marks = ", ".join("?" * len(row))
    cur = db.execute(
        f"INSERT INTO {table} ({', '.join(row)}) VALUES ({marks})", tuple(row.values())
    )
    db.commit()
    assert cur.lastrowid is not None
    return int(cur.lastrowid)


def hybrid_scores(q_sims: np.ndarray, n_sims: np.ndarray, *, lam: float, mode: Mode) -> np.ndarray:
    """lambda * sim(query) + (1 - lambda) * sim(need); `query`/`need` modes use one side only."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lambda: expected a number in [0, 1], got {lam}")
    if mode == "query":
        return q_sims
    if mode == "need":
        return n_sims
    if mode != "hybrid":
        raise ValueError(f"retrieval mode {mode!r}: expected one of {', '.join(MODES)}")
    return lam * q_sims + (1.0 - lam) * n_sims


def open_db(path: str | Path) -> sqlite3.Connection:
    """A SQLite connection on `path` (its folder is created); ':memory:' works too. A file
    that is not SQLite is refused before SQLite writes to it (RepositoryError naming it)."""
    try:
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            check_sqlite_file(Path(path), "store")
        return sqlite3.connect(str(path))
    except PathError as exc:
        raise RepositoryError(str(exc)) from None
    except (sqlite3.Error, OSError) as exc:
        raise RepositoryError(f"store {path}: cannot open ({exc})") from None


class Repository:
    """SOP cases in a SQLite table, each with its query and need embeddings."""

    def __init__(self, path: str | Path, embedder: TextEmbedder) -> None:
        self.path = str(path)
        self.embedder = embedder
        self.db = open_db(path)
        try:
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS sop_cases (id INTEGER PRIMARY KEY, query TEXT NOT "
                "NULL, need TEXT NOT NULL, sop TEXT NOT NULL, domain TEXT, source TEXT, "
                "embedder TEXT, q_emb BLOB, n_emb BLOB, created REAL)"
            )
            self.db.commit()
        except sqlite3.DatabaseError as exc:
            raise RepositoryError(f"store {path}: not a usable SQLite file ({exc})") from None

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Repository:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ---------------------------------------------------------------------------
    def add(self, case: Case, *, keep_id: bool = False) -> int:
        """Store a case (embedding its query and need) and return its id. With `keep_id` a case
        that has an id replaces the stored case of that id (or takes the id if it is free)."""
        check_sop(case.sop)
        values: dict[str, Any] = {
            "query": case.query,
            "need": case.need.model_dump_json(),
            "sop": case.sop.model_dump_json(),
            "domain": case.domain,
            "source": case.source,
            "embedder": self.embedder.name,
        }
        if keep_id and case.id is not None:
            self.db.execute("DELETE FROM sop_cases WHERE id = ?", (case.id,))
            values = {"id": case.id, **values}
        return insert_embedded(self.db, "sop_cases", values, self.embedder, case.need.text())

    def remove(self, case_id: int) -> bool:
        cur = self.db.execute("DELETE FROM sop_cases WHERE id = ?", (case_id,))
        self.db.commit()
        return cur.rowcount > 0

    # -- reading ---------------------------------------------------------------------------
    def _rows(self, domain: str | None = None) -> list[tuple]:
        sql = "SELECT id, query, need, sop, domain, source, q_emb, n_emb, embedder FROM sop_cases"
        args: tuple = ()
        if domain:
            sql += " WHERE domain = ?"
            args = (domain,)
        return self.db.execute(sql + " ORDER BY id", args).fetchall()

    @staticmethod
    def _case(row: tuple) -> Case:
        return Case(
            id=row[0],
            query=row[1],
            need=Need.model_validate_json(row[2]),
            sop=SOP.model_validate_json(row[3]),
            domain=row[4] or "",
            source=row[5] or "",
        )

    def cases(self, domain: str | None = None) -> list[Case]:
        return [self._case(r) for r in self._rows(domain)]

    def __len__(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM sop_cases").fetchone()[0])

    def search(
        self,
        query: str,
        need: Need | None,
        *,
        k: int = 2,
        lam: float = 0.3,
        mode: Mode = "hybrid",
        domain: str | None = None,
    ) -> list[Hit]:
        """The k cases with the highest score (ties keep insertion order)."""
        if k < 1:
            raise ValueError(f"k: expected >= 1, got {k}")
        rows = self._rows(domain)
        if not rows:
            return []
        if need is None and mode != "query":
            mode = "query"
        texts = [query] + ([need.text()] if need is not None else [])
        vecs = self.embedder.embed(texts)
        q_emb = np.stack([from_blob(r[6]) for r in rows])
        n_emb = np.stack([from_blob(r[7]) for r in rows])
        if q_emb.shape[1] != vecs.shape[1]:
            raise RepositoryError(
                f"store {self.path}: embeddings of size {q_emb.shape[1]} from {rows[0][8]!r}, "
                f"but the embedder gives {vecs.shape[1]}; re-import the JSON export"
            )
        q_sims = cosine(vecs[0], q_emb)
        n_sims = cosine(vecs[1], n_emb) if need is not None else np.zeros(len(rows))
        scores = hybrid_scores(q_sims, n_sims, lam=lam, mode=mode)
        order = sorted(range(len(rows)), key=lambda i: (-scores[i], i))[:k]
        return [
            Hit(self._case(rows[i]), float(scores[i]), float(q_sims[i]), float(n_sims[i]))
            for i in order
        ]

    def medoid(self, domain: str | None = None) -> Case | None:
        """The case most similar on average to all others: the one fixed SOP of an ablation."""
        rows = self._rows(domain)
        if not rows:
            return None
        emb = np.stack([from_blob(r[6]) for r in rows])
        emb = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
        mean_sim = (emb @ emb.T).mean(axis=1)
        return self._case(rows[int(np.argmax(mean_sim))])

    # -- JSON ------------------------------------------------------------------------------
    def export_json(self, path: str | Path) -> int:
        """Write every case as editable JSON; returns the number written."""
        cases = [c.model_dump(mode="json") for c in self.cases()]
        Path(path).write_text(json.dumps({"sop_cases": cases}, indent=2, ensure_ascii=False))
        return len(cases)

    def import_json(self, path: str | Path, *, replace: bool = False) -> int:
        """Read cases from a JSON export (validated, re-embedded); a case with an id replaces the
        stored case of that id, so importing one's own export twice duplicates nothing.
        Returns the number of cases read."""
        cases = load_cases(path)
        if replace:
            self.db.execute("DELETE FROM sop_cases")
            self.db.commit()
        for c in cases:
            self.add(c, keep_id=True)
        return len(cases)


def load_cases(path: str | Path) -> list[Case]:
    """Validated cases of a JSON export; errors name the file, the case and the field."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (*READ_ERRORS, json.JSONDecodeError) as exc:
        raise RepositoryError(f"{path}: {read_failure(exc)}") from None
    if not isinstance(data, dict) or not isinstance(data.get("sop_cases"), list):
        raise RepositoryError(f'{path}: expected an object with a "sop_cases" list')
    out = []
    for i, item in enumerate(data["sop_cases"]):
        try:
            case = Case.model_validate(item)
            check_sop(case.sop)
        except ValidationError as exc:
            e = exc.errors()[0]
            loc = ".".join(str(x) for x in e["loc"])
            raise RepositoryError(f"{path}: sop_cases[{i}].{loc}: {e['msg']}") from None
        except ValueError as exc:
            raise RepositoryError(f"{path}: sop_cases[{i}]: {exc}") from None
        out.append(case)
    return out
