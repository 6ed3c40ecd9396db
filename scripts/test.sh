#!/usr/bin/env bash
# Command 2: set everything up, run the checks (ruff, mypy, the panel's type-check) and every
# test: Python, panel unit tests, and browser end-to-end tests (headless Chromium driven by
# Playwright against a real TensorBoard).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null || ! command -v dot >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "== installing Debian's chromium and graphviz"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium graphviz >/dev/null
  else
    echo "warning: chromium/graphviz missing and cannot apt-get install them (not root?);" \
         "browser and PNG tests will fail" >&2
  fi
fi
TB_AD_LAYER_EXTRAS=test bash scripts/setup.sh
# shellcheck disable=SC1091
. .venv/bin/activate
echo "== checks: ruff (lint), mypy --strict (types; configured in pyproject.toml)"
ruff check --quiet .
mypy
echo "== panel unit tests"
(cd frontend && npm run --silent typecheck && npm test --silent)
echo "== python and end-to-end tests"
python -m pytest -q "$@"
