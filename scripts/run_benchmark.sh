#!/usr/bin/env bash
# The main job: sets up .venv with vsb's runtime dependencies only (no browser, no torch, no
# test tools), then builds release v0.1.0 (suite, five simulators x every condition, evaluation,
# scores, judge validation, frozen release) and its leaderboard site.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
exec .venv/bin/vsb release build v0.1.0 --out build "$@"
