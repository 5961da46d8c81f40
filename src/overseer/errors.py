"""The typed errors the CLI prints as one line instead of a traceback, and their helpers.

Stores, model caches and trace directories raise `PathError` (an `OSError`) naming the path
and the problem; a feature whose optional package is not installed raises `MissingExtra` (an
`ImportError`) naming the extra of `overseer-agents` that installs it (`require`).
"""

from __future__ import annotations

import errno
import importlib
from pathlib import Path
from types import ModuleType

#: the distribution's name on PyPI (`overseer` and `overseer-ai` there are other projects)
DISTRIBUTION = "overseer-agents"


class PathError(OSError):
    """A file or directory the command needs is missing, misplaced, corrupt or not writable."""


def _reason(exc: OSError) -> str:
    if isinstance(exc, PermissionError) or exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "not writable"
    if isinstance(exc, NotADirectoryError) or exc.errno == errno.ENOTDIR:
        return "a parent is a file, not a directory"
    return exc.strerror or str(exc)


def path_error(what: str, path: Path, exc: OSError) -> PathError:
    """A PathError for `exc` raised while using `path` as `what` (e.g. "trace directory")."""
    return PathError(f"{what} {path}: {_reason(exc)} ({exc.strerror or exc})")


def ensure_dir(path: Path, what: str) -> Path:
    """Create `path` (and parents) as a directory, or raise a PathError naming it."""
    if path.exists() and not path.is_dir():
        raise PathError(f"{what} {path}: exists and is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise path_error(what, path, exc) from exc
    return path


class MissingExtra(ImportError):
    """An optional package a feature needs is not installed; the message names the extra."""


def install_hint(extra: str) -> str:
    """The pip line installing the extra `extra` (under the distribution's name, not `overseer`)."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def require(module: str, extra: str, what: str) -> ModuleType:
    """Import `module`, or raise MissingExtra saying `what` needs it and which extra brings it,
    so a missing optional package ends a command with one line, not a traceback."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.partition(".")[0]
        missing = exc.name or top
        why = "" if missing.partition(".")[0] == top else f" (its dependency {missing} is missing)"
        raise MissingExtra(f"{what} needs {top}{why}: {install_hint(extra)}", name=missing) from exc
