"""CodeGen debate on HumanEval with scripted models: pass and fail by the real tests in the
sandbox, judge-score features, rollback of a round's review, bad answers, the monitor glue."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest

from overseer.envs import CodeGenConfig, codegen_splits, play_codegen
from overseer.envs.codegen import (
    check_program,
    extract_solution,
    parse_review,
    parse_tests,
    run_tests,
)
from overseer.models import ScriptedModel, TokenLogprob
from overseer.monitor import UncertaintyMonitor
from overseer.runtime import BaseSupervisor, Interaction, Run, Verdict, read_trace
from overseer.tasks import load_suite

TASK = next(t for t in load_suite("humaneval", split="all") if t.id == "HumanEval/0")
GOOD = """```python
def has_close_elements(numbers, threshold):
    for i, a in enumerate(numbers):
        for b in numbers[i + 1:]:
            if abs(a - b) < threshold:
                return True
    return False
```
Helpfulness: 4"""
BAD = "```python\ndef has_close_elements(numbers, threshold):\n    return False\n```"
TESTS = {
    "tests": [
        "assert has_close_elements([1.0, 2.0, 3.0], 0.5) == False",
        "assert has_close_elements([1.0, 2.8, 3.0], 0.3) == True",
    ]
}
CFG = CodeGenConfig(n_coders=4, rounds=2)


def team(
    coder: Callable[[int, list], str] | str,
    scores: list[int] | Callable[[], list[int]] = (7, 7, 7, 7),
    feedback: Callable[[], str] | str = "looks right",
) -> Callable[[list], str | dict]:
    """A scripted team: coders by index, the Tester's fixed tests, the Judge's scores."""

    def reply(messages: list) -> str | dict:
        system = messages[0]["content"]
        if system.startswith("You are the Tester"):
            return TESTS
        if system.startswith("You are the Judge"):
            s = scores() if callable(scores) else list(scores)
            return {"feedback": feedback() if callable(feedback) else feedback, "scores": s}
        k = next(i for i, (n, _) in enumerate(CFG.coders()) if system.startswith(f"You are {n}"))
        return coder(k, messages) if callable(coder) else coder

    return reply


def flat_digits(i: int, tok: str) -> TokenLogprob:
    """Scripted logprobs: a token with a digit is flat over 10 alternatives, others sure."""
    flat = any(ch.isdigit() for ch in tok)
    probs = [0.1] * 10 if flat else [0.99] + [0.01 / 9] * 9
    top = tuple((f"a{j}", math.log(p)) for j, p in enumerate(probs))
    return TokenLogprob(tok, top[0][1], top)


async def test_debate_with_correct_code_passes_the_real_tests(tmp_path: Path) -> None:
    model = ScriptedModel(team(GOOD))
    r = await play_codegen(TASK, model, CFG, seed=1, trace_dir=tmp_path)
    assert r.success and r.chosen == 1 and r.solved_by == [True] * 4
    assert r.detail == "tests passed" and "def has_close_elements" in r.answer
    assert r.rounds == 2 and r.turns == 2 and r.resets == 0 and r.invalid_actions == 0
    assert r.scores == [[7, 7, 7, 7]] * 2 and r.tests_passed == [[2, 2, 2, 2]] * 2
    assert r.helpfulness == [4] * 4  # round 2's coders rate round 1's review
    assert len(model.calls) == 2 * (4 + 2)
    assert set(r.usage_by_actor) == {f"agent:{n}" for n, _ in CFG.coders()} | {
        "agent:Tester",
        "agent:Judge",
    }
    judge = [c for c in model.calls if c["actor"] == "Judge"]
    assert (
        judge[0]["top_logprobs"] == 10
        and judge[0]["schema"]["properties"]["scores"]["maxItems"] == 4
    )
    assert "Tests passed: solution 1: 2/2" in judge[0]["messages"][1]["content"]
    round2 = model.calls[6]["messages"][1]["content"]  # PythonAssistant, round 2
    assert "Last round's solutions" in round2 and "The Judge's feedback: looks right" in round2
    assert model.calls[0]["top_logprobs"] == 0  # coders' logprobs are not needed
    events = [e["event"] for e in read_trace(tmp_path / "codegen-HumanEval-0-s1.jsonl")]
    assert events.count("turn") == 12 and "codegen_result" in events
    json.dumps(r.summary())  # storable


async def test_wrong_code_fails_the_real_tests() -> None:
    r = await play_codegen(TASK, ScriptedModel(team(BAD)), CFG)
    assert not r.success and r.solved_by == [False] * 4 and r.chosen == 1
    assert r.tests_passed == [[1, 1, 1, 1]] * 2  # `return False` passes the first test only
    assert "AssertionError" in r.detail or r.detail


async def test_the_judge_scores_pick_the_answer() -> None:
    def coder(k: int, _: list) -> str:
        return GOOD if k == 2 else BAD

    r = await play_codegen(TASK, ScriptedModel(team(coder, [3, 2, 9, 1])), CFG)
    assert r.chosen == 3 and r.success and r.solved_by == [False, False, True, False]
    r = await play_codegen(TASK, ScriptedModel(team(coder, [9, 2, 3, 1])), CFG)
    assert r.chosen == 1 and not r.success
    # equal scores: the most tests passed wins
    r = await play_codegen(TASK, ScriptedModel(team(coder, [5, 5, 5, 5])), CFG)
    assert r.chosen == 3 and r.success


async def test_judge_score_positions_give_feature_rows() -> None:
    rec = UncertaintyMonitor()
    model = ScriptedModel(team(GOOD, feedback="fine, 2 tests pass"), logprobs_fn=flat_digits)
    r = await play_codegen(TASK, model, CFG, supervisors=[rec])
    assert r.resets == 0 and rec.missing == 0
    assert [(row["role"], row["turn"], row["agent"]) for row in rec.rows] == [
        ("judge", 1, "Judge"),
        ("judge", 2, "Judge"),
    ]
    for row in rec.rows:
        # the four numbers in "scores", not the 2 in the feedback
        assert row["positions"] == 4 and not row["fallback"]
        assert row["entropy"] == pytest.approx(math.log(10))


class RollbackJudge(BaseSupervisor):
    """Rolls back the Judge's first turn of round `at` and keeps the channel at each turn."""

    name = "test-rollback"
    actions = frozenset({"rollback"})

    def __init__(self, at: int) -> None:
        self.at, self.done = at, False
        self.seen: list[tuple] = []

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        self.seen.append(run.channel.messages)
        if interaction.round == self.at and not self.done:
            self.done = True
            return Verdict.rollback(by=self.name, reason="test")
        return Verdict.approve(self.name)


async def test_rollback_drops_exactly_the_rounds_review() -> None:
    said = iter(["first review", "dropped review", "redone review", "last review"])
    sup = RollbackJudge(at=2)
    model = ScriptedModel(team(GOOD, feedback=lambda: next(said)))
    cfg = CodeGenConfig(rounds=3)
    r = await play_codegen(TASK, model, cfg, supervisors=[sup])
    assert r.resets == 1 and r.turns == 4 and r.success
    assert r.interventions == [
        {"round": 2, "agent": "Judge", "by": "test-rollback", "reason": "test", "removed": 1}
    ]
    # at both judge turns of round 2 the channel is the same up to the (new) tests message
    before, after = sup.seen[1], sup.seen[2]
    assert before[:-1] == after[:-1] and before[-1].sender == after[-1].sender == "Tester"
    assert before[-1].seq != after[-1].seq
    assert [m.sender for m in before[-5:-1]] == [n for n, _ in cfg.coders()]
    # the redone Tester read exactly what the first one read
    tester = [c for c in model.calls if c["actor"] == "Tester"]
    assert len(tester) == 4 and tester[1]["messages"] == tester[2]["messages"]
    # round 3's coders see the redone review only
    round3 = model.calls[-6]["messages"][1]["content"]
    assert "redone review" in round3 and "dropped review" not in round3
    assert r.scores == [[7, 7, 7, 7]] * 3  # the dropped review is not kept


async def test_trained_monitor_rolls_back_the_judge_up_to_the_cap() -> None:
    import numpy as np

    from overseer.monitor import RoleMonitor

    ln10 = math.log(10)
    low_when_flat = RoleMonitor(  # estimate = 1 - entropy / ln 10: 0 at flat score tokens
        role="judge",
        inputs=("turn", "entropy"),
        degree=1,
        tau=0.5,
        gain=0.0,
        scale=np.array([0.0, 2 / ln10]),
        offset=np.array([0.0, -1.0]),
        powers=np.array([[1, 0], [0, 1]]),
        coef=np.array([0.0, -0.5]),
        intercept=0.5,
    )
    for cap in (1, 2):
        mon = UncertaintyMonitor({"judge": low_when_flat}, cap=cap)
        model = ScriptedModel(team(GOOD), logprobs_fn=flat_digits)
        r = await play_codegen(TASK, model, CFG, supervisors=[mon])
        assert r.resets == cap and r.turns == 2 + cap
        assert sum(i["by"] == mon.name for i in r.interventions) == cap
        assert [i["round"] for i in r.interventions] == [1] * cap and r.success
        assert [row["attempt"] for row in mon.rows] == [*range(cap + 1), cap]


async def test_bad_answers_are_re_asked_then_recorded() -> None:
    judge_calls = iter(["not json", '{"feedback": "ok", "scores": [7]}'])

    def reply(messages: list) -> str | dict:
        system = messages[0]["content"]
        if system.startswith("You are the Tester"):
            return {"tests": ["print(1)", "assert (", "x = 1"]}
        if system.startswith("You are the Judge"):
            return next(judge_calls)
        if system.startswith("You are PythonAssistant"):
            return GOOD
        return "I would loop over the pairs."  # no code at all

    cfg = CodeGenConfig(n_coders=2, rounds=1)
    model = ScriptedModel(reply)
    r = await play_codegen(TASK, model, cfg)
    # coder 2: asked twice, no code; tester: asked twice, no usable test; judge: twice, bad
    assert r.invalid_actions == 3 and len(r.errors) == 3
    assert any("no ```python code block" in e for e in r.errors)
    assert any("no test is a single `assert`" in e for e in r.errors)
    assert any('"scores" must be a list of 2 integers' in e for e in r.errors)
    assert r.scores == [None] and r.tests_passed == [[0, 0]]
    assert r.chosen == 1 and r.success  # the only written solution
    re_ask = model.calls[2]["messages"][-1]["content"]
    assert "not usable" in re_ask and "```python" in re_ask
    assert len(model.calls) == 1 + 2 + 2 + 2


def test_parsers() -> None:
    assert extract_solution(GOOD, "has_close_elements").startswith("def has_close_elements")
    bare = "def f(x):\n    return x\n"
    assert extract_solution(bare, "f") == bare
    assert extract_solution("def f(x) return", "f") is None
    assert extract_solution("just prose", "f") is None
    cut = "Here:\n```python\ndef f(x):\n    return [x for"  # stopped by the token limit
    assert extract_solution(cut, "f") == "def f(x):\n    return [x for\n"
    assert extract_solution("```python\nimport os\n", "f") is None
    with pytest.raises(ValueError, match=r"integers 0\.\.10"):
        parse_review('{"feedback": "", "scores": [11]}', 1)
    with pytest.raises(ValueError):
        parse_review('{"feedback": "", "scores": [true]}', 1)
    with pytest.raises(ValueError):
        parse_review("[1]", 1)
    got = parse_tests(
        '{"tests": ["assert f(1)==2", "assert f(1) == 2", "assert g(1)", "assert \\u0000"]}',
        "f",
        5,
    )
    assert got == ["assert f(1) == 2"]


async def test_tests_run_in_the_sandbox_even_when_code_hangs() -> None:
    tests = TESTS["tests"]
    prog = check_program(TASK, extract_solution(GOOD, "has_close_elements"), tests)
    assert "check(has_close_elements)" in prog and "assert has_close_elements([1.0" in prog
    hang = "def has_close_elements(numbers, threshold):\n    while True:\n        pass\n"
    assert await run_tests(TASK, hang, tests, 1.0) == 0
    assert await run_tests(TASK, None, tests, 1.0) == 0
    boom = "import sys\nsys.exit(3)\n"
    assert await run_tests(TASK, boom, tests, 2.0) == 0


def test_splits_and_config() -> None:
    s = codegen_splits()
    ids = [t.id for part in s.values() for t in part]
    assert len(ids) == len(set(ids)) == 164
    assert [len(s[k]) for k in ("train", "validation", "test")] == [33, 16, 115]
    with pytest.raises(ValueError, match="n_coders"):
        CodeGenConfig(n_coders=5)
    with pytest.raises(ValueError, match="rounds"):
        CodeGenConfig(rounds=0)


# -- the monitor commands -----------------------------------------------------------------
PROBLEMS = {str(t.meta["entry_point"]): t for t in load_suite("humaneval", split="all")}


def canonical_team(messages: list) -> str | dict:
    """Coders write the canonical solution when the function name has even length, else a
    wrong stub; the Tester and Judge answer trivially. Works for any HumanEval problem."""
    system = messages[0]["content"]
    if system.startswith("You are the Judge"):
        n = int(system.split("[")[1].split()[0])
        return {"feedback": "ok", "scores": [6] * n}
    entry = system.split("`")[1]
    if system.startswith("You are the Tester"):
        return {"tests": [f"assert {entry} is not None"]}
    t = PROBLEMS[entry]
    code = t.prompt + t.answer if len(entry) % 2 == 0 else f"def {entry}(*a):\n    return 0\n"
    return f"```python\n{code}```"


def noisy(i: int, tok: str) -> TokenLogprob:
    p = 0.5 + 0.4 * math.sin(i * 1.3 + len(tok))
    top = ((tok, math.log(p)), ("x", math.log(1 - p)))
    return TokenLogprob(tok, top[0][1], top)


async def test_codegen_games_through_the_store(tmp_path: Path) -> None:
    from overseer.bench import ResultStore, run_experiment
    from overseer.experiments.monitor import codegen_setup, eval_rows, game_config, split_rows

    setup = codegen_setup(CodeGenConfig(n_coders=2, rounds=2))
    assert setup.suite.startswith("codegen-") and codegen_setup(CodeGenConfig()).suite == "codegen"
    tasks = setup.games("train")[:2] + setup.games("validation")[:1]
    assert tasks[0].id == codegen_splits()["train"][0].id
    model = ScriptedModel(canonical_team, logprobs_fn=noisy)
    for _ in range(2):  # the second run resumes: nothing is played again
        with ResultStore(tmp_path / "r.sqlite") as rs:
            await run_experiment(
                configs=[game_config("collect", setup)],
                tasks=tasks,
                seeds=[0],
                model_name="scripted",
                load_model=lambda: model,
                store=rs,
                progress=False,
            )
            recs = list(rs.records(suite=setup.suite))
        assert len(model.calls) == 3 * 2 * (2 + 2)
    assert all(r.error is None for r in recs) and len(recs) == 3
    for r in recs:
        entry = PROBLEMS[next(e for e in PROBLEMS if PROBLEMS[e].id == r.key.task_id)]
        assert r.correct == (len(entry.meta["entry_point"]) % 2 == 0)
        assert [row["turn"] for row in r.extra["rows"]] == [1, 2]
        assert all(row["role"] == "judge" and row["positions"] == 2 for row in r.extra["rows"])
    train, val = split_rows(recs)
    assert (len(train), len(val)) == (4, 2)
    (row,) = eval_rows("codegen", recs, ["collect"])
    assert row[:2] == ["collect", "3"]


def test_cli_collect_train_eval_codegen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from overseer.cli import main

    monkeypatch.setattr(
        "overseer.models.load_model",
        lambda name, **options: ScriptedModel(canonical_team, logprobs_fn=noisy),
    )
    monkeypatch.setattr("overseer.models.check_server", lambda *a, **kw: None)  # no server
    common = ["--env", "codegen", "--model", "openai:scripted", "--turns", "1", "--coders", "2"]
    common += ["--store", str(tmp_path / "r.sqlite")]
    args = ["monitor", "collect", *common, "--games", "3", "--val-games", "3", "--no-progress"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "6 games planned" in out and "pass@1 %" in out
    mon = str(tmp_path / "m.json")
    assert main(["monitor", "train", *common, "--out", mon]) == 0
    assert "trained on 3 games (3 turns)" in capsys.readouterr().out
    args = ["monitor", "eval", *common, "--monitor", mon, "--games", "2", "--caps", "1"]
    assert main([*args, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "none" in out and "monitor-cap1@" in out and "random-cap1@" in out
    assert main(["monitor", "collect", "--env", "govsim", "--coders", "2"]) == 2
    assert "--coders" in capsys.readouterr().err
