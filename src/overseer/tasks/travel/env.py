"""AgentDojo travel environments as overseer tools, transcripts and the package's own scoring.

A session holds one fresh environment and its 28 tools; every call is recorded. A solver's
answer is a JSON transcript (final text + the calls made), so scoring is a pure function of
the stored answer: the calls are replayed on a fresh environment and the task's own
`utility(model_output, pre_environment, post_environment)` decides. Two checks per task give
the micro pass rate: the final text checked against the gold environment, and the agent's
environment checked with the gold text.
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any

from pydantic import ValidationError, create_model

from overseer.runtime import ToolResult
from overseer.runtime.tools import ToolKind
from overseer.tasks._coro import drive
from overseer.tasks._types import Score
from overseer.tasks.travel._shim import CURRENT, Store, ToolCall, load_travel_suite


def _drive(coro: Any) -> Any:
    """Run a coroutine that never suspends (the travel tools and checks) without a loop."""
    return drive(coro, "a travel tool or check")


@cache
def _pristine() -> Any:
    """The default environment (injection placeholders filled with their default texts)."""
    return load_travel_suite().load_and_inject_default_environment({})


def _doc_parts(doc: str) -> tuple[str, dict[str, str]]:
    text = inspect.cleandoc(doc or "")
    head = text.split("\n\n")[0].replace("\n", " ").strip()
    args: dict[str, str] = {}
    m = re.search(r"Args:\n(.*?)(?:\n\s*\n|\Z)", text, re.DOTALL)
    if m:
        for line in m.group(1).splitlines():
            k, sep, v = line.strip().partition(":")
            if sep and k.isidentifier():
                args[k] = v.strip()
    return head, args


class TravelTool:
    """One AgentDojo travel function as an overseer Tool bound to a session's environment."""

    kind: ToolKind = "tool"

    def __init__(self, fn: Any, session: TravelSession) -> None:
        self.fn = fn
        self.session = session
        self.name = fn.__qualname__.split(".")[0]
        self.description, arg_docs = _doc_parts(fn.__doc__ or "")
        hints = typing.get_type_hints(fn)
        fields: dict[str, Any] = {}
        for p in inspect.signature(fn).parameters.values():
            default = ... if p.default is inspect.Parameter.empty else p.default
            fields[p.name] = (hints.get(p.name, str), default)
        self._args = create_model(f"{self.name}_args", **fields)
        schema = self._args.model_json_schema()
        for k, v in schema.get("properties", {}).items():
            v.pop("title", None)
            if k in arg_docs:
                v["description"] = arg_docs[k]
        self.parameters: Mapping[str, Any] = {
            "type": "object",
            "properties": schema.get("properties", {}),
            "required": schema.get("required", []),
        }

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        try:
            parsed = self._args.model_validate(dict(args))
        except ValidationError as exc:
            e = exc.errors()[0]
            loc = ".".join(str(x) for x in e["loc"])
            return ToolResult("", f"{self.name}: argument {loc}: {e['msg']}")
        return self.session.call(self.name, parsed.model_dump())


class TravelSession:
    """A fresh travel environment for one user task, its tools and the calls made so far."""

    def __init__(self, task_number: int) -> None:
        suite = load_travel_suite()
        self.user_task = suite.user_tasks[task_number]
        self.env = self.user_task.init_environment(_pristine().model_copy(deep=True))
        self.pre = self.env.model_copy(deep=True)
        self.store = Store({k: getattr(self.env, k) for k in type(self.env).model_fields})
        self.calls: list[dict[str, Any]] = []
        self._fns = {fn.__qualname__.split(".")[0]: fn for fn in suite.tools}
        self.tools = {name: TravelTool(fn, self) for name, fn in self._fns.items()}

    def call(self, name: str, args: dict[str, Any]) -> ToolResult:
        """Run one tool on this session's environment and record it."""
        self.calls.append({"function": name, "arguments": args})
        token = CURRENT.set(self.store)
        try:
            out = _drive(self._fns[name](**args))
        except Exception as exc:  # a tool's own failure is the agent's observation
            return ToolResult("", f"{name}: {type(exc).__name__}: {exc}")
        finally:
            CURRENT.reset(token)
        return ToolResult(str(out))

    def transcript(self, answer: str) -> str:
        """The answer to store: the final text and the calls, as JSON."""
        return json.dumps({"answer": answer, "calls": self.calls}, ensure_ascii=False)

    def finish(self, answer: str) -> str:
        """The task environment protocol: the stored answer is the transcript."""
        return self.transcript(answer)

    def utility(self, text: str, post: Any) -> bool:
        traces = [ToolCall(str(i), c["function"], c["arguments"]) for i, c in enumerate(self.calls)]
        return bool(_drive(self.user_task.utility(text, self.pre, post, traces)))


def replay(task_number: int, calls: list[dict[str, Any]]) -> TravelSession:
    """A fresh session with `calls` run in order (unknown tools and bad arguments are skipped)."""
    s = TravelSession(task_number)
    for c in calls:
        name, args = c.get("function"), c.get("arguments")
        if isinstance(name, str) and name in s._fns and isinstance(args, dict):
            try:
                inspect.signature(s._fns[name]).bind(**args)
            except TypeError:
                continue
            s.call(name, args)
    return s


@cache
def gold(task_number: int) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The gold text (the task's ground-truth output plus what the gold calls returned) and
    the gold calls, from the task's own `ground_truth`."""
    s = TravelSession(task_number)
    calls = s.user_task.ground_truth(s.pre)
    outputs = [s.call(c.function, dict(c.arguments)).output for c in calls]
    text = "\n".join([s.user_task.GROUND_TRUTH_OUTPUT, *outputs])
    return text, tuple((c.function, json.dumps(dict(c.arguments), default=str)) for c in calls)


def gold_transcript(task_number: int) -> str:
    text, calls = gold(task_number)
    return json.dumps(
        {"answer": text, "calls": [{"function": f, "arguments": json.loads(a)} for f, a in calls]}
    )


def parse_transcript(output: str) -> tuple[str, list[dict[str, Any]]]:
    """(final text, calls) of a stored answer; plain text counts as an answer with no calls."""
    try:
        data = json.loads(output)
    except (json.JSONDecodeError, TypeError):
        return output or "", []
    if not isinstance(data, dict):
        return output, []
    raw = data.get("calls")
    calls = raw if isinstance(raw, list) else []
    return str(data.get("answer") or ""), [c for c in calls if isinstance(c, dict)]


def score_travel(task_number: int, output: str) -> Score:
    """Success by the task's utility; value = micro pass rate of its two checks; parsed is the
    delivered text (None when nothing was delivered)."""
    text, calls = parse_transcript(output)
    agent = replay(task_number, calls)
    success = agent.utility(text, agent.env)
    gold_text, gold_calls = gold(task_number)
    gold_env = replay(
        task_number, [{"function": f, "arguments": json.loads(a)} for f, a in gold_calls]
    ).env
    answer_ok = agent.utility(text, gold_env)
    state_ok = agent.utility(gold_text, agent.env)
    detail = f"answer check {'passed' if answer_ok else 'failed'}; environment check " + (
        "passed" if state_ok else "failed"
    )
    delivered = text.strip()[:200] or None
    return Score(success, (answer_ok + state_ok) / 2, delivered, detail)
