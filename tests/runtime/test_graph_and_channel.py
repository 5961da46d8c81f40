"""TeamSpec validation, preset edges, and the channel's rollback and purge (property-tested)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from overseer.runtime import PRESETS, AgentSpec, TeamSpec, TeamSpecError, make_team
from overseer.runtime._channel import Channel
from overseer.runtime._presets import spatial_edges
from overseer.runtime._spec import topological_order


def test_spec_json_round_trip(tmp_path: Path) -> None:
    team = make_team("layered", 5, rounds=2, pool="math")
    path = team.save(tmp_path / "t.json")
    assert TeamSpec.load(path) == team
    assert TeamSpec.from_json(team.to_json()) == team


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"agents": [{"name": "a"}], "spatial_edges": [["a", "b"]]}, "unknown agent 'b'"),
        ({"agents": [{"name": "a"}, {"name": "a"}]}, "repeated"),
        ({"agents": [{"name": "a"}, {"name": "b"}],
          "spatial_edges": [["a", "b"], ["b", "a"]]}, "cycle"),
        ({"agents": [{"name": "a"}], "spatial_edges": [["a", "a"]]}, "self-loop"),
        ({"agents": [{"name": "1bad"}]}, "agents.0.name"),
        ({"agents": [{"name": "a"}], "colour": "red"}, "colour"),
        ({"agents": [{"name": "a"}], "rounds": 0}, "rounds"),
        ({"agents": []}, "agents"),
        ({"agents": [{"name": "a"}], "decision": "coin"}, "decision"),
    ],
)  # fmt: skip
def test_bad_specs_name_the_field(data: dict, needle: str) -> None:
    with pytest.raises(TeamSpecError, match=needle):
        TeamSpec.from_json(json.dumps(data), source="spec.json")


def test_bad_files_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(TeamSpecError, match=r"bad\.json: not JSON"):
        TeamSpec.load(bad)
    with pytest.raises(TeamSpecError, match="cannot read"):
        TeamSpec.load(tmp_path / "missing.json")


def idx(team: TeamSpec) -> set[tuple[int, int]]:
    pos = {n: i for i, n in enumerate(team.names)}
    return {(pos[a], pos[b]) for a, b in team.spatial_edges}


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_preset_edges(n: int) -> None:
    assert idx(make_team("chain", n)) == {(i, i + 1) for i in range(n - 1)}
    assert idx(make_team("star", n)) == {(i, 0) for i in range(1, n)}
    assert idx(make_team("tree", n)) == {(i, (i - 1) // 2) for i in range(1, n)}
    assert idx(make_team("complete", n)) == {(i, j) for i in range(n) for j in range(i + 1, n)}
    layered = make_team("layered", n)
    sinks = layered.sinks()
    assert sinks == [layered.names[-1]]
    debate = make_team("debate", n, rounds=2)
    assert debate.spatial_edges == () and len(debate.temporal_edges) == n * n


def test_layered_is_all_to_all_between_layers() -> None:
    e = idx(make_team("layered", 8))
    assert e == {(a, b) for a in range(4) for b in range(4, 7)} | {(b, 7) for b in range(4, 7)}


def test_random_is_seeded_and_about_half() -> None:
    assert spatial_edges("random", 6, seed=1) == spatial_edges("random", 6, seed=1)
    assert spatial_edges("random", 6, seed=1) != spatial_edges("random", 6, seed=2)
    total = sum(len(spatial_edges("random", 6, seed=s)) for s in range(200))
    assert 0.45 < total / (200 * 15) < 0.55


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_is_a_dag_with_its_decision(preset: str) -> None:
    team = make_team(preset, 6, rounds=2)
    assert len(topological_order(team.names, team.spatial_edges)) == 6
    want = "llm" if preset in ("complete", "random", "debate") else "last"
    assert team.decision == want


def test_temporal_options_and_debate_rounds() -> None:
    assert make_team("chain", 3, rounds=2).temporal_edges == (
        ("a1", "a1"),
        ("a2", "a2"),
        ("a3", "a3"),
    )
    assert make_team("chain", 3, rounds=2, temporal="none").temporal_edges == ()
    assert len(make_team("chain", 3, rounds=2, temporal="all").temporal_edges) == 9
    assert make_team("chain", 3, rounds=1).temporal_edges == ()
    with pytest.raises(ValueError, match="rounds >= 2"):
        make_team("debate", 3, rounds=1)
    with pytest.raises(ValueError, match="preset"):
        make_team("ring", 3)


def test_with_agent_replaces_by_name() -> None:
    team = make_team("chain", 3)
    new = AgentSpec(name="a2", role="Fixer", instructions="new")
    assert team.with_agent(new).agent("a2").role == "Fixer"
    with pytest.raises(KeyError):
        team.with_agent(AgentSpec(name="zz"))


def test_channel_rollback_and_purge() -> None:
    ch = Channel()
    ch.post("a", "1", round=0)
    ch.mark_irreversible()
    ch.post("b", "2", round=0)
    ch.checkpoint()
    ch.post("a", "3", round=1)
    removed = ch.rollback()
    assert [m.content for m in removed] == ["3"] and [m.content for m in ch.messages] == ["1", "2"]
    ch.post("c", "4", round=1)
    assert [m.content for m in ch.rollback()] == ["4"]  # the mark stays
    ch.drop_checkpoint()
    ch.post("b", "5", round=1)
    ch.rollback()  # back to the irreversible mark, never behind it
    assert [m.content for m in ch.messages] == ["1"]
    ch.drop_checkpoint()  # irreversible marks are not dropped
    assert [m.content for m in ch.rollback()] == []
    ch.post("b", "6", round=2)
    ch.post("a", "7", round=2)
    assert [m.content for m in ch.purge("a")] == ["1", "7"]
    assert [m.sender for m in ch.messages] == ["b"]
    assert [m.content for m in ch.from_senders(["b"], round=2)] == ["6"]


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("post"), st.sampled_from("abc")),
        st.tuples(st.just("checkpoint"), st.none()),
        st.tuples(st.just("mark"), st.none()),
        st.tuples(st.just("purge"), st.sampled_from("abc")),
    ),
    max_size=40,
)


@given(OPS)
def test_rollback_restores_exactly_the_marked_state(ops: list) -> None:
    ch = Channel()
    marked: tuple = ()  # what the latest mark saw, with later purges applied
    for op, arg in ops:
        if op == "post":
            ch.post(arg, f"{arg}{len(ch)}", round=0)
        elif op in ("checkpoint", "mark"):
            (ch.checkpoint if op == "checkpoint" else ch.mark_irreversible)()
            marked = ch.snapshot()
        else:
            ch.purge(arg)
            marked = tuple(m for m in marked if m.sender != arg)
    before = ch.snapshot()
    removed = ch.rollback()
    assert ch.snapshot() == marked
    assert [m for m in before if m not in marked] == removed
