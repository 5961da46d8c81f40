"""The personalized experience pool: failure causes and agent-wise lessons, in SQLite."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict

from overseer.adapt.embed import TextEmbedder, cosine
from overseer.adapt.repository import Mode, from_blob, hybrid_scores, insert_embedded, open_db
from overseer.adapt.sop import AgentLesson, Need


class Experience(BaseModel):
    """One record: the query, why the run failed, and per agent what went wrong and the fix."""

    model_config = ConfigDict(extra="forbid")

    id: int | None = None
    query: str
    failure_cause: str
    lessons: list[AgentLesson]
    need: Need | None = None
    domain: str = ""
    source: str = ""

    def render(self) -> str:
        """A compact text view for the Watcher's prompt."""
        lines = [
            f"experience #{self.id}: query: {self.query[:200]}",
            f"  cause: {self.failure_cause}",
        ]
        lines += [f"  {x.agent}: {x.attribution} -> fix: {x.strategy}" for x in self.lessons]
        return "\n".join(lines)


@dataclass(frozen=True)
class ExperienceHit:
    experience: Experience
    score: float


class ExperiencePool:
    """Experiences in a SQLite table, retrieved by the same hybrid similarity as SOP cases."""

    def __init__(self, path: str | Path, embedder: TextEmbedder) -> None:
        self.path = str(path)
        self.embedder = embedder
        self.db = open_db(path)
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS experiences (id INTEGER PRIMARY KEY, query TEXT NOT NULL, "
            "failure_cause TEXT NOT NULL, lessons TEXT NOT NULL, need TEXT, domain TEXT, "
            "source TEXT, q_emb BLOB, n_emb BLOB, created REAL)"
        )
        self.db.commit()

    def close(self) -> None:
        self.db.close()

    def add(self, exp: Experience) -> int:
        need_text = exp.need.text() if exp.need is not None else exp.query
        values = {
            "query": exp.query,
            "failure_cause": exp.failure_cause,
            "lessons": json.dumps([x.model_dump() for x in exp.lessons]),
            "need": exp.need.model_dump_json() if exp.need is not None else None,
            "domain": exp.domain,
            "source": exp.source,
        }
        return insert_embedded(self.db, "experiences", values, self.embedder, need_text)

    def _rows(self) -> list[tuple]:
        return self.db.execute(
            "SELECT id, query, failure_cause, lessons, need, domain, source, q_emb, n_emb "
            "FROM experiences ORDER BY id"
        ).fetchall()

    @staticmethod
    def _exp(r: tuple) -> Experience:
        return Experience(
            id=r[0],
            query=r[1],
            failure_cause=r[2],
            lessons=[AgentLesson.model_validate(x) for x in json.loads(r[3])],
            need=Need.model_validate_json(r[4]) if r[4] else None,
            domain=r[5] or "",
            source=r[6] or "",
        )

    def all(self) -> list[Experience]:
        return [self._exp(r) for r in self._rows()]

    def __len__(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM experiences").fetchone()[0])

    def search(
        self, query: str, need: Need | None, *, k: int = 2, lam: float = 0.3, mode: Mode = "hybrid"
    ) -> list[ExperienceHit]:
        """The k experiences closest to the query (and its need, in hybrid mode)."""
        rows = self._rows()
        if not rows or k < 1:
            return []
        vecs = self.embedder.embed([query, need.text() if need is not None else query])
        q_sims = cosine(vecs[0], np.stack([from_blob(r[7]) for r in rows]))
        n_sims = cosine(vecs[1], np.stack([from_blob(r[8]) for r in rows]))
        scores = hybrid_scores(q_sims, n_sims, lam=lam, mode=mode if need is not None else "query")
        order = sorted(range(len(rows)), key=lambda i: (-scores[i], i))[:k]
        return [ExperienceHit(self._exp(rows[i]), float(scores[i])) for i in order]

    def export(self) -> list[dict]:
        return [e.model_dump(mode="json") for e in self.all()]
