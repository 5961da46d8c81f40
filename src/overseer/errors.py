"""The one typed error for unusable files and directories, and the helper that raises it.

Stores, model caches and trace directories raise `PathError` (an `OSError`) naming the path
and the problem, so the CLI prints one line instead of a traceback.
"""

from __future__ import annotations

import errno
from pathlib import Path


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
