#!/usr/bin/env bash
# Mutation testing of the measurement core (docs/TESTING.md): one mutmut run per module of
# [tool.vsb-mutation.modules] in pyproject.toml, each counting only the tests that import it.
# Slow (about 20 minutes on two cores); not part of .ci/run.
#
#   bash scripts/mutation.sh                          # all five modules
#   bash scripts/mutation.sh vsb/scores/stats/bootstrap.py  # one module
#   bash scripts/mutation.sh --jobs 1                 # fewer parallel mutants
#
# mutmut (the `mutation` extra) goes into a venv of its own, build/mutation/venv, that sees
# the project's packages (.venv from scripts/setup_env.sh, or the interpreter in $PYTHON).
# Writes build/mutation/report.md and report.json; exits 1 if a module scores below 90 %.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
if [ ! -x "$PY" ]; then
  echo "scripts/mutation.sh: no $PY (run bash scripts/setup_env.sh, or set PYTHON)" >&2
  exit 2
fi
VENV=build/mutation/venv
if [ ! -x "$VENV/bin/mutmut" ]; then
  "$PY" -m venv "$VENV"
  # mutmut runs the tests in its own process: let its venv import the project's packages
  project=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  own=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$project" >"$own/vsb-project.pth"
  spec=$("$PY" -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["mutation"])')
  "$VENV/bin/pip" install -q $spec
fi
exec "$VENV/bin/python" scripts/mutation.py --mutmut "$VENV/bin/mutmut" "$@"
