"""`overseer proxy --upstream URL`: oversee any OpenAI-compatible client by changing one URL."""

from __future__ import annotations

import os
from typing import Annotated, Any

import typer

from overseer.cli._app import InputError, app
from overseer.errors import require

#: the default body cap, MiB (overseer.models.serve.MAX_BODY_BYTES; not imported for --help)
MAX_BODY_MB = 16.0


UpstreamOpt = Annotated[
    str,
    typer.Option(help="The upstream's OpenAI-compatible base URL, e.g. http://HOST:8080/v1."),
]

PortOpt = Annotated[int, typer.Option(help="Port to listen on (0: a free one).")]

HostOpt = Annotated[str, typer.Option(help="Address to listen on.")]

RulesOpt = Annotated[
    bool,
    typer.Option(help="The rule tier (off: relay, book and trace only)."),
]

BudgetTokensOpt = Annotated[
    int | None, typer.Option(help="Tokens per run; past it: an OpenAI-shaped 400.", min=1)
]

BudgetCallsOpt = Annotated[
    int | None, typer.Option(help="Model calls per run; past it: a 400.", min=1)
]

TraceDirOpt = Annotated[
    str | None,
    typer.Option(
        help="One trace per run ('': none; default: runs, or with --settings the file's "
        "trace_dir); `overseer trace` reads them."
    ),
]

IdleSOpt = Annotated[
    float | None,
    typer.Option(
        help="A run ends after this many seconds without requests (default: the settings "
        "file's, else 300).",
        min=0.01,
    ),
]

SettingsOpt = Annotated[
    str | None,
    typer.Option(
        "--settings",
        help="GuardSettings from a TOML or JSON file (rules, supervisor, budgets, traces, the "
        "proxy's own), the object the framework adapters take; the flags above override it.",
    ),
]

SuperviseOpt = Annotated[
    bool,
    typer.Option(help="The SupervisorAgent's LLM tier too (needs --supervisor-model)."),
]

SupervisorModelOpt = Annotated[
    str | None, typer.Option(help="The supervisor's model name on --supervisor-url.")
]

SupervisorUrlOpt = Annotated[
    str | None,
    typer.Option(
        help="The supervisor model's base URL (default: --upstream); its key "
        "is read from $OVERSEER_SUPERVISOR_API_KEY, else $OPENAI_API_KEY."
    ),
]

WorkersOpt = Annotated[
    int, typer.Option(help="Worker processes on the port (> 1 needs --redis).", min=1)
]

RedisOpt = Annotated[
    str | None,
    typer.Option(help="Run state in Redis, e.g. redis://127.0.0.1:6379/0 (default: memory)."),
]

OtlpEndpointOpt = Annotated[
    str | None,
    typer.Option(help="OTLP/HTTP collector for the runs' spans ($OTEL_EXPORTER_OTLP_ENDPOINT)."),
]

MaxBodyMbOpt = Annotated[
    float, typer.Option(help="Largest request body in MiB (larger: 413).", min=0.001)
]


@app.command("proxy")
def proxy_cmd(
    upstream: UpstreamOpt,
    port: PortOpt = 4000,
    host: HostOpt = "127.0.0.1",
    rules: RulesOpt = True,
    budget_tokens: BudgetTokensOpt = None,
    budget_calls: BudgetCallsOpt = None,
    trace_dir: TraceDirOpt = None,
    idle_s: IdleSOpt = None,
    supervise: SuperviseOpt = False,
    supervisor_model: SupervisorModelOpt = None,
    supervisor_url: SupervisorUrlOpt = None,
    workers: WorkersOpt = 1,
    redis: RedisOpt = None,
    otlp_endpoint: OtlpEndpointOpt = None,
    max_body_mb: MaxBodyMbOpt = MAX_BODY_MB,
    settings_file: SettingsOpt = None,
) -> None:
    """Relay OpenAI chat completions to --upstream, overseeing each run: tool outputs purified,
    older repeats masked, loops refused as the tool result, per-run budgets answered with an
    OpenAI-shaped error. A request's run and agent come from the X-Overseer-Run and
    X-Overseer-Agent headers, else its metadata (overseer_run, overseer_agent) and user, else a
    fingerprint of its system prompt and first user message. Each run has a ledger and a trace
    (named in every reply's x-overseer-trace header); it ends after --idle-s without requests,
    or at Ctrl-C/SIGTERM, which drain the replies in flight first (exit code 0). API keys are
    passed to the upstream and never logged."""
    from overseer.proxy import ProxyOptions, serve_workers

    _check(upstream, supervise, supervisor_model, workers, redis)
    flags = {"budget_tokens": budget_tokens, "budget_calls": budget_calls, "idle_s": idle_s}
    settings = proxy_settings(
        settings_file,
        rules=rules,
        supervise=supervise,
        trace_dir=trace_dir,
        **{k: v for k, v in flags.items() if v is not None},
    )
    options = ProxyOptions(
        upstream, settings, int(max_body_mb * 2**20), redis, otlp_endpoint=otlp_endpoint
    )
    where = f"http://{host}:{port}/v1"
    state = f"run state in Redis at {redis}" if redis else "run state in memory"
    if workers > 1:
        print(f"overseer: proxy at {where} -> {upstream}, {workers} workers, {state}", flush=True)
        serve_workers(options, host=host, port=port, workers=workers)
        return
    _serve_one(options, host, port, supervise, supervisor_model, supervisor_url, state)


def proxy_settings(
    path: str | None, *, rules: bool, supervise: bool, trace_dir: str | None, **given: Any
) -> Any:
    """The proxy's GuardSettings: the file's (if any), then the flags given; one InputError
    line for a bad file."""
    from dataclasses import replace

    from overseer.integrations.guard import GuardSettings
    from overseer.supervise import SupervisorSettings

    try:
        base = GuardSettings.from_file(path) if path else GuardSettings(trace_dir="runs")
    except ValueError as exc:
        raise InputError(f"--settings: {exc}") from None
    over: dict[str, Any] = dict(given)
    if not rules:
        over["rules"] = None
    if supervise and base.supervisor is None:
        over["supervisor"] = SupervisorSettings()
    if trace_dir is not None:
        over["trace_dir"] = trace_dir or None
    return replace(base, **over)


def _check(
    upstream: str, supervise: bool, supervisor_model: str | None, workers: int, redis: str | None
) -> None:
    """One line (InputError) for options that cannot go together, or (MissingExtra) for
    --redis without the redis client, before any worker starts."""
    if not upstream.startswith(("http://", "https://")):
        raise InputError(f"--upstream: expected an http(s) base URL, got {upstream!r}")
    if supervise != (supervisor_model is not None):
        raise InputError("--supervise and --supervisor-model: expected both or neither")
    if workers > 1 and redis is None:
        raise InputError("--workers > 1: expected --redis URL (the workers share run state)")
    if workers > 1 and supervise:
        raise InputError(
            "--workers > 1 with --supervise: not supported (a worker catching up on another's "
            "steps would ask the supervisor model again); use one worker per replica"
        )
    if redis is not None:
        require("redis.asyncio", "proxy", "--redis")


def _serve_one(
    options: object,
    host: str,
    port: int,
    supervise: bool,
    supervisor_model: str | None,
    supervisor_url: str | None,
    state: str,
) -> None:
    """One worker in a thread of this process, until Ctrl-C or SIGTERM."""
    from overseer.cli._serve import _wait_for_a_stop
    from overseer.models import OpenAIModel
    from overseer.proxy import Proxy, ProxyOptions, server_gc

    assert isinstance(options, ProxyOptions)
    model = None
    if supervise and supervisor_model is not None:
        key = os.environ.get("OVERSEER_SUPERVISOR_API_KEY") or os.environ.get("OPENAI_API_KEY")
        model = OpenAIModel(
            supervisor_model, base_url=supervisor_url or options.upstream, api_key=key
        )
    try:
        proxy = Proxy(
            options.upstream,
            options.settings,
            host=host,
            port=port,
            max_body_bytes=options.max_body_bytes,
            supervisor_model=model,
            redis_url=options.redis_url,
            otlp_endpoint=options.otlp_endpoint,
        )
    except OSError as exc:
        raise InputError(f"--host/--port: cannot listen on {host}:{port}: {exc}") from None
    server_gc()  # this process only serves from now on
    print(
        f"overseer: proxy at {proxy.base_url} -> {options.upstream}, {state} (Ctrl-C stops)",
        flush=True,
    )
    try:
        _wait_for_a_stop()
        print("overseer: stopping; draining the replies in flight", flush=True)
    finally:
        proxy.close()  # every run's trace ends with run_end
