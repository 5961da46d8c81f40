"""Scripted smolagents models for the smolagents callback tests: tool calls, unparsable text,
and code actions replayed in order; every request recorded."""

from __future__ import annotations

import json
from typing import Any

from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction
from smolagents.models import Model as SmolModel
from smolagents.monitoring import TokenUsage

#: a reply: (tool, args) for a tool call, or a plain string (text / code for a CodeAgent)
Reply = tuple[str, dict[str, Any]] | str


class ScriptedSmolModel(SmolModel):
    """Replays `replies` (the last repeats); 10 input and 5 output tokens per call."""

    def __init__(self, replies: list[Reply]) -> None:
        super().__init__(model_id="scripted")
        self.replies = replies
        self.seen: list[list[Any]] = []

    def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
        self.seen.append(list(messages))
        reply = self.replies[min(len(self.seen) - 1, len(self.replies) - 1)]
        usage = TokenUsage(input_tokens=10, output_tokens=5)
        if isinstance(reply, str):
            return ChatMessage(role="assistant", content=reply, token_usage=usage)
        name, args = reply
        call = ChatMessageToolCall(
            id=f"c{len(self.seen)}",
            type="function",
            function=ChatMessageToolCallFunction(name=name, arguments=args),
        )
        return ChatMessage(role="assistant", content="", tool_calls=[call], token_usage=usage)


def prompt_text(model: ScriptedSmolModel, index: int = -1) -> str:
    """The messages of one request, as one text."""
    msgs = model.seen[index]
    return json.dumps([m.dict() if hasattr(m, "dict") else str(m) for m in msgs], default=str)


def code(src: str) -> str:
    """A CodeAgent reply running `src`."""
    return f"Thought: run it.\n<code>\n{src}\n</code>"
