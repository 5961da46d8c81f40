"""Serving the embedded model to a framework (issue 32, item 7): `serve_model` on a chosen
port and `overseer serve MODEL --port N`, on the real embedded SmolLM2 model, asked over HTTP
by a real OpenAI client (LangChain's ChatOpenAI)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from langchain_openai import ChatOpenAI

from overseer.models import ModelError
from overseer.models.serve import model_path, serve_model

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("loopback_only")]

MODEL = "smollm2-135m"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ask(base_url: str) -> str:
    chat = ChatOpenAI(model=MODEL, base_url=base_url, api_key="none", max_completion_tokens=8)
    return str(chat.invoke("Say hi.").content)


def test_serve_model_listens_on_the_chosen_port() -> None:
    port = _free_port()
    llm = serve_model(MODEL, port=port, n_ctx=1024)
    try:
        assert llm.base_url == f"http://127.0.0.1:{port}/v1"
        with urllib.request.urlopen(f"{llm.base_url}/models", timeout=30) as resp:
            assert resp.status == 200 and json.loads(resp.read())["data"]
        assert _ask(llm.base_url).strip()  # a real client gets a completion
    finally:
        llm.close()


def test_model_path_is_the_named_models_gguf_file() -> None:
    path = model_path(MODEL)
    assert path.suffix == ".gguf" and path.is_file()


@pytest.mark.parametrize(
    ("kw", "msg"),
    [
        ({"port": 70000}, "port: expected an integer from 0 to 65535, got 70000"),
        ({"port": -1}, "port: expected an integer from 0 to 65535"),
    ],
)
def test_a_bad_port_is_one_clear_line(kw: dict[str, int], msg: str) -> None:
    with pytest.raises(ModelError, match=msg):
        serve_model(MODEL, **kw)


def test_an_unknown_or_remote_model_is_one_clear_line() -> None:
    with pytest.raises(ModelError, match="'nope': unknown; expected one of"):
        serve_model("nope")
    with pytest.raises(ModelError, match="expected a local model name"):
        serve_model("openai:gpt-4o-mini")


def _default_sigint() -> None:
    """A background test run starts children with SIGINT ignored: Ctrl-C must reach this one."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _overseer(*args: str) -> subprocess.Popen[str]:
    exe = Path(sys.executable).with_name("overseer")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [str(exe), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_default_sigint,
    )


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_cli_serves_until_stopped_and_exits_0(stop: signal.Signals) -> None:
    port = _free_port()
    proc = _overseer("serve", MODEL, "--port", str(port), "--n-ctx", "1024")
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        url = f"http://127.0.0.1:{port}/v1"
        assert line.strip() == f"overseer: serving {MODEL} at {url} (Ctrl-C stops)"
        assert _ask(url).strip()
    finally:
        proc.send_signal(stop)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and err == "", err


def test_cli_port_in_use_is_one_line_exit_2() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = _overseer("serve", MODEL, "--port", str(port), "--n-ctx", "1024")
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and out == ""
    assert err.startswith(f"overseer: error: listen on 127.0.0.1:{port}: cannot serve")
    assert len(err.strip().splitlines()) == 1
