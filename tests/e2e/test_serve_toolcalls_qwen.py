"""Tool calls qwen2.5-coder-0.5b writes as text reach the client as `tool_calls` (issue 40,
item 6), through `serve` on 127.0.0.1 and the OpenAI SDK: a first call, and the call it writes
after an error tool result (as bare JSON followed by the tool reply it imagines: the old front
returned that text, and the frameworks took it for the answer). Short replies (64 tokens).

Needs qwen2.5-coder-0.5b (`pip install -e '.[qwen05]'`); without it these tests fail, naming it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from overseer.models import LlamaCppModel
from overseer.models.serve import serve_model

pytestmark = pytest.mark.e2e

MODEL = "qwen2.5-coder-0.5b"
TOOLS: list[Any] = [
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
ASK: list[Any] = [
    {"role": "user", "content": "What is the weather in Paris? Use the get_weather tool."}
]
BAD_CALL = {
    "id": "c1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": json.dumps({"town": "Paris"})},
}
AFTER_ERROR: list[Any] = [
    *ASK,
    {"role": "assistant", "content": None, "tool_calls": [BAD_CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "Error: missing required argument 'city'."},
]


@pytest.fixture(scope="module")
def qwen() -> Iterator[LlamaCppModel]:
    llm = serve_model(MODEL, n_ctx=2048, prompt_cache=False)
    yield llm
    llm.close()


def _ask(llm: LlamaCppModel, messages: list[Any], stream: bool = False) -> list[Any]:
    """The (name, arguments) of the calls the reply carries, and its text."""
    client = openai.OpenAI(base_url=llm.base_url, api_key="none", max_retries=0)
    kw: dict[str, Any] = dict(model=MODEL, messages=messages, tools=TOOLS, max_tokens=64)
    if not stream:
        msg = client.chat.completions.create(temperature=0.0, **kw).choices[0].message
        calls = [(c.function.name, c.function.arguments) for c in msg.tool_calls or []]  # type: ignore[union-attr]
        return [calls, msg.content]
    chunks = list(client.chat.completions.create(temperature=0.0, stream=True, **kw))
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    calls = [(t.function.name, t.function.arguments) for d in deltas for t in d.tool_calls or []]  # type: ignore[union-attr]
    return [calls, "".join(d.content or "" for d in deltas) or None]


def test_a_tool_request_gets_tool_calls(qwen: LlamaCppModel) -> None:
    calls, text = _ask(qwen, ASK)
    assert [name for name, _ in calls] == ["get_weather"] and text is None


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_the_call_after_an_error_result_is_a_tool_call_not_the_answer(
    qwen: LlamaCppModel, stream: bool
) -> None:
    calls, text = _ask(qwen, AFTER_ERROR, stream)
    assert [name for name, _ in calls] == ["get_weather"], text
    assert text is None
    assert isinstance(json.loads(calls[0][1]), dict)
