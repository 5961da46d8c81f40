"""OpenTelemetry export: GenAI spans built from the trace events of a team and of a game, in
the SDK's in-memory exporter and over OTLP/HTTP to a loopback receiver started by the test."""

from __future__ import annotations

import asyncio
import http.server
import json
import logging
import re
import socket
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from overseer.cli._otlp import exporting
from overseer.envs import play_whodunit
from overseer.integrations.otel import TraceSpans, otlp_endpoint, otlp_spans
from overseer.models import ModelError, ScriptedModel
from overseer.runtime import (
    BaseSupervisor,
    Budget,
    Executor,
    Interaction,
    Run,
    RunResult,
    ToolResult,
    Verdict,
    make_team,
    read_trace,
)
from overseer.runtime.books import Trace, trace_sinks

from ..cli.conftest import run_cli
from ..envs.test_loop import CFG, GAME, WRONG, StopWrongAward, award, broad, share

# -- a scripted team: a tool, a supervisor with its own model calls, a guide, a rollback ---------


class Lookup:
    name = "lookup"
    kind = "tool"
    description = "Look a fact up."
    parameters: Mapping[str, Any] = {"type": "object", "properties": {"q": {"type": "string"}}}

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        return ToolResult("the answer is 4")


def _name(messages: list) -> str:
    return messages[1]["content"].split("Your name: ")[1].split(".")[0]


def _scripted() -> ScriptedModel:
    """Agents answer 4 (a1 looks it up first); the reviewer ("sup") and the decision node
    have scripts of their own."""
    return ScriptedModel(_reply, by_actor={"sup": lambda m: "fine", "decision": lambda m: "4"})


def _reply(messages: list) -> object:
    if _name(messages) == "a1" and "Observation from lookup" not in str(messages):
        return {"thought": "look", "action": "lookup", "args": {"q": "2+2"}}
    return {"thought": "t", "action": "answer", "answer": f"4 from {_name(messages)}"}


class Reviewer(BaseSupervisor):
    """Asks its own model about every step (booked as a supervisor call), guides a1's tool
    call and rolls the round back at a2's first answer."""

    name = "sup"

    def __init__(self) -> None:
        self.rolled = False

    async def on_interaction(self, i: Interaction, run: Run) -> Verdict:
        await run.metered("sup", "supervisor").acomplete(
            [{"role": "system", "content": "You review steps."}, {"role": "user", "content": "ok?"}]
        )
        if i.tool == "lookup":
            return Verdict.guide("cite the source", by=self.name, reason="uncited")
        if i.agent == "a2" and not self.rolled:
            self.rolled = True
            return Verdict.rollback(by=self.name, reason="too early")
        return Verdict.approve(self.name)


def _team_run(tmp_path: Path) -> RunResult:
    team = make_team("chain", 2, decision="llm")
    a1 = team.agents[0].model_copy(update={"tools": ("lookup",)})
    team = team.model_copy(update={"agents": (a1, *team.agents[1:])})
    ex = Executor(
        _scripted(), supervisors=[Reviewer()], tools={"lookup": Lookup()},
        trace_dir=tmp_path,
    )  # fmt: skip
    return asyncio.run(ex.run(team, "What is 2+2?"))


# -- helpers over spans ----------------------------------------------------------------------


def _by_name(spans: list[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


def _parent(spans: list[ReadableSpan], s: ReadableSpan) -> ReadableSpan:
    assert s.parent is not None, s.name
    return next(p for p in spans if p.context.span_id == s.parent.span_id)


def _linked(spans: list[ReadableSpan], s: ReadableSpan) -> ReadableSpan:
    (link,) = s.links
    return next(p for p in spans if p.context.span_id == link.context.span_id)


def _check_tree(spans: list[ReadableSpan]) -> ReadableSpan:
    """One root (the run), one trace, every child inside its parent in time; the root."""
    roots = [s for s in spans if s.parent is None]
    assert [r.name for r in roots] == ["overseer.run"]
    assert len({s.context.trace_id for s in spans}) == 1
    for s in spans:
        assert s.start_time is not None and s.end_time is not None
        assert s.start_time <= s.end_time
        if s.parent is not None:
            p = _parent(spans, s)
            assert p.start_time <= s.start_time and s.end_time <= p.end_time, (s.name, p.name)  # type: ignore[operator]
    return roots[0]


def _token_sums(spans: list[ReadableSpan]) -> tuple[int, int]:
    chats = _by_name(spans, "chat ")
    assert chats and all(c.attributes["gen_ai.operation.name"] == "chat" for c in chats)  # type: ignore[index]
    return (
        sum(c.attributes["gen_ai.usage.input_tokens"] for c in chats),  # type: ignore[index,misc]
        sum(c.attributes["gen_ai.usage.output_tokens"] for c in chats),  # type: ignore[index,misc]
    )


def test_team_run_spans_hold_steps_calls_tools_verdicts_and_the_ledgers_tokens(
    tmp_path: Path,
) -> None:
    mem = InMemorySpanExporter()
    with TraceSpans(mem) as exporter:
        res = _team_run(tmp_path)
    assert exporter.status is not None and exporter.status.ok
    spans = list(mem.get_finished_spans())
    assert exporter.status.exported == len(spans)
    root = _check_tree(spans)
    assert res.stop_reason == "done"
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"  # type: ignore[index]
    assert root.attributes["gen_ai.conversation.id"] == res.run_id  # type: ignore[index]
    assert root.attributes["overseer.stop_reason"] == "done"  # type: ignore[index]
    # tokens: the model-call spans sum to the ledger's total, which the run span also carries
    t = res.total
    assert _token_sums(spans) == (t.prompt_tokens, t.completion_tokens)
    assert root.attributes["gen_ai.usage.input_tokens"] == t.prompt_tokens  # type: ignore[index]
    events = list(read_trace(res.trace_path))
    assert len(_by_name(spans, "chat ")) == sum(e["event"] == "model_call" for e in events)
    steps = _by_name(spans, "invoke_agent ")
    assert len(steps) == sum(e["event"] == "interaction" for e in events)
    # agent model calls sit in their step; the supervisor's and the decision's in the run
    for c in _by_name(spans, "chat "):
        a = c.attributes
        assert a["gen_ai.request.model"] == "scripted"  # type: ignore[index]
        p = _parent(spans, c)
        if a["overseer.actor.kind"] == "agent":  # type: ignore[index]
            assert p.name == f"invoke_agent {a['gen_ai.agent.name']}"  # type: ignore[index]
        else:
            assert p is root and a["overseer.actor.kind"] in ("supervisor", "decision")  # type: ignore[index]
    assert {c.attributes["gen_ai.agent.name"] for c in _by_name(spans, "chat ")} == {  # type: ignore[index]
        "a1", "a2", "sup", "decision",
    }  # fmt: skip
    # the tool call: a child of a1's step, with the GenAI tool attributes
    tools = _by_name(spans, "execute_tool lookup")
    assert len(tools) == 2  # the rollback redid the round
    for tool in tools:
        assert tool.attributes["gen_ai.operation.name"] == "execute_tool"  # type: ignore[index]
        assert tool.attributes["gen_ai.tool.name"] == "lookup"  # type: ignore[index]
        assert _parent(spans, tool).name == "invoke_agent a1"
    # verdicts: in the run, linked to the step they judged; the rollback: in the run
    guide = _by_name(spans, "overseer.verdict guide")
    assert len(guide) == 2 and all(_linked(spans, g).name == "invoke_agent a1" for g in guide)
    assert all(_parent(spans, g) is root for g in guide)
    assert [_linked(spans, g).attributes["overseer.step"] for g in guide] == [0, 0]  # type: ignore[index]
    assert guide[0].attributes["overseer.verdict.by"] == "sup"  # type: ignore[index]
    assert guide[0].attributes["overseer.verdict.reason"] == "uncited"  # type: ignore[index]
    (verdict,) = _by_name(spans, "overseer.verdict rollback")
    assert _linked(spans, verdict).name == "invoke_agent a2"
    assert verdict.attributes["overseer.verdict.action"] == "rollback"  # type: ignore[index]
    (rollback,) = _by_name(spans, "overseer.rollback")
    assert _parent(spans, rollback) is root
    a = rollback.attributes
    assert (a["overseer.rollback.by"], a["overseer.rollback.reason"]) == ("sup", "too early")  # type: ignore[index]
    assert a["overseer.rollback.count"] == 1 and a["overseer.round"] == 0  # type: ignore[index]
    # no content unless asked for
    assert not any("gen_ai.input.messages" in (s.attributes or {}) for s in spans)


def test_game_spans_carry_moves_the_rollback_and_the_books(tmp_path: Path) -> None:
    mem = InMemorySpanExporter()
    replies = [broad(), share(), award(WRONG), broad(), share(), award(GAME.culprit)]
    with TraceSpans(mem, batch=False):
        r = asyncio.run(
            play_whodunit(
                GAME,
                ScriptedModel(replies),
                CFG,
                supervisors=[StopWrongAward()],
                seed=1,
                trace_dir=None,
            )
        )
    assert r.success and r.resets == 1
    spans = list(mem.get_finished_spans())
    root = _check_tree(spans)
    books = r.usage_by_actor.values()
    assert _token_sums(spans) == (
        sum(u.prompt_tokens for u in books),
        sum(u.completion_tokens for u in books),
    )
    steps = _by_name(spans, "invoke_agent ")
    assert len(steps) == 6 and {s.attributes["overseer.kind"] for s in steps} == {"move"}  # type: ignore[index]
    assert {s.attributes["gen_ai.agent.name"] for s in steps} == {"Beth", "Alex"}  # type: ignore[index]
    assert all(len([c for c in spans if c.parent and c.parent.span_id == s.context.span_id
                    and c.name.startswith("chat ")]) == 1 for s in steps)  # fmt: skip
    (verdict,) = _by_name(spans, "overseer.verdict rollback")
    assert _linked(spans, verdict).attributes["gen_ai.agent.name"] == "Beth"  # type: ignore[index]
    (rollback,) = _by_name(spans, "overseer.rollback")
    assert rollback.attributes["overseer.rollback.reason"] == "wrong award coming"  # type: ignore[index]
    assert rollback.attributes["overseer.rollback.removed"] == 2  # type: ignore[index]
    assert _parent(spans, rollback) is root
    assert sum(e.name == "turn" for e in root.events) == 6  # other events: on the run span


def test_failures_set_error_type_and_status(tmp_path: Path) -> None:
    def flaky(messages: list) -> object:
        if _name(messages) == "a1":
            raise ModelError("server gone")
        return {"thought": "t", "action": "answer", "answer": "fine"}

    mem = InMemorySpanExporter()
    with TraceSpans(mem, batch=False):
        asyncio.run(Executor(ScriptedModel(flaky), trace_dir=tmp_path).run(
            make_team("chain", 2), "Q"))  # fmt: skip
        bad = Executor(ScriptedModel(["not json"] * 3), trace_dir=tmp_path, max_steps=1)
        asyncio.run(bad.run(make_team("chain", 1), "Q"))
        tight = Executor(_scripted(), trace_dir=tmp_path, budget=Budget(max_calls=1))
        cut = asyncio.run(tight.run(make_team("chain", 2), "Q"))

        async def no_team(run: Run) -> Any:
            raise LookupError("no SOP fits")

        broken = asyncio.run(Executor(ScriptedModel([]), trace_dir=tmp_path).run(no_team, "Q"))
    assert cut.stop_reason == "budget_steps" and broken.stop_reason == "error"
    spans = list(mem.get_finished_spans())
    roots = [s for s in spans if s.parent is None]
    assert len(roots) == 4
    assert roots[2].attributes["error.type"] == "budget_steps"  # type: ignore[index]
    assert roots[2].attributes["overseer.stop_reason"] == "budget_steps"  # type: ignore[index]
    assert roots[2].status.status_code.name == "ERROR"
    assert "error.type" not in (roots[0].attributes or {})  # a failed agent, a finished run
    assert roots[3].attributes["error.type"] == "LookupError"  # type: ignore[index]
    assert [e.name for e in roots[3].events] == ["exception"]
    unparsable = [s for s in spans if (s.attributes or {}).get("error.type") == "unparsable"]
    assert len(unparsable) == 1 and unparsable[0].name == "invoke_agent a1"
    assert unparsable[0].status.status_code.name == "ERROR"
    step = unparsable[0].context.span_id
    assert len([c for c in spans if c.parent and c.parent.span_id == step]) == 3
    assert any(e.name == "agent_failure" for r in roots for e in r.events)  # model_error: no call


def test_content_is_opt_in_and_sinks_are_scoped(tmp_path: Path) -> None:
    mem = InMemorySpanExporter()
    with TraceSpans(mem, batch=False, content=True):
        asyncio.run(Executor(_scripted(), trace_dir=tmp_path).run(
            make_team("chain", 1), "What is 2+2?"))  # fmt: skip
    chat = _by_name(list(mem.get_finished_spans()), "chat ")[0]
    assert "What is 2+2?" in str(json.loads(chat.attributes["gen_ai.input.messages"]))  # type: ignore[index,arg-type]
    n = len(mem.get_finished_spans())
    asyncio.run(Executor(_scripted(), trace_dir=tmp_path).run(make_team("chain", 1), "Q"))
    assert len(mem.get_finished_spans()) == n  # outside the block: nothing exported


def test_a_trace_hands_each_event_to_its_sinks_in_file_order(tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []

    class Sink:
        def __init__(self, run: str) -> None:
            self.run = run

        def event(self, record: Mapping[str, Any]) -> None:
            seen.append((self.run, record["event"]))

        def close(self) -> None:
            seen.append((self.run, "closed"))

    with trace_sinks(Sink):
        t = Trace(tmp_path / "t.jsonl", "r1")
    t.event("round_start", round=0)
    with pytest.raises(ValueError, match="rollback"):
        t.event("rollback", round=1)  # refused before any sink sees it
    t.event("round_end", round=0)
    t.close()
    t.close()
    assert seen == [("r1", "round_start"), ("r1", "round_end"), ("r1", "closed")]
    assert [e["event"] for e in read_trace(t.path)] == ["round_start", "round_end"]
    assert Trace(tmp_path / "u.jsonl", "r2")._sinks == []  # the block is over


# -- over OTLP/HTTP ------------------------------------------------------------------------------


class _Receiver(http.server.BaseHTTPRequestHandler):
    requests: list[ExportTraceServiceRequest]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path != "/v1/traces" or self.headers["Content-Type"] != "application/x-protobuf":
            self.send_response(404)
            self.end_headers()
            return
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        self.server.requests.append(req)  # type: ignore[attr-defined]
        out = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, format: str, *args: Any) -> None:
        return None  # keep the test output clean; requests are checked, not logged


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[ExportTraceServiceRequest]]]:
    """An OTLP/HTTP trace receiver on 127.0.0.1: its base URL and the requests it decoded."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", server.requests  # type: ignore[attr-defined]
    server.shutdown()
    server.server_close()
    thread.join()


def _value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def _decoded(requests: list[ExportTraceServiceRequest]) -> list[dict[str, Any]]:
    """Every span received: name, ids, parent and attributes, with the resource's service."""
    out = []
    for req in requests:
        for rs in req.resource_spans:
            service = {a.key: _value(a.value) for a in rs.resource.attributes}["service.name"]
            for ss in rs.scope_spans:
                assert ss.scope.name == "overseer"
                for s in ss.spans:
                    attrs = {a.key: _value(a.value) for a in s.attributes}
                    out.append({"name": s.name, "id": s.span_id, "parent": s.parent_span_id,
                                "service": service, "attrs": attrs})  # fmt: skip
    return out


def _check_received(spans: list[dict[str, Any]], trace: Path) -> None:
    """The spans of one run match its JSONL trace: calls, steps, tokens, the tree."""
    events = list(read_trace(trace))
    end = next(e for e in events if e["event"] == "run_end")
    (root,) = [s for s in spans if not s["parent"]]
    assert root["name"] == "overseer.run" and root["service"] == "overseer"
    assert root["attrs"]["gen_ai.conversation.id"] == end["run"]
    chats = [s for s in spans if s["attrs"].get("gen_ai.operation.name") == "chat"]
    assert len(chats) == sum(e["event"] == "model_call" for e in events) > 0
    ins = sum(c["attrs"]["gen_ai.usage.input_tokens"] for c in chats)
    outs = sum(c["attrs"]["gen_ai.usage.output_tokens"] for c in chats)
    assert (ins, outs) == (end["usage"]["input_tokens"], end["usage"]["output_tokens"])
    assert root["attrs"]["gen_ai.usage.input_tokens"] == ins
    ids = {s["id"] for s in spans}
    assert all(s["parent"] in ids for s in spans if s["parent"])
    steps = [s for s in spans if s["name"].startswith("invoke_agent ")]
    assert len(steps) == sum(e["event"] == "interaction" for e in events)
    assert all(s["attrs"]["gen_ai.operation.name"] == "invoke_agent" for s in steps)


def test_spans_reach_a_loopback_otlp_receiver(
    receiver: tuple[str, list[ExportTraceServiceRequest]], tmp_path: Path
) -> None:
    url, requests = receiver
    with otlp_spans(url, timeout=5) as exporter:
        res = _team_run(tmp_path)
    assert exporter.status is not None and exporter.status.ok
    spans = _decoded(requests)
    assert exporter.status.exported == len(spans) > 10
    _check_received(spans, res.trace_path)
    names = {s["name"] for s in spans}
    assert {"overseer.run", "invoke_agent a1", "invoke_agent a2", "chat scripted",
            "execute_tool lookup", "overseer.verdict guide", "overseer.verdict rollback",
            "overseer.rollback"} <= names  # fmt: skip
    (rollback,) = [s for s in spans if s["name"] == "overseer.rollback"]
    assert rollback["attrs"]["overseer.rollback.by"] == "sup"
    (tool,) = {s["attrs"]["gen_ai.tool.name"] for s in spans if s["name"].startswith("execute_")}
    assert tool == "lookup"


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_dead_endpoint_is_one_warning_line_and_the_run_goes_on(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = f"http://127.0.0.1:{_dead_port()}"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")  # the SDK's own setting is honoured
    caplog.set_level(logging.DEBUG)
    with exporting(url):
        res = _team_run(tmp_path)
    assert res.stop_reason == "done" and res.answer
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert re.match(rf"overseer: warning: OTLP export to {url}/v1/traces failed, \d+ spans "
                    r"not exported \(0 were\): \S", lines[0]), lines[0]  # fmt: skip
    assert not [r for r in caplog.records if r.name.startswith("opentelemetry.exporter")]


def test_endpoint_from_option_or_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    assert otlp_endpoint() is None
    assert otlp_endpoint("http://h:4318") == "http://h:4318/v1/traces"
    assert otlp_endpoint("https://h/otlp/v1/traces") == "https://h/otlp/v1/traces"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")
    assert otlp_endpoint() == "http://collector:4318/v1/traces"
    assert otlp_endpoint("http://mine:1") == "http://mine:1/v1/traces"  # the option wins
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c:4318/custom")
    assert otlp_endpoint() == "http://c:4318/custom"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "collector:4318")
    with pytest.raises(ValueError, match="OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: expected an http"):
        otlp_endpoint()


def test_env_endpoint_exports_a_cli_scope(
    receiver: tuple[str, list[ExportTraceServiceRequest]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, requests = receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    with exporting(None):
        res = _team_run(tmp_path)
    _check_received(_decoded(requests), res.trace_path)


def test_a_bad_otlp_endpoint_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "run", "hi", "--otlp-endpoint", "localhost:4318")
    assert code == 2 and out == ""
    assert err.strip() == (
        "overseer: error: --otlp-endpoint: expected an http(s) URL like http://localhost:4318, "
        "got 'localhost:4318'"
    )


@pytest.mark.e2e
def test_cli_run_on_the_embedded_model_exports_its_spans(
    receiver: tuple[str, list[ExportTraceServiceRequest]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, requests = receiver
    code, _, err = run_cli(
        capsys, "run", "What is 2+3?", "--team", "chain", "--agents", "2", "--rounds", "1",
        "--model", "smollm2-135m", "--trace-dir", str(tmp_path), "--no-progress",
        "--otlp-endpoint", url,
    )  # fmt: skip
    assert code == 0, err
    assert "warning" not in err
    (trace,) = tmp_path.glob("*.jsonl")
    spans = _decoded(requests)
    _check_received(spans, trace)
    (root,) = [s for s in spans if not s["parent"]]
    assert root["attrs"]["gen_ai.request.model"] == "smollm2-135m"
    assert {"invoke_agent a1", "invoke_agent a2"} <= {s["name"] for s in spans}
