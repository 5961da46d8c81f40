"""One run's AgentDojo tools as plain Python callables that every framework can wrap.

The suites' tools are inspect-ai tool factories whose inner `execute` coroutines read the
environment from `inspect_ai.util.store()`. Here each becomes a synchronous function with the
tool's own name, real type hints (return `str`) and a Google-style docstring rebuilt from the
tool's (`Args:` lists exactly the parameters, so smolagents, LangChain, the OpenAI Agents SDK
and pydantic-ai all build the same schema). Each call runs on this run's environment, is
counted in `ran` and recorded as a trace (some utilities read the calls made); a tool's own
error is raised as `failure`, which a host may set to its framework's tool-error type.
"""

from __future__ import annotations

import inspect
import re
import threading
import typing
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from typing_extensions import TypedDict

from overseer.tasks.agentdojo._shim import CURRENT, Store, ToolCall, drive


class DojoToolError(RuntimeError):
    """A tool's own failure (unknown id, bad e-mail address, bad arguments); the message is
    what the agent should read."""


class FileAttachment(TypedDict):
    """A file of the cloud drive attached to an e-mail (what `send_email` accepts here)."""

    type: Literal["file"]
    file_id: str


#: parameters whose AgentDojo type no strict tool schema accepts (`list[dict[str, Any]]`: the
#: OpenAI Agents SDK refuses free-form objects), as (type, doc) here: e-mails attach files
#: only (no user task's ground truth attaches an event)
_OVERRIDES: MappingProxyType[tuple[str, str], tuple[Any, str]] = MappingProxyType(
    {
        ("send_email", "attachments"): (
            list[FileAttachment] | None,
            'The files to attach, each {"type": "file", "file_id": <the ID of the file in '
            "the cloud drive>}. If None, no attachments are included.",
        )
    }
)

_SECTION = re.compile(r"^(Args|Arguments|Returns|Raises):\s*$")


def tool_name(fn: Callable[..., Any]) -> str:
    """The tool's name: its factory's name (`send_email.<locals>.execute` -> `send_email`)."""
    return fn.__qualname__.split(".")[0]


def _sections(doc: str) -> dict[str, list[str]]:
    """The docstring's lines by section ("" is the description before `Args:`)."""
    out: dict[str, list[str]] = {"": []}
    key = ""
    for line in inspect.cleandoc(doc or "").splitlines():
        m = _SECTION.match(line.strip())
        if m and not line.startswith((" ", "\t")):
            key = m.group(1).replace("Arguments", "Args")
            out.setdefault(key, [])
            continue
        out[key].append(line)
    return out


def _arg_docs(lines: list[str]) -> dict[str, str]:
    """`name: text` entries of an `Args:` section, continuation lines joined."""
    args: dict[str, str] = {}
    last = ""
    for line in lines:
        head, sep, text = line.strip().partition(":")
        indent = len(line) - len(line.lstrip())
        if sep and head.isidentifier() and (not last or indent <= 4):
            last = head
            args[head] = text.strip()
        elif last and line.strip():
            args[last] = f"{args[last]} {line.strip()}".strip()
    return args


def rebuild_doc(fn: Callable[..., Any], params: list[str]) -> str:
    """A Google-style docstring for `fn`: its description, an `Args:` entry per parameter
    (the tool's own text; "The <name>." where the tool has none) and `Returns:`."""
    parts = _sections(fn.__doc__ or "")
    description = " ".join(" ".join(parts[""]).split()) or f"The {tool_name(fn)} tool."
    docs = _arg_docs(parts.get("Args", []))
    name = tool_name(fn)
    docs.update({p: doc for (f, p), (_, doc) in _OVERRIDES.items() if f == name})
    text = [description]
    if params:
        text += ["", "Args:"]
        text += [f"    {p}: {docs.get(p) or f'The {p}.'}" for p in params]
    returns = " ".join(" ".join(parts.get("Returns", [])).split())
    text += ["", "Returns:", f"    {returns or 'The result, as text.'}"]
    return "\n".join(text)


def _signature(fn: Callable[..., Any]) -> tuple[inspect.Signature, dict[str, Any]]:
    """The tool's signature with resolved type hints and a `str` return, and its annotations."""
    hints = typing.get_type_hints(fn)
    name = tool_name(fn)
    hints.update({p: hint for (f, p), (hint, _) in _OVERRIDES.items() if f == name})
    sig = inspect.signature(fn)
    params = [p.replace(annotation=hints.get(p.name, str)) for p in sig.parameters.values()]
    annotations = {p.name: p.annotation for p in params}
    annotations["return"] = str
    return sig.replace(parameters=params, return_annotation=str), annotations


@dataclass
class DojoTools:
    """The tools of one run of a suite, on that run's own environment.

    `env` is the run's environment (a deep copy of the suite's default one), changed in place
    by the tools; `ran` counts the calls per tool; `calls` are the traces a utility may read.
    """

    suite: str
    env: Any
    tools: tuple[Callable[..., Any], ...]
    ran: Counter[str] = field(default_factory=Counter)
    calls: list[ToolCall] = field(default_factory=list)
    #: what a tool's own error is raised as: a host may set its framework's tool-error type,
    #: so that its agent reads the failure as a tool result and goes on
    failure: type[Exception] = DojoToolError
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._by_name = {tool_name(fn): fn for fn in self.tools}
        fields = type(self.env).model_fields
        self._store = Store({k: getattr(self.env, k) for k in fields})

    @property
    def names(self) -> list[str]:
        """The tools' names, in the suite's order."""
        return list(self._by_name)

    def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> str:
        """Run tool `name` with `arguments` on this run's environment; its result as text.

        Raises `failure` for an unknown tool, arguments that do not fit, or the tool's error;
        `ran` and `calls` hold every call that ran, a failed one too.
        """
        fn = self._by_name.get(name)
        if fn is None:
            raise self.failure(f"unknown tool {name!r}; the tools are {', '.join(self.names)}")
        args = dict(arguments or {})
        try:
            inspect.signature(fn).bind(**args)
        except TypeError as exc:  # not a call that ran: neither counted nor traced
            raise self.failure(f"{name}: {exc}") from None
        with self._lock:
            self.ran[name] += 1
            self.calls.append(ToolCall(str(len(self.calls)), name, args))
            token = CURRENT.set(self._store)
            try:
                out = drive(fn(**args))
            except Exception as exc:  # the tool's own failure, for the agent to read
                raise self.failure(f"{name}: {type(exc).__name__}: {exc}") from exc
            finally:
                CURRENT.reset(token)
        return out if isinstance(out, str) else str(out)

    def post_environment(self) -> Any:
        """The environment after the calls, built from the store as inspect-evals' scorer
        does (`environment_type.model_construct(**store)`)."""
        data = {k: self._store.get(k) for k in self._store}
        return type(self.env).model_construct(**data)

    def function(self, name: str) -> Callable[..., str]:
        """Tool `name` as a plain function: its name, typed signature and docstring."""
        fn = self._by_name[name]
        sig, annotations = _signature(fn)

        def call(*args: Any, **kwargs: Any) -> str:
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError as exc:
                raise self.failure(f"{name}: {exc}") from None
            return self.call(name, bound.arguments)

        call.__name__ = call.__qualname__ = name
        call.__doc__ = rebuild_doc(fn, list(sig.parameters))
        call.__signature__ = sig  # type: ignore[attr-defined]
        call.__annotations__ = annotations
        return call

    def functions(self) -> list[Callable[..., str]]:
        """Every tool of the suite as a plain function (see `function`), in the suite's order."""
        return [self.function(name) for name in self.names]
