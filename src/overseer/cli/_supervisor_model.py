"""`--supervisor-model` of `overseer bench`: the supervisor's own model for every supervised
configuration (e.g. a larger local model than the agents'), loaded once at its first call."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from overseer.bench import ConfigRegistry
    from overseer.models import Model

SupervisorModelOpt = Annotated[
    str | None,
    typer.Option(
        "--supervisor-model",
        help="The supervisor's own model (local name or openai:MODEL) for supervised configs; "
        "its tokens are booked apart (actor supervisor). Give such runs their own --store.",
    ),
]


def with_supervisor_model(
    registry: Callable[..., ConfigRegistry], name: str | None, load: Callable[..., Model]
) -> Callable[..., ConfigRegistry]:
    """The registry factory whose supervised configurations use model `name` (None: as is);
    an unknown local name fails here, before any work."""
    if name is None:
        return registry
    from overseer.experiments.supervise import SharedModel
    from overseer.models import model_card

    if not name.startswith("openai:"):
        model_card(name)
    shared: Any = SharedModel(name, partial(load, name))
    return partial(registry, supervisor_model=shared)
