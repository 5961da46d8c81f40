"""The provenance stamp of stored results: commit (+dirty), versions, model file, threads and
cache flag; stores of schema 1 migrated (their rows read as unknown); what differs named."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from overseer.bench import ResultStore, run_experiment
from overseer.bench._provenance import (
    FIELDS,
    UNKNOWN,
    code_commit,
    complete,
    describe,
    mixed,
    model_file,
    stamp,
)
from overseer.bench._store import ResultKey, ResultRecord
from overseer.models import ScriptedModel

from .test_runner import doubling_config, numeric_tasks

SMOLLM2_SHA = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip


def test_commit_is_head_with_dirty_when_tracked_files_changed(tmp_path: Path) -> None:
    assert code_commit(tmp_path) == UNKNOWN  # not a checkout
    git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    git(tmp_path, "add", "a.py")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    head = git(tmp_path, "rev-parse", "HEAD")
    (tmp_path / "untracked.txt").write_text("results are not code")
    assert code_commit(tmp_path) == head
    (tmp_path / "a.py").write_text("x = 2\n")
    assert code_commit(tmp_path) == head + "+dirty"


def test_stamp_names_versions_model_file_threads_and_cache() -> None:
    class Local:  # what a loaded llama.cpp model exposes
        n_threads, prompt_cache = 1, False

    s = stamp("smollm2-135m", Local())
    assert tuple(s) == FIELDS
    assert s["model_file"] == "sha256:" + SMOLLM2_SHA
    assert (s["threads"], s["prompt_cache"]) == ("1", "off")
    assert s["overseer"] != UNKNOWN and s["xllamacpp"] != UNKNOWN
    assert s["commit"] == code_commit()
    http = stamp("openai:qwen", type("M", (), {"base_url": "http://127.0.0.1:9/v1"})())
    assert http["model_file"] == "openai:qwen at http://127.0.0.1:9/v1"
    assert model_file("scripted") == UNKNOWN and stamp("scripted")["threads"] == UNKNOWN
    assert "prompt cache off" in describe(s) and "threads 1" in describe(s)


def test_run_experiment_stamps_every_record(tmp_path: Path) -> None:
    model = ScriptedModel(lambda msgs: "4")
    with ResultStore(tmp_path / "r.sqlite") as store:
        asyncio.run(run_experiment(configs=[doubling_config()], tasks=numeric_tasks(3),
                                   seeds=[0], model_name="scripted", load_model=lambda: model,
                                   store=store, progress=False))  # fmt: skip
        recs = list(store.records())
    assert len(recs) == 3
    assert all(r.provenance == recs[0].provenance for r in recs)
    assert recs[0].provenance["commit"] == code_commit()
    assert recs[0].provenance["model_file"] == UNKNOWN  # a scripted model has no file


def test_the_commit_is_the_one_read_when_the_run_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkout that moves on while a long run writes results does not rename their code:
    the stamp's commit is read when the run starts, not when a result is written."""
    from overseer.bench import _runner

    heads = iter(["aaa111", "bbb222", "ccc333"])
    monkeypatch.setattr(_runner, "code_commit", lambda: next(heads))
    model = ScriptedModel(lambda msgs: "4")
    with ResultStore(tmp_path / "r.sqlite") as store:
        asyncio.run(run_experiment(configs=[doubling_config()], tasks=numeric_tasks(3),
                                   seeds=[0], model_name="scripted", load_model=lambda: model,
                                   store=store, progress=False))  # fmt: skip
        commits = {r.provenance["commit"] for r in store.records()}
    assert commits == {"aaa111"}


V1_DDL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE results (config TEXT NOT NULL, model TEXT NOT NULL, suite TEXT NOT NULL,
    task_id TEXT NOT NULL, seed INTEGER NOT NULL, answer TEXT NOT NULL, parsed TEXT,
    correct INTEGER NOT NULL, score REAL NOT NULL, prompt_tokens INTEGER NOT NULL,
    cached_prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
    usage_by_actor TEXT NOT NULL, latency_s REAL NOT NULL, error TEXT, extra TEXT NOT NULL,
    finished_at REAL NOT NULL, PRIMARY KEY (config, model, suite, task_id, seed));
INSERT INTO meta VALUES ('schema_version', '1');
INSERT INTO results VALUES ('direct', 'm', 's', 't1', 0, 'A', 'A', 1, 1.0, 5, 0, 2,
    '{"agent:a": [5, 0, 2]}', 0.5, NULL, '{}', 1.0);
"""


def test_schema_1_store_reads_as_unknown_and_is_migrated_on_write(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(V1_DDL)
    db.close()
    with ResultStore(path, readonly=True) as ro:  # read-only: read as it is
        (old,) = ro.records()
    assert old.provenance == {} and complete(old.provenance) == dict.fromkeys(FIELDS, UNKNOWN)
    new = ResultRecord(ResultKey("direct", "m", "s", "t2", 0), "B", "B", True, 1.0, {}, 0.1,
                       provenance={"commit": "abc", "model_file": "sha256:x"})  # fmt: skip
    with ResultStore(path) as rw:
        rw.add(new)
        by_task = {r.key.task_id: r for r in rw.records()}
    assert by_task["t1"].provenance == {} and by_task["t2"].provenance["commit"] == "abc"
    version = sqlite3.connect(path).execute("SELECT value FROM meta").fetchone()[0]
    assert version == "2"
    provs = [by_task["t1"].provenance, by_task["t2"].provenance]
    assert mixed(provs) == "commit differs: abc (1 results), unknown (1 results)"
    assert mixed([by_task["t2"].provenance] * 2) is None
    assert json.loads(json.dumps(complete(provs[1])))["threads"] == UNKNOWN


@pytest.mark.e2e
def test_embedded_model_results_carry_its_file_hash_threads_and_cache(tmp_path: Path) -> None:
    from overseer.models import load_model

    model = load_model("smollm2-135m", n_threads=1, prompt_cache=False)
    try:
        s = stamp("smollm2-135m", model)
    finally:
        model.close()
    assert s["model_file"] == "sha256:" + SMOLLM2_SHA
    assert (s["threads"], s["prompt_cache"]) == ("1", "off")
