"""The embedded model's HTTP front on the real llama.cpp model (SmolLM2): tool calls over
plain and streamed chat completions, the answer grammar, pass-through and faults."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from typing import Any

import openai
import pytest

from overseer.models import LlamaCppModel
from overseer.models._registry import model_path
from overseer.models.errors import ModelRequestError

pytestmark = pytest.mark.e2e

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather of a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


def _client(model: LlamaCppModel) -> openai.OpenAI:
    return openai.OpenAI(base_url=model.base_url, api_key="none", max_retries=0)


def test_a_forced_call_comes_back_as_tool_calls(embedded_model: LlamaCppModel) -> None:
    r = _client(embedded_model).chat.completions.create(
        model=embedded_model.name, messages=ASK, tools=TOOLS, tool_choice="required",  # type: ignore[arg-type]
        max_tokens=48, temperature=0.0,
    )  # fmt: skip
    (call,) = r.choices[0].message.tool_calls or []
    assert r.choices[0].finish_reason == "tool_calls" and r.choices[0].message.content is None
    assert call.function.name == "get_weather"  # type: ignore[union-attr]
    assert isinstance(json.loads(call.function.arguments)["city"], str)  # type: ignore[union-attr]
    assert r.usage is not None and r.usage.prompt_tokens > 0


def test_a_streamed_forced_call_comes_back_as_tool_call_chunks(
    embedded_model: LlamaCppModel,
) -> None:
    stream = _client(embedded_model).chat.completions.create(
        model=embedded_model.name, messages=ASK, tools=TOOLS,  # type: ignore[arg-type]
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        max_tokens=48, temperature=0.0, stream=True, stream_options={"include_usage": True},
    )  # fmt: skip
    chunks = list(stream)
    calls = [c for ch in chunks if ch.choices for c in ch.choices[0].delta.tool_calls or []]
    assert [c.function.name for c in calls] == ["get_weather"]  # type: ignore[union-attr]
    assert [ch.choices[0].finish_reason for ch in chunks if ch.choices][-1] == "tool_calls"
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens > 0


def test_without_tools_text_streams_and_other_paths_pass_through(
    embedded_model: LlamaCppModel,
) -> None:
    stream = _client(embedded_model).chat.completions.create(
        model=embedded_model.name, messages=ASK, max_tokens=8, temperature=0.0, stream=True
    )
    text = "".join(ch.choices[0].delta.content or "" for ch in stream if ch.choices)
    assert text.strip()
    assert embedded_model.count_tokens("hello world") >= 2
    base = embedded_model.base_url.removesuffix("/v1")
    with urllib.request.urlopen(base + "/health", timeout=30) as resp:
        assert json.loads(resp.read()) == {"status": "ok", "in_flight": 0}


@pytest.mark.parametrize(
    "closed", [{}, {"tools": TOOLS, "tool_choice": "none"}], ids=["no tools", "tool_choice none"]
)
def test_closed_tools_after_tool_use_give_no_call_as_text(
    embedded_model: LlamaCppModel, closed: dict[str, Any]
) -> None:
    """Tools closed by leaving them out, or (as the proxy closes them) offered with
    tool_choice "none": either way the reply cannot begin as a call written as text."""
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    messages: list[Any] = [
        *ASK,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "Sunny."},
        {"role": "user", "content": 'Reply with exactly {"name": "get_weather"}'},
    ]
    r = _client(embedded_model).chat.completions.create(
        model=embedded_model.name, messages=messages, max_tokens=24, temperature=0.0, **closed
    )
    text = r.choices[0].message.content or ""
    assert text and text[0] not in "{[<` \n"
    assert not r.choices[0].message.tool_calls


def test_a_body_that_is_not_json_is_a_400_naming_it(embedded_model: LlamaCppModel) -> None:
    req = urllib.request.Request(
        embedded_model.base_url + "/chat/completions", data=b"{not json",
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=30)
    assert err.value.code == 400
    assert "request body is not JSON" in json.loads(err.value.read())["error"]["message"]


def test_a_port_in_use_is_one_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ModelRequestError, match=f"listen on 127.0.0.1:{port}: cannot serve"):
            LlamaCppModel(model_path("smollm2-135m"), n_ctx=512, n_threads=1, port=port)
