"""OpenTelemetry export of overseer runs: the trace's events as GenAI spans, over OTLP/HTTP.

The JSONL trace stays the record; a `TraceSpans` receives the same events while they are
written (teams and games alike, every run opened inside its `with` block) and builds spans
with the GenAI semantic-convention attributes: a run span, an `invoke_agent` span per agent
step with its `chat` (model call) and `execute_tool` children, `overseer.verdict` and
`overseer.rollback` spans (see `_otel_spans` for the tree). It owns its TracerProvider (no
global one is set); leaving the block flushes and shuts it down, so nothing is lost.

    from overseer.integrations.otel import otlp_spans
    with otlp_spans("http://localhost:4318") as spans:  # POSTs to .../v1/traces
        result = asyncio.run(Executor(model).run(make_team("chain", 2), "2+2?"))
    print(spans.status)  # spans exported, spans lost and why

Needs the `otel` extra: pip install 'overseer-agents[otel]'.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from importlib.metadata import version
from types import TracebackType
from typing import Self
from urllib.parse import urlsplit

from overseer.integrations._otel_spans import RunSpans
from overseer.runtime.books import TraceSink, trace_sinks

try:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SimpleSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "overseer.integrations.otel needs OpenTelemetry: pip install 'overseer-agents[otel]'"
    ) from exc

__all__ = ["ExportStatus", "TraceSpans", "otlp_endpoint", "otlp_spans"]

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_OTLP_LOGGER = "opentelemetry.exporter.otlp.proto.http.trace_exporter"
_QUEUE = 1 << 16  # spans the batch processor holds before it would drop any


@dataclass(frozen=True)
class ExportStatus:
    """What an exporter did: spans handed over, spans lost, and the first reason a batch
    failed (None when every batch went through)."""

    exported: int
    lost: int
    error: str | None

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.error is None


class _ExporterNotes(logging.Filter):
    """Keeps the OTLP exporter's own log lines (retries, failures) for the status line instead
    of letting each reach stderr; installed for one exporter's life only."""

    def __init__(self) -> None:
        super().__init__()
        self.first: str | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if self.first is None and record.levelno >= logging.ERROR:
            self.first = record.getMessage()
        return False


class _Guarded(SpanExporter):
    """Counts what the wrapped exporter sent and lost; after one failed batch the others are
    dropped (counted), so a dead endpoint costs one time-out, not one per batch."""

    def __init__(self, inner: SpanExporter, notes: _ExporterNotes | None = None) -> None:
        self.inner = inner
        self.notes = notes
        self.exported = self.lost = 0
        self.error: str | None = None
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self.error is not None:
            with self._lock:
                self.lost += len(spans)
            return SpanExportResult.FAILURE
        result = self.inner.export(spans)
        with self._lock:
            if result is SpanExportResult.SUCCESS:
                self.exported += len(spans)
            else:
                self.lost += len(spans)
                detail = self.notes.first if self.notes is not None else None
                self.error = detail or "the exporter reported a failure"
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class TraceSpans:
    """Spans of every run traced inside its `with` block, on a TracerProvider of its own.

    `exporter` is any SDK span exporter (OTLP, in-memory, console). `batch` exports from a
    background thread (the default; `False` exports each span as it ends). `content` adds the
    query, prompts and replies (GenAI opt-in attributes; default: the env variable
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true).
    """

    def __init__(
        self,
        exporter: SpanExporter,
        *,
        batch: bool = True,
        content: bool | None = None,
        service_name: str = "overseer",
        _notes: _ExporterNotes | None = None,
    ) -> None:
        self._exporter = _Guarded(exporter, _notes)
        self._notes = _notes
        from_env = os.environ.get(CAPTURE_ENV, "").strip().lower() == "true"
        self.content = from_env if content is None else content
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": service_name}), shutdown_on_exit=False
        )
        self.provider.add_span_processor(
            BatchSpanProcessor(self._exporter, max_queue_size=_QUEUE)
            if batch
            else SimpleSpanProcessor(self._exporter)
        )
        self._tracer = self.provider.get_tracer("overseer", version("overseer-agents"))
        self._runs: set[RunSpans] = set()
        self._lock = threading.Lock()
        self._stack = ExitStack()
        self.status: ExportStatus | None = None

    def open(self, run: str) -> TraceSink:
        """The span builder of one run (a `SinkOpener` for `runtime._trace.trace_sinks`)."""
        spans = RunSpans(self._tracer, run, content=self.content, closed=self._forget)
        with self._lock:
            self._runs.add(spans)
        return spans

    def _forget(self, spans: RunSpans) -> None:
        with self._lock:
            self._runs.discard(spans)

    def __enter__(self) -> Self:
        self._stack.enter_context(trace_sinks(self.open))
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stack.close()
        self.shutdown()

    def shutdown(self) -> ExportStatus:
        """End the runs still open, export every span left, shut the provider down; the
        status says what was exported and lost (also kept as `.status`)."""
        with self._lock:
            runs = list(self._runs)
        for spans in runs:
            spans.close()
        try:
            self.provider.shutdown()  # flushes the processor, then shuts the exporter down
        finally:
            if self._notes is not None:
                logging.getLogger(_OTLP_LOGGER).removeFilter(self._notes)
        g = self._exporter
        self.status = ExportStatus(g.exported, g.lost, g.error)
        return self.status


def otlp_endpoint(endpoint: str | None = None) -> str | None:
    """The OTLP/HTTP traces URL: `endpoint` (a base URL; /v1/traces is added unless it ends
    so), else $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (as is), else $OTEL_EXPORTER_OTLP_ENDPOINT
    (+ /v1/traces); None when none is set. A value that is not an http(s) URL is a
    ValueError naming where it came from."""
    sources = [("OTLP endpoint", endpoint, False)] + [
        (var, os.environ.get(var), var.endswith("TRACES_ENDPOINT"))
        for var in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
    ]
    found = sources[0] if endpoint is not None else next((x for x in sources if x[1]), None)
    if found is None:
        return None
    source, raw, full = found
    url = (raw or "").strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"{source}: expected an http(s) URL like http://localhost:4318, got {raw!r}"
        )
    if full or parts.path.rstrip("/").endswith("/v1/traces"):
        return url
    return f"{url.rstrip('/')}/v1/traces"


def otlp_spans(
    endpoint: str | None = None, *, timeout: float | None = None, content: bool | None = None
) -> TraceSpans:
    """A `TraceSpans` exporting over OTLP/HTTP (protobuf) to `otlp_endpoint(endpoint)`;
    `timeout` in seconds per request (default: $OTEL_EXPORTER_OTLP_TIMEOUT or 10). With no
    endpoint given or configured, a ValueError."""
    url = otlp_endpoint(endpoint)
    if url is None:
        raise ValueError(
            "OTLP endpoint: expected a URL, or OTEL_EXPORTER_OTLP_ENDPOINT set; got neither"
        )
    notes = _ExporterNotes()
    logging.getLogger(_OTLP_LOGGER).addFilter(notes)
    exporter = OTLPSpanExporter(endpoint=url, timeout=timeout)
    return TraceSpans(exporter, content=content, _notes=notes)
