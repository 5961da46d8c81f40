"""Where a command's episodes run, declared once for `bench`, `monitor collect|eval` and
`prune`: --backend (asyncio or ray), --address (a Ray cluster) and --workers (Ray actors),
received as one `runner: BackendOpts` value."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from overseer.cli._app import InputError
from overseer.cli._options import _group

if TYPE_CHECKING:
    from overseer.bench.backends import Backend, ConfigSource
    from overseer.models import Model


@dataclass(frozen=True)
class BackendOpts:
    """The backend of a run; a bad value (or ray without the extra) is one line (InputError)
    when the command starts, before any work."""

    backend: str = "asyncio"
    address: str | None = None
    workers: int = 2

    def __post_init__(self) -> None:
        if self.backend == "asyncio" and self.address is None and self.workers >= 1:
            return  # the default: nothing to check, Ray's module not even looked up
        from overseer.bench.backends import check_backend

        try:
            check_backend(self.backend, workers=self.workers, address=self.address)
        except ValueError as exc:
            raise InputError(f"--{exc}") from None
        except RuntimeError as exc:
            raise InputError(str(exc)) from None

    def build(
        self, configs: Callable[[], ConfigSource], model: Callable[[], Model]
    ) -> Backend | Literal["asyncio"]:
        """The backend for `run_experiment`; Ray workers build their configurations and model
        from `configs` and `model`, which must pickle (module-level functions or partials)."""
        from overseer.bench.backends import WorkerSpec, episode_backend

        spec = WorkerSpec(configs, model)
        return episode_backend(self.backend, spec, workers=self.workers, address=self.address)


_BACKEND_TYPES: dict[str, Any] = {
    "backend": Annotated[str, typer.Option(help="asyncio, or ray: episodes on Ray worker actors.")],
    "address": Annotated[
        str | None, typer.Option(help="Ray cluster address (default: local Ray).")
    ],
    "workers": Annotated[int, typer.Option(help="Ray worker actors (--backend ray).")],
}
# --backend, --address, --workers after a command's own options, as one `runner: BackendOpts`.
backend_options = _group("runner", BackendOpts, _BACKEND_TYPES, (), tuple(_BACKEND_TYPES))
LOCAL = BackendOpts()
