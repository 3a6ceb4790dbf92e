#!/usr/bin/env bash
# The test command: sets up .venv with what the tests need (dev and embed extras, CPU torch,
# Debian's chromium for the browser tests), then runs the whole pytest suite on two workers
# (pytest-xdist; VSB_TEST_WORKERS=0 runs it in one process; work units: tests/conftest.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh --test
exec .venv/bin/python -m pytest -q -n "${VSB_TEST_WORKERS:-2}" --dist loadgroup "$@"
