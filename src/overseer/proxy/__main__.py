"""`python -m overseer.proxy ARGS`: the same as `overseer proxy ARGS` (see its --help)."""

from __future__ import annotations

import sys

from overseer.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["proxy", *sys.argv[1:]]))
