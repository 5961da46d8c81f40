#!/usr/bin/env bash
# Quick start (1): set up (with Qwen2.5-Coder-0.5B), then the main job: a few HumanEval tasks
# solved by one model call, by a two-agent team with the sandboxed Python tool, and by the same
# team under overseer's supervision (rule tier, then the LLM supervisor); prints the comparison
# and writes the report. Options after the script go to `overseer bench` (e.g. --limit 2).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[qwen05]'
MODEL="${DEMO_MODEL:-qwen2.5-coder-0.5b}"
STORE="${DEMO_STORE:-results/demo.sqlite}"
REPORT="${DEMO_REPORT:-results/report}"
CONFIGS="${DEMO_CONFIGS:-direct,baseline,baseline+supervise:rules,supervised}"
start=$(date +%s)
.venv/bin/overseer bench --suite humaneval --configs "$CONFIGS" --baseline baseline \
    --model "$MODEL" --limit 3 --store "$STORE" --allow-errors "$@"
.venv/bin/overseer report --store "$STORE" --baseline baseline --out "$REPORT"
echo
echo "took $(( ($(date +%s) - start) / 60 )) min; results in $STORE"
echo "report: $REPORT/index.html (Markdown twin: $REPORT/report.md); open it in a browser"
