"""SOP -> team conversion, the hybrid score, ranking, JSON round trip, real embeddings."""

from __future__ import annotations

import json
import math

import pytest

from overseer.adapt import Case, Need, Repository
from overseer.adapt.repository import RepositoryError, hybrid_scores
from overseer.adapt.sop import SOPError, sop_to_team

from .conftest import TableEmbedder, sop


def unit(c: float) -> list[float]:
    """A 4-d vector at cosine c from (1, 0, 0, 0)."""
    return [c, math.sqrt(max(0.0, 1 - c * c)), 0.0, 0.0]


def test_forward_edges_are_spatial_back_edges_temporal_and_upstream_replies_added() -> None:
    s = sop("Coder", "Tester", "Answer", rounds=2)
    s = s.model_copy(update={"edges": [*s.edges, ("Tester", "Coder")]})
    team = sop_to_team(s)
    assert team.spatial_edges == (("Coder", "Tester"), ("Tester", "Answer"))
    assert ("Tester", "Coder") in team.temporal_edges  # feedback edge: next round
    assert ("Answer", "Tester") in team.temporal_edges  # bidirectional rule
    assert ("Coder", "Coder") in team.temporal_edges
    assert team.decision == "last" and team.rounds == 2
    assert sop_to_team(sop("A", "B")).temporal_edges == ()  # one round: nothing to carry


def test_sop_errors_name_the_problem() -> None:
    bad = sop("A", "B").model_copy(update={"edges": [("A", "C")]})
    with pytest.raises(SOPError, match=r"edges\[0\]: unknown agent 'C'"):
        sop_to_team(bad)
    with pytest.raises(SOPError, match="unknown tools"):
        sop_to_team(sop("A", tools={"A": ["web"]}), tools={"python"})
    with pytest.raises(SOPError, match="must list exactly"):
        sop_to_team(sop("A", "B").model_copy(update={"team": ["A"]}))


def test_hybrid_score_formula_and_modes() -> None:
    import numpy as np

    q, n = np.array([0.9, 0.0]), np.array([0.2, 0.6])
    assert hybrid_scores(q, n, lam=0.3, mode="hybrid") == pytest.approx([0.41, 0.42])
    assert list(hybrid_scores(q, n, lam=0.3, mode="query")) == [0.9, 0.0]
    assert list(hybrid_scores(q, n, lam=0.3, mode="need")) == [0.2, 0.6]
    with pytest.raises(ValueError, match="lambda"):
        hybrid_scores(q, n, lam=1.5, mode="hybrid")


def crafted(tmp_path) -> Repository:
    """Three cases whose query and need similarities rank them differently."""
    needs = {k: Need(objective=f"need {k}") for k in "ABC"}
    qsim = {"A": 0.9, "B": 0.0, "C": 0.5}
    nsim = {"A": 0.2, "B": 0.6, "C": 0.55}
    table = {"the query": unit(1.0), Need(objective="new need").text(): unit(1.0)}
    for k in "ABC":
        table[f"query {k}"] = unit(qsim[k])
        table[needs[k].text()] = unit(nsim[k])
    repo = Repository(tmp_path / "a.sqlite", TableEmbedder(table))
    for k in "ABC":
        repo.add(Case(query=f"query {k}", need=needs[k], sop=sop(f"Agent{k}"), domain="x"))
    return repo


def test_ranking_by_hybrid_query_and_need_similarity(tmp_path) -> None:
    repo = crafted(tmp_path)
    need = Need(objective="new need")

    def top(mode: str, k: int = 3) -> list[str]:
        return [h.case.query[-1] for h in repo.search("the query", need, k=k, mode=mode)]

    assert top("hybrid") == ["C", "B", "A"]  # 0.535, 0.42, 0.41
    assert top("query") == ["A", "C", "B"]
    assert top("need") == ["B", "C", "A"]
    assert top("hybrid", k=2) == ["C", "B"]  # K = 2 by default
    hit = repo.search("the query", need)[0]
    assert hit.query_sim == pytest.approx(0.5, abs=1e-5)
    assert hit.need_sim == pytest.approx(0.55, abs=1e-5)
    assert hit.score == pytest.approx(0.3 * 0.5 + 0.7 * 0.55, abs=1e-5)


def test_json_export_import_round_trip_and_bad_files(tmp_path) -> None:
    repo = crafted(tmp_path)
    out = tmp_path / "cases.json"
    assert repo.export_json(out) == 3
    data = json.loads(out.read_text())
    data["sop_cases"][0]["sop"]["agents"][0]["instructions"] = "edited by hand"
    out.write_text(json.dumps(data))
    other = Repository(tmp_path / "b.sqlite", repo.embedder)
    assert other.import_json(out) == 3
    assert other.cases()[0].sop.agents[0].instructions == "edited by hand"
    data["sop_cases"][1]["sop"]["edges"] = [["AgentB", "Nobody"]]
    out.write_text(json.dumps(data))
    with pytest.raises(RepositoryError, match=r"sop_cases\[1\].*unknown agent 'Nobody'"):
        other.import_json(out)
    out.write_text("{")
    with pytest.raises(RepositoryError, match="not JSON"):
        other.import_json(out)


def test_importing_ones_own_export_replaces_cases_by_id(tmp_path) -> None:
    repo = crafted(tmp_path)
    out = tmp_path / "cases.json"
    assert repo.export_json(out) == 3
    ids = [c.id for c in repo.cases()]
    data = json.loads(out.read_text())
    data["sop_cases"][0]["query"] = "edited query"
    out.write_text(json.dumps(data))
    assert repo.import_json(out) == 3
    assert repo.import_json(out) == 3
    assert len(repo) == 3 and [c.id for c in repo.cases()] == ids
    assert repo.cases()[0].query == "edited query"


def test_real_embeddings_retrieve_the_case_of_the_same_kind(tmp_path) -> None:
    from overseer.adapt import Embedder, starter_cases

    repo = Repository(tmp_path / "r.sqlite", Embedder())
    for c in starter_cases():
        repo.add(c)
    code_q = "Write a Python function that returns the sum of the squares of a list."
    hits = repo.search(code_q, Need(objective="write a python function", capabilities=["code"]))
    assert hits[0].case.domain == "code"
    travel_q = "Find me a hotel in Paris rated above 4 and book it for January 3rd to 5th."
    hits = repo.search(travel_q, Need(objective="book a hotel", tools=["reserve_hotel"]))
    assert hits[0].case.domain == "travel"
