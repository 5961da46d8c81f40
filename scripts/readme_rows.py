"""Rewrite the README's evidence headline rows from the pages in docs/evidence (each page
carries its row; see overseer.evidence.readme). `--check` only says whether they differ.

    python scripts/readme_rows.py            # rewrite README.md
    python scripts/readme_rows.py --check    # exit 1 when README.md differs from the pages
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from overseer.evidence.readme import check, updated

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--readme", type=Path, default=ROOT / "README.md")
    ap.add_argument("--docs-dir", type=Path, default=ROOT / "docs" / "evidence")
    ap.add_argument("--check", action="store_true", help="only check (exit 1 when different)")
    a = ap.parse_args(argv)
    try:
        if a.check:
            problem = check(a.readme, a.docs_dir)
            if problem:
                print(problem, file=sys.stderr)
                return 1
            return 0
        text = a.readme.read_text(encoding="utf-8")
        a.readme.write_text(updated(text, a.docs_dir), encoding="utf-8")
    except (OSError, ValueError) as exc:
        print(f"readme_rows: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote the evidence rows of {a.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
