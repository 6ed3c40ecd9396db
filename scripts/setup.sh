#!/usr/bin/env bash
# Shared set-up for the demo and the tests: a virtual environment with the package installed
# (editable) and the panel built into tb_ad_layer/plugin/static/. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv"
  "$PYTHON" -m venv .venv
fi
# shellcheck disable=SC1091
. .venv/bin/activate
echo "== installing tb-ad-layer (and test extras: ${TB_AD_LAYER_EXTRAS:-none})"
python -m pip install -q --disable-pip-version-check -e ".${TB_AD_LAYER_EXTRAS:+[$TB_AD_LAYER_EXTRAS]}"
echo "== building the panel (frontend/ -> tb_ad_layer/plugin/static/)"
command -v npm >/dev/null || { echo "error: npm (Node.js >= 18) is needed to build the panel" >&2; exit 1; }
(cd frontend && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build)
