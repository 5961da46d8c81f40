"""Where benchmark episodes run: the `Backend` protocol, this process (`asyncio_episodes`, the
default) or Ray worker actors (`RayBackend` over a picklable `WorkerSpec`; the `ray` extra);
`check_backend` says early whether a backend can run, `ConfigSource` is what workers rebuild
the configurations from; `RayOptions` are the Ray-only options and `RayConnectError` the
one-line Ray-side failure (cannot connect, auth, version mismatch, a worker that cannot start);
`start_local` starts a one-run Ray on this machine.

The runner stays the only writer of the result store whatever the backend; see the README's
"Scale-out" section.
"""

from overseer.bench._ray import (
    ConfigSource,
    RayBackend,
    RayOptions,
    WorkerSpec,
    check_backend,
    episode_backend,
    listed_configs,
)
from overseer.bench._ray_connect import RayConnectError, start_local
from overseer.bench._runner import Backend, asyncio_episodes

__all__ = [
    "Backend",
    "ConfigSource",
    "RayBackend",
    "RayConnectError",
    "RayOptions",
    "WorkerSpec",
    "asyncio_episodes",
    "check_backend",
    "episode_backend",
    "listed_configs",
    "start_local",
]
