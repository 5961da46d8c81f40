"""Verdicts: what a plug-in decided about one step or round, one class per action.

Each variant carries only its own fields (an illegal field is a type error), plus who gave
it (`by`) and why (`reason`). `Verdict.guide(...)` and the other constructors build the
variants for callers that prefer one name to import. Plug-ins only return verdicts; the
bus (`overseer.runtime.bus`) applies them and writes their text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Literal

from overseer.runtime._spec import AgentSpec, TeamSpec

__all__ = [
    "ALL_ACTIONS",
    "Approve",
    "Guide",
    "Replace",
    "ReplaceAgent",
    "ReplaceTeam",
    "Rollback",
    "Verdict",
    "VerdictAction",
    "Verify",
]

VerdictAction = Literal[
    "approve", "guide", "replace", "verify", "rollback", "replace_agent", "replace_team"
]
ALL_ACTIONS: frozenset[str] = frozenset(
    {"approve", "guide", "replace", "verify", "rollback", "replace_agent", "replace_team"}
)


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """The base of the verdict variants: who decided (`by`, filled in by the bus when empty)
    and why (`reason`)."""

    action: ClassVar[VerdictAction]
    #: the trace event's "text", "note" and "task" keys -> the variant's fields that fill them
    traced: ClassVar[Mapping[str, str]] = {}
    by: str = ""
    reason: str = ""

    def trace_fields(self) -> dict[str, str]:
        """The fields of a `verdict` trace event (the same keys for every variant)."""
        shown = {key: getattr(self, name) for key, name in self.traced.items()}
        blank = {"text": "", "note": "", "task": ""}
        return {"action": self.action, "by": self.by, "reason": self.reason, **blank, **shown}

    @staticmethod
    def approve(by: str = "", reason: str = "") -> Approve:
        return Approve(by=by, reason=reason)

    @staticmethod
    def guide(text: str, *, by: str, reason: str = "") -> Guide:
        return Guide(text, by=by, reason=reason)

    @staticmethod
    def replace(
        observation: str, *, note: str, by: str, reason: str = "", guidance: str = ""
    ) -> Replace:
        return Replace(observation, note, guidance, by=by, reason=reason)

    @staticmethod
    def verify(task: str, *, by: str, reason: str = "") -> Verify:
        return Verify(task, by=by, reason=reason)

    @staticmethod
    def rollback(*, by: str, reason: str) -> Rollback:
        return Rollback(by=by, reason=reason)

    @staticmethod
    def replace_agent(spec: AgentSpec, *, by: str, reason: str) -> ReplaceAgent:
        return ReplaceAgent(spec, by=by, reason=reason)

    @staticmethod
    def replace_team(spec: TeamSpec, *, by: str, reason: str) -> ReplaceTeam:
        """A new team for the next rounds (returned from `on_round_end`)."""
        return ReplaceTeam(spec, by=by, reason=reason)


@dataclass(frozen=True)
class Approve(Verdict):
    """Nothing to do: the step stands as it is."""

    action: ClassVar[VerdictAction] = "approve"


@dataclass(frozen=True)
class Guide(Verdict):
    """Append `text` to what the agent reads next."""

    text: str
    action: ClassVar[VerdictAction] = "guide"
    traced: ClassVar[Mapping[str, str]] = {"text": "text"}


@dataclass(frozen=True)
class Replace(Verdict):
    """Show `observation` instead of the step's own, with a visible `note`; `guidance`, when
    given, follows it (a purified page and a hint about it). `rewrite`: the chain goes on, the
    plug-ins after this one judging the new observation (a rule that cuts a page, before one
    that reviews the step); the first verdict after it that is not approve applies on top."""

    action: ClassVar[VerdictAction] = "replace"
    traced: ClassVar[Mapping[str, str]] = {"text": "observation", "note": "note"}
    observation: str
    note: str
    guidance: str = ""
    rewrite: bool = False


@dataclass(frozen=True)
class Verify(Verdict):
    """Have the verifier check `task`; its finding is appended to what the agent reads."""

    action: ClassVar[VerdictAction] = "verify"
    traced: ClassVar[Mapping[str, str]] = {"task": "task"}
    task: str


@dataclass(frozen=True)
class ReplaceAgent(Verdict):
    """Replace the agent of the step with `spec` (same name); its messages are purged."""

    action: ClassVar[VerdictAction] = "replace_agent"
    spec: AgentSpec


@dataclass(frozen=True)
class ReplaceTeam(Verdict):
    """Run the next rounds with the team `spec` (returned at a round's end)."""

    action: ClassVar[VerdictAction] = "replace_team"
    spec: TeamSpec


@dataclass(frozen=True)
class Rollback(Verdict):
    """Roll the run back to its last checkpoint or irreversible mark (within the bus's cap)."""

    action: ClassVar[VerdictAction] = "rollback"
