"""One `Model` interface for every LLM call: llama.cpp in process, HTTP servers, scripted."""

from overseer.models._http import OpenAIModel
from overseer.models._llamacpp import LlamaCppModel
from overseer.models._positions import decision_positions, value_spans
from overseer.models._registry import (
    MODEL_CARDS,
    ModelCard,
    ModelStatus,
    list_models,
    load_model,
    model_card,
    model_path,
)
from overseer.models._scripted import ScriptedModel, count_tokens
from overseer.models._structured import Structured, StructuredOutputError, ask_structured
from overseer.models._types import (
    Completion,
    Message,
    Model,
    ModelConnectionError,
    ModelError,
    ModelNotInstalledError,
    ModelOutputError,
    ModelRequestError,
    ModelTimeoutError,
    ModelUnavailableError,
    Request,
    TokenLogprob,
    Usage,
)

__all__ = [
    "MODEL_CARDS",
    "Completion",
    "LlamaCppModel",
    "Message",
    "Model",
    "ModelCard",
    "ModelConnectionError",
    "ModelError",
    "ModelNotInstalledError",
    "ModelOutputError",
    "ModelRequestError",
    "ModelStatus",
    "ModelTimeoutError",
    "ModelUnavailableError",
    "OpenAIModel",
    "Request",
    "ScriptedModel",
    "Structured",
    "StructuredOutputError",
    "TokenLogprob",
    "Usage",
    "ask_structured",
    "count_tokens",
    "decision_positions",
    "list_models",
    "load_model",
    "model_card",
    "model_path",
    "value_spans",
]
