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
* replaced underneath: the clients ask for a panel's mix (runs, layer, overview, a layer's
  timeline, a timeline window over all kernels) for ``--replaced-seconds``, closed loop and
  then paced, while the run store is replaced every ``--replace-every`` seconds the way the
  converter replaces it (a new file renamed over the old one: ``--replace-with copy``
  alternates two prepared versions, each time as a new file, so every answer is computed
  afresh; ``convert`` re-runs the converter in another process). Every answer must be a 200
  with a body that is valid JSON (gzip decoded); anything else counts as an error and is shown;
* baseline: TensorBoard's own ``/data/environment``, the floor set by TensorBoard's werkzeug
  server (a new thread and, since werkzeug 3 closes every connection, a new TCP connection per
  request), which bounds what any plugin endpoint can reach.

Requests send ``Accept-Encoding: gzip`` as browsers do. Every phase is bounded by a request
count and a time limit. Figures are printed and written to bench/out/plugin/results.json.
Targets: 0 errors; paced at 200 requests/s, p99 under 20 ms.

    python bench/bench_plugin.py                 # full run (a few minutes)
    python bench/bench_plugin.py --quick         # fewer requests
"""
from __future__ import annotations

import argparse
import gzip
import http.client
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import msgspec

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out" / "plugin"
sys.path.insert(0, str(REPO))

from tb_ad_layer.errors import InputError  # noqa: E402
from tb_ad_layer.store.reader import RunStore  # noqa: E402
from tb_ad_layer.store.writer import store_path, temp_path  # noqa: E402
from tests.plugin.fake_trace import convert_with_trace  # noqa: E402
from tests.tensorboard_process import running_tensorboard  # noqa: E402

BASE = "/data/plugin/ad_layer"
RUN = "dsv3_bench"


def generate_dump(experts: int) -> Path:
    dump = OUT / f"dump_e{experts}"
    if not any(dump.glob("*.txt")):
        subprocess.run([sys.executable, str(REPO / "tools" / "make_ad_dump.py"), "--model",
                        "dsv3", "--layers", "8", "--dense-layers", "2", "--unfused-moe",
                        "--expert-dequant", "op", "--experts", str(experts), "--out", str(dump)],
                       check=True, stdout=subprocess.DEVNULL)
    return dump


def build_store(dump: Path, logdir: Path, kernels_per_node: int, extra_per_layer: int,
                scale: float = 1.0) -> Path:
    """The run store of ``dump`` with a synthetic trace, reused when a readable one is there."""
    path = store_path(logdir, RUN)
    if path.exists():
        try:
            RunStore(path).close()
        except InputError:  # left by an older tb-ad-layer, or damaged: build it again
            path.unlink()
    if not path.exists():
        convert_with_trace(dump, logdir, RUN, kernels_per_node=kernels_per_node,
                           extra_per_layer=extra_per_layer, scale=scale)
    return path


def build_logdir(experts: int, kernels_per_node: int,
                 extra_per_layer: int) -> tuple[Path, int, float, list[Path]]:
    """Generate the dump and the run store (reused when present); return (logdir, layer of
    about 300 nodes, timeline extent in µs, two prepared versions of the store to swap in)."""
    dump = generate_dump(experts)
    tag = f"e{experts}_k{kernels_per_node}_x{extra_per_layer}"
    logdir = OUT / f"logs_{tag}"
    path = build_store(dump, logdir, kernels_per_node, extra_per_layer)
    versions = [build_store(dump, OUT / f"versions_{tag}" / name, kernels_per_node,
                            extra_per_layer, scale) for name, scale in (("a", 1.0), ("b", 0.9))]
    store = RunStore(path)
    stage = store.stages()[-1].idx
    layers = store.layers(stage)
    best = min(layers, key=lambda row: abs(row.node_count - 300))
    text = store.layer_doc_text(stage, best.layer) or ""
    kernels = store.kernels()
    print(f"store: {path}\n  {len(layers)} layers, layer {best.layer} has "
          f"{best.node_count} nodes ({len(text) / 1e3:.0f} kB JSON); {len(kernels)} kernels "
          f"stored; {path.stat().st_size / 1e6:.1f} MB")
    extent_us = max(k.end_ns for k in kernels) / 1000
    store.close()
    return logdir, best.layer, extent_us, versions


class Client:
    """One keep-alive ``http.client`` connection (reopened when the server closes it)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def get(self, path: str, check: bool = False) -> tuple[int, int, float, str | None]:
        """(status, body bytes, seconds, what was wrong or None). With ``check``, a 200 whose
        body is not valid JSON is wrong too (checked after the clock stops)."""
        t0 = time.perf_counter()
        try:
            self.conn.request("GET", path, headers={"Accept-Encoding": "gzip"})
            r = self.conn.getresponse()
            body = r.read()
            if r.getheader("Connection", "").lower() == "close":
                self.conn.close()  # werkzeug 3 closes after every response
        except (OSError, http.client.HTTPException) as e:
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            return 0, 0, time.perf_counter() - t0, f"{path}: {type(e).__name__}: {e}"
        dt = time.perf_counter() - t0
        if r.status != 200:
            return r.status, len(body), dt, f"{path}: {r.status} {body[:300]!r}"
        if check:
            try:
                if r.getheader("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                msgspec.json.decode(body)
            except (OSError, EOFError, msgspec.DecodeError) as e:
                return r.status, len(body), dt, f"{path}: 200 but not JSON ({e})"
        return r.status, len(body), dt, None


def summary(lat: list[float], wall: float, errors: list[str], sizes: list[int]) -> dict:
    lat_ms = sorted(x * 1e3 for x in lat) or [0.0]
    q = statistics.quantiles(lat_ms, n=100) if len(lat_ms) >= 2 else lat_ms * 99
    return {"requests": len(lat), "errors": len(errors), "seconds": round(wall, 2),
            "req_per_s": round(len(lat) / wall, 1), "p50_ms": round(q[49], 2),
            "p99_ms": round(q[98], 2), "max_ms": round(lat_ms[-1], 2),
            "body_bytes": int(statistics.median(sizes)) if sizes else 0,
            "error_samples": errors[:5]}


def load(port: int, make_path: Callable[[int], str], clients: int, total: int,
         max_seconds: float, rate: float | None = None, check: bool = False) -> dict:
    """``clients`` threads share ``total`` requests; closed loop, or paced to ``rate``/s."""
    lock = threading.Lock()
    issued = 0
    lat: list[float] = []
    sizes: list[int] = []
    errors: list[str] = []
    t_start = time.perf_counter()
    deadline = t_start + max_seconds

    def worker(k: int) -> None:
        nonlocal issued
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
            status, size, dt, wrong = c.get(make_path(i), check)
            with lock:
                if wrong is None:
                    lat.append(dt)
                    sizes.append(size)
                else:
                    errors.append(wrong)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return summary(lat, time.perf_counter() - t_start, errors, sizes)


class Replacer(threading.Thread):
    """Replaces the run store every ``every_s`` seconds the way the converter does: a complete
    new file renamed over the old one. ``copy`` alternates two prepared versions (each time a
    new file, so the plugin sees a new store and recomputes every answer); ``convert`` runs the
    converter again in another process."""

    def __init__(self, store: Path, versions: list[Path], every_s: float, mode: str,
                 convert_args: tuple[Path, Path, int, int]) -> None:
        super().__init__(daemon=True)
        self.store, self.versions, self.every_s, self.mode = store, versions, every_s, mode
        self.convert_args = convert_args
        self.stop = threading.Event()
        self.count = 0
        self.failure: str | None = None

    def replace_once(self) -> None:
        if self.mode == "copy":
            tmp = temp_path(self.store)
            shutil.copyfile(self.versions[self.count % len(self.versions)], tmp)
            os.replace(tmp, self.store)
            return
        dump, logdir, kernels_per_node, extra = self.convert_args
        code = ("import sys; from pathlib import Path; "
                "from tests.plugin.fake_trace import convert_with_trace; "
                "convert_with_trace(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], "
                "kernels_per_node=int(sys.argv[4]), extra_per_layer=int(sys.argv[5]), "
                "scale=float(sys.argv[6]))")
        subprocess.run([sys.executable, "-c", code, str(dump), str(logdir), RUN,
                        str(kernels_per_node), str(extra), str(1.0 - 0.1 * (self.count % 2))],
                       cwd=REPO, check=True, capture_output=True)

    def run(self) -> None:
        while not self.stop.wait(self.every_s):
            try:
                self.replace_once()
            except (OSError, subprocess.CalledProcessError) as e:
                self.failure = f"replacing the store failed: {e}"
                return
            self.count += 1


def replaced_underneath(port: int, make_path: Callable[[int], str], args: argparse.Namespace,
                        store: Path, versions: list[Path], convert_args: tuple[Path, Path, int, int],
                        total: int, max_seconds: float, rate: float | None) -> dict:
    """One load phase while a :class:`Replacer` replaces the store."""
    replacer = Replacer(store, versions, args.replace_every, args.replace_with, convert_args)
    replacer.start()
    try:
        r = load(port, make_path, args.clients, total, max_seconds, rate=rate, check=True)
    finally:
        replacer.stop.set()
        replacer.join()
    if replacer.failure:
        raise SystemExit(replacer.failure)
    r["replacements"] = replacer.count
    return r


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
    ap.add_argument("--replace-every", type=float, default=1.0, metavar="S",
                    help="replaced-underneath phases: seconds between two replacements")
    ap.add_argument("--replace-with", choices=["copy", "convert"], default="copy",
                    help="swap in a prepared store (default) or convert again")
    ap.add_argument("--replaced-seconds", type=float, default=10.0,
                    help="length of each replaced-underneath phase")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.requests, args.paced_seconds, args.replaced_seconds = 600, 4.0, 5.0
    OUT.mkdir(parents=True, exist_ok=True)
    logdir, layer, extent_us, versions = build_logdir(args.experts, args.kernels_per_node,
                                                      args.extra_per_layer)
    store = store_path(logdir, RUN)
    shutil.copyfile(versions[0], temp_path(store))  # start from a known version
    os.replace(temp_path(store), store)
    convert_args = (generate_dump(args.experts), logdir, args.kernels_per_node,
                    args.extra_per_layer)
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
            status, size, dt, wrong = probe.get(path, check=True)
            assert wrong is None, wrong
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
        # What a panel asks for, while the store is replaced underneath.
        mix = [f"{BASE}/api/runs", endpoints["layer"], f"{BASE}/api/overview?run={run}",
               endpoints["timeline_layer"]]

        def panel_mix(i: int) -> str:
            if i % 5 == 4:
                return (f"{BASE}/api/timeline?run={run}&start_us={windows[i % len(windows)]:.3f}"
                        f"&end_us={windows[i % len(windows)] + 400:.3f}")
            return mix[i % 5]
        results["replaced"] = {"every_s": args.replace_every, "with": args.replace_with}
        r = replaced_underneath(port, panel_mix, args, store, versions, convert_args,
                                10 ** 9, args.replaced_seconds, None)
        results["replaced"]["closed"] = r
        print(f"replaced every {args.replace_every:g} s ({args.replace_with}), closed loop {r}")
        r = replaced_underneath(port, panel_mix, args, store, versions, convert_args,
                                int(args.rate * args.replaced_seconds),
                                args.replaced_seconds * 3, args.rate)
        results["replaced"]["paced"] = r
        print(f"replaced every {args.replace_every:g} s ({args.replace_with}), paced "
              f"{args.rate:.0f}/s {r}")
    (OUT / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {OUT / 'results.json'}")
    closed, paced = results["replaced"]["closed"], results["replaced"]["paced"]
    print(f"\nwhile the store was replaced underneath ({args.clients} clients): "
          f"closed loop {closed['req_per_s']} requests/s, p50 {closed['p50_ms']} ms, p99 "
          f"{closed['p99_ms']} ms, {closed['errors']} errors, {closed['replacements']} "
          f"replacements; paced at {args.rate:.0f}/s: {paced['req_per_s']} requests/s, p50 "
          f"{paced['p50_ms']} ms, p99 {paced['p99_ms']} ms (target < 20), {paced['errors']} "
          f"errors, {paced['replacements']} replacements")
    errors = sum(r["errors"] for phase in ("warm_closed", "warm_paced")
                 for r in results[phase].values()) + closed["errors"] + paced["errors"]
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
