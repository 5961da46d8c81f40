"""One `Model` interface for every LLM call: llama.cpp in process, HTTP servers, scripted.

Exported is what a user needs to get a model (`load_model`, `list_models`, `model_card`,
`ModelCard`, `LlamaCppModel`, `OpenAIModel`, `ScriptedModel`), call it (`Model`, `Message`,
`Request`, `Completion`, `Usage`, `TokenLogprob`, `ask_structured`) and catch its failures
(`ModelError`, `StructuredOutputError`) and check a server before a run (`check_server`). The finer
error classes are in `overseer.models.errors`, the token-position helpers in
`overseer.models.positions`, the reading of model text (code blocks, the stand-in token count)
in `overseer.models.text`; the registry's tables stay in the private modules.

`OpenAIModel` (the openai SDK), `LlamaCppModel` (uvicorn, starlette) and `check_server` (the
SDK's HTTP client) are imported on first use, so importing a package that only names `Model`
(the rule tier, the runtime) does not pay for the openai SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from overseer._lazy import lazy_exports
from overseer.models._registry import ModelCard, list_models, load_model, model_card
from overseer.models._scripted import ScriptedModel
from overseer.models._structured import StructuredOutputError, ask_structured
from overseer.models._types import (
    Completion,
    Message,
    Model,
    ModelError,
    Request,
    TokenLogprob,
    Usage,
)

if TYPE_CHECKING:
    from overseer.models._check import check_server
    from overseer.models._http import OpenAIModel
    from overseer.models._llamacpp import LlamaCppModel

#: the exports imported on first use, by the private module that defines them
_LAZY = {
    "OpenAIModel": "overseer.models._http",
    "LlamaCppModel": "overseer.models._llamacpp",
    "check_server": "overseer.models._check",
}

__all__ = [
    "Completion",
    "LlamaCppModel",
    "Message",
    "Model",
    "ModelCard",
    "ModelError",
    "OpenAIModel",
    "Request",
    "ScriptedModel",
    "StructuredOutputError",
    "TokenLogprob",
    "Usage",
    "ask_structured",
    "check_server",
    "list_models",
    "load_model",
    "model_card",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)  # each name loaded on first use
