"""Both HTTP faces fuzzed from the OpenAPI description of the chat-completions subset they
accept (`overseer serve`'s /openapi.json, which the proxy relays): schemathesis generates
requests that fit it (positive) and that break it (negative, raw bytes included). Every reply
is JSON (or an event stream of JSON), never a 5xx for a client's error, the connection still
usable after (a /health on the same connection), and the face prints no traceback."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.openapi import from_dict

from overseer.models._chat_request import openapi

from .faces import MODEL, Face, capped, check_reply, encoded

pytestmark = [pytest.mark.e2e, pytest.mark.fuzz]

OPERATION = from_dict(openapi(MODEL))["/v1/chat/completions"]["POST"]
#: examples per face and mode: about 100 s for both faces on one core
EXAMPLES = {GenerationMode.POSITIVE: 60, GenerationMode.NEGATIVE: 140}
PATH = "/v1/chat/completions"


def fuzz(face: Face, mode: GenerationMode) -> dict[str, int]:
    """Send EXAMPLES[mode] generated requests; the counts of inputs and replies by status."""
    seen: dict[str, int] = {"inputs": 0}

    @settings(
        max_examples=EXAMPLES[mode], derandomize=True, database=None, deadline=None,
        suppress_health_check=list(HealthCheck), print_blob=True,
    )  # fmt: skip
    @given(case=OPERATION.as_strategy(generation_mode=mode))
    def one(case: Any) -> None:
        body = encoded(capped(case.body))
        status, kind, data = face.exchange("POST", PATH, body)
        seen["inputs"] += 1
        seen[str(status)] = seen.get(str(status), 0) + 1
        problem = check_reply(status, kind, data)
        assert problem is None, f"{problem}\nrequest: {body[:400]!r}"
        status, _, data = face.exchange("GET", "/health", None)  # the same connection
        assert status == 200 and json.loads(data)

    one()
    assert "Traceback" not in face.stderr(), face.stderr()[-3000:]
    return seen


@pytest.mark.parametrize("mode", list(EXAMPLES), ids=[m.value for m in EXAMPLES])
def test_serve_answers_every_fuzzed_request_in_json(served: Face, mode: GenerationMode) -> None:
    seen = fuzz(served, mode)
    assert seen["inputs"] >= EXAMPLES[mode] // 2
    if mode is GenerationMode.POSITIVE:  # requests that fit the description are served
        assert seen.get("200", 0) >= seen["inputs"] // 10, seen


@pytest.mark.parametrize("mode", list(EXAMPLES), ids=[m.value for m in EXAMPLES])
def test_the_proxy_answers_every_fuzzed_request_in_json(
    proxied: Face, mode: GenerationMode
) -> None:
    seen = fuzz(proxied, mode)
    assert seen["inputs"] >= EXAMPLES[mode] // 2


MALFORMED = [
    ({"messages": [5]}, "messages[0]: expected a message object"),
    ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content: "),
    ({"messages": [{"role": "user", "content": [5]}]}, "messages[0].content[0]: "),
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]}, ".text: "),
    ({"messages": [{"role": "assistant", "content": "", "tool_calls": "x"}]}, ".tool_calls: "),
    ({"messages": [{"role": "user", "content": "hi"}], "user": "r\U000e87cf"}, "user: "),
    ({"messages": [{"role": "user", "content": "hi"}], "metadata": 5}, "metadata: "),
]


@pytest.mark.parametrize("body,says", MALFORMED, ids=[s for _, s in MALFORMED])
def test_the_proxy_refuses_malformed_messages_in_json(
    proxied: Face, body: dict[str, Any], says: str
) -> None:
    status, kind, data = proxied.exchange("POST", PATH, encoded(dict(body, max_tokens=2)))
    assert (status, kind) == (400, "application/json")
    assert says in json.loads(data)["error"]["message"]
    status, _, _ = proxied.exchange("GET", "/health", None)
    assert status == 200
