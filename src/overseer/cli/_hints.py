"""What the CLI tells users to install, in one place, and the model a command uses when it is
given none: the benchmark model when it is installed, else one line saying how to get it."""

from __future__ import annotations

import re

from overseer.cli._app import InputError

BENCHMARK_MODEL = "qwen2.5-coder-0.5b"
BENCHMARK_EXTRA = "qwen05"
#: How to install an extra of this project. The name `overseer` on PyPI is another project,
#: so hints point at the checkout until the distribution has its own public name.
INSTALL_EXTRA = "pip install -e '.[{extra}]' (in the overseer checkout)"
MODEL_HELP = f"Local model name or openai:MODEL (default: {BENCHMARK_MODEL}, the benchmark model)."
_PYPI_HINT = re.compile(r"pip install (?:-U )?'?overseer\[([\w,.-]+)\]'?")


def install_hint(extra: str) -> str:
    """The install line for the project's extra `extra`."""
    return INSTALL_EXTRA.format(extra=extra)


def fix_install_hints(text: str) -> str:
    """`text` with every `pip install 'overseer[X]'` (a hint that would install the other
    project of that name from PyPI) replaced by the checkout's install line."""
    return _PYPI_HINT.sub(lambda m: install_hint(m.group(1)), text)


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
        raise InputError(f"{option} {name}: not installed; install it with {_hint(status)}")
    return name


def _hint(status: object) -> str:
    return fix_install_hints(str(getattr(status, "install", "")))
