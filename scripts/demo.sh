#!/usr/bin/env bash
# Command 1: set everything up and open the demo runs in TensorBoard.
#   bash scripts/demo.sh            (HOST=127.0.0.1; PORT: 6006, or the next free one)
# The URL is printed once TensorBoard answers on it, not before.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# shellcheck disable=SC1091
. .venv/bin/activate
HOST="${HOST:-127.0.0.1}"
# A port asked for is used as it is (TensorBoard says so when it is taken); otherwise the first
# free one from 6006 on, so a second demo, or another TensorBoard, does not stop this one.
PORT="${PORT:-$(python - "$HOST" <<'EOF'
import socket, sys
for port in range(6006, 6106):
    with socket.socket() as s:
        try:
            s.bind((sys.argv[1], port))
        except OSError:
            continue
        print(port)
        break
else:
    sys.exit("no free port in 6006-6105; set PORT")
EOF
)}"
tensorboard --logdir demo_logs --host "$HOST" --port "$PORT" &
TB=$!
trap 'kill "$TB" 2>/dev/null || true' INT TERM
if ! python - "$HOST" "$PORT" "$TB" <<'EOF'
import os, sys, time, urllib.request
host, port, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
url = f"http://{host}:{port}/data/plugins_listing"
for _ in range(600):
    try:
        urllib.request.urlopen(url, timeout=1).read()
        break
    except OSError:
        try:
            os.kill(pid, 0)
        except OSError:
            sys.exit("TensorBoard exited before it answered; see its messages above")
        time.sleep(0.1)
else:
    sys.exit(f"TensorBoard did not answer on {url} within a minute")
print(f"\n== TensorBoard on http://{host}:{port}/#ad_layer  (Ctrl-C to stop)")
print(f"   from another machine: ssh -L {port}:localhost:{port} <this-host>, "
      f"then open http://localhost:{port}/#ad_layer", flush=True)
EOF
then
  kill "$TB" 2>/dev/null || true
  exit 1
fi
wait "$TB"
