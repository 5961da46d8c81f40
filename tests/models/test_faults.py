"""The fault suite: a real loopback server answers with each fault; each ends in its typed error
within the configured time-out and retries (OpenAIModel, sync and async, and `check_server`)."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from overseer.models import OpenAIModel, StructuredOutputError, ask_structured
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
    "hang": (ModelTimeoutError, "timed out after retries (2 attempts)", 1 + RETRIES),
    "close": (ModelConnectionError, "cannot connect after retries (2 attempts)", 1 + RETRIES),
    "truncated": (ModelOutputError, "reply is not valid JSON", 1),
    "html": (ModelOutputError, "not an OpenAI chat completion but text: '<html>", 1),
    "no-choices": (ModelOutputError, "not an OpenAI chat completion", 1),
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
        with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")) as info:
            _call(model, use_async)
        elapsed = time.monotonic() - start
    assert type(info.value) is error  # not merely a parent class
    assert url in str(info.value) or kind == "no-choices"
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
        with pytest.raises(ModelUnavailableError, match=r"\(1 attempts\)"):
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
    assert fault.paths == ["/v1/models"]


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
