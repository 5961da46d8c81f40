"""Logic of the model layer without a real model: request shape, response parsing, registry."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest

from overseer.models import Completion, Request, ScriptedModel, TokenLogprob, Usage, model_card
from overseer.models import _registry as registry
from overseer.models._openai_shape import build_request, parse_response
from overseer.models._types import ModelNotInstalledError, ModelOutputError, ModelRequestError

MSG = [{"role": "user", "content": "hi"}]


def test_build_request_carries_schema_logprobs_stop_seed() -> None:
    body = build_request(
        Request.of(
            MSG,
            max_tokens=7,
            temperature=0.5,
            stop=["\n"],
            schema={"type": "object"},
            top_logprobs=3,
            seed=11,
        )
    )
    assert body["max_tokens"] == 7 and body["stop"] == ["\n"] and body["seed"] == 11
    assert body["logprobs"] is True and body["top_logprobs"] == 3
    assert body["response_format"]["json_schema"]["schema"] == {"type": "object"}


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"temperature": 3.0}, "temperature"),
        ({"top_logprobs": 50}, "top_logprobs"),
    ],
)
def test_request_rejects_bad_parameters(kw: dict, field: str) -> None:
    args = {
        "max_tokens": 5,
        "temperature": 0.0,
        "stop": None,
        "schema": None,
        "top_logprobs": 0,
        "seed": None,
    } | kw
    with pytest.raises(ModelRequestError, match=field):
        Request.of(MSG, **args)


def test_parse_response_reads_usage_cache_and_logprobs() -> None:
    data = {
        "choices": [
            {
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "B"},
                "logprobs": {
                    "content": [
                        {
                            "token": "B",
                            "logprob": -0.1,
                            "top_logprobs": [
                                {"token": "B", "logprob": -0.1},
                                {"token": "A", "logprob": -2.4},
                            ],
                        }
                    ]
                },
            }
        ],
        "usage": {
            "prompt_tokens": 30,
            "completion_tokens": 1,
            "prompt_tokens_details": {"cached_tokens": 29},
        },
    }
    c = parse_response(data, latency_s=0.2, model="m")
    assert c.text == "B" and c.finish_reason == "stop"
    assert c.usage == Usage(prompt_tokens=30, completion_tokens=1, cached_prompt_tokens=29)
    assert c.logprobs == (TokenLogprob("B", -0.1, (("B", -0.1), ("A", -2.4))),)


def test_parse_response_shape_error_is_typed() -> None:
    with pytest.raises(ModelOutputError, match="not an OpenAI chat completion"):
        parse_response({"choices": []}, latency_s=0, model="m")


def test_completion_json_errors_name_the_text() -> None:
    c = Completion("not json", Usage(), 0.0, model="m")
    with pytest.raises(ModelOutputError, match="not JSON"):
        c.json()
    assert Completion('{"a": 1}', Usage(), 0.0).json() == {"a": 1}


def test_messages_are_validated_with_the_bad_index() -> None:
    m = ScriptedModel(["x"])
    with pytest.raises(ModelRequestError, match=r"messages\[1\]\.role"):
        m.complete([{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}])
    with pytest.raises(ModelRequestError, match="at least one"):
        m.complete([])


def test_scripted_replies_in_order_then_fails_loudly() -> None:
    m = ScriptedModel(["one", {"answer": 2}, ValueError("boom")])
    assert m.complete(MSG).text == "one"
    assert m.complete(MSG, schema={"type": "object"}).json() == {"answer": 2}
    with pytest.raises(ValueError, match="boom"):
        m.complete(MSG)
    with pytest.raises(Exception, match="ran out of replies"):
        m.complete(MSG)
    assert len(m.calls) == 4 and m.calls[1]["schema"] == {"type": "object"}


def test_scripted_function_usage_and_logprobs() -> None:
    m = ScriptedModel(lambda msgs: msgs[-1]["content"].upper())
    c = m.complete([{"role": "user", "content": "hello there"}], top_logprobs=3)
    assert c.text == "HELLO THERE"
    assert c.usage.prompt_tokens > 0 and c.usage.completion_tokens > 0
    assert c.logprobs is not None and len(c.logprobs) == 2 and len(c.logprobs[0].top) == 3


async def test_scripted_async_latency_overlaps() -> None:
    m = ScriptedModel(lambda _: "ok", latency_s=0.2)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    out = await asyncio.gather(*(m.acomplete(MSG) for _ in range(5)))
    assert [c.text for c in out] == ["ok"] * 5
    assert loop.time() - t0 < 0.9  # five 0.2 s calls overlap instead of taking 1 s


def test_usage_adds() -> None:
    assert Usage(1, 2, 3) + Usage(10, 20, 30) == Usage(11, 22, 33)
    assert Usage(5, 7).total_tokens == 12


def test_unknown_model_lists_known_names() -> None:
    with pytest.raises(ModelRequestError, match="smollm2-135m"):
        model_card("gpt-17")


def _fake_card(tmp_path: Path, chunks: list[bytes], sha: str | None = None) -> registry.ModelCard:
    data = b"".join(chunks)
    return registry.ModelCard(
        name="fake",
        description="",
        size_bytes=len(data),
        sha256=sha or hashlib.sha256(data).hexdigest(),
        parts=tuple(("dist", f"p{i}") for i in range(len(chunks))),
        install="pip install fake",
    )


def _with_parts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, card, chunks) -> None:
    for i, c in enumerate(chunks):
        (tmp_path / f"p{i}").write_bytes(c)
    monkeypatch.setattr(registry, "MODEL_CARDS", (card,))
    monkeypatch.setattr(registry, "_locate", lambda dist, rel: tmp_path / rel)


def test_chunked_model_is_assembled_once_and_verified(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    chunks = [b"GGUF" + b"a" * 100, b"b" * 50, b"c" * 7]
    card = _fake_card(tmp_path, chunks)
    _with_parts(monkeypatch, tmp_path, card, chunks)
    path = registry.model_path("fake", cache=tmp_path / "cache")
    assert path.read_bytes() == b"".join(chunks)
    mtime = path.stat().st_mtime_ns
    assert registry.model_path("fake", cache=tmp_path / "cache").stat().st_mtime_ns == mtime
    assert registry.list_models(cache=tmp_path / "cache")[0].assembled


def test_corrupt_parts_fail_loudly_and_leave_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    chunks = [b"x" * 10, b"y" * 10]
    card = _fake_card(tmp_path, chunks, sha="0" * 64)
    _with_parts(monkeypatch, tmp_path, card, chunks)
    with pytest.raises(ModelNotInstalledError, match="expected 20 bytes with sha256 0000"):
        registry.model_path("fake", cache=tmp_path / "cache")
    assert not list((tmp_path / "cache" / "models").glob("*"))


def test_missing_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_locate", lambda dist, rel: None)
    with pytest.raises(ModelNotInstalledError, match=r"pip install 'overseer-agents\[qwen05\]'"):
        registry.model_path("qwen2.5-coder-0.5b")
    assert not registry.list_models()[1].installed
