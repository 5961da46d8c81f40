"""Tasks that bring their own tools share one environment protocol and load by suite name."""

from __future__ import annotations

import json

import pytest

from overseer.tasks import TaskEnvironment, load_suite, open_environment, score
from overseer.tasks.travel import load_travel


def test_travel_loads_through_load_suite_with_the_same_split() -> None:
    tasks = load_suite("travel", split="train", seed=3)
    assert tasks and all(t.suite == "travel" for t in tasks)
    assert [t.id for t in tasks] == [t.id for t in load_travel("train", seed=3)]
    assert len(load_suite("travel", split="all")) == 20


@pytest.mark.parametrize("suite", ["travel", "browse-sample"])
def test_each_run_opens_a_fresh_environment(suite: str) -> None:
    task = load_suite(suite, split="all", limit=1)[0]
    a, b = open_environment(task), open_environment(task)
    assert isinstance(a, TaskEnvironment) and isinstance(b, TaskEnvironment)
    assert a is not b and set(a.tools) == set(b.tools) and a.tools
    assert next(iter(a.tools.values())) is not next(iter(b.tools.values()))


def test_travel_stores_a_transcript_and_browse_the_answer_as_given() -> None:
    travel = load_suite("travel", split="all", limit=1)[0]
    env = open_environment(travel)
    assert env is not None
    assert json.loads(env.finish("done")) == {"answer": "done", "calls": []}
    assert score(travel, env.finish("done")).correct is False
    browse = open_environment(load_suite("browse-sample", split="all", limit=1)[0])
    assert browse is not None and browse.finish("42") == "42"


def test_tasks_without_an_environment_open_none() -> None:
    assert open_environment(load_suite("gsm8k-sample", split="all", limit=1)[0]) is None
