"""Reports of a result store: the HTML page and its Markdown twin with plots, one run's trace as
an HTML page, and the per-result rows as CSV or JSON Lines (what `overseer report --out`,
`--csv`, `--jsonl` and `overseer trace html` write).
"""

from overseer.bench._export import COLUMNS, outcome, result_row, write_csv, write_jsonl
from overseer.bench._pages import ReportFiles, write_report
from overseer.bench._trace_page import trace_html

__all__ = [
    "COLUMNS",
    "ReportFiles",
    "outcome",
    "result_row",
    "trace_html",
    "write_csv",
    "write_jsonl",
    "write_report",
]
