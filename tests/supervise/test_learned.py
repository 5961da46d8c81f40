"""The learned trigger: features, labels, threshold choice, training, the versioned file, and
the gate on the bus (scripted models); training and loading from a real stored run is in
test_learned_embedded.py."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import pytest

from overseer.experiments.supervise import supervise_plugin
from overseer.models import ModelError, ScriptedModel
from overseer.runtime import AgentSpec, Executor, RunResult, TeamSpec, ToolResult, read_trace
from overseer.supervise import (
    FilterConfig,
    Step,
    SupervisorAgent,
    SupervisorSettings,
    reply_template,
)
from overseer.supervise.filters import Trigger
from overseer.supervise.learned import (
    CATEGORICAL,
    NUMERIC,
    Example,
    LearnedTrigger,
    choose_threshold,
    effect_label,
    examples_from_traces,
    label_of,
    load_trigger,
    step_features,
    train_trigger,
)
from overseer.supervise.modes import mode_settings


def step(**kw: Any) -> Step:
    base: dict[str, Any] = {"agent": "coder", "subtask": "t", "kind": "tool", "tool": "python"}
    return Step(**{**base, **kw})


# -- features and labels ---------------------------------------------------------------------


def test_step_features_count_repeats_errors_and_name_the_error_type() -> None:
    a = step(code="print(1)", observation="", error="NameError: name 'x' is not defined")
    b = step(code="print(1)\n", observation="", error="NameError: name 'x' is not defined")
    c = step(code="print( 1)", observation="ok" * 10, thought="hmm")
    f = step_features(b, [a, b], Trigger("error", "error: NameError"), role="Python programmer")
    assert f["repeats"] == 1.0 and f["errors_before"] == 1.0 and f["step_index"] == 2.0
    assert f["error_type"] == "NameError" and f["context"] == "error" and f["tool"] == "python"
    assert f["role"] == "Python programmer" and f["obs_chars_log"] == 0.0
    g = step_features(c, [a, b, c], Trigger("inefficient", "loop: the last 3 ..."))
    assert g["loop"] == 1.0 and g["periodic"] == 0.0 and g["error_type"] == "none"
    assert g["role"] == "coder"  # no role given: the agent's name stands for it
    assert g["obs_chars_log"] == pytest.approx(math.log1p(20))
    assert set(f) == set(NUMERIC) | set(CATEGORICAL)
    unknown = step_features(step(error="unknown tool 'foo'"), [step()], Trigger("error", "e"))
    assert unknown["error_type"] == "unknown_tool"


def test_label_of_a_supervision_event() -> None:
    feats = {"context": "error"}
    ev = {"event": "supervision", "features": feats}
    assert label_of({**ev, "action": "provide_guidance", "note": ""}) == 1
    assert label_of({**ev, "action": "approve", "note": ""}) == 0
    # a reply that was not applied (a rewrite refused by the fact check) is no kept intervention
    assert label_of({**ev, "action": "correct_observation", "note": "correction rejected"}) == 0
    assert label_of({**ev, "action": None, "note": "learned trigger: approve"}) is None
    assert label_of({"event": "supervision", "action": "approve"}) is None  # no features
    assert label_of({"event": "rule", "features": feats, "action": "x"}) is None


def test_choose_threshold_keeps_the_asked_recall_and_skips_the_most() -> None:
    probs = [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9]
    labels = [0, 0, 1, 0, 1, 0, 1, 1]
    assert choose_threshold(probs, labels, 1.0) == 0.3  # all 4 positives kept, 2 skipped
    assert choose_threshold(probs, labels, 0.75) == 0.6  # 3 of 4 kept, 4 steps skipped
    assert choose_threshold(probs, [0] * 8, 0.9) == 0.0  # nothing to keep: always ask
    with pytest.raises(ValueError, match="min_recall"):
        choose_threshold(probs, labels, 0.0)


# -- training and the file -------------------------------------------------------------------


def examples(n: int, offset: int = 0) -> list[Example]:
    """Errors of the python tool are worth an intervention; long observations are not."""
    out = []
    for i in range(n):
        err = (i + offset) % 2 == 0
        feats = {
            **{k: 0.0 for k in NUMERIC},
            "obs_chars_log": 2.0 if err else 8.0 + (i % 3) / 10,
            "context": "error" if err else "excessive",
            "error_type": "NameError" if err else "none",
            "role": "coder",
            "tool": "python" if err else "web_fetch",
        }
        out.append(Example(feats, int(err), f"r{i}"))
    return out


def test_train_save_load_round_trip_and_the_gate_decision(tmp_path: Path) -> None:
    trig = train_trigger(examples(20), examples(8, offset=1), seed=0)
    assert "context=error" in trig.features and "tool=web_fetch" in trig.features
    err, long = examples(2)
    assert trig.prob(err.features) > 0.5 > trig.prob(long.features)
    assert trig.skip(long.features)[0] and not trig.skip(err.features)[0]
    assert trig.meta["threshold_on"] == "validation"
    path = trig.save(tmp_path / "t" / "trigger.json")
    again = load_trigger(path)
    assert again.prob(err.features) == pytest.approx(trig.prob(err.features))
    assert again.threshold == trig.threshold and again.source == str(path)
    data = json.loads(path.read_text())
    assert data["version"] == 1 and data["features"] == list(trig.features)
    # the same data and seed give the same file
    assert train_trigger(examples(20), examples(8, offset=1), seed=0).to_json() == trig.to_json()


def test_training_needs_both_labels() -> None:
    only = [e for e in examples(10) if e.label == 0]
    with pytest.raises(ValueError, match="both labels are needed"):
        train_trigger(only, only)


def test_one_label_gives_a_constant_trigger_when_allowed(tmp_path: Path) -> None:
    neg = [e for e in examples(10) if e.label == 0]
    never = train_trigger(neg, neg, label="effect", allow_constant=True)
    assert never.meta["constant"] == "never ask" and never.meta["label"] == "effect"
    assert all(never.skip(e.features)[0] for e in examples(10))
    pos = [e for e in examples(10) if e.label == 1]
    always = load_trigger(train_trigger(pos, pos, allow_constant=True).save(tmp_path / "a.json"))
    assert not any(always.skip(e.features)[0] for e in examples(10))


def test_effect_label_counts_a_hint_only_if_the_agent_changed_course(tmp_path: Path) -> None:
    feats = {"context": "error"}

    def act(step: int, url: str) -> dict[str, Any]:
        return {"event": "interaction", "agent": "a", "round": 0, "step": step, "tool": "visit",
                "input": url}  # fmt: skip

    def sup(step: int, action: str) -> dict[str, Any]:
        return {"event": "supervision", "agent": "a", "round": 0, "step": step,
                "action": action, "note": "", "features": feats}  # fmt: skip

    ignored = [act(0, '{"url": "x"}'), sup(0, "run_verification"), act(1, '{ "url":"x" }')]
    heeded = [act(0, '{"url": "x"}'), sup(0, "provide_guidance"), act(1, '{"url": "y"}')]
    last = [act(0, '{"url": "x"}'), sup(0, "provide_guidance")]  # the agent never acted again
    fixed = [act(0, '{"url": "x"}'), sup(0, "correct_observation"), act(1, '{"url": "x"}')]
    approve = [act(0, '{"url": "x"}'), sup(0, "approve"), act(1, '{"url": "y"}')]
    assert effect_label(ignored, 1) == 0 and label_of(ignored[1]) == 1
    assert effect_label(heeded, 1) == 1 and effect_label(last, 1) == 0
    assert effect_label(fixed, 1) == 1 and effect_label(approve, 1) == 0
    assert effect_label(ignored, 0) is None
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in [*ignored, *heeded]))
    assert [e.label for e in examples_from_traces([path])] == [1, 1]
    assert [e.label for e in examples_from_traces([path], label="effect")] == [0, 1]
    with pytest.raises(ValueError, match="trigger label 'both': expected one of kept, effect"):
        examples_from_traces([path], label="both")  # type: ignore[arg-type]


def test_threshold_falls_back_to_train_when_validation_has_no_intervention() -> None:
    val = [e for e in examples(6) if e.label == 0]
    trig = train_trigger(examples(20), val)
    assert trig.meta["threshold_on"].startswith("train+validation")


def write(path: Path, **changes: Any) -> Path:
    data = train_trigger(examples(20), examples(8, offset=1)).to_json()
    data.update(changes)
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"version": 2}, "version 2 is not supported (expected 1); retrain it"),
        ({"format": "other"}, "not a overseer.learned-trigger file"),
        ({"raw_features": ["obs_chars_log"]}, "trained on the feature set"),
        ({"features": ["gpu_temp", "context=error"]}, "feature 'gpu_temp' is not one"),
        ({"coef": [1.0]}, "one equal, non-zero length"),
    ],
)
def test_an_old_or_foreign_file_is_refused_with_one_line(
    tmp_path: Path, changes: dict[str, Any], message: str
) -> None:
    path = write(tmp_path / "t.json", **changes)
    if "features" in changes:  # keep the lengths consistent so the name check is what fails
        data = json.loads(path.read_text())
        n = len(changes["features"])
        data.update(mean=[0.0] * n, scale=[1.0] * n, coef=[0.0] * n)
        path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        load_trigger(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_load_by_name_and_a_missing_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "x.json")
    (tmp_path / "results" / "triggers").mkdir(parents=True)
    write(tmp_path / "results" / "triggers" / "browse.json")
    assert load_trigger("browse").source.endswith("results/triggers/browse.json")
    with pytest.raises(ValueError, match=r"no such file .* results/triggers/N\.json"):
        load_trigger("nothing")
    # mode `learned` with no trigger named reads results/trigger.json, and says so when missing
    with pytest.raises(
        ValueError, match=re.escape("learned trigger results/trigger.json: no such file")
    ):
        mode_settings("learned")
    assert mode_settings("learned", base=SupervisorSettings(learned=load_trigger("x.json")))


# -- on the bus ------------------------------------------------------------------------------


class ErrTool:
    name = "lookup"
    description = "look something up"
    parameters: Mapping[str, Any] = {"type": "object", "properties": {"q": {"type": "string"}}}
    kind: Literal["tool", "memory"] = "tool"

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        return ToolResult("", f"KeyError: {args.get('q')!r}")


def constant(threshold: float, p_logit: float = 0.0) -> LearnedTrigger:
    """A trigger whose probability is sigmoid(p_logit) everywhere."""
    return LearnedTrigger(("step_index",), (0.0,), (1.0,), (0.0,), p_logit, threshold)


async def run(tmp_path: Path, trigger: LearnedTrigger | None) -> tuple[RunResult, list]:
    sup_calls: list = []
    n = {"agent": 0}

    def supervisor(messages: list) -> object:
        sup_calls.append(messages)
        return reply_template("provide_guidance", "typo", "use q='b'")

    def reply(messages: list) -> object:
        n["agent"] += 1
        if n["agent"] <= 2:
            return {"thought": "", "action": "lookup", "args": {"q": f"a{n['agent']}"}}
        return {"thought": "", "action": "answer", "answer": "x"}

    cfg = SupervisorSettings(filter=FilterConfig(tau_step=100), learned=trigger, verify=False)
    team = TeamSpec(agents=[AgentSpec(name="a", role="Looker", tools=["lookup"])], decision="last")
    ex = Executor(
        ScriptedModel(reply, by_actor={"supervisor": supervisor}),
        supervisors=[SupervisorAgent(settings=cfg)],
        tools={"lookup": ErrTool()},
        trace_dir=tmp_path,
    )
    return await ex.run(team, "Q"), sup_calls


async def test_the_gate_skips_the_llm_where_approve_is_predicted(tmp_path: Path) -> None:
    res, calls = await run(tmp_path / "skip", constant(0.9))
    assert calls == []  # two error steps, no supervisor call
    st = res.plugin_stats["supervisor"]
    assert st["triggers"] == {"error": 2} and st["skipped"] == {"learned trigger": 2}
    sup = [e for e in read_trace(res.trace_path) if e["event"] == "supervision"]
    assert [e["action"] for e in sup] == [None, None]
    assert sup[0]["note"] == "learned trigger: approve predicted (p=0.500 < 0.900)"
    assert sup[0]["features"]["role"] == "Looker" and sup[0]["features"]["error_type"] == "KeyError"
    assert examples_from_traces([tmp_path / "skip"]) == []  # no LLM decision: nothing to learn


async def test_below_the_threshold_the_llm_is_asked_and_its_decision_is_a_label(
    tmp_path: Path,
) -> None:
    res, calls = await run(tmp_path / "ask", constant(0.4))
    assert len(calls) == 2
    assert res.plugin_stats["supervisor"]["actions"] == {"provide_guidance": 2}
    ex = examples_from_traces([tmp_path / "ask"])
    assert [e.label for e in ex] == [1, 1] and ex[0].run == res.run_id
    assert ex[1].features["repeats"] == 0.0 and ex[1].features["errors_before"] == 1.0
    # without a trigger the features are traced too (training data from any supervised run)
    plain, _ = await run(tmp_path / "plain", None)
    assert len(examples_from_traces([plain.trace_path])) == 2


def test_examples_from_a_path_without_traces_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no trace files"):
        examples_from_traces([tmp_path])
    with pytest.raises(ValueError, match="no such file or directory"):
        examples_from_traces([tmp_path / "missing"])


def test_supervise_plugin_takes_a_trigger_file(tmp_path: Path) -> None:
    path = write(tmp_path / "t.json")
    *rules, agent = supervise_plugin("learned", trigger=path)(ScriptedModel([]))
    assert isinstance(agent, SupervisorAgent) and len(rules) == 4  # the rule plug-ins first
    assert agent.settings.learned is not None and agent.settings.rules is not None


# -- the supervisor's own model --------------------------------------------------------------


async def test_supervisor_model_is_loaded_once_and_booked_apart(tmp_path: Path) -> None:
    import pickle

    from overseer.cli._supervisor_model import with_supervisor_model
    from overseer.experiments.registry import bench_configs
    from overseer.experiments.supervise import SharedModel

    loads: list[str] = []

    def load(name: str) -> ScriptedModel:
        loads.append(name)
        return ScriptedModel(
            lambda m: reply_template("provide_guidance", "typo", "use q='b'"), name=name
        )

    shared = SharedModel("big", lambda: load("big"))
    assert pickle.loads(pickle.dumps(SharedModel("big", str))).name == "big"  # ships unloaded
    reg = with_supervisor_model(bench_configs, "smollm2-135m", lambda n: shared)()
    cfg = reg.get("baseline+supervise:rules+llm")
    *_, agent = cfg.plugins[-1](ScriptedModel([]))
    assert isinstance(agent, SupervisorAgent) and isinstance(agent.model, SharedModel)
    assert agent.model.name == "smollm2-135m" and loads == []  # not loaded before its first call
    with pytest.raises(ModelError, match="no-such-model"):
        with_supervisor_model(bench_configs, "no-such-model", load)
    # two runs on one shared supervisor model: loaded once, its calls booked under its name
    for i in range(2):
        n = {"agent": 0}

        def reply(messages: list, n: dict = n) -> object:
            n["agent"] += 1
            if n["agent"] == 1:
                return {"thought": "", "action": "lookup", "args": {"q": "a"}}
            return {"thought": "", "action": "answer", "answer": "x"}

        sup = SupervisorAgent(shared, SupervisorSettings(verify=False))
        ex = Executor(
            ScriptedModel(reply, name="small"),
            supervisors=[sup],
            tools={"lookup": ErrTool()},
            trace_dir=tmp_path / str(i),
        )
        res = await ex.run(TeamSpec(agents=[AgentSpec(name="a", tools=["lookup"])]), "Q")
        calls = [e for e in read_trace(res.trace_path) if e["event"] == "model_call"]
        by = {e["gen_ai.agent.name"]: e["gen_ai.request.model"] for e in calls}
        assert by["supervisor"] == "big" and by["a"] == "small"
        assert res.usage_by_actor["supervisor:supervisor"].total_tokens > 0
    assert loads == ["big"]
