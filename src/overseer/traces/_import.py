"""Importers: Who&When logs (both formats), OpenAI chat transcripts, overseer's own traces.

Every importer returns `Trajectory` objects; `load_path` picks the importer from the file's
content (never from its name alone) and names the file and what was expected when none fits.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from overseer.traces._types import Annotation, ToolCall, TraceFormatError, TraceStep, Trajectory

_ROLE = re.compile(r"^\s*([^()]+?)\s*\((.*)\)\s*$")
_ADDRESSED = re.compile(r"^->\s*(.+)$")


def _annotation(log: Mapping[str, Any], n_steps: int) -> Annotation | None:
    agent, step = log.get("mistake_agent"), log.get("mistake_step")
    if agent is None or step is None:
        return None
    try:
        k = int(str(step).strip())
    except ValueError:
        raise TraceFormatError(f"mistake_step {step!r}: expected an integer") from None
    return Annotation(str(agent), k, str(log.get("mistake_reason") or ""))


def _hand_step(i: int, msg: Mapping[str, Any], addressed: set[str]) -> TraceStep:
    role = str(msg.get("role", ""))
    agent, to = role.strip() or "unknown", None
    m = _ROLE.match(role)
    if m:
        agent = m.group(1)
        arrow = _ADDRESSED.match(m.group(2).strip())
        to = arrow.group(1).strip() if arrow else None
    return TraceStep(
        index=i,
        agent=agent,
        role=role,
        content=str(msg.get("content") or ""),
        to=to,
        is_observation=agent in addressed,  # a result returned to whoever asked
    )


def from_whowhen(log: Mapping[str, Any], *, log_id: str = "") -> Trajectory:
    """A Who&When log: `history` of {content, role} (hand-crafted, roles like
    "Orchestrator (-> WebSurfer)") or of {content, role, name} plus `system_prompt`
    (algorithm-generated)."""
    history = log.get("history")
    if not isinstance(history, list) or not all(isinstance(m, dict) for m in history):
        raise TraceFormatError(f"Who&When log {log_id}: expected 'history', a list of objects")
    alg = "system_prompt" in log or any("name" in m for m in history)
    steps: list[TraceStep] = []
    addressed: set[str] = set()
    for i, msg in enumerate(history):
        if alg:
            content = str(msg.get("content") or "")
            step = TraceStep(
                index=i,
                agent=str(msg.get("name") or msg.get("role") or "unknown"),
                role=str(msg.get("role", "")),
                content=content,
                is_observation=content.lstrip().startswith("exitcode:"),
            )
        else:
            step = _hand_step(i, msg, addressed)
        if step.to:
            addressed.add(step.to)
        steps.append(step)
    prompts = log.get("system_prompt") or {}
    return Trajectory(
        id=log_id or str(log.get("question_ID", "")),
        source="whowhen-alg" if alg else "whowhen-hand",
        question=str(log.get("question", "")),
        steps=tuple(steps),
        system_prompts={str(k): str(v) for k, v in prompts.items()}
        if isinstance(prompts, dict)
        else {},
        ground_truth=None if log.get("ground_truth") is None else str(log["ground_truth"]),
        outcome="failed",
        annotation=_annotation(log, len(steps)),
    )


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def _tool_calls(msg: Mapping[str, Any]) -> tuple[ToolCall, ...]:
    calls = msg.get("tool_calls")
    out = []
    for call in calls if isinstance(calls, list) else ():
        fn = call.get("function") if isinstance(call, dict) else None
        fn = fn if isinstance(fn, dict) else {}
        out.append(ToolCall(str(fn.get("name", "")), str(fn.get("arguments", ""))))
    return tuple(out)


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def from_openai_chat(
    messages: Sequence[Mapping[str, Any]], *, log_id: str = "chat", meta: Mapping[str, Any] = {}
) -> Trajectory:
    """A plain OpenAI chat transcript: system messages become system prompts, every other
    message a step (`name` or role is the agent; tool results are observations). `meta` may
    carry question, ground_truth, answer, outcome and a Who&When-style annotation."""
    prompts: dict[str, str] = {}
    steps: list[TraceStep] = []
    for msg in messages:
        if not isinstance(msg, dict) or "role" not in msg:
            raise TraceFormatError(f"chat {log_id}: expected messages with a 'role'")
        role = str(msg["role"])
        agent = str(msg.get("name") or role)
        if role == "system":
            prompts[agent] = _text(msg.get("content"))
            continue
        steps.append(
            TraceStep(
                index=len(steps),
                agent=f"tool:{agent}" if role == "tool" and msg.get("name") else agent,
                role=role,
                content=_text(msg.get("content")),
                tool_calls=_tool_calls(msg),
                is_observation=role == "tool",
            )
        )
    question = str(meta.get("question") or next((s.content for s in steps if s.role == "user"), ""))
    outcome = meta.get("outcome", "failed" if "mistake_agent" in meta else "unknown")
    if outcome not in ("failed", "succeeded", "unknown"):
        raise TraceFormatError(
            f"chat {log_id}: outcome {outcome!r} is not failed/succeeded/unknown"
        )
    return Trajectory(
        id=log_id,
        source="openai-chat",
        question=question,
        steps=tuple(steps),
        system_prompts=prompts,
        ground_truth=_opt_str(meta.get("ground_truth")),
        answer=_opt_str(meta.get("answer")),
        outcome=outcome,
        annotation=_annotation(meta, len(steps)),
    )


def from_overseer_trace(events: Sequence[Mapping[str, Any]], *, log_id: str = "") -> Trajectory:
    """An overseer run trace (JSON Lines events): one step per `interaction` event; the
    question from `run_start`, the answer and error from `run_end` (an error means failed)."""
    steps: list[TraceStep] = []
    question, answer, outcome = "", None, "unknown"
    run = log_id
    for e in events:
        kind = e.get("event")
        if kind == "run_start":
            question, run = str(e.get("query", "")), log_id or str(e.get("run", ""))
        elif kind == "interaction":
            tool = e.get("tool")
            content = "\n".join(
                x for x in (str(e.get("thought") or ""), str(e.get("input") or "")) if x
            )
            steps.append(
                TraceStep(
                    index=len(steps),
                    agent=str(e.get("agent", "")),
                    role=str(e.get("role", "")),
                    content=content,
                    observation=str(e.get("observation") or ""),
                    tool_calls=(ToolCall(str(tool), str(e.get("input") or "")),) if tool else (),
                    error=_opt_str(e.get("error")),
                )
            )
        elif kind == "run_end":
            answer = str(e.get("answer", ""))
            outcome = "failed" if e.get("error") else outcome
    return Trajectory(
        id=run or "trace",
        source="overseer",
        question=question,
        steps=tuple(steps),
        answer=answer,
        outcome=outcome,  # type: ignore[arg-type]
    )


def _read_text(path: Path) -> str:
    """The file's text; unreadable or not UTF-8 is a TraceFormatError naming the file."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        bad = exc.object[exc.start]
        raise TraceFormatError(
            f"{path}: not UTF-8 text (byte {bad:#04x} at offset {exc.start}); expected a JSON "
            "or JSON Lines trajectory"
        ) from None
    except OSError as exc:
        raise TraceFormatError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _loads(text: str, where: str) -> Any:
    """JSON from `text`; malformed or too deeply nested JSON is a TraceFormatError."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceFormatError(f"{where}: not JSON ({exc.msg})") from None
    except RecursionError:
        raise TraceFormatError(f"{where}: JSON nested too deeply to read") from None


def _json_lines(path: Path) -> list[Any]:
    out = []
    for no, line in enumerate(_read_text(path).splitlines(), 1):
        if line.strip():
            out.append(_loads(line, f"{path}, line {no}"))
    return out


def _from_json(path: Path, data: Any) -> list[Trajectory]:
    if isinstance(data, dict) and "history" in data:
        return [from_whowhen(data, log_id=path.stem)]
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        meta = {k: v for k, v in data.items() if k != "messages"}
        return [from_openai_chat(data["messages"], log_id=path.stem, meta=meta)]
    if isinstance(data, list) and data and all(isinstance(m, dict) and "role" in m for m in data):
        return [from_openai_chat(data, log_id=path.stem)]
    raise TraceFormatError(
        f"{path}: expected a Who&When log (an object with 'history'), an OpenAI chat "
        f"transcript (a list of messages or an object with 'messages') or an overseer trace"
    )


def load_file(path: str | Path) -> list[Trajectory]:
    """The trajectories in one file (.json: one log; .jsonl: an overseer trace, one chat
    transcript of one message per line, or one Who&When log / transcript object per line)."""
    path = Path(path)
    if not path.is_file():
        raise TraceFormatError(f"{path}: expected an existing file")
    if path.suffix == ".json":
        return _from_json(path, _loads(_read_text(path), str(path)))
    rows = _json_lines(path)
    if not rows:
        raise TraceFormatError(f"{path}: empty; expected a trajectory")
    if all(isinstance(r, dict) and "event" in r for r in rows):
        return [from_overseer_trace(rows, log_id=path.stem)]
    if all(isinstance(r, dict) and "role" in r and "history" not in r for r in rows):
        return [from_openai_chat(rows, log_id=path.stem)]
    out: list[Trajectory] = []
    for i, r in enumerate(rows):
        if not isinstance(r, dict):
            raise TraceFormatError(
                f"{path}, row {i + 1}: expected a JSON object (a Who&When log, a transcript "
                f"or a trace event), got {type(r).__name__}"
            )
        out.extend(_from_json(path.with_name(f"{path.stem}-{i}"), r.get("log", r)))
    return out


def iter_path(path: str | Path) -> Iterator[Trajectory]:
    """Trajectories of a file, or of every .json/.jsonl file under a directory (sorted)."""
    p = Path(path)
    if p.is_dir():
        files = sorted(
            (f for f in p.rglob("*") if f.suffix in (".json", ".jsonl")),
            key=lambda f: (str(f.parent), len(f.stem), f.stem),
        )
        if not files:
            raise TraceFormatError(f"{p}: a directory with no .json or .jsonl files")
        for f in files:
            yield from load_file(f)
        return
    yield from load_file(p)
