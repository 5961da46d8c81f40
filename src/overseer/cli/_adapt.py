"""`overseer adapt init|distill|show|run`: MASFly's SOP repository, experience pool and runs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from overseer.cli import _options as o
from overseer.cli._adapt_out import print_solved, print_store
from overseer.cli._app import InputError, app, out_console
from overseer.cli._hints import MODEL_HELP, model_name
from overseer.cli._lab import need_lab

if TYPE_CHECKING:
    from overseer.adapt import Repository

adapt_app = typer.Typer(help="MASFly: teams built from retrieved SOPs, a Watcher, distillation.")
app.add_typer(adapt_app, name="adapt")

DEFAULT_STORE = Path("results") / "adapt.sqlite"
StoreOpt = Annotated[Path, typer.Option(help="SQLite file of the SOP repository and pool.")]
ModelOpt = Annotated[str | None, typer.Option(help=MODEL_HELP)]
SplitSeedOpt = Annotated[int, typer.Option(help="Split seed and model seed.")]
TriesOpt = Annotated[int, typer.Option(help="Runs per task (first + revisions).")]
R = TypeVar("R")


def _model_command(name: str) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """An `adapt` command that runs a model: its own options, then the model's and budget's."""
    return lambda command: adapt_app.command(name)(o.model_options(o.budget_options(command)))


def _check_counts(limit: int, tries: int) -> None:
    if limit < 1 or tries < 1:
        raise InputError(f"--limit and --tries: expected >= 1, got {limit}, {tries}")


def _distill(
    model: str | None,
    store: Path,
    suite: str,
    limit: int,
    seed: int,
    tries: int,
    starter: bool,
    opts: tuple[o.ModelOpts, o.BudgetOpts],
) -> None:
    """Distil `limit` training tasks of `suite` into the stores at `store` (a line per task as
    it ends), then say how many were stored."""
    import asyncio

    from overseer.adapt import Embedder, MASFlyConfig
    from overseer.experiments.adapt_campaign import campaign_stores, distill_tasks, training_tasks

    repo, pool = campaign_stores(store, Embedder(), starter=starter)
    try:
        tasks, train = training_tasks(suite, seed=seed, limit=limit)
    except (ValueError, RuntimeError) as exc:
        raise InputError(str(exc)) from None

    def show(t: Any, rec: Any) -> None:
        out_console().print(
            f"{t.id}: {'stored case #' + str(rec.case_id) if rec.success else 'failed'} after "
            f"{len(rec.attempts)} run(s), {rec.usage.total_tokens} tokens"
        )

    cfg = MASFlyConfig(budget=opts[1].budget())
    run = distill_tasks(
        opts[0].load(model_name(model)),
        repo,
        pool,
        tasks,
        train,
        seed=seed,
        tries=tries,
        on_record=show,
        config=cfg,
    )
    recs = asyncio.run(run)
    ok = sum(r.success for r in recs)
    out_console().print(f"distilled {len(recs)} training tasks of {suite}: {ok} stored; {store}")


@_model_command("init")
def init_cmd(
    store: StoreOpt = DEFAULT_STORE,
    suite: Annotated[str | None, typer.Option(help="Distil a few training tasks of it.")] = None,
    limit: Annotated[int, typer.Option(help="Training tasks to distil.")] = 3,
    model: ModelOpt = None,
    seed: SplitSeedOpt = 0,
    tries: TriesOpt = 2,
    starter: Annotated[bool, typer.Option(help="Add the starter cases first.")] = True,
    mopts: o.ModelOpts = o.MODEL_DEFAULTS,
    limits: o.BudgetOpts = o.NO_LIMITS,
) -> None:
    """Create the repository (starter cases), then distil a few training tasks of a suite."""
    need_lab("overseer adapt init")
    _check_counts(limit, tries)
    if suite is None:
        from overseer.adapt import Embedder
        from overseer.experiments.adapt import open_stores

        repo, _ = open_stores(store, Embedder())
        out_console().print(f"{store}: {len(repo)} SOP cases")
        return
    _distill(model, store, suite, limit, seed, tries, starter, (mopts, limits))


@_model_command("distill")
def distill_cmd(
    suite: Annotated[str, typer.Option(help="Suite whose training split is distilled.")],
    store: StoreOpt = DEFAULT_STORE,
    limit: Annotated[int, typer.Option(help="Training tasks to distil.")] = 5,
    model: ModelOpt = None,
    seed: SplitSeedOpt = 0,
    tries: TriesOpt = 2,
    mopts: o.ModelOpts = o.MODEL_DEFAULTS,
    limits: o.BudgetOpts = o.NO_LIMITS,
) -> None:
    """Distil training tasks only: SOPs of successes, lessons of failures (budgets: per run)."""
    need_lab("overseer adapt distill")
    _check_counts(limit, tries)
    _distill(model, store, suite, limit, seed, tries, False, (mopts, limits))


def _export(repo: Repository, path: Path) -> int:
    """Write the cases to `path` (--export); a path that cannot be written is one line."""
    try:
        return repo.export_json(path)
    except OSError as exc:
        raise InputError(f"--export {path}: cannot write ({exc.strerror or exc})") from None


@adapt_app.command("show")
def show_cmd(
    store: StoreOpt = DEFAULT_STORE,
    export: Annotated[Path | None, typer.Option(help="Write the cases as JSON here.")] = None,
    import_: Annotated[
        Path | None,
        typer.Option("--import", help="Add cases from a JSON export (same id: replaced)."),
    ] = None,
) -> None:
    """List SOP cases and experiences; export or import the cases as editable JSON."""
    need_lab("overseer adapt show")
    from overseer.adapt import Embedder, ExperiencePool, Repository, RepositoryError

    if not store.is_file() and import_ is None:
        raise InputError(f"--store: no repository at {store}; run `overseer adapt init` first")
    emb = Embedder()
    repo = Repository(store, emb)
    console = out_console()
    try:
        if import_ is not None:
            console.print(f"imported {repo.import_json(import_)} cases from {import_}")
        if export is not None:
            console.print(f"exported {_export(repo, export)} cases to {export}")
    except RepositoryError as exc:
        raise InputError(str(exc)) from None
    print_store(console, store, repo, ExperiencePool(store, emb))


@_model_command("run")
def run_cmd(
    query: Annotated[str, typer.Argument(help="The task to solve.")],
    store: StoreOpt = DEFAULT_STORE,
    model: ModelOpt = None,
    tools: Annotated[str, typer.Option(help="Comma-separated tools: python, or none.")] = "none",
    seed: Annotated[int, typer.Option(help="Model seed.")] = 0,
    watcher: Annotated[bool, typer.Option(help="Run under the Watcher.")] = True,
    mopts: o.ModelOpts = o.MODEL_DEFAULTS,
    limits: o.BudgetOpts = o.NO_LIMITS,
) -> None:
    """Build a team for one query from the repository, run it under the Watcher, report."""
    need_lab("overseer adapt run")
    import asyncio

    from overseer.adapt import Embedder, MASFly, MASFlyConfig
    from overseer.experiments.adapt import open_stores
    from overseer.runtime import PythonTool

    names = [s.strip() for s in tools.split(",") if s.strip() and s.strip() != "none"]
    known = {"python": PythonTool}
    bad = [n for n in names if n not in known]
    if bad:
        raise InputError(f"--tools: unknown {bad}; expected python or none")
    repo, pool = open_stores(store, Embedder())
    cfg = MASFlyConfig(watcher=watcher, budget=limits.budget())
    fly = MASFly(
        mopts.load(model_name(model)), repo, pool, config=cfg, trace_dir=Path("runs") / "adapt"
    )
    out = asyncio.run(fly.solve(query, tools={n: known[n]() for n in names}, seed=seed))
    print_solved(out_console(), out)
