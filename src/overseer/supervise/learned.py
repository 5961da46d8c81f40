"""The learned trigger (the seed's future work): a small classifier that predicts, from the
filter's features of a flagged step, whether the LLM supervisor would make an intervention
that is kept; where it predicts approve, the LLM call is skipped.

Trained on the `supervision` events of stored traces (each carries the step's `features` when
the LLM was asked): a kept intervention is label 1, an approve (or a reply that was not
applied) label 0. A seeded logistic regression is fitted on the train split's traces, its
threshold chosen on the validation split's, and the whole model saved as plain JSON with a
format version and its feature list, so a file from another feature set is refused, not misread.

    trigger = train_trigger(examples_from_traces(["runs/train"]),
                            examples_from_traces(["runs/validation"]))
    trigger.save("results/trigger.json")
    SupervisorSettings(rules=RuleSettings(), learned=load_trigger("results/trigger.json"))
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from overseer.supervise._learned_data import (
    LABELS,
    STEERING,
    Example,
    choose_threshold,
    effect_label,
    examples_from_traces,
    label_of,
)
from overseer.supervise.filters import Step, Trigger, normalize_action

if TYPE_CHECKING:
    import numpy

__all__ = [
    "CATEGORICAL",
    "DEFAULT_TRIGGER",
    "FORMAT",
    "LABELS",
    "NUMERIC",
    "STEERING",
    "VERSION",
    "Example",
    "LearnedTrigger",
    "choose_threshold",
    "effect_label",
    "examples_from_traces",
    "label_of",
    "load_trigger",
    "step_features",
    "train_trigger",
]

FORMAT = "overseer.learned-trigger"
VERSION = 1
#: Where mode `learned` looks when no trigger is named; a bare name N means results/triggers/N.json
DEFAULT_TRIGGER = Path("results") / "trigger.json"
NUMERIC: tuple[str, ...] = (
    "obs_chars_log",  # log(1 + characters of the observation)
    "args_chars_log",  # log(1 + characters of the arguments and code)
    "thought_chars_log",
    "step_index",  # steps of the sub-task so far, this one included
    "actions",  # tool steps of the sub-task so far
    "repeats",  # earlier steps of the sub-task with the same normalised action
    "same_obs",  # earlier steps of the sub-task with the same (non-empty) observation
    "errors_before",  # earlier steps of the sub-task that failed
    "is_message",
    "to_agent",  # a message another agent reads (a sub-agent's report)
    "loop",  # the trigger is the loop check
    "periodic",  # the trigger is the periodic check
)
CATEGORICAL: tuple[str, ...] = ("context", "error_type", "role", "tool")
_ERROR_TYPE = re.compile(r"\b([A-Z]\w*(?:Error|Exception|Timeout|Interrupt|Exit))\b")

Features = dict[str, float | str]


def error_type(error: str | None) -> str:
    """A coarse class of an error text: the Python exception name it mentions, `none`, `other`."""
    if not error:
        return "none"
    if "unknown tool" in error.lower():
        return "unknown_tool"
    m = _ERROR_TYPE.search(error)
    return m.group(1) if m else "other"


def step_features(step: Step, sub: Sequence[Step], trigger: Trigger, role: str = "") -> Features:
    """The features of a flagged step (`sub`: its sub-task's steps, this one last), as a flat
    mapping of NUMERIC values and CATEGORICAL strings, written to the trace as they are."""
    earlier = list(sub[:-1])
    action = normalize_action(step)
    obs = step.observation.strip()
    feats: Features = {
        "obs_chars_log": math.log1p(len(step.observation)),
        "args_chars_log": math.log1p(len(step.args) + len(step.code)),
        "thought_chars_log": math.log1p(len(step.thought)),
        "step_index": float(len(sub)),
        "actions": float(sum(s.kind != "message" for s in sub)),
        "repeats": float(sum(normalize_action(s) == action for s in earlier)),
        "same_obs": float(bool(obs) and sum(s.observation.strip() == obs for s in earlier)),
        "errors_before": float(sum(bool(s.error) for s in earlier)),
        "is_message": float(step.kind == "message"),
        "to_agent": float(step.to_agent),
        "loop": float(trigger.reason.startswith("loop:")),
        "periodic": float(trigger.reason.startswith("periodic")),
        "context": trigger.context,
        "error_type": error_type(step.error),
        "role": role or step.agent,
        "tool": step.tool or step.kind,
    }
    return feats


def _check_names(names: Sequence[str], where: str) -> None:
    for n in names:
        cat, eq, _ = n.partition("=")
        if not (n in NUMERIC or (eq and cat in CATEGORICAL)):
            raise ValueError(
                f"{where}: feature {n!r} is not one this overseer computes (numeric "
                f"{', '.join(NUMERIC)}; or CATEGORY=value for {', '.join(CATEGORICAL)}); retrain"
            )


def _numpy() -> ModuleType:
    """numpy, imported when a trigger is loaded or used (not with the package: the core installs
    without it, issue 49). Its dot product (BLAS) is what every trigger's threshold was chosen
    on, so a pure-Python sum in another order could move a probability across it."""
    try:
        import numpy
    except ImportError:
        raise ImportError(
            "the learned trigger needs numpy: pip install 'overseer-agents[train]'"
        ) from None
    return numpy


def vectorize(feats: Mapping[str, float | str], names: Sequence[str]) -> numpy.ndarray:
    """The vector of `feats` over `names` (NUMERIC names, and `category=value` one-hots)."""
    out = _numpy().zeros(len(names))
    for j, n in enumerate(names):
        if n in NUMERIC:
            out[j] = float(feats.get(n, 0.0))
        else:
            cat, _, value = n.partition("=")
            out[j] = float(str(feats.get(cat, "")) == value)
    return out


@dataclass(frozen=True)
class LearnedTrigger:
    """A fitted trigger: p(kept intervention) = sigmoid(coef . (x - mean) / scale + intercept);
    the LLM is asked only where p >= threshold."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    threshold: float
    meta: Mapping[str, object] = field(default_factory=dict)
    source: str = ""  # the file it was loaded from, if any

    def __post_init__(self) -> None:
        n = len(self.features)
        if not (len(self.mean) == len(self.scale) == len(self.coef) == n) or n == 0:
            raise ValueError(
                f"learned trigger {self.source or ''}: features, mean, scale and coef must "
                f"have one equal, non-zero length; got {n}, {len(self.mean)}, "
                f"{len(self.scale)}, {len(self.coef)}".replace("trigger :", "trigger:")
            )
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"learned trigger: threshold must be in [0, 1], got {self.threshold}")
        _check_names(self.features, f"learned trigger {self.source}".strip())

    def prob(self, feats: Mapping[str, float | str]) -> float:
        """The predicted probability that the LLM would make a kept intervention."""
        np = _numpy()
        x = (vectorize(feats, self.features) - np.array(self.mean)) / np.array(self.scale)
        z = float(np.dot(np.array(self.coef), x) + self.intercept)
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def skip(self, feats: Mapping[str, float | str]) -> tuple[bool, float]:
        """(whether to skip the LLM call, the probability it was decided on)."""
        p = self.prob(feats)
        return p < self.threshold, p

    def to_json(self) -> dict[str, object]:
        d = asdict(self)
        d.pop("source")
        return {"format": FORMAT, "version": VERSION, "raw_features": [*NUMERIC, *CATEGORICAL], **d}

    def save(self, path: str | Path) -> Path:
        """Write the trigger as JSON (parent directories made); returns the path."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(self.to_json(), indent=1) + "\n", encoding="utf-8")
        return p


def _resolve(ref: str | Path) -> Path:
    p = Path(ref)
    if p.is_file():
        return p
    named = Path("results") / "triggers" / f"{ref}.json"
    if "/" not in str(ref) and not str(ref).endswith(".json") and named.is_file():
        return named
    raise ValueError(
        f"learned trigger {ref}: no such file (a name N is looked up as {named.parent}/N.json); "
        "train one with `benchmarks/supervise_compare.py train-trigger`"
    )


def load_trigger(ref: str | Path) -> LearnedTrigger:
    """A trigger by path or by name; another format, version or feature set is refused with
    one line saying which and what was expected."""
    path = _resolve(ref)
    _numpy()  # a missing numpy said now, not at the first flagged step
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"learned trigger {path}: not JSON ({exc.msg})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"learned trigger {path}: not a {FORMAT} file")
    if data.get("version") != VERSION:
        raise ValueError(
            f"learned trigger {path}: version {data.get('version')!r} is not supported "
            f"(expected {VERSION}); retrain it"
        )
    raw = list(data.get("raw_features", []))
    if raw != [*NUMERIC, *CATEGORICAL]:
        raise ValueError(
            f"learned trigger {path}: trained on the feature set {raw}, this overseer computes "
            f"{[*NUMERIC, *CATEGORICAL]}; retrain it"
        )
    try:
        return LearnedTrigger(
            features=tuple(data["features"]),
            mean=tuple(float(v) for v in data["mean"]),
            scale=tuple(float(v) for v in data["scale"]),
            coef=tuple(float(v) for v in data["coef"]),
            intercept=float(data["intercept"]),
            threshold=float(data["threshold"]),
            meta=dict(data.get("meta", {})),
            source=str(path),
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"learned trigger {path}: missing or malformed field {exc}") from None


def _names(examples: Sequence[Example]) -> list[str]:
    """NUMERIC, then one column per category value seen in training (sorted)."""
    values = sorted({(c, str(e.features.get(c, ""))) for e in examples for c in CATEGORICAL})
    return [*NUMERIC, *(f"{c}={v}" for c, v in values)]


def _constant(
    train: Sequence[Example], validation: Sequence[Example], *, label: str, seed: int
) -> LearnedTrigger:
    """The trigger of one-label train data: no weights, ask always (all positive) or never."""
    names = _names(train)
    ask = bool(train[0].label)
    n = len(names)
    meta = {
        "label": label,
        "seed": seed,
        "constant": "ask always" if ask else "never ask",
        "train": {"steps": len(train), "kept": sum(e.label for e in train)},
        "validation": {"steps": len(validation), "kept": sum(e.label for e in validation)},
    }
    zeros, ones = (0.0,) * n, (1.0,) * n
    # an intercept of +-60 puts p at 1 or 0 whatever the (zero-weighted) features
    intercept, threshold = (60.0, 0.0) if ask else (-60.0, 1.0)
    return LearnedTrigger(tuple(names), zeros, ones, zeros, intercept, threshold, meta)


def _need_both_labels(labels: Sequence[int]) -> None:
    if len(set(labels)) < 2:
        pos = sum(labels)
        raise ValueError(
            f"trigger training: {len(labels)} labelled steps ({pos} kept interventions, "
            f"{len(labels) - pos} approves); both labels are needed: run more supervised tasks "
            "or lower the filter thresholds"
        )


def _split_meta(
    train: Sequence[Example],
    validation: Sequence[Example],
    where: str,
    on: Sequence[Example],
    probs: Sequence[float],
    threshold: float,
) -> dict[str, object]:
    """What the trigger was trained and thresholded on, and how it does on the threshold set."""
    skipped = sum(p < threshold for p in probs)
    kept_pos = sum(p >= threshold for p, e in zip(probs, on, strict=True) if e.label)
    return {
        "train": {"steps": len(train), "kept": sum(e.label for e in train)},
        "validation": {"steps": len(validation), "kept": sum(e.label for e in validation)},
        "threshold_on": where,
        "skipped_on_threshold_set": f"{skipped}/{len(on)}",
        "recall_on_threshold_set": f"{kept_pos}/{sum(e.label for e in on)}",
    }


def train_trigger(
    train: Sequence[Example],
    validation: Sequence[Example],
    *,
    seed: int = 0,
    min_recall: float = 0.9,
    c: float = 1.0,
    label: str = "kept",
    allow_constant: bool = False,
) -> LearnedTrigger:
    """Fit a seeded, class-balanced logistic regression on `train` and choose its threshold on
    `validation`: the highest that keeps at least `min_recall` of the kept interventions (on
    train + validation when validation holds no kept intervention, which the meta records).
    `label` names how the examples were labelled (`kept` or `effect`), for the meta.
    With `allow_constant`, train data of one label gives a constant trigger (ask always when
    every example is positive, never when none is) instead of an error."""
    from sklearn.linear_model import LogisticRegression

    np = _numpy()
    labels = [e.label for e in train]
    if len(set(labels)) < 2 and allow_constant and labels:
        return _constant(train, validation, label=label, seed=seed)
    _need_both_labels(labels)
    names = _names(train)
    x = np.array([vectorize(e.features, names) for e in train])
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    clf = LogisticRegression(C=c, class_weight="balanced", random_state=seed, max_iter=2000)
    clf.fit((x - mean) / scale, np.array(labels))
    draft = LearnedTrigger(
        tuple(names), tuple(mean), tuple(scale), tuple(clf.coef_[0]), float(clf.intercept_[0]), 0.0
    )
    on = list(validation)
    where = "validation"
    if not any(e.label for e in on):
        on, where = [*train, *validation], "train+validation (validation had no kept intervention)"
    probs = [draft.prob(e.features) for e in on]
    threshold = choose_threshold(probs, [e.label for e in on], min_recall)
    meta = {
        "label": label,
        "seed": seed,
        "min_recall": min_recall,
        **_split_meta(train, validation, where, on, probs, threshold),
    }
    return LearnedTrigger(
        draft.features, draft.mean, draft.scale, draft.coef, draft.intercept, threshold, meta
    )
