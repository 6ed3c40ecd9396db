#!/usr/bin/env python3
"""Benchmark trace ingestion on large synthetic decode traces (61 layers, ~1,000 replays).

Generates nsys-schema SQLite exports into ``bench/out/`` (kept between runs; ``--regen`` rebuilds),
then, in a fresh process per size so that peak memory is per size, times: read (all kernel rows),
pick replay + aggregate per-node stats over every replay, segment into layers, map to nodes,
summaries. Prints seconds, rows/s and peak RSS. Target: 2M rows under 10 s and under 1 GB.

    python bench/bench_trace.py                       # 250k, 500k, 1M, 2M rows
    python bench/bench_trace.py --sizes 2000000 --regen
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LAYERS, DENSE = 61, 3


def _make_traces():
    spec = importlib.util.spec_from_file_location("make_traces", ROOT / "tools" / "make_traces.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules["make_traces"] = mod
    spec.loader.exec_module(mod)
    return mod


def generate(out: Path, rows: int, regen: bool) -> Path:
    """The decode trace with about ``rows`` kernel rows (generated when missing).

    Generation runs in its own process: a child inherits its parent's peak RSS on Linux, so the
    parent must stay small for the measured figures to be the reader's own.
    """
    path = out / f"decode_{rows}.sqlite"
    if path.exists() and not regen:
        return path
    t0 = time.perf_counter()
    subprocess.run([sys.executable, str(ROOT / "tools" / "make_traces.py"), "--out", str(out),
                    "--name", f"decode_{rows}", "--layers", str(LAYERS), "--dense", str(DENSE),
                    "--target-rows", str(rows), "--seed", "1"], check=True, capture_output=True)
    print(f"generated {path.name} in {time.perf_counter() - t0:.1f} s", flush=True)
    return path


def measure(path: Path) -> dict:
    """Run the pipeline stages on ``path`` in this process; returns timings and peak RSS."""
    from tb_ad_layer.trace.kernel_map import load_kernel_map
    from tb_ad_layer.trace.mapping import LayerNodes, map_kernels
    from tb_ad_layer.trace.reader import read_trace
    from tb_ad_layer.trace.replay import select
    from tb_ad_layer.trace.segment import segment_layers
    from tb_ad_layer.trace.summary import layer_summary, node_trace_kernels

    mt = _make_traces()
    plan = mt.dsv3_plan(LAYERS, DENSE)
    layers = [LayerNodes(l.index, l.kind, [SimpleNamespace(name=n.id, op=n.op, group=n.group, sub_group=n.sub_group,
                                                           stream=n.stream) for n in l.nodes]) for l in plan.layers]
    times = {}
    t = time.perf_counter()
    td = read_trace(path)
    times["read"] = time.perf_counter() - t
    t2 = time.perf_counter()
    sel = select(td, "decode")
    times["replay+stats"] = time.perf_counter() - t2
    t3 = time.perf_counter()
    seg = segment_layers(sel.kernels, [l.kind for l in layers])
    times["segment"] = time.perf_counter() - t3
    t4 = time.perf_counter()
    mapping = map_kernels(layers, seg, load_kernel_map())
    groups = {n.name: n.group for l in layers for n in l.nodes}
    origin = min(k.start_ns for k in sel.kernels)
    for l, ks in zip(layers, seg.layers):
        layer_summary(ks, groups, origin)
    node_trace_kernels(sel.kernels, origin)
    times["map+summary"] = time.perf_counter() - t4
    times["total"] = time.perf_counter() - t
    return {"rows": len(td), "replays": sel.replays, "replay_kernels": len(sel.kernels), "layers": len(seg.layers),
            "mapped_share": round(mapping.mapped_share, 4), "times": times,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="250000,500000,1000000,2000000", help="kernel rows, comma separated")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "trace")
    ap.add_argument("--regen", action="store_true", help="regenerate the traces")
    ap.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure)))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"{'rows':>10} {'replays':>8} {'read s':>7} {'replay s':>8} {'seg s':>6} {'map s':>6} {'total s':>8} "
          f"{'rows/s':>10} {'peak MB':>8} {'mapped':>7}")
    for size in (int(s) for s in args.sizes.split(",")):
        path = generate(args.out, size, args.regen)
        proc = subprocess.run([sys.executable, __file__, "--measure", str(path)], capture_output=True, text=True,
                              check=False)
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return proc.returncode
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        t = r["times"]
        print(f"{r['rows']:>10,} {r['replays']:>8} {t['read']:>7.2f} {t['replay+stats']:>8.2f} {t['segment']:>6.2f} "
              f"{t['map+summary']:>6.2f} {t['total']:>8.2f} {r['rows'] / t['total']:>10,.0f} {r['peak_rss_mb']:>8.0f} "
              f"{r['mapped_share']:>7.1%}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
