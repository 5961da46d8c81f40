"""Issue 49 on a real model: one `OverseerSupervisor`, two smolagents agents run at once (two
threads) against the embedded model's own HTTP server (through a recording proxy): two runs,
each trace holding its own question only and ending with `run_end`, and each run's ledger
equal to what the server reported for that run's requests: calls, prompt tokens and cached
prompt tokens (SmolLM2 writes no tool call smolagents can run, so each run is its failed
step and the final-answer call smolagents makes at `max_steps`: the call a step callback
never sees)."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest
from smolagents import OpenAIServerModel, ToolCallingAgent, tool

from overseer.integrations.smolagents import OverseerSupervisor
from overseer.models import LlamaCppModel
from overseer.runtime import read_trace

from .recording_proxy import RecordingProxy

pytestmark = pytest.mark.e2e

BOX = re.compile(r"box-\d+-x")


@tool
def lookup(key: str) -> str:
    """Look up the code stored under a key.

    Args:
        key: the key
    """
    return f"The code stored under {key} is 47."


def test_two_agents_at_once_two_runs_each_booked_as_served(
    embedded_model: LlamaCppModel, tmp_path: Path
) -> None:
    sup = OverseerSupervisor(mode="rules", trace_dir=tmp_path)
    books: dict[str, tuple[int, int, int]] = {}
    with RecordingProxy(embedded_model.base_url) as proxy:
        model = OpenAIServerModel(model_id=embedded_model.name, api_base=proxy.base_url,
                                  api_key="none", max_tokens=24, temperature=0.0)  # fmt: skip

        def one(k: int) -> None:
            agent = ToolCallingAgent(tools=[lookup], model=model, max_steps=1, verbosity_level=-1)
            sup.attach(agent).run(f"What is the code stored under box-{k:02d}-x? Call lookup.")
            used = [e.usage for e in sup.run.ledger.entries]
            books[f"box-{k:02d}-x"] = (len(used), sum(u.prompt_tokens for u in used),
                                       sum(u.cached_prompt_tokens for u in used))  # fmt: skip

        threads = [threading.Thread(target=one, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        served: dict[str, tuple[int, int, int]] = {}
        for ex in proxy.exchanges:
            box = BOX.findall(ex.text())[0]
            n, p, c = served.get(box, (0, 0, 0))
            served[box] = (n + 1, p + ex.prompt_tokens, c + ex.cached_tokens)
    assert sup.runs == 2 and books == served and all(n >= 2 for n, _, _ in served.values())
    traces = sorted(tmp_path.glob("*.jsonl"))
    assert len(traces) == 2
    for path in traces:
        events = list(read_trace(path, validate=True))
        assert len(set(BOX.findall(json.dumps(events)))) == 1  # its own question only
        assert events[-1]["event"] == "run_end"
