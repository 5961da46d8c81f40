"""Monitor training and selection (seed section 4.2, appendix D.2), per agent role.

For every subset of {entropy, varentropy, kurtosis} (turn always in) and degree 1..5: scale
the training rows to [-1, 1] (min-max, fitted on training rows), expand to polynomial
features, fit a ridge regression on the game outcome (1 = the game succeeded). On the
validation games, a monitor with threshold tau triggers in a game when its estimate of
success falls below tau at any of the role's turns. Each (subset, degree, tau) is scored by
the expected gain of a reset, in points of success rate:

    gain = 100 * (TP * s - FP * (1 - s)) / games

TP = failed games it triggers in, FP = successful games it triggers in, s = the validation
success rate (the chance a fresh replay succeeds). The best one is kept. The random
baseline triggers at each turn with probability p; p is tuned on the same games by the same
gain, in closed form (a game with m turns triggers with probability 1 - (1 - p)^m).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from overseer.errors import read_failure, require
from overseer.monitor.features import FEATURES

FORMAT_VERSION = 1
ROW_KEYS = ("game", "role", "turn", *FEATURES, "success")
SHORT = {"entropy": "Ent", "varentropy": "Var", "kurtosis": "Kur"}


def check_rows(rows: Sequence[Mapping[str, Any]], what: str) -> None:
    """Every row needs game, role, turn, the three features and success; errors name the row."""
    for i, r in enumerate(rows):
        for k in ROW_KEYS:
            if k not in r:
                raise ValueError(f"{what} row {i}: missing {k!r} (expected keys {ROW_KEYS})")
        for k in ("turn", *FEATURES):
            v = r[k]
            if isinstance(v, bool) or not isinstance(v, int | float) or not np.isfinite(v):
                raise ValueError(f"{what} row {i}: {k!r} must be a finite number, got {v!r}")


@dataclass(frozen=True)
class Candidate:
    """One (features, degree) fit with its best threshold on the validation games."""

    role: str
    features: tuple[str, ...]
    degree: int
    tau: float
    gain: float
    tp: int
    fp: int

    @property
    def label(self) -> str:
        return " ".join(SHORT[f] for f in self.features)


@dataclass
class RoleMonitor:
    """A trained monitor for one role: scaler, polynomial powers, ridge weights, threshold."""

    role: str
    inputs: tuple[str, ...]  # "turn" first, then the chosen features
    degree: int
    tau: float
    gain: float
    scale: np.ndarray
    offset: np.ndarray
    powers: np.ndarray
    coef: np.ndarray
    intercept: float

    def estimate(self, x: np.ndarray) -> np.ndarray:
        """Estimated success probability for rows of `inputs` values (clipped to [0, 1])."""
        x = np.atleast_2d(np.asarray(x, dtype=float))
        z = np.clip(x * self.scale + self.offset, -1.0, 1.0)
        poly = np.prod(z[:, None, :] ** self.powers[None, :, :], axis=2)
        return np.clip(poly @ self.coef + self.intercept, 0.0, 1.0)

    def estimate_row(self, row: Mapping[str, float]) -> float:
        return float(self.estimate(np.array([[row[k] for k in self.inputs]]))[0])


def monitor_files(path: str | Path) -> tuple[Path, Path]:
    """The `.json` and `.npz` files of a monitor saved under `path` (with or without either
    suffix); other dots stay in the name, so "qwen2.5-coder-0.5b" keeps its ".5b"."""
    p = Path(path)
    base = p.with_suffix("") if p.suffix in (".json", ".npz") else p
    return base.with_name(base.name + ".json"), base.with_name(base.name + ".npz")


@dataclass
class MonitorSet:
    """The monitors of one environment and model, per role, with the random baseline's p."""

    env: str
    model: str
    monitors: dict[str, RoleMonitor]
    random_p: dict[str, float]
    random_gain: dict[str, float]
    meta: dict[str, Any] = field(default_factory=dict)
    candidates: list[Candidate] = field(default_factory=list)

    def save(self, path: str | Path) -> Path:
        """Write `<path>.json` (metadata, choices) and `<path>.npz` (arrays); no pickle."""
        jpath, npath = monitor_files(path)
        jpath.parent.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, np.ndarray] = {}
        roles = {}
        for role, m in self.monitors.items():
            for k in ("scale", "offset", "powers", "coef"):
                arrays[f"{role}.{k}"] = getattr(m, k)
            roles[role] = {
                "inputs": list(m.inputs),
                "degree": m.degree,
                "tau": m.tau,
                "gain": m.gain,
                "intercept": m.intercept,
            }
        doc = {
            "format": FORMAT_VERSION,
            "env": self.env,
            "model": self.model,
            "roles": roles,
            "random_p": self.random_p,
            "random_gain": self.random_gain,
            "meta": self.meta,
            "candidates": [c.__dict__ | {"features": list(c.features)} for c in self.candidates],
        }
        jpath.write_text(json.dumps(doc, indent=2) + "\n")
        with npath.open("wb") as f:  # a file object: np.savez would append its own ".npz"
            # keys are "role.field": never savez's own `allow_pickle` keyword
            np.savez(f, **cast(dict[str, Any], arrays))
        return jpath

    @classmethod
    def load(cls, path: str | Path) -> MonitorSet:
        """Read a saved monitor set; a missing or malformed file is an error naming it."""
        jpath, doc, arrays = _read_monitor_files(path)
        try:
            monitors = {role: _saved_monitor(role, r, arrays) for role, r in doc["roles"].items()}
            cands = [
                Candidate(**{**c, "features": tuple(c["features"])}) for c in doc["candidates"]
            ]
            return cls(
                env=doc["env"],
                model=doc["model"],
                monitors=monitors,
                random_p={k: float(v) for k, v in doc["random_p"].items()},
                random_gain={k: float(v) for k, v in doc["random_gain"].items()},
                meta=doc.get("meta", {}),
                candidates=cands,
            )
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ValueError(f"monitor file {jpath}: missing or bad field {exc}") from None


def _read_monitor_files(path: str | Path) -> tuple[Path, dict[str, Any], Any]:
    """The JSON document (its top-level shape checked) and the arrays of a saved monitor set."""
    jpath, npath = monitor_files(path)
    try:
        doc = json.loads(jpath.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise ValueError(f"monitor file {jpath}: {read_failure(exc)}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT_VERSION:
        raise ValueError(f"monitor file {jpath}: expected format {FORMAT_VERSION}")
    if not npath.is_file():
        raise ValueError(
            f"monitor file {jpath}: its arrays file {npath} is missing (a monitor is the "
            "pair NAME.json + NAME.npz that `overseer monitor train` writes)"
        )
    try:
        arrays = np.load(npath, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ValueError(f"monitor arrays file {npath}: cannot read ({exc})") from None
    for key in ("roles", "random_p", "random_gain"):
        if not isinstance(doc.get(key), dict):
            got = type(doc.get(key)).__name__
            raise ValueError(
                f"monitor file {jpath}: {key!r}: expected an object keyed by role, got {got}"
            )
    return jpath, doc, arrays


def _saved_monitor(role: str, r: dict[str, Any], arrays: Any) -> RoleMonitor:
    """One role's monitor from its JSON record and the set's arrays (KeyError if missing)."""
    return RoleMonitor(
        role=role,
        inputs=tuple(r["inputs"]),
        degree=int(r["degree"]),
        tau=float(r["tau"]),
        gain=float(r["gain"]),
        scale=arrays[f"{role}.scale"],
        offset=arrays[f"{role}.offset"],
        powers=arrays[f"{role}.powers"],
        coef=arrays[f"{role}.coef"],
        intercept=float(r["intercept"]),
    )


def _fit(x: np.ndarray, y: np.ndarray, degree: int, alpha: float) -> tuple:
    """Scaler, polynomial expansion and ridge fitted on `x`, `y` (scikit-learn, imported here:
    a trained monitor runs without it, training needs the `train` extra)."""
    pre = require("sklearn.preprocessing", "train", "training a monitor")
    ridge_of = require("sklearn.linear_model", "train", "training a monitor").Ridge
    scaler = pre.MinMaxScaler(feature_range=(-1, 1), clip=True).fit(x)
    poly = pre.PolynomialFeatures(degree, include_bias=False).fit(scaler.transform(x))
    ridge = ridge_of(alpha=alpha).fit(poly.transform(scaler.transform(x)), y)
    return scaler, poly, ridge


def _games(rows: Sequence[Mapping[str, Any]]) -> tuple[list[str], dict[str, bool]]:
    outcome: dict[str, bool] = {}
    for r in rows:
        outcome[str(r["game"])] = bool(r["success"])
    return sorted(outcome), outcome


def gains(
    min_estimate: np.ndarray, success: np.ndarray, taus: np.ndarray, n_games: int, s: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Expected gain per threshold given each game's lowest estimate; also TP and FP counts."""
    trig = min_estimate[None, :] < taus[:, None]
    tp = (trig & ~success[None, :]).sum(axis=1)
    fp = (trig & success[None, :]).sum(axis=1)
    return 100.0 * (tp * s - fp * (1 - s)) / max(n_games, 1), tp, fp


def random_gain_curve(
    turns: np.ndarray, success: np.ndarray, ps: np.ndarray, n_games: int, s: float
) -> np.ndarray:
    """Expected gain of a random monitor that triggers each turn with probability p."""
    trig = 1.0 - (1.0 - ps[:, None]) ** turns[None, :]
    tp = (trig * ~success[None, :]).sum(axis=1)
    fp = (trig * success[None, :]).sum(axis=1)
    return 100.0 * (tp * s - fp * (1 - s)) / max(n_games, 1)


@dataclass(frozen=True)
class _Validation:
    """The validation games of a selection: ids, outcomes, success rate and the tau grid."""

    games: list[str]
    succ: np.ndarray
    rate: float
    grid: np.ndarray


def _select(
    tr: Sequence[Mapping[str, Any]],
    va: Sequence[Mapping[str, Any]],
    role: str,
    v: _Validation,
    degrees: Sequence[int],
    alpha: float,
    cands: list[Candidate],
) -> tuple[Candidate, tuple]:
    """The role's best (features, degree, tau) by gain on validation, and its fitted model;
    every candidate tried is appended to `cands`."""
    y = np.array([float(bool(r["success"])) for r in tr])
    gidx = {g: i for i, g in enumerate(v.games)}
    vg = np.array([gidx[str(r["game"])] for r in va])
    best: tuple[float, Candidate, tuple] | None = None
    for feats in [c for n in (1, 2, 3) for c in itertools.combinations(FEATURES, n)]:
        cols = ("turn", *feats)
        xt = np.array([[float(r[c]) for c in cols] for r in tr])
        xv = np.array([[float(r[c]) for c in cols] for r in va])
        for d in degrees:
            fitted = _fit(xt, y, d, alpha)
            scaler, poly, ridge = fitted
            est = np.clip(ridge.predict(poly.transform(scaler.transform(xv))), 0, 1)
            lowest = np.full(len(v.games), np.inf)
            np.minimum.at(lowest, vg, est)
            g, tp, fp = gains(lowest, v.succ, v.grid, len(v.games), v.rate)
            i = int(np.argmax(g))  # first max: the lowest threshold reaching it
            cand = Candidate(role, feats, d, float(v.grid[i]), float(g[i]), int(tp[i]), int(fp[i]))
            cands.append(cand)
            if best is None or cand.gain > best[0] + 1e-9:
                best = (cand.gain, cand, fitted)
    assert best is not None
    return best[1], best[2]


def _role_monitor(cand: Candidate, fitted: tuple) -> RoleMonitor:
    scaler, poly, ridge = fitted
    return RoleMonitor(
        role=cand.role,
        inputs=("turn", *cand.features),
        degree=cand.degree,
        tau=cand.tau,
        gain=cand.gain,
        scale=np.asarray(scaler.scale_, dtype=float),
        offset=np.asarray(scaler.min_, dtype=float),
        powers=np.asarray(poly.powers_, dtype=np.int64),
        coef=np.asarray(ridge.coef_, dtype=float),
        intercept=float(ridge.intercept_),
    )


def _random_baseline(va: Sequence[Mapping[str, Any]], v: _Validation) -> tuple[float, float]:
    """The random monitor's best p for a role and its gain."""
    gidx = {g: i for i, g in enumerate(v.games)}
    vg = np.array([gidx[str(r["game"])] for r in va])
    turns = np.bincount(vg, minlength=len(v.games)).astype(float)
    ps = np.linspace(0.0, 1.0, 201)
    curve = random_gain_curve(turns, v.succ, ps, len(v.games), v.rate)
    j = int(np.argmax(curve))
    return float(ps[j]), float(curve[j])


def _validation_roc(m: RoleMonitor, va: Sequence[Mapping[str, Any]], v: _Validation) -> dict:
    """Each validation game's lowest estimate by the chosen monitor and its outcome (what the
    report's ROC is drawn from), with the chosen threshold."""
    gidx = {g: i for i, g in enumerate(v.games)}
    lowest = np.full(len(v.games), np.inf)
    est = m.estimate(np.array([[float(r[k]) for k in m.inputs] for r in va]))
    np.minimum.at(lowest, np.array([gidx[str(r["game"])] for r in va]), est)
    seen = np.isfinite(lowest)  # games where the role never played have no estimate
    return {"lowest": lowest[seen].tolist(), "success": v.succ[seen].tolist(), "tau": m.tau}


def train_monitors(
    train_rows: Sequence[Mapping[str, Any]],
    val_rows: Sequence[Mapping[str, Any]],
    *,
    env: str,
    model: str,
    degrees: Sequence[int] = (1, 2, 3, 4, 5),
    taus: Sequence[float] | None = None,
    alpha: float = 1.0,
) -> MonitorSet:
    """Select, per role, the (features, degree, tau) with the best expected gain on validation."""
    check_rows(train_rows, "train")
    check_rows(val_rows, "validation")
    if not train_rows or not val_rows:
        raise ValueError("monitor training: expected rows in both train and validation sets")
    if not all(1 <= d <= 10 for d in degrees):
        raise ValueError(f"degrees: expected values in 1..10, got {list(degrees)}")
    grid = np.linspace(0.0, 1.0, 101) if taus is None else np.asarray(taus, dtype=float)
    games, outcome = _games(val_rows)
    rate = float(np.mean([outcome[g] for g in games]))
    v = _Validation(games, np.array([outcome[g] for g in games]), rate, grid)
    roles = sorted({str(r["role"]) for r in train_rows} & {str(r["role"]) for r in val_rows})
    monitors: dict[str, RoleMonitor] = {}
    cands: list[Candidate] = []
    rand_p: dict[str, float] = {}
    rand_gain: dict[str, float] = {}
    roc: dict[str, dict] = {}
    for role in roles:
        tr = [r for r in train_rows if r["role"] == role]
        va = [r for r in val_rows if r["role"] == role]
        monitors[role] = _role_monitor(*_select(tr, va, role, v, degrees, alpha, cands))
        roc[role] = _validation_roc(monitors[role], va, v)
        rand_p[role], rand_gain[role] = _random_baseline(va, v)
    meta = {
        "train_games": len(_games(train_rows)[0]),
        "validation_games": len(games),
        "train_rows": len(train_rows),
        "validation_rows": len(val_rows),
        "validation_success_rate": rate,
        "alpha": alpha,
        "degrees": list(degrees),
        "validation_roc": roc,
    }
    return MonitorSet(env, model, monitors, rand_p, rand_gain, meta, cands)


def report_lines(ms: MonitorSet, top: int = 3) -> list[list[str]]:
    """Rows of the selection report: the best candidates per role, the chosen one marked."""
    out: list[list[str]] = []
    for role, m in ms.monitors.items():
        ranked = sorted((c for c in ms.candidates if c.role == role), key=lambda c: -c.gain)[:top]
        for c in ranked:
            chosen = c.features == m.inputs[1:] and c.degree == m.degree
            out.append(
                [
                    role,
                    c.label,
                    str(c.degree),
                    f"{c.tau:.2f}",
                    f"{c.gain:.1f}",
                    f"{c.tp}/{c.fp}",
                    "*" if chosen else "",
                ]
            )
        out.append(
            [
                role,
                f"random p={ms.random_p[role]:.3f}",
                "-",
                "-",
                f"{ms.random_gain[role]:.1f}",
                "-",
                "",
            ]
        )
    return out
