"""The `overseer` command line. Exit codes: 0 done, 1 failed run or errored results, 2 bad
input, a missing extra or a Ray-side failure (one line on stderr), 130 interrupted.

Command modules import typer and the CLI's own helpers only; the packages that do the work
(models, runtime, bench, scipy, openai) are imported when a command runs, so `--help` is fast.
"""

from __future__ import annotations

import sys

import typer

from overseer.cli import (  # noqa: F401 (commands)
    _adapt,
    _attribute,
    _bench,
    _bench_report,
    _models,
    _monitor,
    _proxy,
    _prune,
    _replay,
    _report,
    _run,
    _serve,
    _trace,
    _trace_list,
)
from overseer.cli._app import CommandFailed, InputError, Interrupted, app, err_console
from overseer.errors import MissingExtra, PathError

__all__ = ["app", "main"]

INTERRUPTED = 130
#: errors printed as one line with exit 2, by (module, name); looked up among the modules
#: already imported, since an error of a module never imported cannot have been raised
_BAD_INPUT = (
    ("overseer.models", "ModelError"),
    ("overseer.runtime", "TeamSpecError"),
    ("overseer.bench.backends", "RayConnectError"),
    ("overseer.adapt.repository", "RepositoryError"),
)


def _first_sentence(doc: str) -> str:
    """The first sentence of a docstring on one line (its own line breaks dropped)."""
    text = " ".join(doc.split())
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def _short_helps(typer_app: typer.Typer) -> None:
    """Every command listed in `--help` by its first sentence on one line: the listing keeps
    a docstring's line breaks, which left ragged lines."""
    for info in typer_app.registered_commands:
        doc = info.help or (info.callback.__doc__ if info.callback else None)
        if info.short_help is None and doc:
            info.short_help = _first_sentence(doc)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _short_helps(group.typer_instance)


_short_helps(app)


def _bad_input_types() -> tuple[type[BaseException], ...]:
    found: list[type[BaseException]] = [InputError, PathError, MissingExtra]
    for module, name in _BAD_INPUT:
        mod = sys.modules.get(module)
        if mod is not None:
            found.append(getattr(mod, name))
    return tuple(found)


#: characters `str.splitlines` breaks at, escaped in an error line (an input may hold them)
_BREAKS = {ord(c): repr(c)[1:-1] for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"}


def _say(text: str) -> None:
    """One line on stderr, whatever the input it quotes holds."""
    err_console().print(text.strip().translate(_BREAKS))


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `overseer` script; returns the exit code (see the app's epilog)."""
    try:
        rv = app(args=argv, standalone_mode=False, prog_name="overseer")
    except typer.exceptions.TyperException as exc:  # click's usage errors, as typer ships them
        if not exc.format_message():  # bare `overseer`: help was printed
            return 0
        _say(f"overseer: error: {exc.format_message()}")
        return exc.exit_code
    except CommandFailed as exc:
        _say(f"overseer: error: {exc}")
        return 1
    except Interrupted as exc:
        _say(exc.line())
        return INTERRUPTED
    except (typer.Abort, KeyboardInterrupt):
        _say(Interrupted().line())
        return INTERRUPTED
    except typer.Exit as exc:
        return exc.exit_code
    except Exception as exc:
        if not isinstance(exc, _bad_input_types()):
            raise
        _say(f"overseer: error: {exc}")
        return 2
    if isinstance(rv, int) and not isinstance(rv, bool):  # typer returns Exit(code)'s code
        if rv == INTERRUPTED:
            _say(Interrupted().line())
        return rv
    return 0


if __name__ == "__main__":
    sys.exit(main())
