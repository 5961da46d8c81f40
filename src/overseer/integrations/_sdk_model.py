"""The Agents SDK's model, asked once more when its answer only repeats overseer's words,
and its final answer replaced when it states a value no tool result supports after overseer
closed the tools (`GuardRun.settle`).

The SDK's hooks observe a model call but cannot replace its reply, so the re-ask (issue 39:
such a reply is no answer) wraps the model itself: the agent's own `Model` instance, or every
model the run's `ModelProvider` resolves by name. The second call sees the copied reply and a
user turn restating the question, with no tool offered; the reply returned carries the usage
of both calls, so the hooks book them as one call (as the runtime's agent does).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import AsyncIterator, Callable
from typing import Any

from agents.items import ItemHelpers, ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import Model, ModelProvider
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

#: the user turn to ask again with, for the text of an answer; None: the answer stands
Reask = Callable[[str], str | None]
#: the answer that stands instead of the text of a final answer; None: that answer stands
Settle = Callable[[str], str | None]


def _no_settle(answer: str) -> str | None:
    return None


def _kind(item: Any) -> str:
    return str(item.get("type") if isinstance(item, dict) else getattr(item, "type", ""))


def _answer_text(response: ModelResponse) -> str | None:
    """The reply's text when it is an answer (no function call), else None."""
    if any(_kind(o) == "function_call" for o in response.output):
        return None
    return "".join(ItemHelpers.extract_last_text(o) or "" for o in response.output)


class ReaskingModel(Model):
    """`inner`, asking once more (see the module docstring); streams pass through as they are."""

    def __init__(self, inner: Model, reask: Reask, settle: Settle = _no_settle) -> None:
        self.inner, self.reask, self.settle = inner, reask, settle
        self.model = getattr(inner, "model", "")  # the name the SDK's own models carry

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: Any,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        first = await self.inner.get_response(
            system_instructions, input, model_settings, tools, output_schema, handoffs, tracing,
            **kwargs,
        )  # fmt: skip
        text = _answer_text(first)
        turn = None if text is None else self.reask(text)
        if turn is None:
            return self._settled(first)
        items = ItemHelpers.input_to_new_input_list(input) + first.to_input_items()
        items.append({"role": "user", "content": turn})
        again = await self.inner.get_response(
            system_instructions, items, model_settings, [], output_schema, [], tracing, **kwargs
        )
        usage = copy.deepcopy(first.usage)
        usage.add(again.usage)
        return self._settled(dataclasses.replace(again, usage=usage))

    def _settled(self, response: ModelResponse) -> ModelResponse:
        """`response`, its answer replaced when `settle` says so (an unsupported value after
        overseer closed the tools): one assistant message with the text that stands."""
        text = _answer_text(response)
        instead = None if text is None else self.settle(text)
        if instead is None:
            return response
        message = ResponseOutputMessage(
            id="overseer-settled",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text=instead, annotations=[])],
        )
        return dataclasses.replace(response, output=[message])

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        return self.inner.stream_response(*args, **kwargs)

    async def close(self) -> None:
        await self.inner.close()


class ReaskingProvider(ModelProvider):
    """`inner`'s models, each wrapped in a `ReaskingModel`."""

    def __init__(self, inner: ModelProvider, reask: Reask, settle: Settle = _no_settle) -> None:
        self.inner, self.reask, self.settle = inner, reask, settle

    def get_model(self, model_name: str | None) -> Model:
        return ReaskingModel(self.inner.get_model(model_name), self.reask, self.settle)
