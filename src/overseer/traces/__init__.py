"""Trajectories of other systems in, replay of the rule tier and failure attribution out.

Import (`load_source`, `load_whowhen`, `iter_path`, `from_whowhen`, `from_openai_chat`,
`from_overseer_trace`) reads Who&When logs, OpenAI chat transcripts and overseer's own traces
into one typed form (`Trajectory`, `TraceStep`, `Annotation`).
"""

from overseer.traces._data import SOURCE_NAMES, load_source, load_whowhen
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
]
