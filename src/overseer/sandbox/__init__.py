"""Run untrusted, model-written Python in a kernel-isolated subprocess (never in-process).

Each run gets fresh network, mount, pid, IPC and UTS namespaces, a private read-only root with
only /usr, the interpreter's standard library and size-capped tmpfs scratch space, rlimits, and
(as root) its own unprivileged uid; on time-out its whole process tree is killed.
"""

from overseer.sandbox._limits import SandboxLimits, SandboxResult, SandboxUnavailable
from overseer.sandbox._run import arun_python, run_python

__all__ = ["SandboxLimits", "SandboxResult", "SandboxUnavailable", "arun_python", "run_python"]
