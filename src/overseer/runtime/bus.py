"""The bus for hosts outside the Executor and the games: a framework guard builds one per run
(over one `SupervisorChain` shared by its runs) and implements `Host`; `observation_after`
is the bus's wording of a verdict's text, for callbacks that edit a framework's step in
place."""

from overseer.runtime._bus import (
    Bus,
    Host,
    Outcome,
    SupervisorChain,
    UnsupportedVerdictError,
    observation_after,
)

__all__ = [
    "Bus",
    "Host",
    "Outcome",
    "SupervisorChain",
    "UnsupportedVerdictError",
    "observation_after",
]
