"""`overseer proxy`: oversee any OpenAI-compatible client by changing its base URL.

The proxy relays chat completions to an upstream OpenAI-compatible server and applies the rule
tier to each request's messages, per run and agent (read from `X-Overseer-Run` /
`X-Overseer-Agent`, else the request's `metadata` / `user`, else fingerprints of its prompts):
tool outputs purified, repeats masked, loops refused as the tool result; per-run budgets are
answered with an OpenAI-shaped error the SDKs raise. Each run has a ledger and a trace in the
runtime's schema.

Exported is what a user needs to run one (`Proxy`, `ProxySettings`; `server_gc` for a process
that only serves it) and to see how a request is attributed (`identify`, `Who`); and
`UsageMeter`, a relay that records what an OpenAI-compatible server reports for each chat
completion (`MeteredCompletion`: usage, prompt tokens evaluated, read by `read_usage`), which
examples, benchmarks and tests measure with.

    from overseer.proxy import Proxy
    proxy = Proxy("http://127.0.0.1:8080/v1", port=4000)  # clients use proxy.base_url
    ...
    proxy.close()
"""

from overseer.proxy._app import Proxy, ProxyOptions, serve_workers
from overseer.proxy._gateway import server_gc
from overseer.proxy._meter import MeteredCompletion, UsageMeter, read_usage
from overseer.proxy._runs import ProxySettings, Who, identify

__all__ = [
    "MeteredCompletion",
    "Proxy",
    "ProxyOptions",
    "ProxySettings",
    "UsageMeter",
    "Who",
    "identify",
    "read_usage",
    "serve_workers",
    "server_gc",
]
