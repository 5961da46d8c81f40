"""What a run leaves behind, for the packages that keep or read it: the metered model and its
budget, the trace, its sinks and events, the index of a trace folder.

The runtime's own books (`Ledger`, `Budget`, `read_trace`) are exported by `overseer.runtime`;
this module holds the finer parts other hosts need (a framework guard keeping the same books:
its runs opened by `open_run`, its steps traced as interactions; the CLI listing and
describing traces, the OpenTelemetry exporter adding a sink).
"""

from overseer.runtime._bus import interaction_fields
from overseer.runtime._events import describe_event
from overseer.runtime._ledger import BudgetExceeded, MeteredModel, budgeted
from overseer.runtime._run import open_run
from overseer.runtime._trace import Trace, TraceSink, trace_sinks
from overseer.runtime._trace_index import list_traces

__all__ = [
    "BudgetExceeded",
    "MeteredModel",
    "Trace",
    "TraceSink",
    "budgeted",
    "describe_event",
    "interaction_fields",
    "list_traces",
    "open_run",
    "trace_sinks",
]
