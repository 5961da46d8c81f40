"""The LLM-free filter on crafted step histories: each trigger, priorities, thresholds, loops."""

from __future__ import annotations

import pytest

from overseer.supervise import FILTER_PRESETS, FilterConfig, Step, preset
from overseer.supervise.filters import StepHistory, classify, normalize_action


def tool(args: str = '{"q": "x"}', obs: str = "ok", *, name: str = "search", **kw) -> Step:
    return Step(agent="a", subtask="s", kind="tool", tool=name, args=args, observation=obs, **kw)


def run(steps: list[Step], cfg: FilterConfig | None = None):
    h = StepHistory()
    out = None
    for s in steps:
        out = classify(h.add(s), cfg or FilterConfig())
    return out


def test_plain_step_is_approved_without_trigger() -> None:
    assert run([tool()]) is None


def test_presets_match_the_seed_table() -> None:
    assert (FILTER_PRESETS["gaia"].tau_step, FILTER_PRESETS["gaia"].tau_loop) == (8, 5)
    assert (FILTER_PRESETS["humaneval"].tau_step, FILTER_PRESETS["humaneval"].tau_loop) == (6, 5)
    for name in ("mbpp", "aime", "drop", "gsm-hard"):
        assert (
            FILTER_PRESETS[name].tau_step,
            FILTER_PRESETS[name].tau_loop,
            FILTER_PRESETS[name].tau_len,
        ) == (
            4,
            3,
            3000,
        )
    assert FILTER_PRESETS["oagents"].tau_len == 10000
    with pytest.raises(ValueError, match="unknown; expected one of"):
        preset("nope")


@pytest.mark.parametrize(
    ("field", "value"), [("tau_step", 0), ("tau_loop", 1), ("tau_len", -5), ("tau_step", 2.5)]
)
def test_bad_thresholds_name_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        FilterConfig(**{field: value})


def test_error_triggers_and_non_critical_errors_are_skipped() -> None:
    assert run([tool(error="ZeroDivisionError: division by zero")]).context == "error"
    cfg = FilterConfig(non_critical_errors=(r"^page not found",))
    assert run([tool(error="page not found: /x")], cfg) is None
    assert run([tool(error="Traceback ...")], cfg).context == "error"


def test_long_observation_is_excessive_only_above_tau_len() -> None:
    cfg = FilterConfig(tau_len=100)
    assert run([tool(obs="x" * 100)], cfg) is None
    t = run([tool(obs="x" * 101)], cfg)
    assert t.context == "excessive" and "101" in t.reason


def test_priority_report_over_error_over_inefficiency_over_length() -> None:
    cfg = FilterConfig(tau_len=10, tau_loop=2, tau_step=50)
    long_err = tool(obs="y" * 50, error="boom")
    assert run([long_err, long_err], cfg).context == "error"  # a loop too, but errors come first
    report = tool(obs="<summary_of_work> done " + "z" * 50, error="boom")
    assert run([report], cfg).context == "synthesis"
    looping_long = tool(obs="y" * 50)
    assert run([looping_long, looping_long], cfg).context == "inefficient"


def test_loop_needs_tau_loop_identical_actions() -> None:
    cfg = FilterConfig(tau_loop=3, tau_step=100)
    same = [tool('{"q": "x"}', obs=f"page {i}") for i in range(3)]
    assert run(same[:2], cfg) is None
    t = run(same, cfg)
    assert t.context == "inefficient" and "identical" in t.reason
    varied = [tool(f'{{"q": "x{i}"}}', obs=f"page {i}") for i in range(3)]
    assert run(varied, cfg) is None


def test_loop_compares_normalised_arguments_and_code() -> None:
    a = tool('{"q": "Paris", "k": 3}')
    b = tool('{ "k": 3,   "q": "paris" }')
    assert normalize_action(a) == normalize_action(b)
    c1 = Step("a", "s", "tool", tool="python", code="print(1)\n\n")
    c2 = Step("a", "s", "tool", tool="python", code="print(2)")
    assert normalize_action(c1) != normalize_action(c2)
    cfg = FilterConfig(tau_loop=2, tau_step=100)
    assert run([c1, Step("a", "s", "tool", tool="python", code="print(1)")], cfg) is not None
    assert run([c1, c2], cfg) is None


def test_identical_observations_count_as_a_loop() -> None:
    cfg = FilterConfig(tau_loop=3, tau_step=100)
    steps = [tool(f'{{"q": "{q}"}}', obs="No results.") for q in "abc"]
    t = run(steps, cfg)
    assert t.context == "inefficient" and "observations" in t.reason


def test_periodic_check_every_tau_step_steps_of_a_subtask() -> None:
    cfg = FilterConfig(tau_step=3, tau_loop=10)
    steps = [tool(f'{{"q": "{i}"}}', obs=str(i)) for i in range(6)]
    h = StepHistory()
    fired = [classify(h.add(s), cfg) is not None for s in steps]
    assert fired == [False, False, True, False, False, True]
    # another sub-task counts from zero
    other = Step("a", "s2", "tool", tool="search", args="{}", observation="o")
    assert classify(h.add(other), cfg) is None


def test_messages_to_other_agents_are_reports_when_long() -> None:
    cfg = FilterConfig(report_min_chars=50, tau_len=10_000)
    msg = Step("a", "s", "message", observation="r" * 60, to_agent=True)
    assert run([msg], cfg).context == "synthesis"
    final = Step("a", "s", "message", observation="r" * 60, to_agent=False)
    assert run([final], cfg) is None
    assert run([msg], cfg.with_(report_min_chars=None)) is None
