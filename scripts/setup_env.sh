#!/usr/bin/env bash
# Create .venv (if missing) and install vsb into it. Idempotent.
#
#   bash scripts/setup_env.sh          what the main job needs: vsb and its runtime dependencies
#                                      (no browser, no torch, no test tools)
#   bash scripts/setup_env.sh --test   also what the tests need: the dev and embed extras, the CPU
#                                      build of torch 2.13.0, Debian's chromium and axe-core 4
#                                      (npm, into .venv/axe; the accessibility tests inject it)
#   add --pip                          install with pip only
#
# Installs go through uv when it is on PATH, or bootstrapped into .venv with pip (one wheel; it
# then installs the dependencies several times faster than pip); pip when that fails or with
# --pip. uv is pointed at the same places pip's configuration names (find-links, extra indexes,
# constraints).
#
# Bytecode is compiled here, once: uv with --compile-bytecode (all of site-packages), pip by
# default, and vsb's own source (an editable install) with compileall. Python would otherwise
# compile ~1,000 modules in every process, and never keep them where PYTHONDONTWRITEBYTECODE is
# set (CI, containers): `vsb --help` 0.85 s -> 0.3 s, `vsb models` 1.7 s -> 0.5-0.8 s.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=main
USE_UV=1
for arg in "$@"; do
  case "$arg" in
    --test) MODE=test ;;
    --pip) USE_UV=0 ;;
    *) echo "usage: bash scripts/setup_env.sh [--test] [--pip]" >&2; exit 2 ;;
  esac
done
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
VPY=.venv/bin/python
PIP=("$VPY" -m pip install --quiet --disable-pip-version-check)

UV=""
if [ "$USE_UV" = 1 ]; then
  if command -v uv >/dev/null 2>&1; then
    UV=$(command -v uv)
  elif [ -x .venv/bin/uv ] || { "${PIP[@]}" uv >/dev/null 2>&1 && [ -x .venv/bin/uv ]; }; then
    UV=.venv/bin/uv
  fi
fi

pip_config() {  # one value of pip's configuration (files and PIP_* variables), or nothing
  "$VPY" -m pip config get "$1" 2>/dev/null || true
}

install() {  # install requirements with uv when there is one, else with pip
  if [ -n "$UV" ]; then
    UV_FIND_LINKS=${UV_FIND_LINKS:-${PIP_FIND_LINKS:-$(pip_config global.find-links)}} \
    UV_EXTRA_INDEX_URL=${UV_EXTRA_INDEX_URL:-$(pip_config global.extra-index-url)} \
    UV_CONSTRAINT=${UV_CONSTRAINT:-$(pip_config global.constraint)} \
    UV_INDEX_STRATEGY=${UV_INDEX_STRATEGY:-unsafe-best-match} \
      "$UV" pip install --quiet --compile-bytecode --python "$VPY" "$@" && return 0
    echo "warning: uv could not install $*; falling back to pip" >&2
  fi
  "${PIP[@]}" "$@"
}

compile_vsb() {  # bytecode for the editable vsb (compileall writes it even under PYTHONDONTWRITEBYTECODE)
  "$VPY" -m compileall -q -j 0 vsb >/dev/null
}

if [ "$MODE" = main ]; then
  install -e .
  compile_vsb
  exit 0
fi

# The tests. The CPU build of torch, through pip and its configuration (from local disk here;
# never a CUDA build, never torchvision or open_clip beside it), then vsb with the dev extra,
# the embed extra (transformers) that the embedding tests need, the diffusers extra (tiny
# random-weight pipelines), the ray extra (a local two-CPU cluster) and the fid extra.
"${PIP[@]}" torch==2.13.0
install -e '.[dev,embed,diffusers,ray]'
# the fid extra's torch-fidelity without its declared torchvision (never imported by vsb, and
# it would replace this torch): the FID tests build its Inception with random weights
"${PIP[@]}" --no-deps torch-fidelity==0.4.0
compile_vsb
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's chromium for the browser tests..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "warning: could not install chromium; browser tests will be skipped" >&2
fi
# axe-core, the accessibility engine the browser tests inject into each page: a test
# dependency like the Python ones, installed with npm into .venv/axe (never committed, never
# loaded by the site).
if [ ! -f .venv/axe/node_modules/axe-core/axe.min.js ]; then
  if command -v npm >/dev/null 2>&1; then
    npm install --silent --no-audit --no-fund --prefix .venv/axe axe-core@4 >/dev/null \
      || echo "warning: could not install axe-core; accessibility tests will be skipped" >&2
  else
    echo "warning: npm is absent; accessibility tests will be skipped" >&2
  fi
fi
