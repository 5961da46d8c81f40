"""Executor and bus overhead per agent step, with an instant scripted model.

Usage: python benchmarks/runtime_overhead.py [--runs 50] [--agents 5] [--rounds 2] [--repeats 5]
       [--trace-dir runs]

"scripted model call" is the model's own cost (its calls of one team run replayed, without
the runtime around them); "overhead" is a step's cost less that call: the executor (prompt
building, turn scheduling), the structured ask (request checks, JSON parsing), the ledger,
the trace (written, flushed before each model call) and the bus with a chain of supervisors
that approve everything. Each run is timed alone, in wall-clock and in CPU time of this
process, and a batch of `--runs` runs gives its median run per step: on a loaded machine a
few runs in a batch are preempted or hit a slow disk (milliseconds, not microseconds), which
moves a batch's mean but not its median; the column "cpu mean" keeps that tail in view. Each
setting is measured `--repeats` times; the table gives the minimum and the median over them.
The second table splits a step's CPU time by layer (shares from cProfile on the CPU clock,
scaled to the measured minimum), so a regression shows up as one row that grew.

Each run creates its trace file in a temporary folder inside `--trace-dir` (default `runs`,
where a run writes its trace unless told otherwise); the file system's cost of creating a
file is part of every step's share, and the row "trace file creation alone" shows it apart
(on some machines a folder such as /tmp makes it ten times dearer).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from overseer.models import Request, ScriptedModel
from overseer.runtime import BaseSupervisor, Executor, Interaction, Run, Verdict, make_team

STEP = {"thought": "ok", "action": "answer", "answer": "42"}

#: where a function's own time goes, by the first fragment of its file path that matches
LAYERS: tuple[tuple[str, str], ...] = (
    ("overseer/models/_scripted.py", "scripted model (apart)"),
    ("overseer/runtime/_trace.py", "trace"),
    ("overseer/runtime/_events.py", "trace"),
    ("orjson", "trace"),
    ("overseer/runtime/_ledger.py", "ledger"),
    ("overseer/runtime/_bus.py", "bus"),
    ("overseer/runtime/_interaction.py", "bus"),
    ("overseer/runtime/verdicts.py", "bus"),
    ("runtime_overhead.py", "bus"),  # the approving supervisors below
    ("overseer/models/_structured.py", "structured ask"),
    ("overseer/models/_types.py", "structured ask"),
    ("overseer/runtime/", "executor"),
    ("asyncio/", "executor"),
)
ORDER = ("executor", "bus", "ledger", "trace", "structured ask", "scripted model (apart)")


def reply(messages: list) -> str | dict[str, str]:
    return "42" if "final decision-maker" in messages[-1]["content"] else STEP


class Approver(BaseSupervisor):
    """Approves every step and every round's end, asked about each: it has its own hooks,
    since the chain does not call a hook left as BaseSupervisor wrote it."""

    def __init__(self, i: int) -> None:
        self.name = f"approver{i}"

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        return self._approval()

    async def on_round_end(self, run: Run) -> Verdict | None:
        return None


@dataclass(frozen=True)
class Sample:
    """One measured batch of runs: the median run's wall and CPU microseconds per step, the
    batch's mean CPU microseconds per step, its steps and trace events."""

    wall_us: float
    cpu_us: float
    cpu_mean_us: float
    steps: int
    events: int


async def measure(
    runs: int, agents: int, rounds: int, supervisors: int, trace_dir: str | None = None
) -> Sample:
    """Run `runs` team runs, each timed alone (wall and process CPU) per agent step; the
    traces go to a temporary folder inside `trace_dir` (None: the system's temporary folder)."""
    model = ScriptedModel(reply)
    team = make_team("complete", agents, rounds=rounds)
    walls: list[float] = []
    cpus: list[float] = []
    steps = 0
    with tempfile.TemporaryDirectory(dir=trace_dir) as d:
        ex = Executor(model, trace_dir=d, supervisors=[Approver(i) for i in range(supervisors)])
        for _ in range(runs):
            t0, c0 = time.perf_counter(), time.process_time()
            res = await ex.run(team, "What is 6*7?")
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            n = sum(res.calls_by_actor.values())
            walls.append(wall / n * 1e6)
            cpus.append(cpu / n * 1e6)
            steps += n
        events = sum(len(p.read_bytes().splitlines()) for p in Path(d).glob("*.jsonl"))
    return Sample(
        statistics.median(walls), statistics.median(cpus), statistics.mean(cpus), steps, events
    )


def file_create_us(trace_dir: str | None, n: int = 50) -> tuple[float, float]:
    """Wall and CPU microseconds to create, write a line to and close one file in a temporary
    folder inside `trace_dir` (the median of `n`): what a run's trace file costs the file
    system."""
    walls: list[float] = []
    cpus: list[float] = []
    with tempfile.TemporaryDirectory(dir=trace_dir) as d:
        for i in range(n):
            t0, c0 = time.perf_counter(), time.process_time()
            with open(Path(d, f"{i}.jsonl"), "xb") as fh:
                fh.write(b"{}\n")
            walls.append((time.perf_counter() - t0) * 1e6)
            cpus.append((time.process_time() - c0) * 1e6)
    return statistics.median(walls), statistics.median(cpus)


async def per_step_us(runs: int, agents: int, rounds: int, supervisors: int) -> tuple[float, int]:
    """Wall-clock microseconds per agent step, and the steps (kept for older callers)."""
    s = await measure(runs, agents, rounds, supervisors)
    return s.wall_us, s.steps


def bare_model_us(agents: int, rounds: int, n: int = 20) -> tuple[float, float]:
    """Wall and CPU microseconds of the scripted model's own call, on the very requests of
    one team run (their prompts grow with the rounds), replayed `n` times (the median
    replay): the part of a step that is the model's, not the runtime's."""
    seen = ScriptedModel(reply)
    with tempfile.TemporaryDirectory() as d:
        asyncio.run(
            Executor(seen, trace_dir=d).run(
                make_team("complete", agents, rounds=rounds), "What is 6*7?"
            )
        )
    requests = [
        Request.of(c["messages"], max_tokens=c["max_tokens"], schema=c["schema"], seed=c["seed"])
        for c in seen.calls
    ]
    model = ScriptedModel(reply)
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(n):  # one replay of the run's calls at a time: its median, as for the runs
        t0, c0 = time.perf_counter(), time.process_time()
        for r in requests:
            model._complete(r)
        walls.append((time.perf_counter() - t0) / len(requests) * 1e6)
        cpus.append((time.process_time() - c0) / len(requests) * 1e6)
    return statistics.median(walls), statistics.median(cpus)


def layer_of(filename: str) -> str | None:
    for fragment, layer in LAYERS:
        if fragment in filename:
            return layer
    return None


def layer_shares(stats: pstats.Stats) -> dict[str, float]:
    """Each layer's share of the profiled time: a function's own time goes to its file's
    layer; time in library code (json, builtins, pydantic, dataclasses) goes to the layers
    of its callers, in proportion to what each caller spent in it."""
    raw = stats.stats  # type: ignore[attr-defined]
    memo: dict[tuple, dict[str, float]] = {}

    def owner(func: tuple, depth: int = 0) -> dict[str, float]:
        if func in memo:
            return memo[func]
        layer = layer_of(func[0])
        if layer is not None or depth > 30 or func not in raw:
            memo[func] = {layer or "other": 1.0}
            return memo[func]
        memo[func] = {"other": 1.0}  # cycle guard
        callers = raw[func][4]
        weight = {c: v[2] + v[3] for c, v in callers.items()}
        total = sum(weight.values())
        out: dict[str, float] = {}
        for c, w in weight.items():
            for lay, part in owner(c, depth + 1).items():
                out[lay] = out.get(lay, 0.0) + part * (w / total if total else 1 / len(weight))
        memo[func] = out or {"other": 1.0}
        return memo[func]

    shares: dict[str, float] = {}
    for func, (_, _, tt, _, _) in raw.items():
        for lay, part in owner(func).items():
            shares[lay] = shares.get(lay, 0.0) + tt * part
    whole = sum(shares.values()) or 1.0
    return {k: v / whole for k, v in shares.items()}


def profile_layers(
    runs: int, agents: int, rounds: int, supervisors: int, trace_dir: str | None = None
) -> dict[str, float]:
    """Layer shares of the CPU time of `runs` team runs (cProfile on the process clock)."""
    prof = cProfile.Profile(time.process_time)
    prof.enable()
    asyncio.run(measure(runs, agents, rounds, supervisors, trace_dir))
    prof.disable()
    return layer_shares(pstats.Stats(prof))


def _mm(values: list[float]) -> str:
    return f"{min(values):.0f} / {statistics.median(values):.0f}"


def step_table(args: argparse.Namespace, chains: list[int]) -> tuple[Table, float]:
    """The per-step table (the model alone, the trace file alone, each chain length) and the
    minimum CPU microseconds per step of the longest chain."""
    bare = [bare_model_us(args.agents, args.rounds) for _ in range(args.repeats)]
    bare_cpu = min(b[1] for b in bare)
    files = [file_create_us(args.trace_dir) for _ in range(args.repeats)]
    steps_per_run = args.agents * args.rounds + 1
    t = Table(
        title=f"overhead per agent step (complete team, {args.agents} agents, {args.rounds} "
        f"rounds, {args.runs} runs x {args.repeats}; each batch's median run, min / median "
        f"over the batches; traces in "
        f"{args.trace_dir or tempfile.gettempdir()}; load {os.getloadavg()[0]:.1f}, "
        f"cpus {sorted(os.sched_getaffinity(0))})"
    )
    cols = ("setting", "steps", "events/step", "wall us", "cpu us", "cpu mean", "overhead cpu us")
    for col in cols:
        t.add_column(col, justify="left" if col == "setting" else "right")
    t.add_row("scripted model call alone", "-", "-", _mm([b[0] for b in bare]),
              _mm([b[1] for b in bare]), "-", "-")  # fmt: skip
    t.add_row(
        f"trace file creation alone (a run's, / {steps_per_run} steps)",
        "-",
        "-",
        _mm([f[0] / steps_per_run for f in files]),
        _mm([f[1] / steps_per_run for f in files]),
        "-",
        "(in the rows below)",
    )
    last_cpu = 0.0
    for k in chains:
        got = [
            asyncio.run(measure(args.runs, args.agents, args.rounds, k, args.trace_dir))
            for _ in range(args.repeats)
        ]
        cpu = [s.cpu_us for s in got]
        t.add_row(
            f"executor + bus, {k} supervisors",
            str(got[0].steps),
            f"{got[0].events / got[0].steps:.2f}",
            _mm([s.wall_us for s in got]),
            _mm(cpu),
            _mm([s.cpu_mean_us for s in got]),
            _mm([c - bare_cpu for c in cpu]),
        )
        last_cpu = min(cpu)
    return t, last_cpu


def layer_table(args: argparse.Namespace, k: int, cpu_us: float) -> Table:
    """CPU per step by layer for a chain of `k` supervisors: the median share of three
    profiles (one profile can catch a pause), scaled to `cpu_us`."""
    profiles = [
        profile_layers(max(args.runs // 2, 1), args.agents, args.rounds, k, args.trace_dir)
        for _ in range(3)
    ]
    shares = {x: statistics.median(p.get(x, 0.0) for p in profiles) for x in (*ORDER, "other")}
    lt = Table(
        title=f"cpu per agent step by layer, {k} supervisors "
        f"(median cProfile share of 3 x the {cpu_us:.0f} us minimum)"
    )
    for col in ("layer", "share", "us per step"):
        lt.add_column(col, justify="left" if col == "layer" else "right")
    for layer in (*ORDER, "other"):
        share = shares.get(layer, 0.0)
        lt.add_row(layer, f"{share:.0%}", f"{share * cpu_us:.1f}")
    return lt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--agents", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5, help="batches per setting")
    ap.add_argument("--supervisors", default="0,1,4", help="chain lengths to measure")
    ap.add_argument(
        "--trace-dir",
        default="runs",
        help="folder for the runs' traces (a temporary folder inside it; made if missing)",
    )
    args = ap.parse_args()
    Path(args.trace_dir).mkdir(parents=True, exist_ok=True)
    chains = [int(k) for k in args.supervisors.split(",")]
    t, last_cpu = step_table(args, chains)
    Console(width=150).print(t)
    Console(width=150).print(layer_table(args, chains[-1], last_cpu))


if __name__ == "__main__":
    main()
