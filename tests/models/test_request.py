"""One request type: a backend implements only `_complete`; the base class checks arguments once."""

from __future__ import annotations

import pytest

from overseer.models import Completion, Model, Request, Usage
from overseer.models._types import ModelRequestError

MSG = [{"role": "user", "content": "hi"}]


class Echo(Model):
    """A backend with only `_complete`: it records every request it is handed."""

    name = "echo"

    def __init__(self) -> None:
        self.requests: list[Request] = []

    def _complete(self, request: Request) -> Completion:
        self.requests.append(request)
        return Completion(request.messages[-1]["content"], Usage(1, 1), 0.0, model=self.name)


def test_complete_builds_one_request_with_the_defaults() -> None:
    m = Echo()
    assert m.complete(MSG).text == "hi"
    assert m.requests == [Request(({"role": "user", "content": "hi"},))]
    r = m.requests[0]
    assert (r.max_tokens, r.temperature, r.stop, r.schema, r.top_logprobs, r.seed) == (
        256,
        0.0,
        (),
        None,
        0,
        None,
    )


async def test_acomplete_runs_the_same_request_through_a_thread() -> None:
    m = Echo()
    c = await m.acomplete(MSG, max_tokens=9, stop=["\n"], schema={"type": "object"}, seed=3)
    assert c.text == "hi"
    r = m.requests[0]
    assert (r.max_tokens, r.stop, r.schema, r.seed) == (9, ("\n",), {"type": "object"}, 3)


@pytest.mark.parametrize(
    ("messages", "kw", "field"),
    [
        (MSG, {"max_tokens": 0}, "max_tokens"),
        (MSG, {"temperature": -1.0}, "temperature"),
        (MSG, {"top_logprobs": 21}, "top_logprobs"),
        (MSG, {"seed": "x"}, "seed"),
        (MSG, {"stop": "\n"}, "stop"),
        ([], {}, "messages"),
        ([{"role": "user", "content": 3}], {}, r"messages\[0\]\.content"),
    ],
)
async def test_bad_arguments_are_rejected_before_the_backend(
    messages: list, kw: dict, field: str
) -> None:
    m = Echo()
    with pytest.raises(ModelRequestError, match=field):
        m.complete(messages, **kw)
    with pytest.raises(ModelRequestError, match=field):
        await m.acomplete(messages, **kw)
    assert m.requests == []


def test_unknown_option_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="max_token"):
        Echo().complete(MSG, max_token=5)  # type: ignore[call-arg]


def test_a_model_without_complete_cannot_be_built() -> None:
    class Half(Model):
        pass

    with pytest.raises(TypeError, match="_complete"):
        Half()  # type: ignore[abstract]


def test_of_checks_like_the_dataclass_and_copies_the_messages() -> None:
    """`Request.of` (the hot path) and the dataclass build equal requests; messages are copied
    as plain role/content dicts (extra keys dropped, any Mapping accepted), stop as a tuple."""
    from types import MappingProxyType

    msg = {"role": "user", "content": "hi", "name": "x"}
    fast = Request.of([msg, MappingProxyType({"role": "assistant", "content": "yo"})], stop=None)
    slow = Request(({"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}))
    assert fast == slow
    assert fast.messages[0] is not msg and fast.messages[0] == {"role": "user", "content": "hi"}
    assert type(fast.messages[1]) is dict
    r = Request.of(MSG, stop=["a", "b"], temperature=1, max_tokens=3, seed=7, schema={})
    assert (r.stop, r.temperature, r.max_tokens, r.seed, r.schema) == (("a", "b"), 1, 3, 7, {})
    assert Request.of_options(MSG, {"actor": "a1"}) == Request(tuple(MSG), actor="a1")


@pytest.mark.parametrize(
    ("messages", "kw", "field"),
    [
        (MSG, {"stop": ""}, "stop"),
        (MSG, {"stop": ["a", 1]}, "stop"),
        (MSG, {"max_tokens": True}, "max_tokens"),
        (MSG, {"max_tokens": 2.0}, "max_tokens"),
        (MSG, {"temperature": float("nan")}, "temperature"),
        (MSG, {"temperature": "0"}, "temperature"),
        (MSG, {"top_logprobs": -1}, "top_logprobs"),
        (MSG, {"seed": False}, "seed"),
        (MSG, {"schema": "{}"}, "schema"),
        ([{"role": "robot", "content": "x"}], {}, r"messages\[0\]\.role"),
        ([{"content": "x"}], {}, r"messages\[0\]\.role: .* got None"),
        ([MSG[0], {"role": "user"}], {}, r"messages\[1\]\.content: .* NoneType"),
    ],
)
def test_of_and_the_dataclass_reject_the_same_arguments(
    messages: list, kw: dict, field: str
) -> None:
    with pytest.raises(ModelRequestError, match=field):
        Request.of(messages, **kw)
    with pytest.raises(ModelRequestError, match=field):
        Request(tuple(messages), **kw)
