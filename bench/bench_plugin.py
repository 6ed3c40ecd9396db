"""Plugin backend latency and throughput against a real TensorBoard process on loopback.

Builds a logdir (bench/out/plugin/) with one DeepSeek-V3-like run whose MoE layers have about
300 FX nodes (tools/make_ad_dump.py, unfused MoE with per-expert dequant ops) and a synthetic
decode trace stored with it (thousands of kernels on two streams), starts
``python -m tensorboard.main`` on a free loopback port and measures:

* cold: the first request of each endpoint after TensorBoard started (store opened, documents
  read, answer encoded);
* warm, closed loop: ``--clients`` threads (default 50), each with its own ``http.client``
  connection, sending requests back to back; gives the saturated requests/s and the latency
  while saturated;
* warm, paced: the same clients together sending ``--rate`` requests/s (default 200, the
  target), which gives the latency a user sees at that load;
* uncached: timeline requests whose window differs every time, so each one is computed;
* baseline: TensorBoard's own ``/data/environment``, the floor set by TensorBoard's werkzeug
  server (a new thread and, since werkzeug 3 closes every connection, a new TCP connection per
  request), which bounds what any plugin endpoint can reach.

Requests send ``Accept-Encoding: gzip`` as browsers do. Every phase is bounded by a request
count and a time limit. Figures are printed and written to bench/out/plugin/results.json.

    python bench/bench_plugin.py                 # full run (about a minute)
    python bench/bench_plugin.py --quick         # fewer requests
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable
from urllib.parse import quote

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out" / "plugin"
sys.path.insert(0, str(REPO))

from tb_ad_layer.store.reader import RunStore, StoreVersionError  # noqa: E402
from tb_ad_layer.store.writer import store_path  # noqa: E402
from tests.plugin.fake_trace import convert_with_trace  # noqa: E402
from tests.tensorboard_process import running_tensorboard  # noqa: E402

BASE = "/data/plugin/ad_layer"
RUN = "dsv3_bench"


def build_logdir(experts: int, kernels_per_node: int,
                 extra_per_layer: int) -> tuple[Path, int, float]:
    """Generate the dump and the run store (reused when present); return (logdir, layer of
    about 300 nodes, timeline extent in µs)."""
    dump = OUT / f"dump_e{experts}"
    if not any(dump.glob("*.txt")):
        subprocess.run([sys.executable, str(REPO / "tools" / "make_ad_dump.py"), "--model",
                        "dsv3", "--layers", "8", "--dense-layers", "2", "--unfused-moe",
                        "--expert-dequant", "op", "--experts", str(experts), "--out", str(dump)],
                       check=True, stdout=subprocess.DEVNULL)
    logdir = OUT / f"logs_e{experts}_k{kernels_per_node}_x{extra_per_layer}"
    path = store_path(logdir, RUN)
    if path.exists():
        try:
            RunStore(path).close()
        except StoreVersionError:  # left by an older tb-ad-layer: build it again
            path.unlink()
    if not path.exists():
        convert_with_trace(dump, logdir, RUN, kernels_per_node=kernels_per_node,
                           extra_per_layer=extra_per_layer)
    store = RunStore(path)
    stage = store.stages()[-1]["index"]
    layers = store.layers(stage)
    best = min(layers, key=lambda l: abs(l["node_count"] - 300))
    print(f"store: {path}\n  {len(layers)} layers, layer {best['layer']} has "
          f"{best['node_count']} nodes ({len(store.layer_doc_text(stage, best['layer'])) / 1e3:.0f}"
          f" kB JSON); {store.kernel_count()} kernels stored")
    extent_us = store.query("SELECT MAX(end_ns) FROM kernels")[0][0] / 1000
    store.close()
    return logdir, best["layer"], extent_us


class Client:
    """One keep-alive ``http.client`` connection (reopened when the server closes it)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def get(self, path: str) -> tuple[int, int, float]:
        t0 = time.perf_counter()
        try:
            self.conn.request("GET", path, headers={"Accept-Encoding": "gzip"})
            r = self.conn.getresponse()
            body = r.read()
            if r.getheader("Connection", "").lower() == "close":
                self.conn.close()  # werkzeug 3 closes after every response
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            return 0, 0, time.perf_counter() - t0
        return r.status, len(body), time.perf_counter() - t0


def summary(lat: list[float], wall: float, errors: int, sizes: list[int]) -> dict:
    lat_ms = sorted(x * 1e3 for x in lat)
    q = statistics.quantiles(lat_ms, n=100) if len(lat_ms) >= 2 else lat_ms * 99
    return {"requests": len(lat_ms), "errors": errors, "seconds": round(wall, 2),
            "req_per_s": round(len(lat_ms) / wall, 1), "p50_ms": round(q[49], 2),
            "p99_ms": round(q[98], 2), "max_ms": round(lat_ms[-1], 2),
            "body_bytes": int(statistics.median(sizes)) if sizes else 0}


def load(port: int, make_path: Callable[[int], str], clients: int, total: int,
         max_seconds: float, rate: float | None = None) -> dict:
    """``clients`` threads share ``total`` requests; closed loop, or paced to ``rate``/s."""
    lock = threading.Lock()
    issued = 0
    lat: list[float] = []
    sizes: list[int] = []
    errors = 0
    t_start = time.perf_counter()
    deadline = t_start + max_seconds

    def worker(k: int) -> None:
        nonlocal issued, errors
        c = Client(port)
        interval = clients / rate if rate else 0.0
        next_at = t_start + (k / clients) * interval
        while True:
            with lock:
                if issued >= total or time.perf_counter() > deadline:
                    return
                i = issued
                issued += 1
            if rate:
                delay = next_at - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                next_at += interval
            status, size, dt = c.get(make_path(i))
            with lock:
                if status == 200:
                    lat.append(dt)
                    sizes.append(size)
                else:
                    errors += 1

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return summary(lat, time.perf_counter() - t_start, errors, sizes)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--requests", type=int, default=3000, help="per closed-loop phase")
    ap.add_argument("--rate", type=float, default=200.0, help="paced phase: requests/s")
    ap.add_argument("--paced-seconds", type=float, default=8.0)
    ap.add_argument("--max-seconds", type=float, default=30.0, help="time limit per phase")
    ap.add_argument("--experts", type=int, default=88, help="88 gives ~300-node MoE layers")
    ap.add_argument("--kernels-per-node", type=int, default=2)
    ap.add_argument("--extra-per-layer", type=int, default=1000,
                    help="unmapped kernels added per layer (timeline density)")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.requests, args.paced_seconds = 600, 4.0
    OUT.mkdir(parents=True, exist_ok=True)
    logdir, layer, extent_us = build_logdir(args.experts, args.kernels_per_node, args.extra_per_layer)
    run = quote(RUN, safe="")
    endpoints = {
        # TensorBoard's own smallest JSON answer: the server's floor, not our code.
        "tb_baseline_environment": "/data/environment",
        "layer": f"{BASE}/api/layer?run={run}&layer={layer}",
        "timeline_layer": f"{BASE}/api/timeline?run={run}&layer={layer}",
        "timeline_all_lod": f"{BASE}/api/timeline?run={run}&max_items=2000",
    }
    print(f"cpus: {os.cpu_count()}, clients: {args.clients}")
    results: dict = {"cpus": os.cpu_count(), "clients": args.clients, "layer": layer,
                     "endpoints": endpoints, "cold_ms": {}, "warm_closed": {}, "warm_paced": {}}
    # Ready when the plugin listing answers: the first request to our endpoints stays "cold".
    with running_tensorboard(logdir, OUT) as tb:
        port = tb.port
        probe = Client(port)
        for name, path in endpoints.items():
            status, size, dt = probe.get(path)
            assert status == 200, (name, status)
            results["cold_ms"][name] = round(dt * 1e3, 2)
            print(f"cold  {name:18s} {dt * 1e3:8.2f} ms  ({size / 1e3:.0f} kB gzip)")
        for name, path in endpoints.items():
            r = load(port, lambda i, p=path: p, args.clients, args.requests, args.max_seconds)
            results["warm_closed"][name] = r
            print(f"warm closed loop {name:18s} {r}")
        for name, path in endpoints.items():
            total = int(args.rate * args.paced_seconds)
            r = load(port, lambda i, p=path: p, args.clients, total, args.paced_seconds * 3,
                     rate=args.rate)
            results["warm_paced"][name] = r
            print(f"warm paced {args.rate:.0f}/s {name:18s} {r}")
        rng = random.Random(0)
        windows = [rng.uniform(0, max(1.0, extent_us - 400)) for _ in range(args.requests)]
        r = load(port, lambda i: f"{BASE}/api/timeline?run={run}&start_us={windows[i]:.3f}"
                                 f"&end_us={windows[i] + 400:.3f}", args.clients,
                 min(args.requests, 1500), args.max_seconds)
        results["uncached_timeline_window"] = r
        print(f"uncached timeline windows (closed loop) {r}")
    (OUT / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {OUT / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
