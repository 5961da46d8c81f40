#!/usr/bin/env bash
# Quick start (2): set up, lint, then run the whole test suite (real embedded model included).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check src tests benchmarks
.venv/bin/mypy
.venv/bin/python -m pytest "$@"
