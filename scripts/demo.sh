#!/usr/bin/env bash
# Command 1: set everything up and open the demo runs in TensorBoard.
#   bash scripts/demo.sh            (PORT=6006 HOST=127.0.0.1 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# shellcheck disable=SC1091
. .venv/bin/activate
PORT="${PORT:-6006}"
HOST="${HOST:-127.0.0.1}"
echo
echo "== TensorBoard on http://${HOST}:${PORT}/#ad_layer  (Ctrl-C to stop)"
echo "   from another machine: ssh -L ${PORT}:localhost:${PORT} <this-host>, then open http://localhost:${PORT}/#ad_layer"
exec tensorboard --logdir demo_logs --host "$HOST" --port "$PORT"
