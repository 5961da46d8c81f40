"""The run's message pool: append-only, with checkpoints, irreversible marks, rollback and purge."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ChannelMessage:
    """One message in the pool: who sent it, in which round, of what kind, and its text."""

    seq: int
    round: int
    sender: str
    content: str
    kind: str = "message"  # message | tool | memory | guidance | decision
    meta: dict[str, Any] = field(default_factory=dict, compare=False)


class Channel:
    """What agents can read of each other. Rollback restores exactly an earlier state.

    `checkpoint()` remembers the current state; `mark_irreversible()` does too, and no
    rollback may go behind it (an award was given, fish were harvested). `rollback()`
    returns to the latest checkpoint or mark. `purge(agent)` removes all of one agent's
    messages (when it is replaced) and drops the checkpoints that still hold them.
    """

    def __init__(self) -> None:
        self._messages: tuple[ChannelMessage, ...] = ()
        self._seq = 0
        self._marks: list[tuple[tuple[ChannelMessage, ...], bool]] = []  # (state, irreversible)

    # -- reading -------------------------------------------------------------------------
    @property
    def messages(self) -> tuple[ChannelMessage, ...]:
        return self._messages

    def __len__(self) -> int:
        return len(self._messages)

    def from_senders(self, senders: set[str] | list[str], *, round: int) -> list[ChannelMessage]:
        """The latest message of each sender in the given round, in sender-list order."""
        latest: dict[str, ChannelMessage] = {}
        for m in self._messages:
            if m.round == round and m.sender in senders and m.kind in ("message", "decision"):
                latest[m.sender] = m
        return [latest[s] for s in senders if s in latest]

    def of_agent(self, agent: str) -> list[ChannelMessage]:
        return [m for m in self._messages if m.sender == agent]

    # -- writing -------------------------------------------------------------------------
    def post(
        self, sender: str, content: str, *, round: int, kind: str = "message", **meta: Any
    ) -> ChannelMessage:
        self._seq += 1
        msg = ChannelMessage(self._seq, round, sender, content, kind, dict(meta))
        self._messages = (*self._messages, msg)
        return msg

    def checkpoint(self) -> int:
        """Remember the current state as a rollback target; returns the number of marks."""
        self._marks.append((self._messages, False))
        return len(self._marks)

    def mark_irreversible(self) -> int:
        """Everything so far is final: no rollback goes behind this point."""
        self._marks.append((self._messages, True))
        return len(self._marks)

    def rollback(self) -> list[ChannelMessage]:
        """Return to the latest checkpoint or irreversible mark (or to the empty pool if none).

        Returns the removed messages. The mark stays, so a second rollback lands there too.
        """
        target = self._marks[-1][0] if self._marks else ()
        kept = {m.seq for m in target}
        removed = [m for m in self._messages if m.seq not in kept]
        self._messages = target
        return removed

    def drop_checkpoint(self) -> None:
        """Forget the latest mark if it is a plain checkpoint (irreversible marks stay)."""
        if self._marks and not self._marks[-1][1]:
            self._marks.pop()

    def purge(self, agent: str) -> list[ChannelMessage]:
        """Remove every message of `agent`; checkpoints holding them are purged the same way."""
        removed = [m for m in self._messages if m.sender == agent]
        self._messages = tuple(m for m in self._messages if m.sender != agent)
        self._marks = [
            (tuple(m for m in state if m.sender != agent), irr) for state, irr in self._marks
        ]
        return removed

    def snapshot(self) -> tuple[ChannelMessage, ...]:
        return self._messages
