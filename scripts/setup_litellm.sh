#!/usr/bin/env bash
# Create .venv-litellm (if missing) and install the LiteLLM proxy into it: the third-party
# OpenAI/Anthropic-compatible server that tests/evaluators/test_judge_litellm.py runs the judge
# against (docs/judge-interop.md). Idempotent. CI (.ci/run) runs it before the tests.
#
# Its own virtual environment, never vsb's .venv: litellm[proxy] 1.108 pins rich<14,
# huggingface-hub<2, importlib-metadata<9 and cryptography<51, and would downgrade what vsb's
# .venv holds. The tests find .venv-litellm/bin/litellm by themselves.
#
# Installs go through uv when it is on PATH, or bootstrapped into .venv-litellm with pip (one
# wheel), pointed at the same places pip's configuration names; pip when that fails. About
# 170 MB in ~120 wheels: ~100 s with uv, ~4.5 min with pip alone on a busy 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
SPEC='litellm[proxy]>=1.108'
PY=${PYTHON:-python3}
if [ ! -x .venv-litellm/bin/python ]; then
  "$PY" -m venv .venv-litellm
fi
VPY=.venv-litellm/bin/python
PIP=("$VPY" -m pip install --quiet --disable-pip-version-check)

pip_config() {  # one value of pip's configuration (files and PIP_* variables), or nothing
  "$VPY" -m pip config get "$1" 2>/dev/null || true
}

UV=""
if command -v uv >/dev/null 2>&1; then
  UV=$(command -v uv)
elif [ -x .venv-litellm/bin/uv ] || { "${PIP[@]}" uv >/dev/null 2>&1 && [ -x .venv-litellm/bin/uv ]; }; then
  UV=.venv-litellm/bin/uv
fi
installed=0
if [ -n "$UV" ]; then
  UV_FIND_LINKS=${UV_FIND_LINKS:-${PIP_FIND_LINKS:-$(pip_config global.find-links)}} \
  UV_EXTRA_INDEX_URL=${UV_EXTRA_INDEX_URL:-$(pip_config global.extra-index-url)} \
  UV_CONSTRAINT=${UV_CONSTRAINT:-$(pip_config global.constraint)} \
  UV_INDEX_STRATEGY=${UV_INDEX_STRATEGY:-unsafe-best-match} \
    "$UV" pip install --quiet --compile-bytecode --python "$VPY" "$SPEC" && installed=1
  [ "$installed" = 1 ] || echo "warning: uv could not install $SPEC; falling back to pip" >&2
fi
if [ "$installed" = 0 ]; then
  "${PIP[@]}" "$SPEC"
fi
if [ ! -x .venv-litellm/bin/litellm ]; then
  echo "error: $SPEC installed no .venv-litellm/bin/litellm" >&2
  exit 1
fi
