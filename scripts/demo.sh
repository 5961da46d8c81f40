#!/usr/bin/env bash
# Quick start (1): set up (with Qwen2.5-Coder-0.5B), then the main job on the calibrated browse
# workload (a researcher with web_search / visit / page_down on a seeded offline wiki of long,
# noisy HTML pages, then a writer): the first 5 test tasks solved by one model call, by the
# team, and by the same team under overseer's rule tier (no LLM: loop breaker, masking,
# purification of the HTML it reads). Prints the report once (its verdict, the summary and the
# paired table: accuracy with its 95% interval, net tokens, ratio against the team, acted on),
# writes the HTML report, and ends with the verdict: one sentence per configuration.
# Options after the script go to `overseer bench` (e.g. --limit 3); DEMO_CONFIGS adds the LLM
# supervisor (`...,baseline+supervise:llm`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/uv pip install --quiet --compile-bytecode --python .venv/bin/python -e '.[qwen05]'
MODEL="${DEMO_MODEL:-qwen2.5-coder-0.5b}"
STORE="${DEMO_STORE:-results/demo.sqlite}"
REPORT="${DEMO_REPORT:-results/report}"
CONFIGS="${DEMO_CONFIGS:-direct,baseline,baseline+supervise:rules}"
start=$(date +%s)
mkdir -p "$(dirname "$STORE")"
# the bench's own tables go to a log (progress stays on the terminal): the report prints them once
.venv/bin/overseer bench --suite browse --configs "$CONFIGS" --baseline baseline \
    --model "$MODEL" --limit 5 --store "$STORE" --no-prompt-cache --allow-errors "$@" \
    > "${STORE%.sqlite}.bench.txt"
.venv/bin/overseer report --store "$STORE" --baseline baseline --out "$REPORT"
echo
echo "took $(( ($(date +%s) - start) / 60 )) min; results in $STORE"
echo "n = 5 shows the mechanism at work (acted on, tokens cut), not a claim: see the README"
echo "report: $REPORT/index.html (Markdown twin: $REPORT/report.md); open it in a browser"
echo
.venv/bin/overseer report --store "$STORE" --baseline baseline --json \
    | .venv/bin/python -c '
import json, sys
*lines, made = json.load(sys.stdin)["verdict"]  # plain words, then statistics, then provenance
half = len(lines) // 2 if lines and not lines[0].startswith("No verdict") else len(lines)
for i, line in enumerate(lines):
    print(("verdict: " if i < half else "statistics: ") + line)
print("made: " + made)'
