"""Speed of each installed local model: tokens/s and latency per call, in process and over HTTP.

Usage: python benchmarks/model_speed.py [--models smollm2-135m,qwen2.5-coder-0.5b] [--calls 5]

Each call gets a distinct prompt head so the prefix cache does not flatter prompt speed.
Modes: plain text; JSON Schema (grammar-constrained); top-10 logprobs; and the same plain
call through the OpenAI-compatible HTTP endpoint of the same server (HTTP overhead).
"""

from __future__ import annotations

import argparse
import statistics
import time

from rich.console import Console
from rich.table import Table

from overseer.models import Completion, LlamaCppModel, Model, OpenAIModel, list_models, load_model

SCHEMA = {
    "type": "object",
    "properties": {"reasoning": {"type": "string"}, "answer": {"type": "integer"}},
    "required": ["reasoning", "answer"],
}
QUESTION = (
    "A farmer has 17 rows of apple trees with 23 trees in each row. He sells 45 trees. "
    "How many trees are left? Explain briefly, then give the number."
)


def _call(model: Model, i: int, mode: str) -> Completion:
    msgs = [
        {"role": "system", "content": f"Session {i * 7919}. You are a careful assistant."},
        {"role": "user", "content": QUESTION},
    ]
    if mode == "schema":
        return model.complete(msgs, max_tokens=96, schema=SCHEMA, seed=i)
    if mode == "logprobs":
        return model.complete(msgs, max_tokens=96, top_logprobs=10, seed=i)
    return model.complete(msgs, max_tokens=96, seed=i)


def _rates(c: Completion) -> tuple[float, float]:
    t = c.raw.get("timings") if isinstance(c.raw, dict) else None
    if t:
        return float(t.get("prompt_per_second", 0.0)), float(t.get("predicted_per_second", 0.0))
    return 0.0, c.usage.completion_tokens / c.latency_s if c.latency_s else 0.0


def measure(name: str, calls: int, table: Table) -> None:
    t0 = time.perf_counter()
    model = load_model(name)
    load_s = time.perf_counter() - t0
    assert isinstance(model, LlamaCppModel)
    http = OpenAIModel(name, base_url=model.base_url, timeout_s=300)
    _call(model, -1, "plain")  # warm-up, not counted
    for label, target, mode in (
        ("in-process", model, "plain"),
        ("in-process +schema", model, "schema"),
        ("in-process +logprobs10", model, "logprobs"),
        ("http (same server)", http, "plain"),
    ):
        outs = [_call(target, i, mode) for i in range(calls)]
        lat = [c.latency_s for c in outs]
        rates = [_rates(c) for c in outs]
        table.add_row(
            name,
            label,
            f"{load_s:.1f}",
            str(calls),
            f"{statistics.mean(c.usage.prompt_tokens for c in outs):.0f}",
            f"{statistics.mean(c.usage.completion_tokens for c in outs):.0f}",
            f"{statistics.mean(r[0] for r in rates):.0f}",
            f"{statistics.mean(r[1] for r in rates):.1f}",
            f"{statistics.mean(lat):.2f}",
            f"{max(lat):.2f}",
        )
    model.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="", help="comma-separated; default: all installed")
    ap.add_argument("--calls", type=int, default=5)
    args = ap.parse_args()
    names = [m for m in args.models.split(",") if m] or [
        s.name for s in list_models() if s.installed
    ]
    table = Table(title="local model speed (llama.cpp timings; latency is wall time per call)")
    for col in (
        "model",
        "mode",
        "load s",
        "calls",
        "prompt tok",
        "compl tok",
        "prompt tok/s",
        "gen tok/s",
        "lat mean s",
        "lat max s",
    ):
        table.add_column(col, justify="left" if col in ("model", "mode") else "right")
    for name in names:
        measure(name, args.calls, table)
    Console(width=160).print(table)


if __name__ == "__main__":
    main()
