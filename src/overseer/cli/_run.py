"""`overseer run` (one query through one team) and `overseer trace show`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from overseer.cli._app import InputError, app, csv_list, out_console
from overseer.runtime import PRESETS, Budget, Executor, RunResult, TeamSpec, make_team, read_trace

trace_app = typer.Typer(help="Read run traces.", no_args_is_help=True)
app.add_typer(trace_app, name="trace")


def _task(ref: str, split: str) -> Any:
    """`suite:N` (N-th task of the split) or `suite:ID` (a task id)."""
    from overseer.tasks import load_suite

    suite, sep, which = ref.partition(":")
    if not sep or not which:
        raise InputError(f"--task: expected SUITE:INDEX or SUITE:TASK_ID, got {ref!r}")
    try:
        tasks = load_suite(suite, split=split)  # type: ignore[arg-type]
    except ValueError as exc:
        raise InputError(f"--task: {exc}") from None
    if which.isdigit():
        i = int(which)
        if i >= len(tasks):
            raise InputError(f"--task: {suite} {split} has {len(tasks)} tasks, index {i} is out")
        return tasks[i]
    for t in tasks:
        if t.id == which:
            return t
    raise InputError(f"--task: no task with id {which!r} in {suite} {split}")


def _usage_table(res: RunResult) -> Table:
    t = Table(title=f"tokens by actor (run {res.run_id})")
    for col in ("actor", "calls", "prompt", "cached", "completion", "total"):
        t.add_column(col, justify="left" if col == "actor" else "right")
    for actor, u in sorted(res.usage_by_actor.items()):
        t.add_row(
            actor,
            str(res.calls_by_actor.get(actor, 0)),
            str(u.prompt_tokens),
            str(u.cached_prompt_tokens),
            str(u.completion_tokens),
            str(u.total_tokens),
        )
    tot = res.total
    t.add_row(
        "net",
        str(sum(res.calls_by_actor.values())),
        str(tot.prompt_tokens),
        str(tot.cached_prompt_tokens),
        str(tot.completion_tokens),
        str(tot.total_tokens),
        style="bold",
    )
    return t


@app.command("run")
def run_cmd(
    question: Annotated[str | None, typer.Argument(help="The query (or use --task).")] = None,
    team: Annotated[str, typer.Option(help=f"Preset: {', '.join(PRESETS)}.")] = "complete",
    agents: Annotated[int, typer.Option(help="Number of agents.")] = 3,
    rounds: Annotated[int, typer.Option(help="Rounds of communication.")] = 2,
    spec: Annotated[
        Path | None, typer.Option(help="TeamSpec JSON file (overrides --team).")
    ] = None,
    task: Annotated[str | None, typer.Option(help="Packaged task, e.g. mmlu:17.")] = None,
    split: Annotated[str, typer.Option(help="Split --task indexes into.")] = "test",
    model: Annotated[str, typer.Option(help="Local model name or openai:MODEL.")] = "smollm2-135m",
    base_url: Annotated[str | None, typer.Option(help="Server URL for openai:MODEL.")] = None,
    trace_dir: Annotated[Path, typer.Option(help="Where the trace is written.")] = Path("runs"),
    max_tokens: Annotated[int | None, typer.Option(help="Token budget of the run.")] = None,
    max_calls: Annotated[int | None, typer.Option(help="Model-call budget of the run.")] = None,
    seed: Annotated[int, typer.Option(help="Seed for sampling and random topologies.")] = 0,
    save_spec: Annotated[Path | None, typer.Option(help="Write the team spec here.")] = None,
    supervise: Annotated[bool, typer.Option(help="Put the SupervisorAgent on the bus.")] = False,
    supervisor_model: Annotated[
        str | None, typer.Option(help="Model of the supervisor (default: the agents' model).")
    ] = None,
    filter_preset: Annotated[
        str | None, typer.Option(help="Filter thresholds: gaia, humaneval, mbpp, aime, ...")
    ] = None,
    tools: Annotated[str | None, typer.Option(help="Tools for every agent: python.")] = None,
) -> None:
    """Run one query through a team; print the answer, tokens per actor and the trace path."""
    from overseer.bench import team_query
    from overseer.models import load_model, model_card
    from overseer.tasks import score

    if (question is None) == (task is None):
        raise InputError("expected a QUESTION argument or --task, and not both")
    the_task = _task(task, split) if task else None
    query = team_query(the_task) if the_task else str(question)
    if spec is not None:
        team_spec = TeamSpec.load(spec)
    else:
        pool = (
            {"numeric": "math", "code": "code"}.get(the_task.kind, "reasoning")
            if the_task
            else "reasoning"
        )
        try:
            team_spec = make_team(team, agents, rounds=rounds, pool=pool, seed=seed)
        except ValueError as exc:
            raise InputError(f"--team/--agents/--rounds: {exc}") from None
    if save_spec is not None:
        team_spec.save(save_spec)
    if not model.startswith("openai:"):
        model_card(model)
    m = load_model(model, base_url=base_url)
    sups = _supervisors(supervise, supervisor_model, filter_preset, base_url)
    tool_map = _tools(tools)
    if tool_map:
        team_spec = team_spec.model_copy(
            update={
                "agents": [
                    a.model_copy(update={"tools": sorted(set(a.tools) | set(tool_map))})
                    for a in team_spec.agents
                ]
            }
        )
    ex = Executor(
        m,
        supervisors=sups,
        tools=tool_map,
        trace_dir=trace_dir,
        budget=Budget(max_tokens=max_tokens, max_calls=max_calls),
        seed=seed,
    )
    res = asyncio.run(ex.run(team_spec, query))
    console = out_console()
    console.print(f"answer ({res.stop_reason}):", style="bold")
    console.print(res.answer)
    if the_task is not None:
        sc = score(the_task, res.answer)
        console.print(
            f"task {the_task.id}: gold {the_task.answer!r}, parsed {sc.parsed!r}, "
            f"correct {sc.correct}",
        )
    for f in res.failures:
        console.print(f"agent {f.agent} failed in round {f.round}: {f.reason}: {f.detail}")
    if res.error:
        console.print(f"stopped: {res.error}")
    console.print(_usage_table(res))
    console.print(f"trace: {res.trace_path}")


def _supervisors(
    on: bool, model: str | None, filter_preset: str | None, base_url: str | None
) -> list[Any]:
    """The SupervisorAgent the flags ask for (none without --supervise)."""
    if not on:
        if model or filter_preset:
            raise InputError("--supervisor-model/--filter-preset: need --supervise")
        return []
    from overseer.models import load_model
    from overseer.supervise import SupervisorAgent, SupervisorSettings, preset

    try:
        settings = SupervisorSettings(filter=preset(filter_preset)) if filter_preset else None
    except ValueError as exc:
        raise InputError(f"--filter-preset: {exc}") from None
    sup_model = load_model(model, base_url=base_url) if model else None
    return [SupervisorAgent(sup_model, settings)]


def _tools(names: str | None) -> dict[str, Any]:
    """Tools named on the command line (only the sandboxed Python tool for now)."""
    from overseer.runtime import PythonTool

    if names is None:
        return {}
    known = {"python": PythonTool}
    out = {}
    for n in csv_list(names, "--tools"):
        if n not in known:
            raise InputError(f"--tools: unknown tool {n!r}; expected one of: {', '.join(known)}")
        out[n] = known[n]()
    return out


def _short(text: Any, n: int = 160) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= n else s[: n - 1] + "…"


def _line(e: dict[str, Any]) -> str | None:
    ev = e["event"]
    if ev == "run_start":
        agents = [a["name"] for a in e["team"]["agents"]]
        return f"run {e['run']} model={e['model']} agents={agents} query: {_short(e['query'])}"
    if ev in ("round_start", "round_end"):
        return f"-- {ev.replace('_', ' ')} {e['round']}"
    if ev == "model_call":
        return (
            f"   call {e['overseer.actor.kind']}:{e['gen_ai.agent.name']} "
            f"in={e['gen_ai.usage.input_tokens']} cached="
            f"{e['gen_ai.usage.cache_read_input_tokens']} "
            f"out={e['gen_ai.usage.output_tokens']} {e['latency_s']}s"
        )
    if ev == "interaction":
        what = e["kind"] + (f"({e['tool']})" if e.get("tool") else "")
        err = f" ERROR {e['error']}" if e.get("error") else ""
        return f"   {e['agent']} {what} r{e['round']}s{e['step']}: {_short(e['observation'])}{err}"
    if ev == "message":
        return f"   message {e['sender']} -> channel: {_short(e['content'])}"
    if ev == "verdict":
        return f"   VERDICT {e['action']} by {e['by']} on {e['agent']}: {_short(e['reason'])}"
    if ev == "run_end":
        u = e["usage"]
        return (
            f"end {e['stop_reason']}: answer {_short(e['answer'])!r} tokens in="
            f"{u['input_tokens']} out={u['output_tokens']}"
        )
    keys = {k: v for k, v in e.items() if k not in ("v", "ts", "run", "event")}
    return f"   {ev}: {_short(keys)}"


@trace_app.command("show")
def trace_show(
    file: Annotated[Path, typer.Argument(help="A trace .jsonl file.")],
    full: Annotated[bool, typer.Option(help="Print model prompts and outputs too.")] = False,
) -> None:
    """Print a run trace readably: rounds, calls, interactions, verdicts, messages."""
    if not file.is_file():
        raise InputError(f"trace file {file}: not found")
    console = out_console()
    try:
        for e in read_trace(file):
            line = _line(e)
            if line:
                console.print(line)
            if full and e["event"] == "model_call":
                for m in e["input"]:
                    console.print(f"      [{m['role']}] {m['content']}")
                console.print(f"      => {e['output']}")
    except (ValueError, KeyError) as exc:
        raise InputError(f"trace file {file}: {exc}") from None
