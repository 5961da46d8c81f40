"""`overseer monitor` input errors: one line naming the option, exit code 2, nothing run."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from overseer.cli import _game_options as o
from overseer.cli import main


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["collect", "--env", "chess"], "--env: expected one of"),
        (["collect", "--suspects", "1"], "n_suspects"),
        (["collect", "--suspects", "30", "--attributes", "3"], "distinct characters"),
        (["collect", "--games", "500"], "has 210 games, asked for 500"),
        (["collect", "--model", "gpt-9000"], "openai:gpt-9000"),
        (["eval", "--caps", "x"], "--caps"),
        (["eval", "--caps", "7"], "--caps"),
        (["eval", "--monitor", "/nonexistent/m.json"], "--monitor"),
    ],
)
def test_bad_input_is_one_line(
    args: list[str], needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["monitor", *args, "--store", str(tmp_path / "r.sqlite")])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and err.count("\n") == 1


def test_train_without_store_says_collect_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["monitor", "train", "--store", str(tmp_path / "none.sqlite")]) == 2
    assert "overseer monitor collect" in capsys.readouterr().err


def test_game_options_reach_the_command_as_one_value() -> None:
    seen: list[tuple[int, o.GameOpts]] = []
    cli = typer.Typer()

    @cli.command()
    @o.game_options(o.GAME_RUN)
    def cmd(seed: o.Seed = 0, game: o.GameOpts = o.GameOpts()) -> None:  # noqa: B008
        seen.append((seed, game))

    args = ["--env", "codegen", "--model", "m", "--seed", "3", "--coders", "2", "--no-progress"]
    result = CliRunner().invoke(cli, [*args, "--trace-dir", "t"])
    assert result.exit_code == 0, result.output
    assert seen == [
        (3, o.GameOpts(env="codegen", model="m", coders=2, progress=False, trace_dir=Path("t")))
    ]
    help_text = CliRunner().invoke(cli, ["--help"], env={"COLUMNS": "200"}).output
    order = [help_text.index(f"--{n}") for n in ("env", "model", "seed", "coders", "trace-dir")]
    assert order == sorted(order)
    assert "--out" not in help_text and "--game " not in help_text
