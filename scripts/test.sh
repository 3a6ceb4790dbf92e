#!/usr/bin/env bash
# The test command: sets up .venv, then runs the whole pytest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
exec .venv/bin/python -m pytest -q "$@"
