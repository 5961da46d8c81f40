"""The product apart from the lab (issue 49, item 5): `overseer run` (a product command) builds
its plug-ins from the product's packages and runs with every lab package and scipy, scikit-learn
and matplotlib unimportable; the plug-ins it builds are those `overseer bench` names; a lab
command without the `bench` extra is one line naming it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from overseer.cli._run_plugins import supervise_plugin

LAB = ("bench", "experiments", "evidence", "traces", "tasks", "envs")
#: a core install: the lab's packages and what only the `bench` extra brings cannot be imported
#: (None in sys.modules: an import raises ModuleNotFoundError, find_spec gives None)
CORE_ONLY = (
    "import sys\n"
    f"for m in {[f'overseer.{p}' for p in LAB] + ['scipy', 'sklearn', 'matplotlib']!r}:\n"
    "    sys.modules[m] = None\n"
)


def _core(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CORE_ONLY + code], capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize("mode", ["rules", "llm", "rules+llm"])
@pytest.mark.parametrize("filter_preset", [None, "gaia"])
def test_run_builds_the_supervisor_bench_names(mode: str, filter_preset: str | None) -> None:
    from overseer.experiments.supervise import supervise_plugin as bench_plugin
    from overseer.models import ScriptedModel

    model = ScriptedModel(["x"])
    make, what, top = supervise_plugin(mode, None, filter_preset)
    mine = make(model)
    theirs = list(bench_plugin(mode, filter_preset=filter_preset)(model))
    assert (what, top) == (f"supervision ({mode})", 0)

    def seen(chain: list) -> list:  # type: ignore[type-arg]
        return [(type(s), s.name, getattr(s, "model", None), s.settings) for s in chain]

    assert seen(mine) == seen(theirs)


def test_run_with_the_rules_needs_no_lab(tmp_path: Path) -> None:
    loop = {"thought": "again", "action": "python", "args": {"code": "print('noise ' * 100)"}}
    code = (
        "import overseer.models as m\n"
        f"m.load_model = lambda *a, **kw: m.ScriptedModel(lambda messages: {loop!r})\n"
        "from overseer.cli import main\n"
        "argv = ['run', 'Loop.', '--agents', '1', '--rounds', '1', '--tools', 'python']\n"
        "argv += ['--rules', '--no-progress', '--json', '--allow-errors']\n"
        f"code = main([*argv, '--trace-dir', {str(tmp_path)!r}])\n"
        "print('LAB', sorted(n for n, v in sys.modules.items() if v is not None\n"
        f"    and n.startswith('overseer.') and n.split('.')[1] in {LAB!r}))\n"
        "sys.exit(code)\n"
    )
    done = _core(code)
    assert done.returncode == 0, done.stderr
    out, lab = done.stdout.rsplit("LAB", 1)
    assert lab.strip() == "[]"
    assert json.loads(out)["oversight"]["overseers"] == ["supervision (rules)"]


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["bench", "--suite", "mmlu", "--configs", "direct"], "overseer bench"),
        (["report", "--store", "x.sqlite"], "overseer report"),
        (["run", "--task", "mmlu:0"], "overseer run --task"),
        (["monitor", "train"], "overseer monitor train"),
        (["trace", "html", "x.jsonl"], "overseer trace html"),
    ],
)
def test_a_lab_command_without_the_extra_is_one_line(argv: list[str], command: str) -> None:
    done = _core(f"from overseer.cli import main\nsys.exit(main({argv!r}))\n")
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and line.startswith(f"overseer: error: {command} is part of the lab")
    assert line.endswith("pip install 'overseer-agents[bench]'")
