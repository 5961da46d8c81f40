"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for framework tests.

The small embedded model cannot drive a framework's tool calling reliably, so framework e2e
tests talk to this real HTTP server instead: it answers `POST /v1/chat/completions` with the
replies a test scripts (text or tool calls), reports `usage` from the request's size (about
four characters a token, deterministic), streams when asked (`stream: true`, usage in the
last chunk), and records every request body so a test can check what reached the model.

    with LoopbackServer(repeat_tool("fetch", {"url": "x"}, times=8)) as srv:
        ChatOpenAI(base_url=srv.base_url, api_key="none", model="scripted")
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHARS_PER_TOKEN = 4
PAGE_CHARS = 50_000
PAGE_QUESTION = (
    "What is the aperture of the Tinbel telescope? Look it up at https://wiki.local/Tinbel"
)
PAGE_FACT = "The Tinbel telescope has a primary mirror aperture of 240 cm."


@dataclass(frozen=True)
class ToolCall:
    """One tool call the scripted model makes."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Reply:
    """One scripted assistant turn: text, tool calls, or both."""

    text: str = ""
    calls: tuple[ToolCall, ...] = ()


class _Server(ThreadingHTTPServer):
    """The standard library's threading server with a deep listen queue: 20 clients at once
    (the concurrency tests) overflowed its default of 5, and the kernel refused the rest."""

    request_queue_size = 256
    daemon_threads = True


#: (request body, number of this request from 1) -> the reply to send
Script = Callable[[Mapping[str, Any], int], Reply]


def count_tokens(text: str) -> int:
    """The server's token count for a text: ceil(chars / 4), at least 1 for a non-empty text."""
    return -(-len(text) // CHARS_PER_TOKEN)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return "" if content is None else json.dumps(content)


def message_tokens(m: Mapping[str, Any]) -> int:
    """Tokens of one message: its text and tool calls, plus 4."""
    total = 4 + count_tokens(_content_text(m.get("content")))
    for call in m.get("tool_calls") or []:
        fn = call.get("function", {})
        total += count_tokens(str(fn.get("name", "")) + str(fn.get("arguments", "")))
    return total


def prompt_tokens(body: Mapping[str, Any]) -> int:
    """Tokens the server bills for a request: its messages' text and tool calls, 4 per message."""
    return sum(message_tokens(m) for m in body.get("messages", []))


def cached_tokens(body: Mapping[str, Any], previous: Mapping[str, Any] | None) -> int:
    """Prompt tokens a prefix cache would serve: the messages this request shares, from the
    start, with the previous one (as llama.cpp's server reports `cached_tokens`)."""
    if previous is None:
        return 0
    total = 0
    for m, p in zip(body.get("messages", []), previous.get("messages", []), strict=False):
        if m != p:
            break
        total += message_tokens(m)
    return total


def messages_text(body: Mapping[str, Any], role: str | None = None) -> list[str]:
    """The text of each message of a recorded request (of one role, when given)."""
    return [
        _content_text(m.get("content"))
        for m in body.get("messages", [])
        if role is None or m.get("role") == role
    ]


def long_page(chars: int = PAGE_CHARS, fact: str = PAGE_FACT) -> str:
    """A web page of exactly `chars` characters: navigation, unrelated articles, and one
    paragraph (about 40% in) that answers `PAGE_QUESTION`. Deterministic."""
    nav = "Home | News | Sport | Weather | Shop | Login | Help | Contact | Privacy | Terms\n"
    topics = ("harbour ferries", "city budget", "football league", "bakery prices", "river walks")
    paras = [
        f"Title: Tinbel Observatory - Wiki\nURL: https://wiki.local/Tinbel\n{nav}",
    ]
    i = 0
    while sum(map(len, paras)) < chars:
        if i == 40:
            paras.append(
                f"Instruments. {fact} The dome opened in 1987 and houses a spectrograph.\n\n"
            )
        t = topics[i % len(topics)]
        paras.append(
            f"Article {i}: local news on {t}. Readers discussed {t} at length, with opinions "
            f"on schedules, costs and weather for item {i}. More on {t} next week.\n{nav}\n"
        )
        i += 1
    page = "".join(paras)
    return page[:chars]


def page_at(url: str) -> str:
    """The page a test's `fetch_page(url)` returns: `long_page()` for every address but the
    numbered mirrors `https://wiki.local/<n>`, each a page of its own (6,000 characters shorter
    per n, so no two are nearly equal), so fetching several of them is progress, not a loop."""
    tail = url.rsplit("/", 1)[-1]
    return long_page(PAGE_CHARS - 6_000 * (int(tail) + 1)) if tail.isdigit() else long_page()


def scripted(replies: Sequence[Reply]) -> Script:
    """Replies in order; past the end, the last one again."""
    if not replies:
        raise ValueError("scripted: expected at least one reply")
    return lambda body, n: replies[min(n, len(replies)) - 1]


def _last_tool_text(body: Mapping[str, Any]) -> str | None:
    msgs = list(body.get("messages", []))
    if msgs and msgs[-1].get("role") == "tool":
        return _content_text(msgs[-1].get("content"))
    return None


def call_then_answer(name: str, args: Mapping[str, Any], answer: str) -> Script:
    """Call `name(args)` once; once a tool result is in the input, give `answer`."""

    def script(body: Mapping[str, Any], n: int) -> Reply:
        if _last_tool_text(body) is None:
            return Reply(calls=(ToolCall(name, args),))
        return Reply(text=answer)

    return script


def page_script() -> Script:
    """The page task of every framework test: fetch the Tinbel page once, then answer."""
    return call_then_answer("fetch_page", {"url": "https://wiki.local/Tinbel"}, "240 cm")


def stubborn(name: str, args: Mapping[str, Any], answer: str = "done") -> Script:
    """A model that calls `name(args)` whenever the request offers tools, whatever the tool
    said (a refusal changes nothing), and answers only when no tool is offered."""

    def script(body: Mapping[str, Any], n: int) -> Reply:
        return Reply(calls=(ToolCall(name, args),)) if body.get("tools") else Reply(text=answer)

    return script


def status_loop() -> Script:
    """The loop task: `job_status(job=42)` keeps inviting the same call (8 at most)."""
    return repeat_tool("job_status", {"job": "42"}, times=8)


def repeat_tool(
    name: str,
    args: Mapping[str, Any],
    *,
    times: int,
    invite: str = "again",
    answer: str = "done",
    heed: str = "[overseer]",
) -> Script:
    """A model that calls `name(args)` while the last tool output contains `invite` (at most
    `times` calls in all), then answers. It heeds a refusal: a tool output starting with
    `heed` (overseer's notes do, even when they quote the earlier inviting result) ends it."""

    def script(body: Mapping[str, Any], n: int) -> Reply:
        last = _last_tool_text(body)
        made = sum(
            len(m.get("tool_calls") or [])
            for m in body.get("messages", [])
            if m.get("role") == "assistant"
        )
        invited = last is None or (invite in last and not last.startswith(heed))
        if made < times and invited:
            return Reply(calls=(ToolCall(name, args),))
        return Reply(text=answer)

    return script


class LoopbackServer:
    """A real HTTP chat-completions server on 127.0.0.1 answering from a `Script`.

    `requests` holds every request body received, `usages` the usage reported for each, in
    order (with `prompt_tokens_details.cached_tokens`: the prefix shared with the request
    before); `base_url` ends in `/v1` as OpenAI clients expect; `model` is the name it reports.
    """

    def __init__(self, script: Script, *, model: str = "scripted") -> None:
        self.script = script
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.usages: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens reported over all requests so far."""
        return sum(u["prompt_tokens"] for u in self.usages)

    @property
    def completion_tokens(self) -> int:
        return sum(u["completion_tokens"] for u in self.usages)

    @property
    def cached_tokens(self) -> int:
        """Prompt tokens reported as cached over all requests so far."""
        return sum(u["prompt_tokens_details"]["cached_tokens"] for u in self.usages)

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> LoopbackServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def answer(self, body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The assistant message for one request, and the usage billed for it."""
        with self._lock:
            previous = self.requests[-1] if self.requests else None
            self.requests.append(body)
            n = len(self.requests)
        reply = self.script(body, n)
        calls = [
            {
                "id": f"call_{n}_{i}",
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(dict(c.args))},
            }
            for i, c in enumerate(reply.calls)
        ]
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if calls:
            message["tool_calls"] = calls
        out = reply.text + "".join(c["function"]["arguments"] for c in calls)
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens(body),
            "completion_tokens": 1 + count_tokens(out),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens(body, previous)}
        with self._lock:
            self.usages.append(usage)
        return message, usage

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_GET(self) -> None:
                self._send(200, {"object": "list", "data": [{"id": server.model}]})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                body = json.loads(raw)
                message, usage = server.answer(body)
                if body.get("stream"):
                    self._stream(message, usage)
                else:
                    reply = _completion(server.model, message, usage)
                    if body.get("logprobs"):
                        reply["choices"][0]["logprobs"] = _logprobs(message, body)
                    self._send(200, reply)

            def _send(self, status: int, payload: Mapping[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, message: dict[str, Any], usage: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for chunk in _chunks(server.model, message, usage):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        return Handler


def _completion(model: str, message: dict[str, Any], usage: dict[str, Any]) -> dict[str, Any]:
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }


def _logprobs(message: Mapping[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
    """Token logprobs for a reply's text, as a server asked for `logprobs` writes them: one
    token per word, a fixed logprob and `top_logprobs` alternatives (deterministic)."""
    k = int(body.get("top_logprobs") or 0)
    words = str(message.get("content") or "").split() or [""]
    content = [
        {"token": w, "logprob": -0.25, "bytes": None,
         "top_logprobs": [{"token": w, "logprob": -0.25}]
         + [{"token": f"alt{j}", "logprob": -2.0 - j} for j in range(1, k)]}
        for w in words
    ]  # fmt: skip
    return {"content": content}


def _chunks(model: str, message: dict[str, Any], usage: dict[str, Any]) -> list[dict[str, Any]]:
    """The same answer as stream chunks: role+text, one chunk per tool call, finish, usage."""
    base = {
        "id": "chatcmpl-loopback",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
    }
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    out = [{**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}]
    for i, call in enumerate(message.get("tool_calls", [])):
        d = {"tool_calls": [{"index": i, **call}]}
        out.append({**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]})
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    out.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    out.append({**base, "choices": [], "usage": usage})
    return out
