"""The finer failures of a model call, for callers that treat them apart.

`ModelError` (exported by `overseer.models`) is the base of them all: not installed, no
connection, time-out, unavailable, a bad request (a prompt over the context window among
them), an unusable reply.
"""

from overseer.models._types import (
    ContextWindowError,
    ModelConnectionError,
    ModelError,
    ModelNotInstalledError,
    ModelOutputError,
    ModelRequestError,
    ModelTimeoutError,
    ModelUnavailableError,
)

__all__ = [
    "ContextWindowError",
    "ModelConnectionError",
    "ModelError",
    "ModelNotInstalledError",
    "ModelOutputError",
    "ModelRequestError",
    "ModelTimeoutError",
    "ModelUnavailableError",
]
