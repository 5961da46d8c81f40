"""Where a command's episodes run, declared once for `bench`, `monitor collect|eval` and
`prune`: --backend (asyncio or ray), --address (a Ray cluster), --workers (Ray actors),
--worker-cpus and --threads (per actor), received as one `runner: BackendOpts` value."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from overseer.cli._app import InputError
from overseer.cli._options import option_group

if TYPE_CHECKING:
    from overseer.bench.backends import Backend, ConfigSource, RayOptions
    from overseer.models import Model


@dataclass(frozen=True)
class BackendOpts:
    """The backend of a run; a bad value (or ray without the extra) is one line (InputError)
    when the command starts, before any work."""

    backend: str = "asyncio"
    address: str | None = None
    workers: int = 2
    worker_cpus: float = 1.0
    threads: int | None = None

    def __post_init__(self) -> None:
        default = ("asyncio", None, 2, 1.0, None)
        if (self.backend, self.address, self.workers, self.worker_cpus, self.threads) == default:
            return  # the default: nothing to check, Ray's module not even looked up
        from overseer.bench.backends import check_backend

        try:
            check_backend(self.backend, workers=self.workers, ray=self._ray())
        except ValueError as exc:
            raise InputError(f"--{exc}") from None
        except RuntimeError as exc:
            raise InputError(str(exc)) from None

    def _ray(self) -> RayOptions:
        from overseer.bench.backends import RayOptions

        return RayOptions(self.address, self.worker_cpus, self.threads)

    def build(
        self, configs: Callable[[], ConfigSource], model: Callable[..., Model]
    ) -> Backend | Literal["asyncio"]:
        """The backend for `run_experiment`; Ray workers build their configurations and model
        from `configs` and `model` (called with `n_threads=`), which must pickle (module-level
        functions or partials). Ray-side failures, at start or mid-run, raise RayConnectError,
        which `overseer.cli.main` prints as one line (exit 2) like an InputError."""
        from overseer.bench.backends import WorkerSpec, episode_backend

        spec = WorkerSpec(configs, model, takes_threads=True)
        return episode_backend(self.backend, spec, workers=self.workers, ray=self._ray())


_BACKEND_TYPES: dict[str, Any] = {
    "backend": Annotated[str, typer.Option(help="asyncio, or ray: episodes on Ray worker actors.")],
    "address": Annotated[
        str | None,
        typer.Option(
            help="Ray cluster: HOST:6379, ray://HOST:10001, auto (the cluster `ray start` "
            "recorded) or local (start Ray here); default: $RAY_ADDRESS, else auto, else local."
        ),
    ],
    "workers": Annotated[int, typer.Option(help="Ray worker actors (--backend ray).")],
    "worker_cpus": Annotated[
        float,
        typer.Option(help="CPUs Ray reserves per worker actor (all workers must fit the cores)."),
    ],
    "threads": Annotated[
        int | None,
        typer.Option(help="llama.cpp threads per Ray worker (default: its --worker-cpus)."),
    ],
}
# The backend options after a command's own options, as one `runner: BackendOpts`.
backend_options = option_group("runner", BackendOpts, _BACKEND_TYPES, (), tuple(_BACKEND_TYPES))
LOCAL = BackendOpts()
