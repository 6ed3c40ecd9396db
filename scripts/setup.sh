#!/usr/bin/env bash
# Shared set-up for the demo and the tests: a virtual environment with the package installed
# (editable, the converter's hot modules compiled with mypyc when a C compiler is there) and the
# panel built into tb_ad_layer/plugin/static/. Idempotent; TB_AD_LAYER_COMPILE=0 skips compiling.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv"
  "$PYTHON" -m venv .venv
fi
# shellcheck disable=SC1091
. .venv/bin/activate
echo "== installing tb-ad-layer (and test extras: ${TB_AD_LAYER_EXTRAS:-none}), compiling its hot modules"
# The panel is built below, with its own error message, rather than inside pip.
TB_AD_LAYER_BUILD_PANEL=0 python -m pip install -q --disable-pip-version-check \
  -e ".${TB_AD_LAYER_EXTRAS:+[$TB_AD_LAYER_EXTRAS]}"
python -c "from tb_ad_layer._compiled import describe; print('   converter:', describe())"
echo "== building the panel (frontend/ -> tb_ad_layer/plugin/static/)"
command -v npm >/dev/null || { echo "error: npm (Node.js >= 18) is needed to build the panel" >&2; exit 1; }
(cd frontend && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build)
