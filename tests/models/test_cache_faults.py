"""An unusable model cache: one typed error naming it, except for a packaged single-file model,
which loads without writing anything."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from overseer.errors import PathError
from overseer.models import _registry as registry


def _card(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunks: list[bytes]) -> None:
    data = b"".join(chunks)
    for i, c in enumerate(chunks):
        (tmp_path / f"p{i}").write_bytes(c)
    card = registry.ModelCard(
        name="fake",
        description="",
        size_bytes=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        parts=tuple(("dist", f"p{i}") for i in range(len(chunks))),
        install="pip install fake",
    )
    monkeypatch.setattr(registry, "MODEL_CARDS", (card,))
    monkeypatch.setattr(registry, "_locate", lambda dist, rel: tmp_path / rel)


def test_chunked_model_with_a_cache_under_a_file_names_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _card(tmp_path, monkeypatch, [b"a" * 10, b"b" * 10])
    (tmp_path / "afile").write_text("x")
    monkeypatch.setenv("OVERSEER_CACHE_DIR", str(tmp_path / "afile" / "cache"))
    with pytest.raises(PathError, match=r"model cache .*afile.*OVERSEER_CACHE_DIR") as info:
        registry.model_path("fake")
    assert isinstance(info.value, OSError) and "\n" not in str(info.value)
    assert (tmp_path / "afile").read_text() == "x"


def test_packaged_model_loads_without_a_writable_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _card(tmp_path, monkeypatch, [b"GGUF" + b"z" * 50])
    (tmp_path / "afile").write_text("x")
    monkeypatch.setenv("OVERSEER_CACHE_DIR", str(tmp_path / "afile"))
    assert registry.model_path("fake") == tmp_path / "p0"
    assert registry.model_path("fake") == tmp_path / "p0"  # verified again, nothing written
    assert (tmp_path / "afile").read_text() == "x"


def test_packaged_model_is_verified_once_with_a_writable_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _card(tmp_path, monkeypatch, [b"GGUF" + b"z" * 50])
    calls: list[int] = []
    verify = registry._verify
    monkeypatch.setattr(registry, "_verify", lambda *a: calls.append(1) or verify(*a))
    for _ in range(3):
        assert registry.model_path("fake", cache=tmp_path / "cache") == tmp_path / "p0"
    assert len(calls) == 1 and (tmp_path / "cache" / "stamps" / "fake.gguf").is_file()
