"""The fault suite: a real loopback server answers with each fault; each ends in its typed error
within the configured time-out and retries (OpenAIModel, sync and async, and `check_server`)."""

from __future__ import annotations

import asyncio
import re
import socket
import time

import pytest

from overseer.models import Completion, OpenAIModel, StructuredOutputError, Usage, ask_structured
from overseer.models._check import check_server
from overseer.models._types import (
    ContextWindowError,
    ModelConnectionError,
    ModelError,
    ModelOutputError,
    ModelRequestError,
    ModelTimeoutError,
    ModelUnavailableError,
)

from .fault_server import HANG_S, fault_server

TIMEOUT, RETRIES = 0.5, 1
ASK = [{"role": "user", "content": "x"}]

# fault -> (typed error, words of its message, requests the client makes)
FAULTS: dict[str, tuple[type[ModelError], str, int]] = {
    "500": (ModelUnavailableError, "HTTP 500 after retries (2 attempts)", 1 + RETRIES),
    "429": (ModelUnavailableError, "HTTP 429 after retries (2 attempts)", 1 + RETRIES),
    "hang": (
        ModelTimeoutError,
        "timed out (no complete reply within 0.5 s) after retries (2 attempts)",
        1 + RETRIES,
    ),
    "close": (ModelConnectionError, "cannot connect after retries (2 attempts)", 1 + RETRIES),
    "truncated": (ModelOutputError, "reply is not valid JSON", 1),
    "html": (ModelOutputError, "not an OpenAI chat completion but text: '<html>", 1),
    "no-choices": (ModelOutputError, "not an OpenAI chat completion", 1),
    "empty-choices": (ModelOutputError, 'the reply has no choices ("choices": [])', 1),
    "context": (ContextWindowError, "prompt over the context window", 1),
}


def _call(model: OpenAIModel, use_async: bool) -> object:
    if use_async:
        return asyncio.run(model.acomplete(ASK))
    return model.complete(ASK)


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("kind", list(FAULTS))
def test_each_fault_is_its_typed_error(kind: str, use_async: bool) -> None:
    error, words, requests = FAULTS[kind]
    with fault_server(kind) as (url, fault):
        model = OpenAIModel("m", base_url=url, timeout_s=TIMEOUT, max_retries=RETRIES)
        start = time.monotonic()
        with pytest.raises(error, match=re.escape(words)) as info:
            _call(model, use_async)
        elapsed = time.monotonic() - start
    assert type(info.value) is error  # not merely a parent class
    assert url in str(info.value)
    assert len(fault.seen) == requests
    if kind == "hang":  # cut by the time-out, not by the server finally answering
        assert elapsed < HANG_S


def test_retry_after_is_honoured_within_the_retries() -> None:
    with fault_server("429-then-ok") as (url, fault):
        model = OpenAIModel("m", base_url=url, timeout_s=TIMEOUT, max_retries=RETRIES)
        c = model.complete(ASK)
    assert c.text == "fine" and len(fault.seen) == 2
    assert fault.seen[1] - fault.seen[0] >= 0.9  # waited the server's Retry-After: 1


def test_no_retries_means_one_request() -> None:
    with fault_server("500") as (url, fault):
        model = OpenAIModel("m", base_url=url, timeout_s=TIMEOUT, max_retries=0)
        with pytest.raises(ModelUnavailableError, match=r"\(1 attempt, no retries\)"):
            model.complete(ASK)
    assert len(fault.seen) == 1


def test_non_json_text_under_a_schema_is_an_output_error() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    with fault_server("not-json-text") as (url, fault):
        model = OpenAIModel("m", base_url=url, timeout_s=TIMEOUT, max_retries=RETRIES)
        with pytest.raises(StructuredOutputError, match="not JSON") as info:
            asyncio.run(ask_structured(model, ASK, parse=dict, schema=schema, max_reasks=1))
    assert isinstance(info.value, ModelOutputError) and info.value.attempts == 2
    assert len(fault.seen) == 2  # one ask, one re-ask, no transport retries


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_check_server_passes_a_working_server() -> None:
    with fault_server("ok") as (url, fault):
        check_server(url, model="m", timeout_s=TIMEOUT)
    assert fault.paths == ["/v1/models", "/v1/chat/completions"]  # a one-token chat probe


@pytest.mark.parametrize(
    ("kind", "error", "words"),
    [
        ("500", ModelUnavailableError, "(GET /models): HTTP 500"),
        ("hang", ModelTimeoutError, "(GET /models): timed out after 0.5 s"),
        ("close", ModelConnectionError, "(GET /models): connection closed without a reply"),
        ("html", ModelOutputError, "not an OpenAI-compatible /models reply: '<html>"),
    ],
)
def test_check_server_names_the_url_and_what_failed(
    kind: str, error: type[ModelError], words: str
) -> None:
    with fault_server(kind) as (url, _), pytest.raises(error) as info:
        check_server(url, model="m", timeout_s=TIMEOUT)
    msg = str(info.value)
    assert msg.startswith(f"model server {url}") and words in msg and "\n" not in msg


def test_check_server_refused_and_bad_url() -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"
    with pytest.raises(ModelConnectionError, match="connection refused"):
        check_server(url, timeout_s=TIMEOUT)
    with pytest.raises(ModelRequestError, match="expected an http"):
        check_server("localhost:8080/v1")


# Issue 28: a trickling server, a reply without usage, empty choices, a 500 then an answer, and
# a Retry-After too long to wait.

TRICKLE_TIMEOUT = 1.5  # the trickled reply (about 250 bytes at 1 byte/s) would take minutes


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_timeout_is_a_deadline_for_the_whole_request(use_async: bool) -> None:
    with fault_server("trickle") as (url, fault):
        model = OpenAIModel("m", base_url=url, timeout_s=TRICKLE_TIMEOUT, max_retries=0)
        start = time.monotonic()
        with pytest.raises(ModelTimeoutError, match=r"no complete reply within 1\.5 s") as info:
            _call(model, use_async)
        elapsed = time.monotonic() - start
        model.close()
    assert url in str(info.value) and len(fault.seen) == 1
    assert elapsed < 30  # cut at the deadline, far before the reply's last byte


def test_check_server_deadline_covers_a_trickled_reply() -> None:
    with fault_server("trickle") as (url, fault), pytest.raises(ModelTimeoutError) as info:
        check_server(url, model="m", timeout_s=TRICKLE_TIMEOUT)
    assert f"model server {url} (GET /models): timed out after 1.5 s" in str(info.value)
    assert fault.paths == ["/v1/models"]


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_reply_without_usage_is_counted_by_estimate(use_async: bool) -> None:
    with fault_server("no-usage") as (url, _):
        model = OpenAIModel("m", base_url=url, timeout_s=TIMEOUT, max_retries=0)
        c = _call(model, use_async)
        model.close()
    assert isinstance(c, Completion) and c.text == "fine"
    # chars/4 rounded up, plus 4 tokens per message: "x" -> 1 + 4; "fine" -> 1
    assert c.usage == Usage(prompt_tokens=5, completion_tokens=1, estimated=True)


def test_a_reply_with_usage_is_not_estimated() -> None:
    with fault_server("ok") as (url, _):
        c = OpenAIModel("m", base_url=url, timeout_s=TIMEOUT).complete(ASK)
    assert c.usage == Usage(prompt_tokens=3, completion_tokens=1) and not c.usage.estimated


def test_check_server_refuses_empty_choices_naming_the_url() -> None:
    with fault_server("empty-choices") as (url, fault), pytest.raises(ModelOutputError) as info:
        check_server(url, model="m", timeout_s=TIMEOUT)
    msg = str(info.value)
    assert msg.startswith(f"model server {url} (POST /chat/completions)") and "no choices" in msg
    assert fault.paths == ["/v1/models", "/v1/chat/completions"]


def test_check_server_retries_a_500_like_a_run_would() -> None:
    with fault_server("500-then-ok") as (url, fault):
        check_server(url, model="m", timeout_s=TIMEOUT, retries=1)
    assert fault.paths == ["/v1/models", "/v1/models", "/v1/chat/completions",
                           "/v1/chat/completions"]  # fmt: skip
    with fault_server("500-then-ok") as (url, _), pytest.raises(ModelUnavailableError) as info:
        check_server(url, model="m", timeout_s=TIMEOUT, retries=0)
    msg = str(info.value)
    assert "(GET /models): HTTP 500 Internal Server Error (1 attempt, no retries)" in msg


def test_a_500_then_an_answer_is_retried() -> None:
    with fault_server("500-then-ok") as (url, fault):
        c = OpenAIModel("m", base_url=url, timeout_s=TIMEOUT, max_retries=1).complete(ASK)
    assert c.text == "fine" and len(fault.seen) == 2


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_long_retry_after_fails_at_once_saying_so(use_async: bool) -> None:
    with fault_server("429-long") as (url, fault):
        model = OpenAIModel("m", base_url=url, timeout_s=TIMEOUT, max_retries=3)
        with pytest.raises(ModelUnavailableError) as info:
            _call(model, use_async)
    msg = str(info.value)
    assert "HTTP 429: the server asks to retry after 3600 s, more than the 60 s" in msg
    assert "not retried" in msg and "attempts" not in msg and url in msg
    assert len(fault.seen) == 1


def test_check_server_fails_at_once_on_a_long_retry_after() -> None:
    with fault_server("429-long") as (url, fault), pytest.raises(ModelUnavailableError) as info:
        check_server(url, model="m", timeout_s=TIMEOUT, retries=3)
    assert "retry after 3600 s" in str(info.value)
    assert fault.paths == ["/v1/models", "/v1/chat/completions"]


def test_one_model_serves_successive_event_loops() -> None:
    """`prune` and other commands call asyncio.run more than once with one model: each event
    loop gets its own client (before: 'Event loop is closed' from the first loop's pool)."""
    with fault_server("ok") as (url, fault):
        model = OpenAIModel("m", base_url=url, timeout_s=TIMEOUT, max_retries=0)
        texts = [asyncio.run(model.acomplete(ASK)).text for _ in range(3)]
        texts.append(model.complete(ASK).text)
        model.close()
    assert texts == ["fine"] * 4 and len(fault.seen) == 4
