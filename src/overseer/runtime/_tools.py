"""Tools agents can call: described by a JSON Schema, returning text. Python runs in the sandbox."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from overseer.sandbox import SandboxLimits, arun_python

#: How a tool's steps are recorded: an interaction of kind "tool" or "memory".
ToolKind = Literal["tool", "memory"]


@dataclass(frozen=True)
class ToolResult:
    """What a tool returned; `error` is set when the call failed (the output may still help)."""

    output: str
    error: str | None = None


@runtime_checkable
class Tool(Protocol):
    """A callable capability. `kind` is "tool" for actions and "memory" for retrieval."""

    name: str
    description: str
    parameters: Mapping[str, Any]  # JSON Schema of the arguments object
    kind: ToolKind

    async def call(self, args: Mapping[str, Any]) -> ToolResult: ...


class PythonTool:
    """Runs model-written Python in the sandbox (no network, limits, killed on time-out)."""

    name = "python"
    kind: ToolKind = "tool"
    description = (
        "Run a Python 3 program and get what it prints. Use print() to see results. "
        "Standard library only; no network; each run starts fresh."
    )
    parameters: Mapping[str, Any] = {
        "type": "object",
        "properties": {"code": {"type": "string"}},
        "required": ["code"],
    }

    def __init__(self, limits: SandboxLimits | None = None, max_output_chars: int = 2000) -> None:
        self.limits = limits or SandboxLimits(timeout_s=10.0, memory_mb=512)
        self.max_output_chars = max_output_chars

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        code = args.get("code")
        if not isinstance(code, str) or not code.strip():
            return ToolResult("", "python: expected a non-empty 'code' string")
        r = await arun_python(code, limits=self.limits)
        out = r.stdout
        if r.stderr:
            out += ("\n" if out else "") + "[stderr]\n" + r.stderr
        out = out[-self.max_output_chars :]
        if r.timed_out:
            return ToolResult(out, f"python: timed out after {self.limits.timeout_s} s")
        if r.returncode != 0:
            return ToolResult(out, f"python: exited with code {r.returncode}")
        return ToolResult(out or "(no output)")


_WORD = re.compile(r"[a-z0-9]+")


def _terms(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class Memory(Protocol):
    """A retrieval store: the k passages most relevant to a query."""

    def search(self, query: str, k: int) -> list[str]: ...


class KeywordMemory:
    """BM25 over a fixed list of passages: a deterministic, dependency-free memory."""

    def __init__(self, passages: Sequence[str], *, k1: float = 1.5, b: float = 0.75) -> None:
        self.passages = list(passages)
        self._tf = [Counter(_terms(p)) for p in self.passages]
        self._len = [sum(tf.values()) for tf in self._tf]
        self._avg = (sum(self._len) / len(self._len)) if self._len else 0.0
        df: Counter[str] = Counter()
        for tf in self._tf:
            df.update(tf.keys())
        n = len(self.passages)
        self._idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
        self.k1, self.b = k1, b

    def search(self, query: str, k: int) -> list[str]:
        q = _terms(query)
        scores = []
        for i, tf in enumerate(self._tf):
            s = 0.0
            for t in q:
                f = tf.get(t, 0)
                if f:
                    norm = f + self.k1 * (1 - self.b + self.b * self._len[i] / (self._avg or 1))
                    s += self._idf[t] * f * (self.k1 + 1) / norm
            scores.append((s, -i))
        ranked = sorted(scores, reverse=True)
        return [self.passages[-i] for s, i in ranked[:k] if s > 0]


class MemoryTool:
    """Exposes a Memory to agents as the `memory` tool (its calls are memory interactions)."""

    kind: ToolKind = "memory"
    parameters: Mapping[str, Any] = {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    }

    def __init__(self, memory: Memory, *, name: str = "memory", k: int = 3) -> None:
        self.memory = memory
        self.name = name
        self.k = k
        self.description = f"Look up the {k} stored passages most relevant to a query."

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            return ToolResult("", f"{self.name}: expected a non-empty 'query' string")
        hits = self.memory.search(query, self.k)
        if not hits:
            return ToolResult("(nothing relevant found)")
        return ToolResult("\n\n".join(f"[{i + 1}] {h}" for i, h in enumerate(hits)))
