"""Each package exports a small surface, and one exported name means one thing everywhere."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = (
    "adapt",
    "bench",
    "cli",
    "envs",
    "evidence",
    "models",
    "monitor",
    "prune",
    "runtime",
    "sandbox",
    "supervise",
    "tasks",
    "traces",
    "experiments",
)
BOUND = {"runtime": 20, "models": 17}  # the core may export a little more than the others


@pytest.mark.parametrize("name", PACKAGES)
def test_surface_is_small_and_documented(name: str) -> None:
    pkg = importlib.import_module(f"overseer.{name}")
    assert len(pkg.__all__) <= BOUND.get(name, 16), f"overseer.{name} exports {len(pkg.__all__)}"
    assert len(set(pkg.__all__)) == len(pkg.__all__)
    assert all(hasattr(pkg, n) for n in pkg.__all__)
    if name not in {"cli", "sandbox"}:  # their surfaces were small already
        assert pkg.__doc__ and "Exported is" in pkg.__doc__, "say what is exported and why"


def test_no_name_means_two_things() -> None:
    seen: dict[str, tuple[str, object]] = {}
    clashes = []
    for name in PACKAGES:
        pkg = importlib.import_module(f"overseer.{name}")
        for n in pkg.__all__:
            obj = getattr(pkg, n)
            if n in seen and seen[n][1] is not obj:
                clashes.append(f"{n}: overseer.{seen[n][0]} and overseer.{name}")
            seen.setdefault(n, (name, obj))
    assert not clashes


def test_the_top_level_face_is_small_and_every_name_loads() -> None:
    """Issue 49: the names a user needs import from `overseer` itself; loading is lazy, so
    `import overseer` pulls in none of them."""
    import subprocess
    import sys

    import overseer

    assert 20 <= len(overseer.__all__) <= 30
    assert all(getattr(overseer, n) is not None for n in overseer.__all__)
    code = (  # only the tiny helper that makes the exports lazy
        "import sys, overseer; print([m for m in sys.modules if m.startswith('overseer.')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['overseer._lazy']"
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = overseer.Nope


def test_the_top_level_face_names_each_home_once() -> None:
    import overseer

    assert sorted(overseer.__all__) == sorted(overseer._HOME)
