"""The upstream's reply on its way back: a stream relayed event by event and booked before its
end, a JSON reply booked, a copied note asked again (the proxy's `_app` calls these)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp

from overseer.models import Usage
from overseer.models.positions import logprobs_of
from overseer.proxy._gateway import Clock, comment, last_event_end, sse_error
from overseer.proxy._runs import ProxyRun, text_of, usage_of


@dataclass
class Call:
    """One relayed model call: its run and agent, the model asked and the messages sent."""

    run: ProxyRun
    agent: str
    model: str
    messages: Any
    clock: Clock


def _read_events(events: bytes, text: list[str]) -> Usage | None:
    """The usage the complete SSE events in `events` report (their text appended to `text`)."""
    usage = None
    for event in events.split(b"\n\n"):
        event = event.strip()
        if not event.startswith(b"data: {"):
            continue
        try:
            chunk = json.loads(event[6:])
        except ValueError:
            continue
        if not isinstance(chunk, dict):
            continue
        usage = usage_of(chunk) or usage
        for c in chunk.get("choices") or ():
            if isinstance(c, dict):
                text.append(text_of((c.get("delta") or {}).get("content")))
    return usage


async def relay(
    resp: aiohttp.ClientResponse, call: Call, upstream: str, t1: float
) -> AsyncIterator[bytes]:
    """The upstream's stream, each complete event as it arrives; booked before its last event
    (`[DONE]`), after a comment giving overseer's share of the request; an upstream that breaks
    the stream off ends it with an error event the SDKs raise."""
    tail, usage, failed = b"", None, None
    text: list[str] = []
    done: bytes | None = None
    booked = False
    try:
        it = resp.content.iter_any().__aiter__()
        while True:
            call.clock.away()
            try:
                block = await it.__anext__()
            except StopAsyncIteration:
                break
            except (aiohttp.ClientError, TimeoutError) as exc:
                failed = exc
                break
            finally:
                call.clock.back()
            tail += block
            end = last_event_end(tail)
            if not end:
                continue
            ready, tail = tail[:end], tail[end:]
            usage = _read_events(ready, text) or usage
            at = ready.find(b"data: [DONE]")
            if at >= 0:  # held back until the call is booked
                ready, done = ready[:at], ready[at:]
            if ready:
                yield ready
        resp.release()
        booked = True
        await _book(call, usage, "".join(text), t1)
        yield comment("x-overseer-overhead-ms", call.clock.ms())
        if failed is not None:
            yield sse_error(upstream, failed)
        elif done is not None or tail.strip():
            yield (done or b"") + tail
    finally:
        resp.release()
        if not booked:  # the client left: the call is booked all the same
            await _book(call, usage, "".join(text), t1)


async def _book(call: Call, usage: Usage | None, text: str, t1: float) -> None:
    latency = time.perf_counter() - t1
    spent = usage or Usage(estimated=True)
    await call.run.book(call.agent, call.model, spent, latency, call.messages, text)


def _reply_of(data: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    """A JSON reply and its first choice's message ({} for what is not one)."""
    try:
        reply = json.loads(data)
    except ValueError:
        reply = {}
    if not isinstance(reply, dict):
        reply = {}
    choices = reply.get("choices") or [{}]
    choice: dict[str, Any] = choices[0] if isinstance(choices[0], dict) else {}
    got = choice.get("message")
    return reply, got if isinstance(got, dict) else {}


def answer_of(data: bytes) -> str | None:
    """A JSON reply's answer text, None when it called tools (no answer to check)."""
    _, message = _reply_of(data)
    return None if message.get("tool_calls") else text_of(message.get("content"))


def with_answer(data: bytes, answer: str) -> bytes:
    """JSON reply `data` with its first choice's answer text replaced by `answer` (the answer
    that stands: `GuardRun.settle`); `data` as it is when it is no such reply."""
    reply, message = _reply_of(data)
    if not message:
        return data
    message["content"] = answer
    return json.dumps(reply).encode()


async def book_reply(data: bytes, call: Call, t1: float) -> str | None:
    """Book a relayed reply with the usage it reports (an estimate flag when none); its
    answer text, or None when it called tools (no answer to check)."""
    reply, message = _reply_of(data)
    usage = usage_of(reply) or Usage(estimated=True)
    text = text_of(message.get("content"))
    latency = time.perf_counter() - t1
    model = str(reply.get("model") or call.model)
    choice = (reply.get("choices") or [None])[0]
    logprobs = logprobs_of(choice) if isinstance(choice, dict) else None  # for a monitor
    await call.run.book(call.agent, model, usage, latency, call.messages, text, logprobs or ())
    return None if message.get("tool_calls") else text


def asked_again(body: dict[str, Any], answer: str, turn: str) -> dict[str, Any]:
    """The request once more: the reply that copied overseer's words, then the user turn
    saying so and restating the question; no tool may be called."""
    said = {"role": "assistant", "content": answer}
    again = dict(body, messages=[*body["messages"], said, {"role": "user", "content": turn}])
    if again.get("tools"):
        again["tool_choice"] = "none"
    return again
