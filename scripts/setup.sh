#!/usr/bin/env bash
# Shared set-up for the demo and the tests: a virtual environment with the package installed
# (editable, the converter's hot modules compiled with mypyc when a C compiler is there) and the
# panel built into tb_ad_layer/plugin/static/. Idempotent, and quick when nothing changed: each
# step is skipped while what it depends on is unchanged (the install while the packaging files,
# the extras and the compiled modules' sources are; npm ci while package-lock.json is; the panel
# build while no file under frontend/ is newer than it). TB_AD_LAYER_COMPILE=0 skips compiling.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv"
  "$PYTHON" -m venv .venv
fi
# shellcheck disable=SC1091
. .venv/bin/activate
EXTRAS="${TB_AD_LAYER_EXTRAS:-}"
STAMP=.venv/.tb_ad_layer_setup
# What the installation depends on: packaging files, extras, compile switch, compiled sources.
fingerprint() {
  { cat setup.py pyproject.toml build_support/*.py tb_ad_layer/version.py tb_ad_layer/metadata.py
    echo "extras=${EXTRAS} compile=${TB_AD_LAYER_COMPILE:-1} python=$(python -V 2>&1)"
  } | sha256sum | cut -d' ' -f1
}
installed_is_current() {
  [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$(fingerprint)" ] || return 1
  # Edited compiled sources make the compiled modules stale: install (compile) again.
  python -c "import sys; from tb_ad_layer._compiled import check; v = check(); \
sys.exit(1 if v.modules and v.reason else 0)" 2>/dev/null
}
if installed_is_current; then
  echo "== tb-ad-layer is installed and current (.venv)"
else
  echo "== installing tb-ad-layer (and test extras: ${EXTRAS:-none}), compiling its hot modules"
  # The panel is built below, with its own error message, rather than inside pip.
  TB_AD_LAYER_BUILD_PANEL=0 python -m pip install -q --disable-pip-version-check \
    -e ".${EXTRAS:+[$EXTRAS]}"
  fingerprint > "$STAMP"
fi
python -c "from tb_ad_layer._compiled import describe; print('   converter:', describe())"
command -v npm >/dev/null || { echo "error: npm (Node.js >= 18) is needed to build the panel" >&2; exit 1; }
cd frontend
LOCK_STAMP=node_modules/.tb_ad_layer_lock
if [ -f "$LOCK_STAMP" ] && cmp -s package-lock.json "$LOCK_STAMP"; then
  echo "== panel dependencies are current (frontend/node_modules)"
else
  echo "== installing the panel's dependencies (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json "$LOCK_STAMP"
fi
BUILT=../tb_ad_layer/plugin/static/index.js
if [ -f "$BUILT" ] && [ -z "$(find . -path ./node_modules -prune -o -type f -newer "$BUILT" -print -quit)" ]; then
  echo "== the panel is built and current (tb_ad_layer/plugin/static/)"
else
  echo "== building the panel (frontend/ -> tb_ad_layer/plugin/static/)"
  npm run --silent build
fi
