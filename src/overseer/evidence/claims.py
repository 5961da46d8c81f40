"""The five seed claims as data: the paper's figure (a small table with where it comes from),
our protocol (model, data, n, what differs and why) and the sizes a run can take."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class PaperFigure:
    """A figure of the seed paper, reduced to the rows this claim is about."""

    source: str  # paper, table or figure, and the seed file it was read from
    columns: Sequence[str]
    rows: Sequence[Sequence[str]]
    note: str = ""


@dataclass(frozen=True)
class Claim:
    """One seed claim: what the paper says, how we test it, and run sizes (knob -> value)."""

    name: str
    title: str
    claim: str  # the paper's claim in one or two sentences
    paper: PaperFigure
    protocol: str  # model, data, what differs from the paper and why
    sizes: Mapping[str, Mapping[str, int]]
    timing: str = ""  # the per-episode times the default size was chosen from
    headline: str = ""  # which row answers the claim
    needs: Sequence[str] = field(default=())  # claims whose artefacts this one reuses

    def size(self, name: str) -> Mapping[str, int]:
        """The knobs of a named size; ValueError naming the sizes there are."""
        if name not in self.sizes:
            raise ValueError(
                f"size: expected one of {', '.join(self.sizes)} for {self.name}, got {name!r}"
            )
        return self.sizes[name]


SUPERVISE = Claim(
    name="supervise",
    title="SupervisorAgent: fewer net tokens at equal accuracy",
    claim="A supervisor that reviews only the steps an LLM-free filter flags cuts a team's "
    "net tokens (its own calls included) while keeping accuracy: -23.74% tokens on HumanEval "
    "with accuracy 92.07 -> 92.68.",
    paper=PaperFigure(
        source="Lin et al. 2025, Stop Wasting Your Tokens, Table 2 (HumanEval column; "
        "Qwen3-32B for agents and supervisor); seeds/000_345aae12a05ff87c.txt",
        columns=("method", "HumanEval pass@1 %", "avg tokens (K)"),
        rows=(
            ("Vanilla (one call)", "76.82", "0.28"),
            ("Smolagent", "92.07", "40.91"),
            ("+ SMAS (SupervisorAgent)", "92.68", "31.19 (-23.74%)"),
        ),
    ),
    protocol="HumanEval test split (our seeded split), a coder + reviewer team with the "
    "sandboxed Python tool (`baseline`), the same team with the SupervisorAgent and the "
    "`humaneval` filter preset of the seed's Table 5 (`supervised`), and one direct call. "
    "Differs: a 0.5B model for agents and supervisor instead of Qwen3-32B, our two-agent "
    "workload team instead of smolagents' CodeAgent, n sized to one core.",
    sizes={"tiny": {"limit": 2}, "default": {"limit": 20}, "large": {"limit": 60}},
    headline="`supervised` vs `baseline`: token ratio with its interval, accuracy difference",
)

MONITOR = Claim(
    name="monitor",
    title="Rogue-agent monitor: success on WhoDunitEnv with and without rollback",
    claim="A monitor on the agents' token uncertainty that resets the conversation when it "
    "predicts failure raises WhoDunitEnv-Asym success (Qwen-2.5-72B: 59.9% -> 70.2% with one "
    "reset, 72.2% with two), more than a random monitor with the same reset rate (62.5%).",
    paper=PaperFigure(
        source="Barbi, Yoran, Geva, Preventing Rogue Agents, Table 7 (WhoDunitEnv-Asym, "
        "Qwen-2.5-72B, mean of 4 runs over 180 test games; 210/90/180 train/validation/test) "
        "and Table 3; seeds/002_707ac66c77f114e1.txt",
        columns=("intervention", "success %", "precision %"),
        rows=(
            ("none", "59.9", "77.9"),
            ("monitor, 1 reset", "70.2", "81.6"),
            ("monitor, 2 resets", "72.2", "77.1"),
            ("random monitor, 1 reset", "62.5", "77.3"),
        ),
        note="Means of the four runs listed in Table 7; Table 3 gives 59.8 / 70.1 / 72.2 / "
        "62.5 with standard errors of about 1.7.",
    ),
    protocol="WhoDunitEnv-Asym (10 characters, Accuser and Intel), our seeded games: "
    "`train` + `val` games without intervention to fit the per-role polynomial ridge monitors "
    "(threshold by validation gain), then `test` games with no intervention, the monitor with "
    "1 and 2 resets, and the random monitor tuned the same way. `direct` is one model call "
    "that sees both halves of the game (the lineup and the Winner's description): the upper "
    "bound of what the two players can share. Differs: a 0.5B model instead of 70B models, "
    "fewer games (the seed's 210/90/180 take hours at 0.5B on one core), one run per game "
    "instead of four.",
    sizes={
        "tiny": {"train": 2, "val": 2, "test": 2, "turns": 4},
        "default": {"train": 40, "val": 20, "test": 20, "turns": 31},
        "large": {"train": 210, "val": 90, "test": 180, "turns": 31},
    },
    headline="`monitor-cap1` vs `none`: success difference with McNemar p",
)

PRUNE = Claim(
    name="prune",
    title="AgentPrune: fewer prompt tokens, accuracy kept, and robustness to attacks",
    claim="Pruning the communication graph once, after learning edge masks on a few queries, "
    "keeps or improves accuracy at a fraction of the prompt tokens (MMLU, AutoGen: 82.13 -> "
    "82.78 at 71.9% of the prompt tokens), and under an agent prompt attack recovers accuracy "
    "(complete graph 78.4 -> 83.9).",
    paper=PaperFigure(
        source="Zhang et al., Cut the Crap (AgentPrune), Table 1, Table 3 and Section 4.4 "
        "(five gpt-4 agents, K = 2 rounds); seeds/004_0bb23c3a5fa456c0.txt",
        columns=("setting", "MMLU accuracy %", "prompt tokens"),
        rows=(
            ("Vanilla (one call)", "82.14", "-"),
            ("Complete graph", "83.15", "-"),
            ("AgentPrune-C", "84.72", "-"),
            ("AutoGen", "82.13", "486,034"),
            ("AutoGen + AgentPrune", "82.78", "349,583 (71.9%)"),
            ("complete graph, prompt attack", "78.4", "-"),
            ("AgentPrune-C, prompt attack", "83.9", "-"),
        ),
        note="The replacement attack has no number in the text (Figure 6 is a plot).",
    ),
    protocol="MMLU sample (our seeded split): a complete team with agents sharing whole "
    "responses on every edge (the seed's setting, `--share-thoughts`), masks trained on "
    "`train` queries, pruned once with ratio p = 0.5, then the full and the pruned team on "
    "`test` held-out queries, clean and under the two attacks (prompt: one agent lies; "
    "replace: one agent outputs gibberish), plus one direct call. Differs: a 0.5B model, "
    "`agents` agents instead of five, Q' and n sized to one core, temperature 0.",
    sizes={
        "tiny": {"agents": 2, "rounds": 1, "train": 1, "test": 2, "max_tokens": 48},
        "default": {"agents": 3, "rounds": 2, "train": 4, "test": 12, "max_tokens": 160},
        "large": {"agents": 5, "rounds": 2, "train": 10, "test": 40, "max_tokens": 256},
    },
    headline="`pruned` vs `full` under each attack: prompt-token ratio and accuracy difference",
)

MASFLY = Claim(
    name="masfly",
    title="MASFly: a team built per query vs the best fixed team, with the Watcher ablation",
    claim="Building the team per query from retrieved SOPs beats fixed and automated teams "
    "(HumanEval pass@1 98.73 vs 97.78 for the best baseline), and the Watcher helps "
    "(GAIA level 1: 46.3 -> 41.4 without it).",
    paper=PaperFigure(
        source="Liu et al., MAS-on-the-Fly, Table 3 (HumanEval) and Table 4 (ablations; "
        "Qwen3-235B-A22B); seeds/003_621d85e20d25116b.txt",
        columns=("method", "HumanEval pass@1 %", "GAIA L1 %"),
        rows=(
            ("Base (one call)", "94.94", "29.3"),
            ("GPTSwarm / AFlow (best fixed)", "97.78", "36.6"),
            ("MASFly", "98.73", "46.3"),
            ("MASFly w/o Watcher", "-", "41.4"),
        ),
    ),
    protocol="HumanEval test split: fixed teams (`chain`, `complete`, one round, Python "
    "tool-less) and MASFly with and without the Watcher, plus one direct call. MASFly's "
    "repository is first distilled on `distill` training tasks (`overseer adapt init`). "
    "Differs: a 0.5B model instead of Qwen3-235B, HumanEval only (GAIA and TravelPlanner "
    "are not available offline), a repository of a few SOPs instead of ~100.",
    sizes={
        "tiny": {"limit": 2, "distill": 1},
        "default": {"limit": 12, "distill": 3},
        "large": {"limit": 40, "distill": 10},
    },
    headline="`masfly` vs the best fixed team; `masfly-nowatch` vs `masfly`",
)

COMPOSE = Claim(
    name="compose",
    title="All four composed: none, each alone, all together",
    claim="The seeds each claim savings or gains alone; none tests them together. Composed "
    "on one bus they should add up (fewer tokens from pruning and supervision, fewer "
    "failures from the monitor) or show where they interfere.",
    paper=PaperFigure(
        source="no seed paper composes the systems; the single-system figures are on the "
        "other pages",
        columns=("system", "paper's headline"),
        rows=(
            ("SupervisorAgent", "-23.74% tokens on HumanEval, accuracy kept"),
            ("rogue-agent monitor", "+10.3 points success on WhoDunitEnv-Asym (Qwen-72B)"),
            ("AgentPrune", "71.9% of the prompt tokens on MMLU, accuracy kept"),
            ("MASFly", "+0.95 points pass@1 on HumanEval over the best baseline"),
        ),
    ),
    protocol="MMLU sample test split: the complete team alone, with each plug-in alone "
    "(the SupervisorAgent's LLM-free rule tier, the monitor trained on the `monitor` claim's "
    "games, the pruned team of the `prune` claim) and with all composed, plus one direct "
    "call. Differs: a 0.5B model; the monitor is trained on WhoDunitEnv and judges team "
    "agents by the Accuser's monitor (no team-trained monitor exists).",
    sizes={"tiny": {"limit": 2}, "default": {"limit": 20}, "large": {"limit": 60}},
    headline="all composed vs the team alone: token ratio and accuracy difference",
    needs=("monitor", "prune"),
)

CLAIMS: dict[str, Claim] = {c.name: c for c in (SUPERVISE, MONITOR, PRUNE, MASFLY, COMPOSE)}


def get_claim(name: str) -> Claim:
    """The claim of that name; ValueError naming the claims there are."""
    if name not in CLAIMS:
        raise ValueError(f"claim: expected one of {', '.join(CLAIMS)}, got {name!r}")
    return CLAIMS[name]
