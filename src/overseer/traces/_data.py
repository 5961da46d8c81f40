"""The Who&When benchmark shipped with the package (58 hand-crafted + 126 algorithm-generated
failure logs, MIT; see data/WHOWHEN_CITATION.md). Nothing is fetched at run time."""

from __future__ import annotations

import json
import lzma
import re
from importlib.resources import files
from pathlib import Path
from typing import Literal

from overseer.traces._import import from_whowhen, iter_path
from overseer.traces._types import TraceFormatError, Trajectory

Split = Literal["hand", "alg"]
SPLITS: tuple[Split, ...] = ("hand", "alg")
EXPECTED = {"hand": 58, "alg": 126}
SOURCE_NAMES = ("whowhen", "whowhen-hand", "whowhen-alg")


def _data_file() -> Path:
    return Path(str(files("overseer.traces").joinpath("data/whowhen.jsonl.xz")))


_GAIA_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_ASSISTANTBENCH_ID = re.compile(r"[0-9a-f]{64}")


def _rows() -> list[dict]:
    path = _data_file()
    try:
        raw = lzma.decompress(path.read_bytes()).decode("utf-8")
    except (OSError, lzma.LZMAError) as exc:
        raise TraceFormatError(
            f"{path}: the packaged Who&When data is unreadable ({exc})"
        ) from None
    return [json.loads(line) for line in raw.splitlines()]


def _log_id(row: dict) -> str:
    return f"{row['split']}-{row['file'].removesuffix('.json')}"


def task_sources() -> dict[str, str]:
    """The benchmark each Who&When log's question comes from, by log id: `GAIA` (a UUID
    question id) or `AssistantBench` (a 64-hex one); TraceFormatError on any other id."""
    out = {}
    for row in _rows():
        qid = str(row["log"].get("question_ID", ""))
        if _GAIA_ID.fullmatch(qid):
            out[_log_id(row)] = "GAIA"
        elif _ASSISTANTBENCH_ID.fullmatch(qid):
            out[_log_id(row)] = "AssistantBench"
        else:
            raise TraceFormatError(f"Who&When log {_log_id(row)}: unknown question id {qid!r}")
    return out


def load_whowhen(split: Split | Literal["all"] = "all") -> list[Trajectory]:
    """The Who&When logs of one split ("hand", "alg") or all, in the source's file order.

    Ids are `hand-12` / `alg-3` (split and source file number). The counts are checked (58
    hand-crafted, 126 algorithm-generated): a mismatch raises TraceFormatError.
    """
    if split not in (*SPLITS, "all"):
        raise TraceFormatError(f"Who&When split {split!r}: expected hand, alg or all")
    by_split: dict[str, list[Trajectory]] = {"hand": [], "alg": []}
    for row in _rows():
        by_split[row["split"]].append(from_whowhen(row["log"], log_id=_log_id(row)))
    for s, n in EXPECTED.items():
        if len(by_split[s]) != n:
            raise TraceFormatError(
                f"{_data_file()}: expected {n} Who&When {s} logs, found {len(by_split[s])}"
            )
    if split == "all":
        return by_split["hand"] + by_split["alg"]
    return by_split[split]


def load_source(name: str) -> list[Trajectory]:
    """A built-in name (whowhen, whowhen-hand, whowhen-alg) or a file / directory path."""
    if name == "whowhen":
        return load_whowhen("all")
    if name in ("whowhen-hand", "whowhen-alg"):
        return load_whowhen(name.removeprefix("whowhen-"))  # type: ignore[arg-type]
    if not Path(name).exists():
        raise TraceFormatError(
            f"{name}: expected a file, a directory or one of {', '.join(SOURCE_NAMES)}"
        )
    return list(iter_path(name))
