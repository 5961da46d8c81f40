"""Evidence pages: the claims as data, bad input, the whole flow on a scripted model (stored,
resumable, the page rewritten), and tiny real runs on the
embedded model for two claims (compose training its own inputs)."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

import overseer.models
from overseer.evidence import CLAIMS, get_claim, run_claim
from overseer.evidence.export import export_path, read_export
from overseer.evidence.reading import page_tables_reading
from overseer.evidence.readme import page_row
from overseer.models import ScriptedModel

ROOT = Path(__file__).resolve().parents[2]
PNG = b"\x89PNG\r\n\x1a\n"


def script():
    spec = importlib.util.spec_from_file_location(
        "evidence_script", ROOT / "benchmarks/evidence.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["evidence_script"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_every_claim_has_a_paper_figure_a_protocol_and_three_sizes() -> None:
    assert set(CLAIMS) == {"supervise", "monitor", "prune", "masfly", "compose"}
    for c in CLAIMS.values():
        assert set(c.sizes) == {"tiny", "default", "large"}, c.name
        assert c.paper.rows and all(len(r) == len(c.paper.columns) for r in c.paper.rows)
        assert "seeds/" not in c.paper.source and "arXiv:" in c.paper.source
        assert "0.5B" in c.protocol and "Differs" in c.protocol
    with pytest.raises(ValueError, match="claim: expected one of"):
        get_claim("teleport")
    with pytest.raises(ValueError, match="size: expected one of tiny, default, large"):
        get_claim("prune").size("huge")


@pytest.mark.parametrize(("argv", "needle"), [(["prune", "--size", "huge"], "size")])
def test_bad_size_is_one_line_and_exit_2(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = script().main([*argv, "--out-dir", str(tmp_path / "r"), "--docs-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1


def reply(messages: list) -> object:
    if "final decision-maker" in messages[-1]["content"]:
        return "Answer: B"
    if messages[0]["role"] == "system" and "multiple-choice" in messages[0]["content"]:
        return "Answer: C"  # the direct call
    return {"thought": "t", "action": "answer", "answer": "I think B. Answer: B"}


def test_prune_page_on_a_scripted_model_is_stored_and_rerun_only_rewrites_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[str] = []

    def fake_load(name: str, **kw: object) -> ScriptedModel:
        loads.append(name)
        return ScriptedModel(reply)

    monkeypatch.setattr(overseer.models, "load_model", fake_load)
    out, docs = tmp_path / "results", tmp_path / "docs"
    cmd = "python benchmarks/evidence.py prune --size tiny"
    kw = {"size": "tiny", "model": "scripted", "out_dir": out, "docs_dir": docs,
          "command": cmd, "progress": False}  # fmt: skip
    page = run_claim("prune", **kw)  # type: ignore[arg-type]
    text = page.read_text()
    assert page == docs / "prune.md" and (out / "prune-tiny.sqlite").is_file()
    assert "prefix cache on" in text
    for needle in ("## The paper's figure", "84.72", "## Our protocol", "attack: none",
                   "attack: prompt", "attack: replace", "95% CI", "McNemar p", "wins/losses",
                   "python benchmarks/evidence.py prune --size tiny", "n = 2 tasks",
                   "episodes shown took"):  # fmt: skip
        assert needle in text, needle
    # full team answers B, the direct call C: the paired table says so
    assert "| one direct call (no attack) | 2 | 0/0 |" in text
    # no mechanism acts on the full team: 0 of 2 tasks; a direct call keeps no trace
    # (columns: n, errors, unparsed, acted on)
    cells = {ln.split(" | ")[0]: ln.split(" | ") for ln in text.splitlines() if " | 2 | 0 | " in ln}
    assert cells["| full team"][4] == "0/2" and cells["| one direct call (no attack)"][4] == "-"
    for i in (1, 2, 3):
        assert (docs / f"prune-{i}.png").read_bytes().startswith(PNG)
    runs = json.loads((out / "prune-tiny.runs.json").read_text())
    assert len(runs) == 1 and runs[0]["episodes"] > 0
    loads.clear()
    (docs / "prune.md").unlink()
    run_claim("prune", **kw)  # type: ignore[arg-type]
    assert loads == [] and (docs / "prune.md").read_text() == text
    assert len(json.loads((out / "prune-tiny.runs.json").read_text())) == 1


def test_no_prompt_cache_loads_the_model_without_it_into_its_own_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    caches: list[object] = []

    def fake_load(name: str, **kw: object) -> ScriptedModel:
        caches.append(kw.get("prompt_cache"))
        return ScriptedModel(reply)

    monkeypatch.setattr(overseer.models, "load_model", fake_load)
    out, docs = tmp_path / "results", tmp_path / "docs"
    argv = ["prune", "--size", "tiny", "--model", "scripted", "--no-prompt-cache",
            "--out-dir", str(out), "--docs-dir", str(docs), "--no-progress"]  # fmt: skip
    assert script().main(argv) == 0, capsys.readouterr().err
    assert caches == [False]
    assert (out / "prune-tiny-nocache.sqlite").is_file() and not (
        out / "prune-tiny.sqlite"
    ).exists()
    assert (out / "prune-tiny-nocache.runs.json").is_file()
    assert (out / "prune-tiny-nocache-pruned-none.json").is_file()
    text = (docs / "prune.md").read_text()
    assert "prefix cache off" in text and "--no-prompt-cache" in text


@pytest.fixture(scope="module")
def compose_out() -> dict[str, Path]:
    """The directory the compose claim ran in, once it has: its sibling stores hold the
    monitor claim's training games and the prune claim's unattacked masks, so those claims'
    tests run there and reuse them (the same functions compose called, already tested)."""
    return {}


@pytest.mark.e2e
# prune's page on a real run is not among them: compose trains its masks on the embedded model
# (above), tests/prune/test_cli_prune.py prunes on it, and its page is written from a scripted
# run above; its tiny claim cost 92-190 s of the suite for nothing these do not check
@pytest.mark.parametrize("claim", ["compose", "monitor"])
def test_tiny_claim_on_the_embedded_model_writes_its_page(
    claim: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    compose_out: dict[str, Path],
) -> None:
    # compose always starts from an empty directory (it must train its own inputs)
    root = tmp_path if claim == "compose" else compose_out.get("root", tmp_path)
    out, docs = root / "results", root / "docs"
    argv = [claim, "--size", "tiny", "--model", "smollm2-135m", "--out-dir", str(out),
            "--docs-dir", str(docs), "--no-progress"]  # fmt: skip
    assert script().main(argv) == 0, capsys.readouterr().err
    text = (docs / f"{claim}.md").read_text()
    assert f"python benchmarks/evidence.py {claim} --size tiny" in text
    assert "smollm2-135m" in text and "95% CI" in text and "McNemar p" in text
    assert "one direct call" in text or "one call, both halves" in text
    assert (out / f"{claim}-tiny.sqlite").is_file()
    if claim == "compose":  # its inputs trained in the sibling claims' stores, not their tests
        assert (out / "monitor-tiny-monitor.json").is_file()
        assert (out / "prune-tiny-pruned-none.json").is_file()
        assert not (out / "prune-tiny-pruned-prompt.json").exists()
        assert "all composed" in text
        compose_out["root"] = root
    pngs = sorted(docs.glob(f"{claim}-*.png"))
    assert pngs and all(p.read_bytes().startswith(PNG) for p in pngs)
    assert all(f"]({p.name})" in text for p in pngs)
    # the page's items on a real run (the prompt-cache switch itself: a scripted test above)
    for needle in (
        "prefix cache on",
        "Power (minimum detectable effect",
        "## Reading",
        "sha256:b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    ):
        assert needle in text, needle
    assert re.search(r"threads [1-9]", text), "the thread count (as many as free cores)"
    assert page_row(text) is not None
    data, _ = read_export(export_path(docs, claim))
    assert all(line in text.splitlines() for line in page_tables_reading(data))
    if claim == "monitor":
        assert "Chance level: 10%" in text and "reset rate" in text


def test_acted_on_counts_tasks_whose_trace_has_a_verdict_rule_or_rollback(tmp_path: Path) -> None:
    from overseer.bench import ResultRecord
    from overseer.bench._store import ResultKey
    from overseer.evidence.page import acted_flags
    from overseer.evidence.runs import Part
    from overseer.evidence.tables import acted_column

    def rec(config: str, task: str, events: list[dict[str, object]] | None) -> ResultRecord:
        extra: dict[str, object] = {}
        if events is not None:
            path = tmp_path / f"{config}-{task}.jsonl"
            base = {"v": 2, "ts": 1.0, "run": task}
            path.write_text("".join(json.dumps({**base, **e}) + "\n" for e in events))
            extra["trace"] = str(path)
        return ResultRecord(ResultKey(config, "m", "s", task, 0), "A", "A", True, 1.0, {}, 0.1,
                            extra=extra)  # fmt: skip

    quiet = [{"event": "run_start"}, {"event": "message"}, {"event": "run_end"}]
    rule = [{"event": "rule", "by": "supervisor", "rule": "loop_breaker"}]
    recs = [rec("team", "t1", quiet), rec("team", "t2", quiet),
            rec("sup", "t1", quiet + rule), rec("sup", "t2", [*quiet, {"event": "rollback"}]),
            rec("direct", "t1", None), rec("direct", "t2", None)]  # fmt: skip
    part = Part("p", recs, ["direct", "team", "sup"], "team")

    def acted(p: Part) -> dict[str, str]:
        return acted_column(p, acted_flags([p], tmp_path / "store.sqlite"))

    assert acted(part) == {"direct": "-", "team": "0/2", "sup": "2/2"}
    # a structural mechanism (a pruned team) acts on every task, trace or not
    pruned = Part("p", recs, ["direct", "team", "sup"], "team",
                  acted_by={"direct": lambda r: True})  # fmt: skip
    assert acted(pruned)["direct"] == "2/2"
    (tmp_path / "sup-t2.jsonl").unlink()  # a trace no longer there: not counted as quiet
    assert acted(part)["sup"] == "-"
