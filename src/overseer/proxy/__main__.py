"""`python -m overseer.proxy --upstream URL [--port N]`: the proxy until Ctrl-C or SIGTERM
(then it stops listening, finishes the replies in flight, ends every run's trace; exit 0)."""

from __future__ import annotations

import argparse
import signal
import threading
from types import FrameType

from overseer.proxy._app import Proxy
from overseer.proxy._runs import ProxySettings


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m overseer.proxy", description=__doc__)
    p.add_argument("--upstream", required=True, help="the upstream's base URL (ends in /v1)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=4000)
    p.add_argument("--no-rules", action="store_true", help="relay only (no rule tier)")
    p.add_argument("--budget-tokens", type=int, default=None, help="per run")
    p.add_argument("--budget-calls", type=int, default=None, help="per run")
    p.add_argument("--trace-dir", default="runs", help="one trace per run ('' : none)")
    a = p.parse_args(argv)
    settings = ProxySettings(
        budget_tokens=a.budget_tokens,
        budget_calls=a.budget_calls,
        trace_dir=a.trace_dir or None,
        **({"rules": None} if a.no_rules else {}),
    )
    proxy = Proxy(a.upstream, settings, host=a.host, port=a.port)
    print(f"overseer: proxy at {proxy.base_url} -> {a.upstream} (Ctrl-C stops)", flush=True)
    stop = threading.Event()

    def on_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
    while not stop.wait(0.5):
        pass
    proxy.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
