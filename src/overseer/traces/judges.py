"""The three LLM judges of the Who&When paper, on any overseer `Model`, in our own prompts.

- all-at-once: the whole log in one prompt; the judge names the agent and the step;
- step-by-step: the log is revealed one step at a time; at each step the judge says whether
  this step is the decisive mistake; the first yes wins;
- binary search: the judge says which half of the current range holds the mistake, until
  one step is left.
Prompts put the log first and the question last, so calls on the same log share a prefix
(llama.cpp's prompt cache then evaluates only the new tail). With `with_truth` the correct
answer of the task is given to the judge, as in the paper's "with ground truth" setting.
Long logs are fitted to the window explicitly (see `_render`); every case is counted.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from overseer.models import LlamaCppModel, Model, ModelError, StructuredOutputError, ask_structured
from overseer.models import Usage as _Usage
from overseer.traces._attr_types import Attribution, Outcome
from overseer.traces._render import Count, Fitter, approx_tokens, clip
from overseer.traces._tokens import ModelTokenizer
from overseer.traces._types import Trajectory

SYSTEM = (
    "You review the log of a team of AI agents that worked on a task and failed. Find the "
    "decisive mistake: the earliest step whose error put the team on the path to the wrong "
    "result. Reply with JSON only."
)
REASON = {"type": "string", "maxLength": 120}  # about 30 tokens: fits max_tokens


def _truth(traj: Trajectory, with_truth: bool) -> str:
    if with_truth and traj.ground_truth:
        return f"\nThe correct answer to the task is: {traj.ground_truth}"
    return ""


def _prompt(traj: Trajectory, log_text: str, ask: str, with_truth: bool) -> list[dict[str, str]]:
    question, _ = clip(traj.question.strip(), 2000)
    user = (
        f"Task given to the team:\n{question}\n\nLog of the run:\n{log_text}\n"
        f"{ask}{_truth(traj, with_truth)}"
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def _object(props: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": dict(props), "required": list(props)}


def _as_dict(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    return value


_TYPES: dict[str, tuple[type, ...]] = {"boolean": (bool,), "string": (str,)}


def _fits(schema: Mapping[str, Any]) -> Callable[[Any], dict[str, Any]]:
    """A parser that checks a reply against one of the judges' object schemas (every field
    present, of its type or one of its enum): a server without grammars may send anything."""

    def parse(value: Any) -> dict[str, Any]:
        got = _as_dict(value)
        for key, spec in schema["properties"].items():
            if key not in got:
                raise ValueError(f"no field {key!r}")
            v, enum = got[key], spec.get("enum")
            kinds = _TYPES.get(spec.get("type", ""), ())
            if enum is not None and not any(type(v) is type(e) and v == e for e in enum):
                raise ValueError(f"field {key!r}: {v!r:.40} is not one of the choices")
            if kinds and not isinstance(v, kinds):
                raise ValueError(f"field {key!r}: expected a {spec['type']}, got {v!r:.40}")
        return got

    return parse


class Judge(ABC):
    """Shared machinery of the three judges: the model, the window, the counting of cost."""

    name = "judge"
    uses_model = True

    def __init__(
        self,
        model: Model,
        *,
        window: int | None = None,
        max_tokens: int = 128,
        step_chars: int = 2000,
        count: Count | None = None,
    ) -> None:
        self.model = model
        self.window = window or (model.n_ctx if isinstance(model, LlamaCppModel) else 8192)
        self.max_tokens = max_tokens
        tok = ModelTokenizer.of(model)
        self.count: Count = count or (tok.count if tok else approx_tokens)
        self.step_chars = step_chars
        self.usage = _Usage()
        self.calls = 0

    def fit(self, train: list[Trajectory]) -> None:
        """Judges learn nothing from training logs."""
        return None

    def fitter(self, traj: Trajectory, ask: str, with_truth: bool) -> Fitter:
        """A fitter whose budget is the window less the prompt's fixed parts and the reply."""
        fixed = sum(self.count(m["content"]) for m in _prompt(traj, "", ask, with_truth))
        budget = self.window - fixed - self.max_tokens - 48  # chat-template tokens
        return Fitter(self.count, max(256, budget), self.step_chars)

    async def ask(self, messages: list[dict[str, str]], schema: dict[str, Any]) -> dict[str, Any]:
        """One structured call; its tokens are added to this judge's running cost."""
        self.calls += 1
        try:
            got = await ask_structured(
                self.model,
                messages,
                parse=_fits(schema),
                schema=schema,
                max_tokens=self.max_tokens,
                max_reasks=1,
            )
        except StructuredOutputError as exc:
            self.usage += exc.usage
            raise
        self.usage += got.usage
        return got.value

    async def attribute(self, traj: Trajectory, *, with_truth: bool = False) -> Attribution:
        """Attribute one failed run; model failures become typed outcomes, never exceptions."""
        self.usage, self.calls = _Usage(), 0
        if not traj.steps:  # a run that failed before any step: nothing to show a judge
            return Attribution(traj.id, self.name, None, None, "empty log", "fallback")
        notes: Counter[str] = Counter()
        start = time.perf_counter()
        try:
            agent, step, reason, outcome = await self._run(traj, with_truth, notes)
        except StructuredOutputError as exc:
            agent, step, reason, outcome = None, None, f"no valid reply: {exc}", "unparsed"
        except ModelError as exc:  # ContextWindowError included: a typed stop
            agent, step, reason, outcome = None, None, f"stopped: {exc}", "over_window"
        if outcome == "ok" and notes.get("clipped_steps"):
            outcome = "clipped"
        return Attribution(
            traj.id,
            self.name,
            agent,
            step,
            reason,
            outcome,
            dict(notes),
            self.usage.prompt_tokens,
            self.usage.completion_tokens,
            self.calls,
            time.perf_counter() - start,
        )

    @abstractmethod
    async def _run(
        self, traj: Trajectory, with_truth: bool, notes: Counter[str]
    ) -> tuple[str | None, int | None, str, Outcome]:
        """The method itself: (agent, step, reason, outcome) for one log."""


def _agent_of(traj: Trajectory, step: int) -> str:
    return traj.steps[step].agent


class AllAtOnce(Judge):
    """The whole log in one prompt; logs over the window are judged chunk by chunk (the first
    chunk the judge says holds the mistake wins; none: the first chunk's answer)."""

    name = "all-at-once"
    ASK = (
        "Which agent made the decisive mistake, and at which step? Give the agent's name, the "
        "step number from the log and one short sentence on what went wrong."
    )

    async def _run(
        self, traj: Trajectory, with_truth: bool, notes: Counter[str]
    ) -> tuple[str | None, int | None, str, Outcome]:
        fit = self.fitter(traj, self.ASK + self.CHUNK_ASK, with_truth)
        parts = fit.chunks(traj, notes)
        agents = list(traj.agents)
        if len(parts) == 1:
            text = "".join(fit.rendered(traj.steps, Counter()))
            schema = _object(
                {
                    "agent": {"enum": agents},
                    "step": {"enum": list(range(len(traj.steps)))},
                    "reason": REASON,
                }
            )
            got = await self.ask(_prompt(traj, text, self.ASK, with_truth), schema)
            return str(got["agent"]), int(got["step"]), str(got["reason"]), "ok"
        notes["chunks"] += len(parts)
        return await self._chunked(traj, with_truth, fit, parts, agents)

    CHUNK_ASK = (
        " The log above is only part of the run (steps {a}-{b} of {n}). Is the decisive "
        "mistake among these steps? Set here to true or false and name the best candidate."
    )

    async def _chunked(
        self,
        traj: Trajectory,
        with_truth: bool,
        fit: Fitter,
        parts: list[tuple[int, int]],
        agents: list[str],
    ) -> tuple[str | None, int | None, str, Outcome]:
        first: tuple[str, int, str] | None = None
        for a, b in parts:
            text = "".join(fit.rendered(traj.steps[a : b + 1], Counter()))
            ask = self.ASK + self.CHUNK_ASK.format(a=a, b=b, n=len(traj.steps))
            schema = _object(
                {
                    "here": {"type": "boolean"},
                    "agent": {"enum": agents},
                    "step": {"enum": list(range(a, b + 1))},
                    "reason": REASON,
                }
            )
            got = await self.ask(_prompt(traj, text, ask, with_truth), schema)
            answer = (str(got["agent"]), int(got["step"]), str(got["reason"]))
            first = first or answer
            if got["here"]:
                return (*answer, "chunked")
        assert first is not None
        return (*first, "none_flagged")


class StepByStep(Judge):
    """The log revealed one step at a time; the first step the judge calls decisive wins
    (none: the last step). The question's own step (the human's) is not judged."""

    name = "step-by-step"
    ASK = (
        "The last step shown is step {k}, by {agent}. Is step {k} the decisive mistake that "
        "made the task fail? Answer decisive true only if this step is where it went wrong."
    )
    SCHEMA = _object({"decisive": {"type": "boolean"}, "reason": REASON})

    async def _run(
        self, traj: Trajectory, with_truth: bool, notes: Counter[str]
    ) -> tuple[str | None, int | None, str, Outcome]:
        fit = self.fitter(traj, self.ASK.format(k=999, agent="x" * 20), with_truth)
        judged = [s for s in traj.steps if s.agent != "human"] or list(traj.steps)
        for s in judged:
            text = fit.window(traj, s.index, notes)
            ask = self.ASK.format(k=s.index, agent=s.agent)
            got = await self.ask(_prompt(traj, text, ask, with_truth), self.SCHEMA)
            if got["decisive"]:
                outcome: Outcome = "windowed" if notes.get("windowed_calls") else "ok"
                return s.agent, s.index, str(got["reason"]), outcome
        last = judged[-1]
        return last.agent, last.index, "no step was called decisive; last step", "none_flagged"


class BinarySearch(Judge):
    """Halve the range: the judge says which half holds the mistake, until one step is left.
    A range over the window is shown with every step shortened (with notes) until it fits."""

    name = "binary-search"
    ASK = (
        "The log above shows steps {lo}-{hi}. Is the decisive mistake in the first part "
        "(steps {lo}-{mid}) or in the second part (steps {m1}-{hi})?"
    )
    SCHEMA = _object({"part": {"enum": ["first", "second"]}, "reason": REASON})

    async def _run(
        self, traj: Trajectory, with_truth: bool, notes: Counter[str]
    ) -> tuple[str | None, int | None, str, Outcome]:
        n = len(traj.steps)
        fit = self.fitter(traj, self.ASK.format(lo=n, hi=n, mid=n, m1=n), with_truth)
        lo, hi, reason = 0, n - 1, "a one-step log"
        while lo < hi:
            mid = (lo + hi) // 2
            text = fit.squeeze(traj, lo, hi, notes)
            ask = self.ASK.format(lo=lo, hi=hi, mid=mid, m1=mid + 1)
            got = await self.ask(_prompt(traj, text, ask, with_truth), self.SCHEMA)
            reason = str(got["reason"])
            lo, hi = (lo, mid) if got["part"] == "first" else (mid + 1, hi)
        return _agent_of(traj, lo), lo, reason, "ok"


JUDGES: dict[str, type[Judge]] = {
    "all-at-once": AllAtOnce,
    "step-by-step": StepByStep,
    "binary-search": BinarySearch,
}
