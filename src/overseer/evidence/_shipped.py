"""What keeps a page export from being bent silently beyond its manifest: the sha256 of its
content written in its evidence page (version-controlled), the check of an export against
the page that ships it, and a gzip reader bounded in size and ratio.

A manifest proves that rows and header were not edited after export, but anyone can
recompute it (or run `--upgrade`); the page's digest cannot be changed without a visible
change to the page. The page that ships an export is its neighbour (DIR/data/NAME.jsonl.gz
beside DIR/NAME.md, by file name and by the header's claim), else the page of the header's
claim in this checkout's docs/evidence."""

from __future__ import annotations

import hashlib
import re
import zlib
from pathlib import Path

MAX_BYTES = 2_000_000  # an export's size on disk (write_export refuses more)
MAX_TEXT = 64_000_000  # its content, decompressed
MAX_RATIO = 100  # content / file size: JSON Lines of results compress about 10x
_CHUNK = 1 << 16

#: how a page writes its export's digest; `digest_text` makes it, `page_digest` reads it
_DIGEST = re.compile(r"sha256 of its content: `([0-9a-f]{64})`")
_REPO_DOCS = Path(__file__).resolve().parents[3] / "docs" / "evidence"


def content_sha256(text: bytes) -> str:
    """The sha256 of an export's content (what `gzip -dc FILE | sha256sum` prints)."""
    return hashlib.sha256(text).hexdigest()


def digest_text(text: bytes) -> str:
    """The words a page ships its export's digest in."""
    return f"sha256 of its content: `{content_sha256(text)}`"


def page_digest(page: Path) -> str | None:
    """The export digest written in `page` (None: the page writes none)."""
    try:
        found = _DIGEST.search(page.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
    return found.group(1) if found else None


def shipping_pages(path: Path, claim: str) -> list[Path]:
    """The pages that may ship the export at `path` of claim `claim`, nearest first."""
    out = []
    if path.parent.name == "data":
        name = path.name.removesuffix(".gz").removesuffix(".jsonl")
        out += [path.parent.parent / f"{name}.md", path.parent.parent / f"{claim}.md"]
    if (_REPO_DOCS.parents[1] / "pyproject.toml").is_file():
        out.append(_REPO_DOCS / f"{claim}.md")
    return [p for p in out if "/" not in claim and p.is_file()]


def check_shipped(path: Path, claim: str, text: bytes) -> None:
    """ValueError with one line when the nearest page that ships claim `claim` writes another
    digest than the sha256 of `text`, the export's content (re-signed or regenerated)."""
    for page in shipping_pages(path, claim):
        want = page_digest(page)
        if want is None:
            continue
        got = content_sha256(text)
        if got != want:
            raise ValueError(
                f"{path}: content sha256 {got[:12]}..., but {page} ships {want[:12]}...: not "
                "the export that page was made from (edited and re-signed, or upgraded); a "
                "fresh export belongs beside its own page (DIR/data/CLAIM.jsonl.gz, DIR/CLAIM.md)"
            )
        return


def gunzip(path: Path) -> bytes:
    """The content of a gzip file, bounded: at most MAX_BYTES on disk, MAX_RATIO times that
    (and MAX_TEXT) decompressed; ValueError with one line naming the file otherwise (a
    corrupt or truncated stream too)."""
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise ValueError(f"{path}: {size:,} bytes, over the {MAX_BYTES:,} an export may take")
    blob = path.read_bytes()
    limit = min(MAX_TEXT, max(1_000_000, MAX_RATIO * len(blob)))
    out: list[bytes] = []
    got = 0
    try:
        while blob:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)  # one gzip member
            pending = blob
            while not d.eof:
                part = d.decompress(pending, _CHUNK) if pending else d.flush()
                if not pending and not d.eof:
                    raise ValueError(f"{path}: not a page export: a truncated gzip stream")
                pending = d.unconsumed_tail
                out.append(part)
                got += len(part)
                if got > limit:
                    raise ValueError(
                        f"{path}: decompresses to over {limit:,} bytes ({MAX_RATIO}x its size "
                        "at most): not a page export (a gzip bomb?)"
                    )
            blob = d.unused_data
    except zlib.error as exc:
        raise ValueError(f"{path}: not a page export (gzip JSON Lines): {exc}") from None
    return b"".join(out)
