"""The parts of a report other layers compose pages from: summary rows and the errors table,
the baseline and the paired comparisons, the verdict sentences, the accuracy-vs-tokens plot,
where a stored result's trace is, a result's key, its JSON form and row check (the evidence
exports) and its provenance (the evidence pages and `overseer report` are built on these)."""

from overseer.bench._export import ROW_SCHEMA, check_row, record_from_json, record_json
from overseer.bench._plots import accuracy_tokens
from overseer.bench._provenance import describe as describe_provenance
from overseer.bench._provenance import distinct as distinct_provenance
from overseer.bench._provenance import mixed as mixed_provenance
from overseer.bench._report import (
    SummaryRow,
    default_baseline,
    errors_table,
    paired_groups,
    paired_view,
)
from overseer.bench._store import ResultKey
from overseer.bench._traces import acted_counts, find_trace, load_events, trace_acted, trace_roots
from overseer.bench._verdict import verdict_lines

__all__ = [
    "ROW_SCHEMA",
    "ResultKey",
    "SummaryRow",
    "accuracy_tokens",
    "acted_counts",
    "check_row",
    "default_baseline",
    "describe_provenance",
    "distinct_provenance",
    "errors_table",
    "find_trace",
    "load_events",
    "mixed_provenance",
    "paired_groups",
    "paired_view",
    "record_from_json",
    "record_json",
    "trace_acted",
    "trace_roots",
    "verdict_lines",
]
