"""What several commands share: the query from an argument, a file or stdin, the caps on team
size, rounds and query length, the live step line of `overseer run`, and --json output."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TextIO

import typer

from overseer.cli._app import InputError
from overseer.errors import READ_ERRORS, read_failure

if TYPE_CHECKING:
    from overseer.runtime import TeamSpec
    from overseer.runtime.steps import StepReport

QueryFile = Annotated[
    Path | None, typer.Option(help="Read the query from this file ('-': standard input).")
]
MaxAgents = Annotated[int, typer.Option(help="Refuse teams with more agents than this.")]
MaxRounds = Annotated[int, typer.Option(help="Refuse teams with more rounds than this.")]
MaxQueryChars = Annotated[int, typer.Option(help="Refuse queries longer than this.")]
AllowErrors = Annotated[
    bool, typer.Option(help="Exit 0 even when the run or some results ended in error.")
]
JsonOut = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]

_CONTROLS = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI sequences (colours, cursor moves)
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC sequences (terminal title)
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"  # other C0/C1 controls; newline and tab stay
)


def strip_controls(text: str) -> str:
    """`text` without ANSI escape sequences and C0/C1 control characters (newline and tab
    stay), so a query or a model's output cannot drive the terminal it is printed on."""
    return _CONTROLS.sub("", text)


def _check_utf8(text: str, what: str) -> None:
    """InputError when `text` holds what UTF-8 cannot encode: a byte that was not UTF-8 in the
    command line or stdin (kept by Python as a lone surrogate), before anything runs."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(text[exc.start])
        bad = f"byte {code - 0xDC00:#04x}" if 0xDC80 <= code <= 0xDCFF else f"U+{code:04X}"
        raise InputError(
            f"{what}: not UTF-8 text ({bad} at character {exc.start}); expected UTF-8"
        ) from None


def read_query(question: str | None, query_file: Path | None, max_chars: int) -> str | None:
    """The query: the argument ('-' reads stdin) or --query-file ('-' too); capped in length."""
    if question is not None and query_file is not None:
        raise InputError("expected a QUESTION argument or --query-file, and not both")
    source = str(query_file) if query_file is not None else question
    if source is None:
        return None
    if source == "-":
        try:
            text = sys.stdin.read()
        except UnicodeDecodeError as exc:
            raise InputError(f"the query on stdin is not UTF-8 ({exc.reason})") from None
    elif query_file is not None:
        try:
            text = query_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"--query-file {query_file}: cannot read ({exc})") from None
    else:
        text = source
    _check_utf8(text, f"--query-file {query_file}" if query_file is not None else "the query")
    if not text.strip():
        raise InputError("the query is empty")
    if len(text) > max_chars:
        raise InputError(
            f"the query has {len(text)} characters, more than --max-query-chars {max_chars}"
        )
    return text


def precheck_spec(path: Path | None, max_agents: int) -> None:
    """Refuse an oversized spec file before validating it (validation grows with its size)."""
    if path is None:
        return
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (*READ_ERRORS, json.JSONDecodeError):
        return  # the spec's loader reports these, naming the file
    agents = data.get("agents") if isinstance(data, dict) else None
    if isinstance(agents, list) and len(agents) > max_agents:
        raise InputError(
            f"{path}: the team has {len(agents)} agents, more than --max-agents {max_agents}"
        )


def unreadable(what: str, exc: BaseException) -> InputError:
    """The one-line InputError for a file `what` that could not be read: not UTF-8 (naming
    the byte), nested too deeply, or the OS's reason (`overseer.errors.read_failure`)."""
    return InputError(f"{what}: {read_failure(exc)}")


def check_sizes(agents: int, rounds: int, max_agents: int, max_rounds: int) -> None:
    """Refuse --agents/--rounds out of range before a team is built (building 10,000 agents
    takes minutes and gigabytes), in one line naming the option."""
    if agents < 1:
        raise InputError(f"--agents: expected >= 1, got {agents}")
    if agents > max_agents:
        raise InputError(f"--agents: {agents} agents, more than --max-agents {max_agents}")
    if rounds < 1:
        raise InputError(f"--rounds: expected >= 1, got {rounds}")
    if rounds > max_rounds:
        raise InputError(f"--rounds: {rounds} rounds, more than --max-rounds {max_rounds}")


def one_line(exc: Exception) -> str:
    """An error as one line: a pydantic ValidationError becomes 'field: message (got value)'
    for each error, joined by '; ' (its own text spans several lines and a help URL)."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return " ".join(str(exc).split())
    parts = []
    for e in errors():
        where = ".".join(str(p) for p in e.get("loc", ())) or "value"
        parts.append(f"{where}: {e.get('msg', '')} (got {e.get('input')!r})")
    return "; ".join(parts)


def check_caps(team: TeamSpec, max_agents: int, max_rounds: int) -> None:
    """Refuse a team larger than the caps, in one line naming the option that allows it."""
    if len(team.agents) > max_agents:
        raise InputError(
            f"team {team.name!r} has {len(team.agents)} agents, more than --max-agents {max_agents}"
        )
    if team.rounds > max_rounds:
        raise InputError(
            f"team {team.name!r} has {team.rounds} rounds, more than --max-rounds {max_rounds}"
        )


class StepLine:
    """Renders the StepObserver's reports on stderr: one live, rewritten line on a terminal,
    plain lines otherwise (so a log shows the run going)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty()
        self.dirty = False

    def __call__(self, r: StepReport) -> None:
        text = (
            f"agent {r.agent} round {r.round} step {r.step} ({r.kind}): "
            f"{r.calls} calls, {r.tokens} tokens so far"
        )
        if self.live:
            self.stream.write(f"\r\x1b[K{text}")
            self.dirty = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End the live line so what follows starts on a fresh line."""
        if self.dirty:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.dirty = False


def shown(path: object) -> str:
    """A path as it can be printed on any console: a byte of its name that is not UTF-8
    (a lone surrogate in Python) shown as \\udcXX instead of failing the print."""
    return str(path).encode("utf-8", "backslashreplace").decode("utf-8")


def emit_json(doc: Any) -> None:
    """Write one JSON document (and a newline) on stdout."""
    sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")
    sys.stdout.flush()


def train_step(info: Any) -> None:
    """One line (stderr) per policy-gradient update of AgentPrune's mask training."""
    print(
        f"training step {info.step + 1}: utility {info.utility:.3f}, baseline {info.baseline:.3f}",
        file=sys.stderr,
        flush=True,
    )
