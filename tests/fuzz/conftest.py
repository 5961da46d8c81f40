"""Fuzzing in the test command (issue 51): seeded (hypothesis `derandomize`) and time-boxed by
example counts, about three minutes in all: the HTTP faces from their OpenAPI description
(schemathesis), every CLI file reader with mutated valid files and random bytes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .faces import MODEL, Face


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "fuzz: seeded, time-boxed fuzzing (tests/fuzz)")


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Face]:
    """`overseer serve` of SmolLM2, one thread, a small context."""
    err = tmp_path_factory.mktemp("fuzz-serve") / "stderr"
    face = Face.overseer(["serve", MODEL, "--n-ctx", "512", "--threads", "1"], err)
    yield face
    face.close()


@pytest.fixture(scope="session")
def proxied(served: Face, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Face]:
    """`overseer proxy` in front of the served model, rules on, traces written."""
    d = tmp_path_factory.mktemp("fuzz-proxy")
    upstream = f"http://127.0.0.1:{served.port}/v1"
    face = Face.overseer(["proxy", "--upstream", upstream, "--trace-dir", str(d)], d / "stderr")
    yield face
    face.close()
