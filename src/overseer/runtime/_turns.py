"""The one turn policy of every host: when an agent's refused calls close its tools (or end
its run), what the turn that closes them says, and when an answer is asked again because it
only repeats overseer's words or a trap's output.

Teams (the runtime's agent), the framework guard (LangGraph, the Agents SDK, pydantic-ai,
smolagents) and the proxy all decide these here, with the bus's one refusal counter
(`Bus.refused`); each host only maps "close the tools" onto its framework's mechanics (a
schema that only answers, tools disabled, `tool_choice: none`, smolagents' final-answer
call). Nothing overseer writes here holds a number of its own, and the closing turn leaves
the agent free to say it could not find the answer (issue 48).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from overseer.runtime._values import numbers_in

#: the user turn after an answer, given once overseer closed the tools, that states a value no
#: tool result supports (issue 48: a 0.5B agent answered "2" after a tool that always failed)
UNSEEN_NOTE = "[overseer] That value is in none of the tool results above."
#: the answer that stands instead of one that, asked again, still states a value no tool
#: result supports once overseer closed the tools: overseer made the agent answer, so it does
#: not pass on a value the agent could not have read (issue 48). It holds no number.
NOT_FOUND_ANSWER = "I could not find the answer: the tool results I read do not show it."


#: what refused calls in a row do: "answer" closes the agent's tools for its next model call,
#: "stop" ends the run
OnRefusals = Literal["answer", "stop"]


#: how the user turn that closes the tools begins, after repeated refusals / at the last step;
#: the turn then restates the question (`closing_turn`), so the last words the agent reads
#: before answering are the question's, not a page's or a note's (issue 39)
CLOSED_NOTE = "[overseer] Your tool calls were refused, so the tools are closed now."
LAST_NOTE = "[overseer] This is your last step, so the tools are closed now."
#: the user turn after an answer that only repeated overseer's words (asked once)
COPIED_NOTE = "[overseer] That reply repeats overseer's note; it is not an answer."
#: the user turn after an answer that only repeated a tool output that kept coming back
REPEATED_NOTE = "[overseer] That reply only repeats a tool's output; answer the question itself."


#: the user turn that closes an agent's tools, by name (`benchmarks/closing_replay.py` replays
#: recorded requests with each). Issue 48: with the old one ("legacy": CLOSED_NOTE, then the
#: question) small agents answered a wrong year with the fact in view, and invented a value when
#: a tool always failed; the turn now drops the "tools are closed" sentence and leaves the
#: agent free to say it could not find the answer. It is never appended to a tool output.
CLOSED_WORDINGS: dict[str, str] = {
    "legacy": CLOSED_NOTE + " Answer this question from the observations above: {question}",
    "honest": (
        "Answer this question from the tool results above: {question} "
        "If they do not give the answer, say that you could not find it."
    ),
    "plain": "Answer this question from the tool results above: {question}",
    "no-guess": (
        "{question}\nAnswer from the tool results above. If they do not give the answer, "
        "say that you could not find it; do not guess a value."
    ),
}
CLOSED_WORDING = "honest"


def closed_turn(question: str, wording: str = CLOSED_WORDING) -> str:
    """The user turn that closes an agent's tools (after refusals, or at its last step): the
    question, and leave to say it could not be answered (never "answer now" at any price)."""
    return CLOSED_WORDINGS[wording].format(question=question)


def closing_turn(note: str, question: str) -> str:
    """The user turn that asks an agent again after a reply that was no answer: why, then the
    question it must answer."""
    return f"{note} Answer this question from the observations above: {question}"


def _norm(text: str) -> str:
    """`text` lowercased, spaces collapsed, edge punctuation stripped: how copies compare."""
    return " ".join(text.lower().split()).strip(" .,:;!\"'`[]()")


def copies_note(answer: str, notes: Sequence[str]) -> bool:
    """Whether `answer` is overseer's own words (a note's text, or a note's opening) rather
    than an answer: such a reply counts as no answer and is asked again once."""
    if answer.lstrip().startswith("[overseer"):
        return True
    a = _norm(answer)
    return len(a) >= 12 and any(a in _norm(n) for n in notes)


#: a reply that is a tool call written out as text, not an answer: smolagents' memory format
#: ("Calling tools:\n[{'id': ..., 'function': {'name': ..., 'arguments': ...}}]") or a JSON call
_WRITTEN_CALL = re.compile(
    r"""^\s*(?:calling\s+tools\s*:|\[?\s*\{\s*["'](?:id|name|type|function|tool)["']\s*:)""",
    re.IGNORECASE,
)


def written_call(answer: str) -> bool:
    """Whether `answer` is a tool call written as text (a small model imitating the call
    format it read) rather than an answer: at smolagents' final-answer call, once overseer
    closed the tools, qwen 0.5B answered that in 6 of 10 held-out search-never-finds runs."""
    return bool(_WRITTEN_CALL.match(answer)) and "argument" in answer.lower()


def repeats_output(answer: str, outputs: Sequence[str]) -> bool:
    """Whether `answer` is the whole text of a tool output the agent was shown at least twice
    (a trap's text that kept coming back, e.g. "Not here. Call next_page with n+1.") rather
    than an answer: asked again once, as a copy of a note is (a 0.5B model answered it)."""
    a = _norm(answer)
    return bool(a) and sum(_norm(o) == a for o in outputs) >= 2


@dataclass(frozen=True)
class TurnPolicy:
    """When refused calls close an agent's tools, and the re-ask of an answer that is no
    answer; one object for every host (teams, frameworks, proxy)."""

    #: refused tool calls of one agent in a row after which `on_refusals` acts (0: never)
    answer_after_refusals: int = 2
    on_refusals: OnRefusals = "answer"
    #: once overseer closed the tools, an answer that, asked again, still states a value no
    #: tool result supports is replaced by `NOT_FOUND_ANSWER` (False: it stands)
    replace_unsupported: bool = True

    def __post_init__(self) -> None:
        n = self.answer_after_refusals
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"answer_after_refusals: expected an integer >= 0, got {n!r}")
        if self.on_refusals not in ("answer", "stop"):
            raise ValueError(f"on_refusals: expected 'answer' or 'stop', got {self.on_refusals!r}")

    def after_refusals(self, in_a_row: int) -> OnRefusals | None:
        """What `in_a_row` refused calls of one agent ask for now: "answer" (its tools close),
        "stop" (the run ends), or None (go on)."""
        n = self.answer_after_refusals
        return None if n == 0 or in_a_row < n else self.on_refusals

    def reask(
        self,
        answer: str,
        notes: Sequence[str],
        outputs: Sequence[str],
        question: str,
        *,
        seen: set[str] | None = None,
    ) -> str | None:
        """The user turn asking once more when `answer` only repeats overseer's words (`notes`:
        the refusals the agent read; the closing notes count too) or a short tool output it
        was shown twice or more (`outputs`), or, once overseer closed its tools (`seen`: the
        values its tool results showed), states a value none of them showed; None: the answer
        stands. A host asks at most once per agent and run."""
        copied = copies_note(answer, [*notes, CLOSED_NOTE, LAST_NOTE, COPIED_NOTE])
        if copied or repeats_output(answer, outputs):
            return closing_turn(COPIED_NOTE if copied else REPEATED_NOTE, question)
        if self.unsupported(answer, question, seen):
            return f"{UNSEEN_NOTE} {closed_turn(question)}"
        return None

    @staticmethod
    def unsupported(answer: str, question: str, seen: set[str] | None) -> bool:
        """Whether `answer` states a value that neither the question nor the tool results
        (`seen`: the values they support; None: tools open, nothing is checked) give."""
        return seen is not None and bool(numbers_in(answer) - numbers_in(question) - seen)

    def settle(self, answer: str, question: str, seen: set[str] | None) -> str | None:
        """The answer that stands instead of `answer`, given after the re-ask, when it still
        states an unsupported value or, the tools closed, is a tool call written as text
        (`NOT_FOUND_ANSWER` either way: overseer closed the tools, and no answer came);
        None: `answer` stands."""
        if not self.replace_unsupported or seen is None:
            return None
        if self.unsupported(answer, question, seen) or written_call(answer):
            return NOT_FOUND_ANSWER
        return None
