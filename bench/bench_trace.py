#!/usr/bin/env python3
"""Benchmark trace ingestion on a large synthetic decode trace (61 layers, per-layer stream sets).

Generates an nsys-schema SQLite export into ``bench/out/trace/`` (kept between runs; ``--regen``
rebuilds) with ``tools/make_traces.py``: DeepSeek-V3-like layers (3 dense, then MoE with shared
experts), every layer on its own set of streams, about 2,000,000 kernel rows over ~470 replays.
Then, in a fresh process (so that peak memory is ingestion's own), it runs the converter's whole
trace path: open, count activities per stream, pick the busiest graph, aggregate every replay per
graph node, take one replay, cut it into layers and map its kernels to the graph's nodes, and
summarise. In the same process it times, as the floor, the single SQL query with which seed 000's
script reads only the first execution of every graph node. Prints seconds per step, peak RSS, and
the agreement with the generator's truth (layer and node) beside seed 000's stream grouping.
Targets: under 10 s and 150 MB.

    python bench/bench_trace.py                 # 2,000,000 rows
    python bench/bench_trace.py --rows 500000 --regen
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LAYERS, DENSE = 61, 3


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
                    "--target-rows", str(rows), "--seed", "1", "--layout", "per-layer"], check=True,
                   capture_output=True)
    print(f"generated {path.name} in {time.perf_counter() - t0:.1f} s", flush=True)
    return path


def measure(path: Path) -> dict:
    """Run the trace path on ``path`` in this process; returns timings, peak RSS and agreement."""
    from tb_ad_layer.trace.ingest import ingest_trace
    from tests.trace.accuracy import agreement, baseline_agreement, seed_baseline
    from tests.trace.helpers import load_truth, model_from_truth

    truth = load_truth(path.with_name(path.stem + ".truth.json"))
    expected = model_from_truth(truth)
    steps: list[tuple[str, float]] = []
    t0 = time.perf_counter()

    def progress(message: str) -> None:
        # ingest_trace reports each step as "<what> in <seconds> s".
        what, _, rest = message.rpartition(" in ")
        if what and rest.endswith(" s"):
            try:
                steps.append((what, float(rest[:-2])))
            except ValueError:
                pass

    result = ingest_trace(path, expected, progress=progress)
    total = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    got = agreement(truth, result.kernels)
    layers_found, seed = baseline_agreement(truth, result.kernels, expected)
    t1 = time.perf_counter()
    floor_rows = seed_baseline().first_replay_query(path, truth["graph_id"])
    floor = time.perf_counter() - t1
    return {"rows": sum(t.kernels for t in result.info.stream_totals),
            "replays": result.info.replays, "replay_kernels": result.info.kernel_count,
            "layers": result.info.layers_found, "streams": len(result.info.stream_totals),
            "total_s": total, "steps": steps, "peak_rss_mb": peak, "floor_s": floor,
            "floor_rows": floor_rows, "layer_share": got.layer_share, "node_share": got.node_share,
            "outside_share": got.outside_share, "seed_layers": layers_found,
            "seed_layer_share": seed.layer_share, "seed_node_share": seed.node_share,
            "segmentation": result.info.segmentation}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000, help="kernel rows of the generated trace")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "trace")
    ap.add_argument("--regen", action="store_true", help="regenerate the trace")
    ap.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure)))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    path = generate(args.out, args.rows, args.regen)
    proc = subprocess.run([sys.executable, __file__, "--measure", str(path)], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
        return proc.returncode
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"{path.name}: {r['rows']:,} kernel rows on {r['streams']} streams, {r['replays']} replays of "
          f"{r['replay_kernels']:,} kernels, {r['layers']} layers ({r['segmentation']})")
    for what, seconds in r["steps"]:
        print(f"  {seconds:6.2f} s  {what}")
    print(f"  total {r['total_s']:.2f} s (target < 10 s), peak RSS {r['peak_rss_mb']:.0f} MB "
          f"(target < 150 MB)")
    print(f"  floor: seed 000's single first-replay query, {r['floor_rows']:,} rows in {r['floor_s']:.2f} s")
    print(f"  agreement with the truth: layer {r['layer_share']:.2%}, node {r['node_share']:.2%}, "
          f"outside nodes {r['outside_share']:.2%}")
    print(f"  seed 000 stream grouping on the same replay: {r['seed_layers']} layers, layer "
          f"{r['seed_layer_share']:.2%}, node {r['seed_node_share']:.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
