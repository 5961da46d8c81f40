#!/usr/bin/env bash
# Quick start (1): set up, then run the main job on the embedded model and print the table.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/overseer models
.venv/bin/overseer bench --suite gsm8k-sample --configs direct --model smollm2-135m --limit 5 "$@"
