"""The sandbox's public records: the limits a run gets, what it returns, and its setup error."""

from __future__ import annotations

import math
from dataclasses import dataclass


class SandboxUnavailable(RuntimeError):
    """The kernel isolation cannot be set up here, so the code was not run at all."""


@dataclass(frozen=True)
class SandboxLimits:
    """Resource caps for one sandboxed run, so model code cannot hang or starve the host."""

    timeout_s: float = 10.0
    memory_mb: int = 512
    cpu_s: int | None = None
    max_processes: int = 32
    max_file_mb: int = 16
    max_output_bytes: int = 200_000

    def __post_init__(self) -> None:
        """Reject caps that would make the sandbox meaningless, before anything is spawned."""
        if not (self.timeout_s > 0 and math.isfinite(self.timeout_s)):
            raise ValueError(f"timeout_s must be a positive finite number, got {self.timeout_s!r}")
        for name in ("memory_mb", "max_processes", "max_file_mb", "max_output_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.cpu_s is not None and (not isinstance(self.cpu_s, int) or self.cpu_s <= 0):
            raise ValueError(f"cpu_s must be a positive int or None, got {self.cpu_s!r}")

    @property
    def effective_cpu_s(self) -> int:
        """RLIMIT_CPU seconds: `cpu_s`, or the wall-clock time-out rounded up plus one."""
        return self.cpu_s if self.cpu_s is not None else math.ceil(self.timeout_s) + 1


@dataclass(frozen=True)
class SandboxResult:
    """What a sandboxed run did: exit status, captured (possibly truncated) output, timing."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float
    isolation: str

    @property
    def ok(self) -> bool:
        """True when the code ran to completion and exited 0."""
        return self.returncode == 0 and not self.timed_out
