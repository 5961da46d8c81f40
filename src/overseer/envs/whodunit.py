"""WhoDunitEnv (seed section 3): games, deterministic splits, prompts, action schemas and rules.

Agents see the task as "award / character / winner" (the seed's rewording of accuse /
suspect / culprit). Asymmetric: an Accuser who knows the Winner's description asks an Intel
who knows every character. Symmetric: every player sees all characters and holds a few
private facts about the Winner; together the facts single it out. By default
(`require_collaboration=True`) no single player's facts alone leave only the Winner, so a
game needs at least two players' facts; `require_collaboration=False` gives the earlier games
(same seeds), in which one player could solve about 28% alone. Sharing is reversible;
the award ends the game and is irreversible. `play_whodunit` in `overseer.envs._loop`
runs a game.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from overseer.envs._attributes import attribute_table, combinations
from overseer.envs._sampling import Sampling
from overseer.envs._schema import closed_object

Variant = Literal["asym", "sym"]
Split = Literal["train", "validation", "test"]
SPLITS: tuple[Split, ...] = ("train", "validation", "test")
SYM_NAMES = ("Ava", "Ben", "Cleo", "Dan", "Eve", "Finn", "Gus", "Hana")


@dataclass(frozen=True)
class WhoDunitConfig(Sampling):
    """Sizes and sampling of a WhoDunitEnv variant; defaults are the seed's."""

    variant: Variant = "asym"
    n_suspects: int = 10
    n_attributes: int = 12
    max_turns: int = 31
    n_agents: int = 2  # asym: always Accuser + Intel
    facts_per_agent: int = 3  # sym only
    split_sizes: tuple[int, int, int] = (210, 90, 180)
    max_tokens: int = 160
    thoughts_chars: int = 160  # 0 drops the "thoughts" field
    decision_keys: tuple[str, ...] = ("action", "character")
    # sym only: no player's own facts may single out the Winner (False: the earlier games)
    require_collaboration: bool = True

    def __post_init__(self) -> None:
        checks = [
            (self.variant in ("asym", "sym"), "variant", "asym or sym", self.variant),
            (self.n_suspects >= 2, "n_suspects", ">= 2", self.n_suspects),
            (self.max_turns >= 1, "max_turns", ">= 1", self.max_turns),
            (self.facts_per_agent >= 1, "facts_per_agent", ">= 1", self.facts_per_agent),
            (all(s >= 0 for s in self.split_sizes), "split_sizes", ">= 0", self.split_sizes),
            (self.max_retries >= 0, "max_retries", ">= 0", self.max_retries),
            (self.max_tokens >= 16, "max_tokens", ">= 16", self.max_tokens),
        ]
        if self.variant == "asym":
            checks.append((self.n_agents == 2, "n_agents", "2 for asym", self.n_agents))
        else:
            ok = 2 <= self.n_agents <= len(SYM_NAMES)
            checks.append((ok, "n_agents", f"2..{len(SYM_NAMES)}", self.n_agents))
            need = self.n_agents * self.facts_per_agent
            checks.append(
                (need <= self.n_attributes, "n_attributes", f">= {need} facts", self.n_attributes)
            )
        for ok, name, expected, got in checks:
            if not ok:
                raise ValueError(f"whodunit {name}: expected {expected}, got {got!r}")
        if combinations(self.n_attributes) < self.n_suspects:
            raise ValueError(
                f"whodunit n_suspects: {self.n_suspects} distinct characters need more than "
                f"{self.n_attributes} attributes ({combinations(self.n_attributes)} combinations)"
            )

    @classmethod
    def symmetric(cls, **kw: Any) -> WhoDunitConfig:
        """The seed's symmetric defaults: 20 suspects, 20 attributes, 20 turns, 3 players."""
        base: dict[str, Any] = dict(
            variant="sym", n_suspects=20, n_attributes=20, max_turns=20, n_agents=3
        )
        return cls(**{**base, **kw})

    @property
    def tag(self) -> str:
        """Short name of the sizes, used in suite names of non-default configurations."""
        return f"n{self.n_suspects}a{self.n_attributes}t{self.max_turns}p{self.n_agents}"

    def agents(self) -> list[tuple[str, str]]:
        """(name, role) in turn order."""
        if self.variant == "asym":
            return [("Beth", "accuser"), ("Alex", "intel")]
        return [(n, "player") for n in SYM_NAMES[: self.n_agents]]


@dataclass(frozen=True)
class Game:
    """One game: the lineup (values per attribute), the Winner (1-based) and private facts."""

    id: str
    variant: Variant
    attributes: tuple[str, ...]
    suspects: tuple[tuple[str, ...], ...]
    culprit: int
    facts: tuple[tuple[int, ...], ...] = field(default=())  # sym: attribute indices per player

    @property
    def n(self) -> int:
        return len(self.suspects)

    def value(self, character: int, attribute: str) -> str:
        return self.suspects[character - 1][self.attributes.index(attribute)]

    def matching(self, attribute: str, value: str) -> list[int]:
        """Characters (1-based) whose `attribute` is `value`."""
        i = self.attributes.index(attribute)
        return [c + 1 for c, s in enumerate(self.suspects) if s[i] == value]

    def consistent_with(self, facts: list[tuple[str, str]]) -> list[int]:
        """Characters matching every (attribute, value) fact."""
        idx = [(self.attributes.index(a), v) for a, v in facts]
        return [c + 1 for c, s in enumerate(self.suspects) if all(s[i] == v for i, v in idx)]

    def fact(self, attr_index: int) -> tuple[str, str]:
        return self.attributes[attr_index], self.suspects[self.culprit - 1][attr_index]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Game:
        """Rebuild a game from `to_dict` (e.g. a Task's meta); errors name the missing key."""
        try:
            return cls(
                id=str(d["id"]),
                variant=d["variant"],
                attributes=tuple(d["attributes"]),
                suspects=tuple(tuple(s) for s in d["suspects"]),
                culprit=int(d["culprit"]),
                facts=tuple(tuple(int(i) for i in f) for f in d.get("facts", ())),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"whodunit game: bad game record ({exc!r})") from None


def _lineup(cfg: WhoDunitConfig, rng: np.random.Generator) -> list[tuple[str, ...]]:
    table = attribute_table(cfg.n_attributes)
    seen: set[tuple[str, ...]] = set()
    out: list[tuple[str, ...]] = []
    while len(out) < cfg.n_suspects:
        s = tuple(str(vals[rng.integers(len(vals))]) for _, vals in table)
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def _facts(
    cfg: WhoDunitConfig, suspects: list[tuple[str, ...]], culprit: int, rng: np.random.Generator
) -> tuple[tuple[int, ...], ...] | None:
    """Private facts per player whose union leaves exactly the Winner; None after 200 draws.

    With `cfg.require_collaboration`, a draw where one player's facts alone leave only the
    Winner is rejected too (the same random draws, so turning it off gives the earlier games).
    """
    need, k = cfg.n_agents * cfg.facts_per_agent, cfg.facts_per_agent
    target = suspects[culprit - 1]

    def left(idx: list[int]) -> int:
        return sum(all(s[i] == target[i] for i in idx) for s in suspects)

    for _ in range(200):
        picked = [int(i) for i in rng.permutation(cfg.n_attributes)[:need]]
        if left(picked) != 1:
            continue
        facts = tuple(tuple(picked[j * k : (j + 1) * k]) for j in range(cfg.n_agents))
        if cfg.require_collaboration and any(left(list(f)) == 1 for f in facts):
            continue
        return facts
    return None


def _seed_words(cfg: WhoDunitConfig, seed: int) -> list[int]:
    digest = hashlib.sha256(f"whodunit|{cfg.variant}|{cfg.tag}|{seed}".encode()).digest()
    return [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]


def generate_games(cfg: WhoDunitConfig, seed: int = 0) -> dict[Split, list[Game]]:
    """The train/validation/test games of a configuration, the same for the same (cfg, seed).

    No two games share their lineup and Winner, so the splits are separated by characters
    and Winner choice. Symmetric games redraw facts (and if need be the lineup) until the
    players' facts together leave exactly one character (and, with
    `cfg.require_collaboration`, no player's facts alone do).
    """
    rng = np.random.default_rng(_seed_words(cfg, seed))
    total = sum(cfg.split_sizes)
    names = tuple(a for a, _ in attribute_table(cfg.n_attributes))
    seen: set[tuple[frozenset[tuple[str, ...]], tuple[str, ...]]] = set()
    games: list[tuple[list[tuple[str, ...]], int, tuple[tuple[int, ...], ...]]] = []
    tries = 0
    while len(games) < total:
        tries += 1
        if tries > 20 * total + 1000:
            raise ValueError(
                f"whodunit sizes {cfg.tag}: cannot draw {total} distinct games; "
                "raise n_suspects or n_attributes, or lower split_sizes"
            )
        suspects = _lineup(cfg, rng)
        culprit = int(rng.integers(cfg.n_suspects)) + 1
        key = (frozenset(suspects), suspects[culprit - 1])
        if key in seen:
            continue
        facts: tuple[tuple[int, ...], ...] = ()
        if cfg.variant == "sym":
            drawn = _facts(cfg, suspects, culprit, rng)
            if drawn is None:
                continue
            facts = drawn
        seen.add(key)
        games.append((suspects, culprit, facts))
    out: dict[Split, list[Game]] = {}
    start = 0
    for split, size in zip(SPLITS, cfg.split_sizes, strict=True):
        out[split] = [
            Game(f"{cfg.variant}-{split}-{i:03d}", cfg.variant, names, tuple(s), c, f)
            for i, (s, c, f) in enumerate(games[start : start + size])
        ]
        start += size
    return out


# -- what agents read ---------------------------------------------------------------------
def describe(game: Game, character: int) -> str:
    values = game.suspects[character - 1]
    return "; ".join(f"{a}: {v}" for a, v in zip(game.attributes, values, strict=True))


def property_list(game: Game) -> str:
    table = attribute_table(len(game.attributes))
    return "; ".join(f"{a} ({', '.join(vals)})" for a, vals in table)


def lineup_text(game: Game) -> str:
    return "\n".join(f"character {c}: {describe(game, c)}" for c in range(1, game.n + 1))


def _thoughts(cfg: WhoDunitConfig) -> dict[str, Any]:
    return {"thoughts": {"type": "string", "maxLength": cfg.thoughts_chars}}


def move_schema(cfg: WhoDunitConfig, game: Game, role: str) -> dict[str, Any]:
    """The JSON Schema of one role's answer (the model call's `schema=`)."""
    props: dict[str, Any] = _thoughts(cfg) if cfg.thoughts_chars > 0 else {}
    char = {"type": "integer", "minimum": 1, "maximum": game.n}
    names = list(game.attributes)
    values = sorted({v for _, vals in attribute_table(len(names)) for v in vals})
    if role == "accuser":
        props |= {
            "action": {"enum": [1, 2, 3]},
            "character": char,
            "property": {"enum": names},
            "value": {"enum": values},
        }
    elif role == "intel":
        props |= {
            "action": {"enum": [1, 2]},
            "answer": {"type": "boolean"},
            "property": {"enum": names},
            "value": {"enum": values},
            "character": {"type": "array", "items": char, "maxItems": game.n},
        }
    elif role == "player":
        props |= {
            "action": {"enum": [1, 2, 3]},
            "fact": {"type": "integer", "minimum": 1, "maximum": cfg.facts_per_agent},
            "character": char,
        }
    else:
        raise ValueError(f"whodunit role: expected accuser|intel|player, got {role!r}")
    return closed_object(props)


def _accuser_prompt(game: Game, partner: str, think: str) -> str:
    n = game.n
    return (
        f"There are {n} characters, numbered 1 to {n}. Exactly one is the Winner, who must "
        "get an award. You know the Winner's full description but nothing about the "
        f"characters; {partner} knows every character but not which one is the Winner. "
        "Only the Winner fits the whole description.\n"
        "On your turn choose one action:\n"
        f"1 = ask {partner} whether character `character` has `property` = `value` "
        "(a yes/no answer);\n"
        f"2 = ask {partner} for general information ({partner} picks a property and value "
        "and lists every character that has it);\n"
        "3 = give the award to character `character`; this ends the game.\n"
        "Give the award as soon as only one character can fit; until then ask for what "
        "narrows the search most. Fewer turns is better.\n"
        f"Reply with JSON only: {{{think}"
        '"action", "character", "property", "value"}.\n'
        f"Properties and values: {property_list(game)}.\n"
        f"The Winner is described as: {describe(game, game.culprit)}."
    )


def _intel_prompt(game: Game, partner: str, think: str) -> str:
    return (
        f"There are {game.n} characters; exactly one is the Winner. {partner} knows the "
        "Winner's description but not the characters; you know every character but not "
        f"which one is the Winner. Help {partner} find the Winner quickly.\n"
        "On your turn choose one action:\n"
        f"1 = answer {partner}'s latest yes/no question (`answer`: true or false);\n"
        "2 = share general information: a `property`, a `value`, and in `character` the "
        "list of every character that has that value.\n"
        "Share what narrows the search most.\n"
        f"Reply with JSON only: {{{think}"
        '"action", "answer", "property", "value", "character"}.\n'
        f"The characters:\n{lineup_text(game)}"
    )


def player_system_prompt(cfg: WhoDunitConfig, game: Game, name: str, role: str) -> str:
    """The role's standing instructions, written for this project (not the seed's wording)."""
    n = game.n
    think = '"thoughts": a short reason, ' if cfg.thoughts_chars > 0 else ""
    if role in ("accuser", "intel"):
        partner = cfg.agents()[1 if role == "accuser" else 0][0]
        intro = f"You are {name}. You and your partner {partner} play a cooperative game.\n"
        write = _accuser_prompt if role == "accuser" else _intel_prompt
        return intro + write(game, partner, think)
    others = ", ".join(a for a, _ in cfg.agents())
    return (
        f"You are {name}, one of {cfg.n_agents} players ({others}) in a cooperative game.\n"
        f"There are {n} characters, numbered 1 to {n}; exactly one is the Winner, who must get "
        "an award. Everyone sees every character; each player also holds a few private facts "
        "about the Winner. Together the facts single the Winner out.\n"
        "On your turn choose one action:\n"
        "1 = share one of your private facts (`fact`: its number);\n"
        "2 = give the award to character `character`; this ends the game, and a wrong award "
        "loses it;\n"
        "3 = skip your turn.\n"
        "Give the award only when exactly one character fits every known fact; otherwise "
        "share a fact that helps, or skip if you have nothing new.\n"
        f'Reply with JSON only: {{{think}"action", "fact", "character"}}.\n'
        f"The characters:\n{lineup_text(game)}"
    )


def user_prompt(
    game: Game, conversation: list[str], turn: int, max_turns: int, facts: list[str] | None
) -> str:
    """The per-turn prompt: private facts (sym), the conversation so far, the turn count."""
    parts = []
    if facts is not None:
        lines = "\n".join(f"{i}. {f}" for i, f in enumerate(facts, 1))
        parts.append(f"Your private facts about the Winner (you may share these):\n{lines}")
    parts.append("Conversation so far:\n" + ("\n".join(conversation) or "(nothing yet)"))
    parts.append(f"This is turn {turn} of {max_turns}. It is your turn: what do you do?")
    return "\n\n".join(parts)
