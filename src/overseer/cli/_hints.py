"""The model a command uses when it is given none: the benchmark model when it is installed,
else one line saying how to get it; and the help text of the model options."""

from __future__ import annotations

from overseer.cli._app import InputError
from overseer.errors import install_hint

BENCHMARK_MODEL = "qwen2.5-coder-0.5b"
BENCHMARK_EXTRA = "qwen05"
MODEL_HELP = f"Local model name or openai:MODEL (default: {BENCHMARK_MODEL}, the benchmark model)."


def model_name(name: str | None, option: str = "--model") -> str:
    """The model a command runs: `name` (a local name is checked, and an unknown one that is
    likely a server's model gets the openai: hint), or the benchmark model when none is given
    and it is installed; otherwise one line (InputError) saying how to get it."""
    if name is not None and name.startswith("openai:"):
        return name
    from overseer.models import list_models

    known = {s.name: s for s in list_models()}
    if name is None:
        status = known.get(BENCHMARK_MODEL)
        if status is not None and status.installed:
            return BENCHMARK_MODEL
        raise InputError(
            f"{option}: none given, and the benchmark model {BENCHMARK_MODEL} is not installed; "
            f"install it with {install_hint(BENCHMARK_EXTRA)} or name a model "
            "(`overseer models` lists them; openai:NAME for a server)"
        )
    if name not in known:
        raise InputError(
            f"{option} {name!r}: not a local model (expected one of {', '.join(known)}); a "
            f"model on an OpenAI-compatible server is written openai:{name} (with --base-url)"
        )
    status = known[name]
    if not status.installed:
        raise InputError(f"{option} {name}: not installed; install it with {status.install}")
    return name
