"""Option groups shared by commands, each declared once and passed as one value: model
backends (ModelOpts) and run budgets (BudgetOpts); `option_group` makes such a group."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from overseer.cli._app import InputError
from overseer.cli._otlp import with_otlp

if TYPE_CHECKING:
    from overseer.models import Model
    from overseer.runtime import Budget

R = TypeVar("R")


def option_group(
    arg: str, cls: type, types: dict[str, Any], lead: tuple[str, ...], names: tuple[str, ...]
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Give a command the options `lead` before its own and `names` after them (fields of
    the frozen dataclass `cls`, typed by `types`); it receives them as one `arg: cls` value."""
    defaults = {f.name: f.default for f in fields(cls)}
    kind = inspect.Parameter.KEYWORD_ONLY

    def option(name: str) -> inspect.Parameter:
        return inspect.Parameter(name, kind, default=defaults[name], annotation=types[name])

    def decorate(command: Callable[..., R]) -> Callable[..., R]:
        sig = inspect.signature(command, eval_str=True)
        own = [p.replace(kind=kind) for p in sig.parameters.values() if p.name != arg]

        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> R:
            value = cls(**{n: kwargs.pop(n) for n in (*lead, *names)})
            return command(**{arg: value}, **kwargs)

        params = [option(n) for n in lead] + own + [option(n) for n in names]
        wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        return wrapper

    return decorate


def _need(ok: bool, option: str, expected: str, got: object) -> None:
    if not ok:
        raise InputError(f"{option}: expected {expected}, got {got}")


@dataclass(frozen=True)
class ModelOpts:
    """How a command reaches its model: the server, its key, time limits, context, sampling.
    A bad value is one line (InputError) when the command starts."""

    base_url: str | None = None
    api_key: str | None = None
    timeout: float = 120.0
    retries: int = 3
    n_ctx: int | None = None
    temperature: float | None = None

    def __post_init__(self) -> None:
        t, n = self.temperature, self.n_ctx
        _need(self.timeout > 0, "--timeout", "> 0", self.timeout)
        _need(self.retries >= 0, "--retries", ">= 0", self.retries)
        _need(n is None or n >= 256, "--n-ctx", ">= 256", n)
        _need(t is None or 0 <= t <= 2, "--temperature", "0..2", t)

    def check(self, spec: str) -> None:
        """For openai:MODEL, ask the server whether it is there (`check_server`); a missing or
        broken one is one line (InputError). Local models: nothing to ask."""
        from overseer.models import ModelError, check_server

        if not spec.startswith("openai:"):
            return
        try:
            check_server(
                self.base_url,
                model=spec[7:],
                api_key=self.api_key,
                timeout_s=self.timeout,
                retries=self.retries,
            )
        except ModelError as exc:
            raise InputError(str(exc)) from None

    def load(self, spec: str, **extra: Any) -> Model:
        """The model `spec` (extra: more `load_model` options); an HTTP server is asked first
        whether it is there, and a missing one is one line (InputError) before any work."""
        from overseer.models import load_model

        self.check(spec)
        if self.n_ctx is not None:
            extra["n_ctx"] = self.n_ctx
        return load_model(
            spec,
            base_url=self.base_url,
            api_key=self.api_key,
            timeout_s=self.timeout,
            max_retries=self.retries,
            temperature=self.temperature,
            **extra,
        )


_MODEL_TYPES: dict[str, Any] = {
    "base_url": Annotated[str | None, typer.Option(help="Server URL for openai:MODEL.")],
    "api_key": Annotated[
        str | None, typer.Option(help="API key for openai:MODEL (default: $OPENAI_API_KEY).")
    ],
    "timeout": Annotated[
        float,
        typer.Option(help="Deadline in seconds for each whole HTTP request (openai:MODEL)."),
    ],
    "retries": Annotated[
        int, typer.Option(help="Retries of a failed HTTP call (5xx, 429, time-out, refused).")
    ],
    "n_ctx": Annotated[int | None, typer.Option(help="Context window of a local model (8192).")],
    "temperature": Annotated[float | None, typer.Option(help="Temperature of every model call.")],
}
# --base-url, --api-key, --timeout, --retries, --n-ctx, --temperature after a command's own
# options, received as one `mopts: ModelOpts` argument; then --otlp-endpoint (cli/_otlp.py).
model_options = with_otlp(option_group("mopts", ModelOpts, _MODEL_TYPES, (), tuple(_MODEL_TYPES)))


@dataclass(frozen=True)
class BudgetOpts:
    """The limits of one run (one task of a bench, one game): tokens, model calls, seconds;
    a limit <= 0 is one line (InputError) when the command starts."""

    budget_tokens: int | None = None
    budget_calls: int | None = None
    budget_seconds: float | None = None

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            _need(value is None or value > 0, f"--{name.replace('_', '-')}", "> 0", value)

    def budget(self) -> Budget | None:
        """The runtime Budget of these limits (None: unlimited)."""
        from overseer.runtime import Budget

        if self == BudgetOpts():
            return None
        return Budget(self.budget_tokens, self.budget_calls, self.budget_seconds)


_BUDGET_TYPES: dict[str, Any] = {
    "budget_tokens": Annotated[int | None, typer.Option(help="Tokens per run (all calls).")],
    "budget_calls": Annotated[int | None, typer.Option(help="Model calls per run.")],
    "budget_seconds": Annotated[float | None, typer.Option(help="Wall-clock seconds per run.")],
}
# --budget-tokens, --budget-calls, --budget-seconds after a command's own options, received
# as one `limits: BudgetOpts` argument.
budget_options = option_group("limits", BudgetOpts, _BUDGET_TYPES, (), tuple(_BUDGET_TYPES))
MODEL_DEFAULTS, NO_LIMITS = ModelOpts(), BudgetOpts()
