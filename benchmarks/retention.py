"""Does purification keep the gold answer on real agents' observations? A table, per subset.

    python benchmarks/retention.py                 # every subset
    python benchmarks/retention.py --subset hand --show-lost
    python benchmarks/retention.py --subset dojo   # AgentDojo's tool outputs
    python benchmarks/retention.py --extract-from a7367a2     # the extraction of another commit

Split, declared before any held-out number was looked at (also in docs/evidence/retention.md):
the Who&When **hand-crafted** logs (58) are DEVELOPMENT: every knob of `_extract` / `_markup`
/ `_structured` may be tuned on them. The **algorithm-generated** logs (126) are HELD OUT: they
are run once the extraction is frozen and nothing is changed because of what they show
(`--show-lost` is for development only). **AgentDojo**'s tool outputs (`--subset dojo`, the 96
user tasks of its four suites) are HELD OUT too, declared so before their first run (commit
after 2c788e7): nothing was ever tuned on them, and they are run once with the frozen extraction.

AgentDojo (`overseer.tasks.agentdojo`): for every user task, its ground-truth tool calls run
on a fresh copy of the suite's environment (`DojoTask.ground_truth`, `DojoTools.call`; a call
the tool refuses has no output and is skipped); each output is an observation, with the task's
prompt as the task and the call's arguments (JSON, first 200 characters) as the call's. The
gold is the task's `GROUND_TRUTH_OUTPUT`, cut into its values: at line breaks, at `, `, before
a list number (`1. `, `2. `) and between e-mail addresses; "Le Baratin, 30.0, New Asiaway,
30.0" is the values "le baratin", "30 0", "new asiaway" (normalised, each once). 59 of the 96
tasks give no value of 4 characters or more (most have no ground-truth output; some only "3").
Then the same as below.

For every observation step of a log (as the offline replay reads it, `overseer.traces.replay`:
the step's text, with the log's question as the task and the first 200 characters of the step
before as the call's arguments), the rule tier's own purification runs (`RuleTier.
after_observation` with the default `RuleSettings`: the same budgets and thresholds as a live
run). An observation is *cut* when purification fired. It *holds the gold* when one of the gold
answer's lines, normalised (NFKC, lower case, thousands separators dropped, every run of
non-alphanumerics one space; lines under 4 characters, such as "3" or "0.2", are skipped: they
match any page), occurs in it at word boundaries; the gold is *kept* when every gold line the
original held is still in the extract. Reported per subset: how many cut observations held the
gold, the share whose extract kept it, the characters kept (extract / original, over those and
over all cut observations) and the share of kept characters that are page metadata (a meta-tag
JSON block, `og:` / `twitter:` / viewport / robots lines, JSON-LD, `<meta>` / `<script>` tags;
detected here, independently of the extractor's own rules).

`--extract-from COMMIT` runs the same rule tier with `supervise/_extract.py` as it was at that
commit (read with `git show`; the "before" rows of docs/evidence/retention.md). No timing is
asserted; the run time is printed.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
import types
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from overseer.supervise import rules
from overseer.supervise.filters import Step
from overseer.supervise.rules import RuleSettings, RuleTier
from overseer.traces import Trajectory, load_whowhen

SUBSETS = {"hand": "development", "alg": "held out", "dojo": "held out"}
MIN_GOLD = 4  # characters of a normalised gold line; shorter ones match any page
_DIGIT_COMMA = re.compile(r"(?<=\d),(?=\d{3})")
_NON_ALNUM = re.compile(r"[\W_]+")
_NOTE = "\n\n[overseer:"
# Page metadata, as a reviewer would point at it (not the extractor's rules).
_META_HEADER = "The following metadata was extracted from the webpage"
_META_LINE = re.compile(
    r"""^\s*(?:<meta\b|<link\b|<script\b|"?(?:og|twitter|fb|al|article|msapplication)[:_]|
    "?(?:viewport|robots|referrer|theme-color|google-site-verification|generator|
    format-detection|charset|csrf-token|@context|@type|@id|sameAs|potentialAction)"?\s*[:=])""",
    re.IGNORECASE | re.VERBOSE,
)
_PIECE = re.compile(r"(?<=[.!?])\s+")


def normalise(text: str) -> str:
    """Text as gold answers are matched: NFKC, lower case, `3,080,000` as `3080000`, every run
    of non-alphanumerics one space."""
    text = _DIGIT_COMMA.sub("", unicodedata.normalize("NFKC", text).lower())
    return " ".join(_NON_ALNUM.sub(" ", text).split())


def gold_lines(gold: str | None) -> list[str]:
    """The normalised lines of a gold answer long enough to be matched."""
    lines = (normalise(x) for x in (gold or "").splitlines())
    return [x for x in lines if len(x) >= MIN_GOLD]


_VALUE_CUT = re.compile(r"\n|,\s+|(?:^|\s)\d{1,2}\.\s")


def gold_values(gold: str) -> list[str]:
    """The normalised values of an AgentDojo ground-truth output long enough to be matched
    (see the module docstring), each once."""
    parts = [x.split() if all("@" in w for w in x.split()) else [x] for x in _VALUE_CUT.split(gold)]
    values = (normalise(x) for xs in parts for x in xs)
    return list(dict.fromkeys(x for x in values if len(x) >= MIN_GOLD))


def holds(text: str, lines: list[str]) -> list[str]:
    """The gold lines that occur in `text` at word boundaries."""
    padded = f" {normalise(text)} "
    return [x for x in lines if f" {x} " in padded]


def metadata_lines(text: str) -> list[str]:
    """The lines of `text` that are page metadata: the JSON block after a metadata header (up
    to its closing brace at the margin), and meta-tag / JSON-LD / script lines anywhere."""
    out: list[str] = []
    inside = False
    for line in text.splitlines():
        if _META_HEADER in line:
            inside = True
            continue
        if inside or _META_LINE.match(line):
            out.append(line.strip())
        if inside and line.startswith("}"):
            inside = False
    return [x for x in out if x]


def metadata_kept(original: str, extract: str) -> int:
    """Characters of the extract that are metadata lines of the original (each line counted by
    its sentence pieces of 8 characters or more found verbatim in the extract)."""
    kept = 0
    for line in metadata_lines(original):
        kept += sum(len(p) for p in _PIECE.split(line) if len(p) >= 8 and p in extract)
    return kept


@dataclass(frozen=True)
class Case:
    """One observation the rule tier cut."""

    log: str
    step: int
    chars: int
    kept_chars: int
    meta_chars: int
    gold: tuple[str, ...]  # the gold lines the original held
    lost: tuple[str, ...]  # ... and the extract no longer holds


def _judge(
    tier: RuleTier, step: Step, task: str, where: tuple[str, int], lines: list[str]
) -> Case | None:
    """The case of one observation when purification cuts it, else None."""
    shown, firing = tier.after_observation(step, local_task=task)
    if firing is None or firing.rule != "purification":
        return None
    text = step.observation
    body = shown.split(_NOTE)[0]
    gold = holds(text, lines)
    lost = [g for g in gold if g not in holds(body, gold)]
    meta = metadata_kept(text, body)
    return Case(*where, len(text), len(body), meta, tuple(gold), tuple(lost))


def cut_observations(traj: Trajectory, settings: RuleSettings) -> Iterator[Case]:
    """The observations of one log that purification cuts, as the offline replay feeds them."""
    tier = RuleTier(settings)
    lines = gold_lines(traj.ground_truth)
    for s in traj.steps:
        if not s.is_observation:
            continue
        prev = traj.steps[s.index - 1].content if s.index > 0 else ""
        step = Step(
            agent=s.agent, subtask="task", kind="tool", tool=s.agent, args=prev[:200],
            observation=s.text,
        )  # fmt: skip
        case = _judge(tier, step, traj.question, (traj.id, s.index), lines)
        if case is not None:
            yield case


def dojo_outputs(task: Any) -> Iterator[tuple[str, str, str]]:
    """(tool, arguments as JSON, output) of each ground-truth call of an AgentDojo task, run on
    a fresh copy of its suite's environment; a call the tool refuses is skipped."""
    from overseer.tasks.agentdojo import DojoToolError

    tools = task.tools()
    for name, args in task.ground_truth():
        try:
            out = tools.call(name, args)
        except DojoToolError:
            continue
        yield name, json.dumps(args, default=str, ensure_ascii=False), out


def dojo_cases(task: Any, settings: RuleSettings) -> tuple[int, list[Case]]:
    """How many tool outputs one AgentDojo task's ground truth gives, and those cut."""
    tier = RuleTier(settings)
    lines = gold_values(task.ground_truth_output)
    n, cases = 0, []
    for i, (name, args, out) in enumerate(dojo_outputs(task)):
        n += 1
        step = Step(
            agent="dojo", subtask="task", kind="tool", tool=name, args=args[:200], observation=out
        )
        case = _judge(tier, step, task.prompt, (task.id, i), lines)
        cases += [case] if case is not None else []
    return n, cases


def subset_cases(subset: str) -> tuple[list[Case], int, int]:
    """The cut observations of a subset, its number of logs (tasks) and of observations."""
    if subset == "dojo":
        import warnings

        from overseer.tasks.agentdojo import SUITES, load_dojo

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deepdiff's note on unrelated utility checks
            tasks = [t for suite in SUITES for t in load_dojo(suite)]
        runs = [dojo_cases(t, RuleSettings()) for t in tasks]
        return [c for _, cs in runs for c in cs], len(tasks), sum(n for n, _ in runs)
    logs = load_whowhen(subset)
    n_obs = sum(s.is_observation for t in logs for s in t.steps)
    return [c for t in logs for c in cut_observations(t, RuleSettings())], len(logs), n_obs


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.3f}" if b else "-"


def row(subset: str, cases: list[Case], n_logs: int, n_obs: int) -> str:
    """One Markdown row of the table."""
    gold = [c for c in cases if c.gold]
    kept = sum(not c.lost for c in gold)
    share = f"{kept}/{len(gold)} = {kept / len(gold):.3f}" if gold else "-"
    return (
        f"| {subset} ({SUBSETS[subset]}) | {n_logs} | {n_obs} | {len(cases)} | {len(gold)} "
        f"| {share} | {_ratio(sum(c.kept_chars for c in gold), sum(c.chars for c in gold))} "
        f"| {_ratio(sum(c.kept_chars for c in cases), sum(c.chars for c in cases))} "
        f"| {_ratio(sum(c.meta_chars for c in cases), sum(c.kept_chars for c in cases))} |"
    )


HEADER = (
    "| subset | logs (tasks) | observations | cut | cut, held the gold (n) | gold kept "
    "| chars kept (those n) | chars kept (all cut) | metadata share of kept chars |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def use_extract_from(commit: str) -> None:
    """Make the rule tier purify with `supervise/_extract.py` as it was at `commit`."""
    src = subprocess.run(
        ["git", "show", f"{commit}:src/overseer/supervise/_extract.py"],
        cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    mod = types.ModuleType(f"extract_{commit}")
    exec(compile(src, f"{commit}:_extract.py", "exec"), mod.__dict__)
    rules.extract = mod.extract


def main(argv: list[str] | None = None) -> int:
    """Print the table (and, with --show-lost, each development case that lost its gold)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subset", choices=[*SUBSETS, "all"], default="all")
    ap.add_argument("--show-lost", action="store_true", help="list the lost cases (development)")
    ap.add_argument("--extract-from", metavar="COMMIT", help="the extraction of another commit")
    args = ap.parse_args(argv)
    if args.extract_from:
        use_extract_from(args.extract_from)
    started = time.perf_counter()
    rows = []
    for subset in SUBSETS if args.subset == "all" else [args.subset]:
        cases, n_logs, n_obs = subset_cases(subset)
        rows.append(row(subset, cases, n_logs, n_obs))
        if args.show_lost and SUBSETS[subset] == "development":
            for c in cases:
                if c.lost:
                    print(f"lost: {c.log} step {c.step} ({c.chars:,} chars): {c.lost}")
    print(HEADER)
    print("\n".join(rows))
    print(f"\n({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
