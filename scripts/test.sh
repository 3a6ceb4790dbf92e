#!/usr/bin/env bash
# The test command: sets up .venv with what the tests need (dev and embed extras, CPU torch,
# Debian's chromium for the browser tests), then runs the whole pytest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh --test
exec .venv/bin/python -m pytest -q "$@"
