"""One settings object (issue 49, item 4): `GuardSettings` is what every framework adapter, the
proxy (`ProxySettings` is the same class) and the CLI (`--settings FILE`) take; a file sets it
once, a bad file or key is one line naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from overseer import GuardSettings, ProxySettings
from overseer.cli._proxy import proxy_settings
from overseer.integrations.guard import Guard
from overseer.models import ScriptedModel
from overseer.supervise.rules import RuleSettings

TOML = """
budget_tokens = 50000
trace_dir = "traces"
idle_s = 60
[rules]
loop_limit = 2
mask_keep = 1
[supervisor]
max_guidance = 1
"""


def test_the_proxy_takes_the_object_the_adapters_take() -> None:
    assert ProxySettings is GuardSettings
    s = GuardSettings(rules=None, refuse_at_source=True)
    assert not s.rule_tier and Guard(s).chain.supervisors == []
    assert Guard(GuardSettings()).chain.supervisors[0].name == "purification"


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_a_file_sets_it_once(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"overseer{suffix}"
    if suffix == ".toml":
        path.write_text(TOML)
    else:
        path.write_text(
            '{"budget_tokens": 50000, "trace_dir": "traces", "idle_s": 60, '
            '"rules": {"loop_limit": 2, "mask_keep": 1}, "supervisor": {"max_guidance": 1}}'
        )
    s = GuardSettings.from_file(path, budget_calls=9)
    assert s.rules == RuleSettings(loop_limit=2, mask_keep=1) and s.budget_tokens == 50000
    assert s.supervisor is not None and s.supervisor.max_guidance == 1
    assert (s.trace_dir, s.idle_s, s.budget_calls) == ("traces", 60, 9)
    guard = Guard(s, supervisor_model=ScriptedModel([]))
    assert guard.trace_dir == Path("traces") and guard.llm is not None
    assert guard.llm.settings.rules == s.rules  # the LLM tier knows the rules before it


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[rules]\nloop_limt = 2\n", "rules: unknown key 'loop_limt'"),
        ("[rules]\nloop_limit = 0\n", "rule setting loop_limit: expected an integer >= 1"),
        ("[rules]\nloop_limit = 'x'\n", "rules.loop_limit: Input should be a valid integer"),
        ("idle_s = -1\n", "guard idle_s: expected seconds > 0"),
        ("budget_tokns = 3\n", "unexpected keyword argument 'budget_tokns'"),
        ("[rules\n", "not valid TOML"),
    ],
)
def test_a_bad_file_is_one_line_naming_it(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises((ValueError, TypeError), match=said):
        GuardSettings.from_file(path)


def test_the_cli_reads_the_file_and_its_flags_win(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(TOML)
    s = proxy_settings(str(path), rules=True, supervise=False, trace_dir=None, idle_s=5.0)
    assert s.rules == RuleSettings(loop_limit=2, mask_keep=1) and s.trace_dir == "traces"
    assert s.idle_s == 5.0 and s.budget_tokens == 50000
    off = proxy_settings(str(path), rules=False, supervise=False, trace_dir="")
    assert off.rules is None and off.trace_dir is None
    plain = proxy_settings(None, rules=True, supervise=True, trace_dir=None)
    assert plain.trace_dir == "runs" and plain.supervisor is not None
