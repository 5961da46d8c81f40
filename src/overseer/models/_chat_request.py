"""What `overseer serve` accepts on `POST /v1/chat/completions`: pydantic models of the
documented subset of OpenAI's chat-completions request, checked before llama.cpp sees it.

`request_error(body)` gives one line naming the first field of a bad shape (`tools: expected
a list ...`, `messages[1].tool_calls[0].function: Field required`), or None: tools a list of
function tools, each named; tool calls in assistant messages a list of `{id, type, function:
{name, arguments}}`; content a string or a list of text parts (an `image_url`, audio or file
part is refused: the served models read text); `seed` a 64-bit integer; `max_tokens` (and
`max_completion_tokens`, llama.cpp's `n_predict`) at least 1 (-1, llama.cpp's "no limit",
would hold a slot until the context is full); numbers finite; strings valid Unicode (a lone
surrogate cannot be encoded as UTF-8). Fields not named here (llama.cpp's own sampling
options) pass through. `openapi(name)` is the OpenAPI 3.1 description of the same subset,
which the fuzz tests run against the server.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import ErrorDetails


class _Open(BaseModel):
    """A part of the request as the API defines it: typed where read, other keys kept."""

    model_config = ConfigDict(extra="allow", strict=True, allow_inf_nan=False)


INT64 = 2**63
#: the largest token count llama.cpp takes (an int32)
MAX_TOKENS = 2**31 - 1


def _whole(value: Any) -> Any:
    """A JSON number with no fraction (256.0) as the integer it is, as JSON Schema reads it."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


_WHOLE = BeforeValidator(_whole)
Tokens = Annotated[int, Field(ge=1, le=MAX_TOKENS), _WHOLE]


class TextPart(_Open):
    type: Literal["text"]
    text: str


class _Other(_Open):
    """A content part this server cannot read (image_url, input_audio, file, ...)."""

    type: str

    @model_validator(mode="after")
    def _refuse(self) -> _Other:
        raise ValueError(
            f"a {self.type!r:.40} part; expected text parts only (the served model reads text)"
        )


def _part_kind(part: Any) -> str:
    return "text" if isinstance(part, dict) and part.get("type") == "text" else "other"


_TEXT_PART = {
    "type": "object",
    "properties": {"type": {"const": "text"}, "text": {"type": "string"}},
    "required": ["type", "text"],
}
Part = Annotated[
    Annotated[TextPart, Tag("text")] | Annotated[_Other, Tag("other")],
    Discriminator(_part_kind),
    WithJsonSchema(_TEXT_PART),  # described: text parts only (the others are refused)
]
Content = str | list[Part] | None


class FunctionCall(_Open):
    name: str
    arguments: str | dict[str, Any] = "{}"


class ToolCall(_Open):
    id: str | None = None
    type: Literal["function"]  # llama.cpp: "Missing tool call type"
    function: FunctionCall


class _Message(_Open):
    content: Content = None
    name: str = ""  # a string when present (llama.cpp refuses null)


class PlainMessage(_Message):
    role: Literal["system", "developer", "user", "function"]
    content: str | list[Part]  # llama.cpp: every message but the assistant's has content


class AssistantMessage(_Message):
    role: Literal["assistant"]
    tool_calls: list[ToolCall] | None = None
    reasoning_content: str | None = None

    @model_validator(mode="after")
    def _says_something(self) -> AssistantMessage:
        if self.content is None and not self.tool_calls:
            raise ValueError("an assistant message without content; expected content or tool_calls")
        return self


class ToolMessage(_Message):
    role: Literal["tool"]
    content: str | list[Part]
    tool_call_id: str | None = None


Message = Annotated[PlainMessage | AssistantMessage | ToolMessage, Field(discriminator="role")]


class FunctionDef(_Open):
    name: Annotated[str, Field(min_length=1, max_length=256)]
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class Tool(_Open):
    type: Literal["function"]
    function: FunctionDef


class _Named(_Open):
    name: str


class NamedToolChoice(_Open):
    type: Literal["function"] = "function"
    function: _Named


class StreamOptions(_Open):
    include_usage: bool | None = None


class JsonSchemaFormat(_Open):
    name: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None


class ResponseFormat(_Open):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")


class ChatRequest(_Open):
    """A chat-completions request as `overseer serve` documents it."""

    model: str | None = None
    messages: Annotated[list[Message], Field(min_length=1)]
    tools: list[Tool] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    parallel_tool_calls: bool | None = None
    max_tokens: Tokens | None = None
    max_completion_tokens: Tokens | None = None
    n_predict: Tokens | None = None
    n: Literal[1] | None = None
    temperature: Annotated[float, Field(ge=0)] | None = None
    top_p: Annotated[float, Field(ge=0, le=1)] | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    seed: Annotated[int, Field(ge=-INT64, lt=INT64), _WHOLE] | None = None
    stop: str | list[str] | None = None
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    logprobs: bool | None = None
    top_logprobs: Annotated[int, Field(ge=0, le=20), _WHOLE] | None = None
    logit_bias: dict[str, float] | None = None
    response_format: ResponseFormat | None = None
    user: str | None = None


def _where(loc: tuple[Any, ...], data: Any, missing: bool) -> str:
    """A pydantic error location as a path into the request (`messages[1].content[0]`): the
    parts that are keys or indexes of the data (and the missing field's name); a union
    member's tag is skipped."""
    out, node = "", data
    for i, part in enumerate(loc):
        last = missing and i == len(loc) - 1
        if isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node):
            out, node = f"{out}[{part}]", node[part]
        elif (
            isinstance(part, str)
            and isinstance(node, dict)
            and (part in node or (last and missing))
        ):
            out, node = (f"{out}.{part}" if out else part), node.get(part)
    return out or "request body"


def _deepest(exc: ValidationError) -> ErrorDetails:
    """The error that went deepest into the data (of a union's branches, the one that fit
    best), the first one among equals."""
    errors = exc.errors(include_url=False)
    return max(errors, key=lambda e: len(e["loc"]))


def _line(err: ErrorDetails, body: dict[str, Any]) -> str:
    msg = str(err.get("msg", "")).removeprefix("Value error, ")
    missing = err.get("type") == "missing"
    where = _where(tuple(err.get("loc", ())), body, missing)
    if missing:
        return f"{where}: expected this field, it is missing"
    got = json.dumps(err.get("input"), default=str)
    return f"{where}: {msg[:200]} (got {got[:80]})"


def _surrogate(data: Any, where: str) -> str | None:
    """The path of the first string (key or value) holding a lone surrogate, or None."""
    if isinstance(data, str):
        return where if any("\ud800" <= c <= "\udfff" for c in data) else None
    items: Any = ()
    if isinstance(data, dict):
        for key in data:
            if _surrogate(key, "") is not None:
                return f"{where} key".strip()
        items = ((f"{where}.{k}" if where else k, v) for k, v in data.items())
    elif isinstance(data, list):
        items = ((f"{where}[{i}]", v) for i, v in enumerate(data))
    for path, value in items:
        found = _surrogate(value, path)
        if found is not None:
            return found
    return None


def unicode_error(body: Any) -> str | None:
    """One line naming the first string of `body` that is not valid Unicode, or None."""
    try:
        json.dumps(body, ensure_ascii=False).encode("utf-8")
        return None
    except UnicodeEncodeError:
        where = _surrogate(body, "") or "request body"
        return f"{where}: a lone surrogate (\\ud800-\\udfff); expected valid Unicode text"


def request_error(body: dict[str, Any]) -> str | None:
    """One line naming what in a chat-completions request does not fit `ChatRequest`, or None."""
    bad = unicode_error(body)
    if bad is not None:
        return bad
    try:
        ChatRequest.model_validate(body)
    except ValidationError as exc:
        return _line(_deepest(exc), body)
    return None


def openapi(name: str) -> dict[str, Any]:
    """The OpenAPI 3.1 description of `POST /v1/chat/completions` as served under `name`."""
    schema = ChatRequest.model_json_schema(ref_template="#/components/schemas/{model}")
    defs = schema.pop("$defs", {})
    schema["properties"]["model"] = {"anyOf": [{"const": name}, {"type": "null"}]}
    error = {"description": "an OpenAI-shaped error", "content": {"application/json": {}}}
    return {
        "openapi": "3.1.0",
        "info": {"title": f"overseer serve {name}", "version": "1"},
        "paths": {
            "/v1/chat/completions": {
                "post": {
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": schema}},
                    },
                    "responses": {
                        "200": {"description": "a chat completion (or its SSE stream)"},
                        "400": error,
                        "404": error,
                    },
                }
            }
        },
        "components": {"schemas": {**defs, "ChatRequest": schema}},
    }
