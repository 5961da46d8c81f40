"""The typed errors the CLI prints as one line instead of a traceback, and their helpers.

Stores, model caches and trace directories raise `PathError` (an `OSError`) naming the path
and the problem; a feature whose optional package is not installed raises `MissingExtra` (an
`ImportError`) naming the extra of `overseer-agents` that installs it (`require`).
"""

from __future__ import annotations

import errno
import importlib
import json
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


_SQLITE_HEADER = b"SQLite format 3\x00"


def check_sqlite_file(path: Path, what: str) -> None:
    """PathError when `path` exists but is not a file, or holds bytes that are not a SQLite
    database (read, never written): SQLite would take a short non-SQLite file for an empty
    database and write its tables over the user's bytes."""
    if not path.exists():
        return
    if not path.is_file():
        raise PathError(f"{what} {path}: exists and is not a file")
    try:
        with path.open("rb") as fh:
            head = fh.read(len(_SQLITE_HEADER))
    except OSError as exc:
        raise path_error(what, path, exc) from exc
    if head not in (b"", _SQLITE_HEADER):
        raise PathError(f"{what} {path}: not a SQLite file (no SQLite header); nothing was changed")


#: what reading a user's text file (and parsing it as JSON) can raise besides ValueError
READ_ERRORS = (OSError, UnicodeDecodeError, RecursionError)


def read_failure(exc: BaseException) -> str:
    """Why a user's file could not be read or parsed, on one line: not UTF-8 (the byte and its
    offset), JSON nested too deeply, not JSON (where), or the OS's reason; so every reader
    names the same causes the same way instead of Python's own wording."""
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start})"
    if isinstance(exc, RecursionError):
        return "JSON nested too deeply to read"
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON ({exc.msg}, line {exc.lineno})"
    if isinstance(exc, OSError):
        return f"cannot read ({exc.strerror or exc})"
    return " ".join(str(exc).split())[:300] or type(exc).__name__


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
