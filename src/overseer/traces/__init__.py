"""Trajectories of other systems in; offline replay of the rule tier and failure attribution out.

Exported is what a user needs to read trajectories into one typed form (`Trajectory`,
`TraceStep`, `ToolCall`, `Annotation`, `TraceFormatError`): `load_source` (a file, a directory
or the packaged Who&When benchmark by name), `load_whowhen` (its 58 hand-crafted and 126
algorithm-generated logs, counts checked), `load_file`, `iter_path`, and the importers
`from_whowhen`, `from_openai_chat`, `from_overseer_trace`. The replay is in
`overseer.traces.replay` (`replay`, `totals`); attribution in `overseer.traces.judges` (the
paper's three LLM judges), `overseer.traces.learned` (our learned step scorer),
`overseer.traces.evaluate` (result store, Wilson intervals, McNemar) and
`overseer.traces.campaign` (what `overseer attribute` runs).
"""

from overseer.traces._data import SOURCE_NAMES, load_source, load_whowhen, task_sources
from overseer.traces._import import (
    from_openai_chat,
    from_overseer_trace,
    from_whowhen,
    iter_path,
    load_file,
)
from overseer.traces._types import Annotation, ToolCall, TraceFormatError, TraceStep, Trajectory

__all__ = [
    "SOURCE_NAMES",
    "Annotation",
    "ToolCall",
    "TraceFormatError",
    "TraceStep",
    "Trajectory",
    "from_openai_chat",
    "from_overseer_trace",
    "from_whowhen",
    "iter_path",
    "load_file",
    "load_source",
    "load_whowhen",
    "task_sources",
]
