"""Where benchmark episodes run: the `Backend` protocol, this process (`asyncio_episodes`, the
default) or Ray worker actors (`RayBackend` over a picklable `WorkerSpec`; the `ray` extra).

The runner stays the only writer of the result store whatever the backend; see the README's
"Scale-out" section.
"""

from overseer.bench._ray import RayBackend, WorkerSpec, episode_backend, listed_configs
from overseer.bench._runner import Backend, asyncio_episodes

__all__ = [
    "Backend",
    "RayBackend",
    "WorkerSpec",
    "asyncio_episodes",
    "episode_backend",
    "listed_configs",
]
