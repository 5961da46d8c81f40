"""The five rules, each with its own state for one run and the book it writes its firings
to: the loop breaker, the budgets, purification, grounding and masking. The bus plug-ins
(`plugins`) and the offline `RuleTier` both run them; nothing here knows of a host."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import compress, count
from operator import not_

from overseer.runtime.steps import ToolRecord
from overseer.supervise._extract import Embed, extract
from overseer.supervise._grounding import Reading, regrounded, swap_number
from overseer.supervise._markup import strip_markup
from overseer.supervise.filters import Step, normalize_action
from overseer.supervise.rules._base import (
    NOTE_MARK,
    NUMBER,
    OR_SAY,
    SHOWN_ABOVE,
    Blocked,
    Book,
    Key,
    RuleFiring,
    RuleSettings,
    action_of,
    call_of,
    mask_stub,
    spent,
    times,
)


@dataclass
class _Seen:
    """What the loop breaker remembers of one action signature of one (agent, subtask)."""

    ran: int = 0  # times it was let run
    refused: int = 0
    shown: str | None = None  # what the agent was shown of its last output (after purification)
    failed: bool = False


class _Shingles:
    """A text with its words and word trigrams computed when first asked: what `same_output`
    compares, kept with a tool's last output so that each output is split once, not once per
    comparison (the split of two 8,000-character pages cost more than purifying one)."""

    __slots__ = ("_grams", "_vocab", "_words", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._words: list[str] | None = None
        self._vocab: frozenset[str] | None = None
        self._grams: set[tuple[str, str, str]] | None = None

    @property
    def words(self) -> list[str]:
        if self._words is None:
            self._words = self.text.split()
        return self._words

    @property
    def vocab(self) -> frozenset[str]:
        if self._vocab is None:
            self._vocab = frozenset(self.words)
        return self._vocab

    @property
    def grams(self) -> set[tuple[str, str, str]]:
        if self._grams is None:
            w = self.words
            self._grams = set(zip(w, w[1:], w[2:], strict=False))
        return self._grams

    def same(self, other: _Shingles) -> bool:
        """`same_output` of the two texts."""
        if self.words == other.words:
            return True
        a, b = len(self.text), len(other.text)
        if min(a, b) < 200 or abs(a - b) > 0.05 * max(a, b):
            return False
        mine, theirs = (self.words, self.vocab), (other.words, other.vocab)
        if _apart(*mine, theirs[1]) or _apart(*theirs, mine[1]):
            return False
        ga, gb = self.grams, other.grams
        return len(ga & gb) >= 0.97 * max(len(ga), len(gb), 1)

    def forget(self) -> None:
        """Keep the text only (a long output's words and trigrams are recomputed if asked)."""
        self._words = self._vocab = self._grams = None


def _apart(words: list[str], own: frozenset[str], other: frozenset[str]) -> bool:
    """Whether the trigrams of `words` (`own`: their set) that hold a word `other` lacks are
    too many for the two texts to share 97% of their trigrams: an exact bound, so `same` gives
    the verdict it gave before, on distinct pages without building their trigram sets (issue
    50: two 8,000-character outputs of one tool cost about 1 ms in sets). Such a trigram is in
    no set of the other text; more than n / 32 of them (n words: at most n - 2 trigrams)
    leaves under 96.9% shared. Each distinct such word starts a trigram of its own where it
    first stands (but for two at most, first standing in the last two places): counting those
    words first, at C speed, settles most pairs of distinct pages."""
    n = len(words)
    if n < 3:
        return False
    if (len(own.difference(other)) - 2) * 32 > n:
        return True
    missing = list(compress(count(), map(not_, map(other.__contains__, words))))
    if 3 * len(missing) * 32 <= n:  # too few to decide, however they fall
        return False
    starts = {j for i in missing for j in (i - 2, i - 1, i) if 0 <= j <= n - 3}
    distinct = {(words[j], words[j + 1], words[j + 2]) for j in starts}
    return len(distinct) * 32 > n


#: a tool's last output longer than this keeps no words or trigrams between calls (memory)
_KEEP_SHINGLES = 64_000


@dataclass
class _ToolRun:
    """The latest outputs of one tool for one (agent, subtask): how many in a row were the same."""

    last: _Shingles | None = None
    same: int = 0  # consecutive calls (any arguments) that returned `last`
    args: set[str] = field(default_factory=set)  # the signatures of those calls


def same_output(a: str, b: str) -> bool:
    """Equal after whitespace is collapsed, or (for long outputs) nearly equal: at least 97%
    of their word trigrams shared (linear in the length, so a 50,000-char page costs little)."""
    return _Shingles(a).same(_Shingles(b))


class LoopRule:
    """An identical action runs at most `loop_limit` times; a tool whose last calls gave one
    output whatever the arguments is not run again (a pager that always says "not here")."""

    def __init__(self, settings: RuleSettings, book: Book) -> None:
        self.s, self.book = settings, book
        self._seen: dict[tuple[str, str, str], _Seen] = {}
        self._runs: dict[tuple[str, str, str], _ToolRun] = {}
        self.pinned: dict[str, set[str]] = {}  # agent -> refused actions whose output stays

    def _of(self, step: Step) -> _Seen:
        return self._seen.setdefault((step.agent, step.subtask, normalize_action(step)), _Seen())

    def repeated(self, step: Step) -> Blocked | None:
        """The refusal of an identical call that ran `loop_limit` times (counted)."""
        seen = self._of(step)
        if not self.s.loop_breaker or seen.ran < self.s.loop_limit:
            return None
        seen.refused += 1
        call = call_of(step)
        detail = f"blocked repeat {seen.ran + seen.refused} of {call}"
        note = self._repeat_note(call, seen, step.agent, normalize_action(step))
        firing = RuleFiring("loop_breaker", step.agent, step.subtask, detail)
        return Blocked(note, self.book.fire(firing))

    def no_progress(self, step: Step) -> Blocked | None:
        """The refusal of a tool whose recent calls (changing arguments) gave one output."""
        run = self._runs.get((step.agent, step.subtask, step.tool or step.kind))
        if not self.s.loop_breaker or run is None:
            return None
        if run.same < self.s.progress_limit or len(run.args) <= 1:
            return None
        call, tool = call_of(step), step.tool or step.kind
        detail = f"blocked {call}: {run.same} calls of it in a row returned the same output"
        note = (
            f"[overseer] Not run: your recent calls of {tool} returned the same output whatever "
            f"the arguments (it is shown above), so another call makes no progress. Take a "
            f"different step (another tool), or answer from what you have read. {OR_SAY}"
        )
        firing = RuleFiring("loop_breaker", step.agent, step.subtask, detail)
        return Blocked(note, self.book.fire(firing))

    def let_run(self, step: Step) -> None:
        """Count a call that runs."""
        self._of(step).ran += 1

    def _repeat_note(self, call: str, seen: _Seen, agent: str, action: str) -> str:
        """The refusal of an identical call, true about where its output is. It never quotes
        the output: on fresh browse pages the 0.5B researcher copied the filler numbers at
        the end of a quoted extract as its answer (issue 39). The earlier output is kept in
        view instead (masking leaves a refused action's latest output whole)."""
        ran = f"{call} ran {times(seen.ran)} in this task with these arguments"
        again = " (refused before)" if seen.refused > 1 else ""
        if seen.failed:
            return (
                f"[overseer] Not run again: {ran} and failed{again}; it would fail the same "
                f"way. Take a different step (other arguments, another tool) or answer. {OR_SAY}"
            )
        if seen.shown is None:
            return f"[overseer] Not run again: {ran}{again}. Take a different step or answer."
        self.pinned.setdefault(agent, set()).add(action)
        return (
            f"[overseer] Not run again: {ran}{again}. {SHOWN_ABOVE}, "
            f"as the observation of that call. Read it there, or take a different step."
        )

    def ran(self, step: Step, raw: str, shown: str) -> None:
        """After a call ran: what it returned (`raw`) and what the agent was shown."""
        seen = self._of(step)
        seen.shown, seen.failed = (step.error or shown), step.error is not None
        run = self._runs.setdefault((step.agent, step.subtask, step.tool or step.kind), _ToolRun())
        result = _Shingles(step.error or raw)
        if not (run.same and run.last is not None and run.last.same(result)):
            run.same, run.args = 0, set()
        if len(result.text) > _KEEP_SHINGLES:
            result.forget()
        run.same, run.last = run.same + 1, result
        run.args.add(normalize_action(step))


class BudgetRule:
    """Tokens and tool steps per (agent, subtask); a spent budget refuses further calls."""

    def __init__(self, settings: RuleSettings, book: Book) -> None:
        self.s, self.book = settings, book
        self._steps: Counter[Key] = Counter()
        self._tokens: Counter[Key] = Counter()
        self._over: set[Key] = set()

    def step(self, key: Key) -> None:
        """Count an attempted tool step."""
        self._steps[key] += 1

    def check(self, key: Key) -> Blocked | None:
        """The refusal of a step once a budget is spent (each refused step counts)."""
        s = self.s
        if s.budget_steps is not None and self._steps[key] > s.budget_steps:
            return self._block(key, f"step budget of {s.budget_steps} tool steps spent")
        if key in self._over:
            return self._block(key, f"token budget of {s.budget_tokens} tokens spent")
        return None

    def _block(self, key: Key, why: str) -> Blocked:
        note = f"[overseer] Not run: your {spent(why)} for this task. Answer now. {OR_SAY}"
        return Blocked(note, self.book.fire(RuleFiring("budget", *key, why)))

    def charge(self, agent: str, subtask: str, tokens: int) -> Blocked | None:
        """Book an agent's model tokens; Blocked once its token budget is spent (counted the
        first time it is crossed; later calls get the same refusal, not counted again)."""
        key = (agent, subtask)
        self._tokens[key] += max(0, int(tokens))
        limit = self.s.budget_tokens
        if limit is None or self._tokens[key] < limit:
            return None
        why = f"token budget of {limit} tokens spent"
        note = f"[overseer] Stop: your {spent(why)} for this task. Answer now. {OR_SAY}"
        firing = RuleFiring("budget", agent, subtask, why)
        if key in self._over:
            return Blocked(note, firing)
        self._over.add(key)
        return Blocked(note, self.book.fire(firing))


class PurifyRule:
    """An HTML observation read as its text; one still too long cut to an extract."""

    def __init__(
        self,
        settings: RuleSettings,
        book: Book,
        embed: Embed | None = None,
    ) -> None:
        self.s, self.book, self.embed = settings, book, embed
        self.extracts: set[str] = set()  # outputs it produced (masking keeps them)

    def purify(self, step: Step, local_task: str) -> tuple[str, RuleFiring | None]:
        """Markup stripped, then an extract when still too long; (text, None) when untouched."""
        s, text = self.s, step.observation
        if not s.purify:
            return text, None
        page = _text_of(text) if s.strip_markup else None
        base, over, keep = (text, s.purify_over, s.purify_keep)
        if page is not None:
            base, over, keep = page, s.page_over, s.page_keep
        # the agent's own guesses (numbers in its thought) must not choose what it is shown
        query = " ".join(x for x in (local_task, NUMBER.sub(" ", step.thought), step.args) if x)
        out = base
        if len(base) > over:
            out = extract(base, query, keep, embed=self.embed)
        elif page is not None:  # a short page: only its text that shares nothing with the task
            out = extract(base, query, len(base), embed=self.embed, prune=True)
        if len(out) >= len(text):
            return text, None
        how = "stripped the markup, " if page else ""
        detail = f"{how}kept {len(out):,} of {len(text):,} chars of {step.tool or step.kind}"
        self.extracts.add(out)
        firing = RuleFiring("purification", step.agent, step.subtask, detail, len(text), len(out))
        return out, self.book.fire(firing)

    def is_extract(self, text: str) -> bool:
        """Whether `text` is an extract this rule made, as the host showed it (the bus may
        have written its note after it)."""
        return text in self.extracts or any(text.startswith(p) for p in self.extracts)


def _text_of(text: str) -> str | None:
    """`text` read as the text an HTML page shows (None: it is not HTML); markup the parser
    rejects (a table inside a caption, an unknown marked section) is left as it is, never a
    crash of the run."""
    try:
        return strip_markup(text)
    except ValueError:
        return None


class GroundRule:
    """An answer that is the agent's guess from before it read, which nothing it read holds,
    gets the value its notes since reading took from a page (`_grounding`: one pattern)."""

    def __init__(self, settings: RuleSettings, book: Book) -> None:
        self.s, self.book = settings, book
        self._reading: dict[Key, Reading] = {}

    def thought(self, key: Key, text: str) -> None:
        self._reading.setdefault(key, Reading()).thought(text)

    def observed(self, key: Key, text: str) -> None:
        self._reading.setdefault(key, Reading()).observed(text)

    def ground(self, step: Step) -> tuple[str, RuleFiring] | None:
        """The answer (a message step) with the value read, and the firing; None: it stands."""
        key = (step.agent, step.subtask)
        reading = self._reading.get(key)
        if not self.s.grounding or step.kind != "message" or reading is None:
            return None
        found = regrounded(step.observation, reading)
        if found is None:
            return None
        guess, read = found
        detail = f"answer {guess} was its guess before reading; its notes since named {read}"
        firing = self.book.fire(RuleFiring("grounding", *key, detail))
        return swap_number(step.observation, guess, read), firing


class MaskRule:
    """Older tool observations become one-line stubs; an output repeated later at any age."""

    def __init__(self, settings: RuleSettings, book: Book) -> None:
        self.s, self.book = settings, book
        self._masked: set[tuple[str, ToolRecord, int]] = set()

    def mask(
        self,
        observations: Sequence[ToolRecord],
        agent: str,
        subtask: str,
        *,
        kept: set[int],
        is_extract: Callable[[str], bool],
    ) -> list[str]:
        """Texts to show for one agent's observations (oldest first): an output repeated later
        is stubbed at any age (the later copy holds it); of the rest, the last `mask_keep`
        stay whole and older ones become stubs, except extracts and the records at `kept`
        (the latest output of an action a refusal pointed to). A firing is counted the first
        time a record is stubbed."""
        if not self.s.masking:
            return [r.text for r in observations]
        cut = max(0, len(observations) - self.s.mask_keep)
        later: Counter[str] = Counter(r.text for r in observations)
        out: list[str] = []
        occurrence: Counter[ToolRecord] = Counter()
        for i, rec in enumerate(observations):
            occurrence[rec] += 1
            later[rec.text] -= 1
            repeat = later[rec.text] > 0
            old = i < cut and not is_extract(rec.text) and i not in kept
            stub = mask_stub(rec, repeated=repeat)
            if not (repeat or old) or len(stub) >= len(rec.text):  # keep, or nothing to save
                out.append(rec.text)
                continue
            out.append(stub)
            mark = (agent, rec, occurrence[rec])
            if mark not in self._masked:
                self._masked.add(mark)
                what = "a repeated" if repeat else "an older"
                detail = f"masked {what} output of {rec.tool} ({len(rec.text):,} chars)"
                firing = RuleFiring("masking", agent, subtask, detail, len(rec.text), len(stub))
                self.book.fire(firing)
        return out


def latest_of(observations: Sequence[ToolRecord], actions: set[str] | None) -> set[int]:
    """Indices of the latest real output (not a note of overseer's) of each of `actions`."""
    if not actions:
        return set()
    last: dict[str, int] = {}
    for i, r in enumerate(observations):
        if not r.text.startswith(NOTE_MARK) and (a := action_of(r)) in actions:
            last[a] = i
    return set(last.values())
