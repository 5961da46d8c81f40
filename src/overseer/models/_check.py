"""Is an OpenAI-compatible server there? One request before a run, one line when it is not."""

from __future__ import annotations

import http.client
import json
import os
import socket
import urllib.error
import urllib.request
from typing import Any

from overseer.models import _types as t

PROBE_CHAT = {"messages": [{"role": "user", "content": "ping"}], "max_tokens": 1}


def _fetch(url: str, body: dict[str, Any] | None, api_key: str | None, timeout_s: float) -> bytes:
    """GET (or POST `body` as JSON to) `url`; the reply's bytes, or the urllib/socket error."""
    headers = {"Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, headers=headers)
    with urllib.request.urlopen(req, timeout=timeout_s) as resp:  # http(s) only: checked above
        return bytes(resp.read())


def _failure(where: str, exc: BaseException, timeout_s: float) -> t.ModelError:
    """The typed one-line error of a failed probe request."""
    if isinstance(exc, urllib.error.HTTPError):
        busy = exc.code == 429 or exc.code >= 500
        kind = t.ModelUnavailableError if busy else t.ModelRequestError
        return kind(f"{where}: HTTP {exc.code} {exc.reason}")
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, (TimeoutError, socket.timeout)):
        return t.ModelTimeoutError(f"{where}: timed out after {timeout_s:g} s")
    if isinstance(reason, ConnectionRefusedError):
        return t.ModelConnectionError(f"{where}: connection refused")
    if isinstance(reason, (http.client.RemoteDisconnected, ConnectionResetError)):
        return t.ModelConnectionError(f"{where}: connection closed without a reply")
    return t.ModelConnectionError(f"{where}: cannot connect: {reason}")


def _json_with(raw: bytes, key: str, where: str, what: str) -> None:
    """Raise ModelOutputError unless `raw` is a JSON object whose `key` is a list."""
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        data = None
    if not isinstance(data, dict) or not isinstance(data.get(key), list):
        text = raw[:80].decode("utf-8", "replace")
        raise t.ModelOutputError(f"{where}: not an OpenAI-compatible {what} reply: {text!r}")


def check_server(
    base_url: str | None, *, model: str = "", api_key: str | None = None, timeout_s: float = 10.0
) -> None:
    """Raise a typed ModelError naming `base_url` and what failed unless the server answers
    `GET /models` (or, where that is 404, a one-token chat completion) the OpenAI way.

    One attempt each, `timeout_s` seconds at most: meant to run before a run starts, so a
    missing server costs one line instead of every call's retries. `base_url` and `api_key`
    default as in `load_model` ($OPENAI_BASE_URL, $OPENAI_API_KEY), then api.openai.com.
    """
    base_url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    api_key = api_key or os.environ.get("OPENAI_API_KEY")
    base = base_url.rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise t.ModelRequestError(f"--base-url {base_url!r}: expected an http:// or https:// URL")
    where = f"model server {base}"
    try:
        _json_with(_fetch(f"{base}/models", None, api_key, timeout_s), "data", where, "/models")
        return
    except urllib.error.HTTPError as exc:
        if exc.code not in (404, 405):
            raise _failure(f"{where} (GET /models)", exc, timeout_s) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        raise _failure(f"{where} (GET /models)", exc, timeout_s) from None
    try:
        raw = _fetch(f"{base}/chat/completions", {**PROBE_CHAT, "model": model}, api_key, timeout_s)
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        raise _failure(f"{where} (POST /chat/completions)", exc, timeout_s) from None
    _json_with(raw, "choices", where, "chat")
