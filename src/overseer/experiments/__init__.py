"""Experiments: each plug-in wired into runs, sweeps and pages, above the runner.

The plug-in packages (`supervise`, `monitor`, `prune`, `adapt`) hold their algorithms and
depend on `runtime` and `models` only; what puts them on benchmark tasks and games lives here,
above `bench`, `tasks` and `envs`: `supervise` (modes and ablations as bench configurations),
`monitor` (games as runner tasks: collect, train, eval), `prune` and `prune_runs` (learn masks
on tasks, evaluate the pruned team), `adapt` and `adapt_campaign` (MASFly configurations,
distillation campaigns).

Exported is nothing: import the module of the experiment you run.
"""

__all__: list[str] = []
