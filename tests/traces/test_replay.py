"""Replay of the rule tier on a hand-made trajectory with known repeats and long outputs."""

from __future__ import annotations

import pytest

from overseer.models import LlamaCppModel
from overseer.supervise.rules import RuleSettings
from overseer.traces import Annotation, TraceStep, Trajectory
from overseer.traces._tokens import ModelTokenizer
from overseer.traces.replay import replay, totals


class Words:
    """One token per whitespace-separated word (a logic-test tokenizer; the CLI uses a model's)."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


def _traj(mistake: int | None = 4) -> Trajectory:
    page = " ".join(f"w{i}" for i in range(1200))  # 1200 words, about 6,000 chars: purified
    spec = [
        ("human", "find the price", False),
        ("Orchestrator", "search price", False),  # action 1
        ("WebSurfer", "short result", True),
        ("Orchestrator", "search price", False),  # repeat 1 (second time: allowed)
        ("WebSurfer", page, True),
        ("Orchestrator", "search price", False),  # repeat 2: third time, loop breaker fires
        ("WebSurfer", "short result", True),  # repeat of step 2
        ("Orchestrator", "Search   PRICE", False),  # repeat 3 (normalised): fires again
        ("Orchestrator", "give answer", False),
    ]
    steps = tuple(
        TraceStep(i, a, a, c, to="WebSurfer" if a == "Orchestrator" else None, is_observation=o)
        for i, (a, c, o) in enumerate(spec)
    )
    ann = Annotation("Orchestrator", mistake, "") if mistake is not None else None
    return Trajectory("t", "test", "What is the price?", steps, {"Orchestrator": "be brief"},
                      annotation=ann)  # fmt: skip


def test_repeats_loop_blocks_and_first_firing() -> None:
    r = replay(_traj(), Words(), RuleSettings(loop_limit=2, mask_keep=1))
    assert r.repeats == 4  # steps 3, 5, 6, 7
    assert r.first_repeat == 3
    assert r.loop_blocks == 2  # steps 5 and 7 (third and fourth identical action)
    assert [s.index for s in r.steps if "loop_breaker" in s.firings] == [5, 7]
    assert r.firings["purification"] == 1 and "purification" in r.steps[4].firings
    assert r.first_firing == 4 and r.position == "at"  # purification at the mistake step
    assert replay(_traj(6), Words()).position == "before"
    assert replay(_traj(2), Words()).position == "after"
    assert replay(_traj(None), Words()).position == "unlabelled"


def test_context_tokens_with_and_without_the_rules() -> None:
    r = replay(_traj(), Words(), RuleSettings(loop_limit=2, mask_keep=1))
    lens = [len(s.text.split()) for s in _traj().steps]
    # step i is sent the speaker's system prompt (2 words for the Orchestrator) + steps before
    for s in r.steps:
        system = 2 if s.agent == "Orchestrator" else 0
        assert s.context_logged == system + sum(lens[: s.index])
    assert r.context_logged == sum(s.context_logged for s in r.steps)
    assert r.observation_tokens == 2 + 1200 + 2
    assert r.observation_tokens_rules < r.observation_tokens  # the long page was purified
    # after step 6 the page is older than the last observation: masked to a one-line stub
    assert r.steps[8].context_rules < r.steps[8].context_logged - 900
    assert r.context_rules < r.context_logged
    tot = totals([r, replay(_traj(6), Words())])
    assert tot.logs == 2 and tot.repeats == 8 and tot.positions == {"at": 1, "before": 1}


def test_rules_switched_off_change_nothing() -> None:
    off = RuleSettings(loop_breaker=False, masking=False, purify=False)
    r = replay(_traj(), Words(), off)
    assert r.loop_blocks == 0 and r.firings == {} and r.first_firing is None
    assert r.context_rules == r.context_logged and r.repeats == 4


@pytest.mark.e2e
def test_replay_counts_with_a_real_tokenizer(embedded_model: LlamaCppModel) -> None:
    tok = ModelTokenizer(embedded_model)
    assert tok.count("hello world") in (2, 3) and tok.count("") == 0
    r = replay(_traj(), tok, RuleSettings(loop_limit=2, mask_keep=1))
    assert r.repeats == 4 and r.loop_blocks == 2
    assert r.observation_tokens > 1200  # "w17" is more than one token
    assert r.context_rules < r.context_logged
