"""benchmarks/scale_out.py: its timing wrapper tells the runner how many workers the backend
has (the Ray columns ran one episode at a time when it hid them), and its scripted model answers
in the direct solver's closed-answer JSON, so an episode is one model call."""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import ModuleType


def test_the_timing_wrapper_passes_the_worker_count_on(
    benchmark_script: Callable[[str], ModuleType],
) -> None:
    mod = benchmark_script("scale_out")
    spec = mod.WorkerSpec(configs=mod.bench_configs, model=functools.partial(int))
    assert mod.Timed(mod.RayBackend(spec, workers=3)).workers == 3
    assert mod.Timed("asyncio").workers == 1


def test_an_episode_is_one_call_answered_right(
    benchmark_script: Callable[[str], ModuleType],
) -> None:
    mod = benchmark_script("scale_out")
    for kind in mod.KINDS:
        load = functools.partial(mod.fixed_latency_model, 0.0, kind)
        _, _, calls = mod.timed_run(3, load, 2, "asyncio")
        assert calls == 1.0, kind
