"""--otlp-endpoint on every command that runs a model (it comes with `model_options`): the
command's runs are exported as OpenTelemetry spans over OTLP/HTTP when the option or
$OTEL_EXPORTER_OTLP_ENDPOINT is set. The JSONL traces are written either way."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, TypeVar

import typer

from overseer.cli._app import InputError
from overseer.errors import require

R = TypeVar("R")
ENV_VARS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
#: the packages of the `otel` extra that overseer.integrations.otel imports
_OTEL_MODULES = ("opentelemetry.sdk.trace", "opentelemetry.exporter.otlp.proto.http")

OtlpEndpoint = Annotated[
    str | None,
    typer.Option(
        help="Export the runs as OpenTelemetry spans to this OTLP/HTTP collector, e.g. "
        "http://localhost:4318 (default: $OTEL_EXPORTER_OTLP_ENDPOINT; unset: no export)."
    ),
]


@contextmanager
def exporting(endpoint: str | None) -> Iterator[None]:
    """Export the spans of every run traced inside the block when an endpoint is given or
    configured; at the end flush them, and say in one stderr line what could not be sent."""
    if endpoint is None and not any(os.environ.get(v) for v in ENV_VARS):
        yield
        return
    for module in _OTEL_MODULES:  # checked here, so the line names this distribution's extra
        require(module, "otel", "--otlp-endpoint")
    from overseer.integrations.otel import otlp_endpoint, otlp_spans

    try:
        url = otlp_endpoint(endpoint)
        spans = otlp_spans(url)
    except ValueError as exc:
        raise InputError(str(exc).replace("OTLP endpoint", "--otlp-endpoint", 1)) from None
    try:
        with spans:
            yield
    finally:
        status = spans.status
        if status is not None and not status.ok:
            why = " ".join(str(status.error).split())[:300]
            typer.echo(
                f"overseer: warning: OTLP export to {url} failed, {status.lost} spans not "
                f"exported ({status.exported} were): {why}",
                err=True,
            )


def otlp_options(command: Callable[..., R]) -> Callable[..., R]:
    """Give `command` the --otlp-endpoint option (after its own) and run it inside
    `exporting`; the command itself never sees the option."""
    sig = inspect.signature(command, eval_str=True)
    option = inspect.Parameter(
        "otlp_endpoint", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=OtlpEndpoint
    )
    params = [*sig.parameters.values(), option]

    @functools.wraps(command)
    def wrapper(**kwargs: object) -> R:
        with exporting(kwargs.pop("otlp_endpoint")):  # type: ignore[arg-type]
            return command(**kwargs)

    wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper


def with_otlp(
    group: Callable[[Callable[..., R]], Callable[..., R]],
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """The option group decorator `group`, then --otlp-endpoint (`otlp_options`)."""
    return lambda command: otlp_options(group(command))
