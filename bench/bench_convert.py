"""Converter throughput: parse + assign all layers + write the store, on DeepSeek-V3-sized dumps.

Generates dumps with tools/make_ad_dump.py into bench/out/ (61 layers, unfused MoE with 256
experts: ~29 MB and ~180k nodes), then sizes 1x/4x/16x by layer count to show how time grows.
Prints MB/s end to end, peak RSS (in a child process per size, so sizes don't share a peak), and
the time to load one layer of one stage from the finished store: "load ms" reads and decodes the
layer document, "text ms" reads the stored JSON text that the plugin serves as is.

    python bench/bench_convert.py              # all sizes
    python bench/bench_convert.py --quick      # 1x and 4x only
    python bench/bench_convert.py --repeat 3   # best of 3 runs per size (shared machines are noisy)
    python bench/bench_convert.py --phases     # where the time goes, per pipeline step
    python bench/bench_convert.py --pure       # also the Python sources, beside the compiled modules

The first line says which implementation ran: the modules compiled with mypyc (and which), or
the Python sources. ``--pure`` runs every size a second time with ``TB_AD_LAYER_PURE_PYTHON=1``
and prints both figures.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"


def generate(name: str, layers: int, dequant: str) -> Path:
    d = OUT / f"{name}_{dequant}"
    if not any(d.glob("*.txt")):
        d.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(REPO / "tools" / "make_ad_dump.py"), "--model", "dsv3",
                        "--layers", str(layers), "--dense-layers", "3", "--unfused-moe",
                        "--expert-dequant", dequant, "--experts", "256", "--hidden", "7168",
                        "--stages", "final", "--out", str(d)], check=True,
                       stdout=subprocess.DEVNULL)
        for t in d.glob("*.truth.json"):
            t.unlink()  # the benchmark reads only the dump
    return d


CHILD = r"""
import json, os, resource, sys, time
from pathlib import Path
from tb_ad_layer.convert import convert
from tb_ad_layer.store.reader import RunStore
src, logdir = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
res = convert(src, logdir, run="bench")
dt = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
# Loads are timed as a reader process sees them: without the conversion's garbage still queued
# for the collector (the converter pauses it while building the graph).
import gc; gc.collect()
store = RunStore(res.store)
layers = [l.layer for l in store.layers(0)]
loads, texts = [], []
for layer in layers[:: max(1, len(layers) // 10)]:
    t1 = time.perf_counter(); store.layer_doc_text(0, layer); texts.append(time.perf_counter() - t1)
    t1 = time.perf_counter(); store.layer_doc(0, layer); loads.append(time.perf_counter() - t1)
print(json.dumps({"seconds": dt, "peak": peak, "nodes": res.stages[0].nodes,
                  "bytes": res.stages[0].size_bytes, "layers": len(layers),
                  "load_ms_max": max(loads) * 1e3, "load_ms_median": sorted(loads)[len(loads)//2] * 1e3,
                  "text_ms_median": sorted(texts)[len(texts)//2] * 1e3}))
"""


PHASES = r"""
import json, sys, tempfile, time
from pathlib import Path
from tb_ad_layer.dump.reader import parse_dump
from tb_ad_layer.gc_pause import gc_paused
from tb_ad_layer.layers.layered import layer_graph
from tb_ad_layer.store.writer import StoreWriter, store_path
src = next(Path(sys.argv[1]).glob("*.txt"))
t = {}
def lap(name, t0):
    t[name] = time.perf_counter() - t0
    return time.perf_counter()
# The steps of convert(), in its order and under its collector pause.
with gc_paused(), tempfile.TemporaryDirectory() as tmp:
    t0 = time.perf_counter()
    graph = parse_dump(src).select(); t0 = lap("read+parse", t0)
    lg = layer_graph(graph); t0 = lap("layers", t0)
    with StoreWriter(store_path(tmp, "p")) as w:
        t0 = time.perf_counter()
        idx = w.add_stage(file=src.name, order_no=0, stage="s", transform="t",
                          modules=[graph.module], lg=lg); t0 = lap("stage+outside", t0)
        w.add_layers(idx, lg); t0 = lap("layer documents", t0)
        w.commit(); lap("commit", t0)
print(json.dumps(t))
"""


IMPLEMENTATION = r"""
from tb_ad_layer._compiled import describe, status
v = status()
print(describe() + (": " + ", ".join(m.removeprefix("tb_ad_layer.") for m in v.modules)
                    if v.use_compiled else ""))
"""


def child_env(pure: bool) -> dict[str, str]:
    """The environment of a measured process: the compiled modules, or the Python sources."""
    env = {k: v for k, v in os.environ.items() if k != "TB_AD_LAYER_PURE_PYTHON"}
    if pure:
        env["TB_AD_LAYER_PURE_PYTHON"] = "1"
    return env


def implementation(pure: bool) -> str:
    proc = subprocess.run([sys.executable, "-c", IMPLEMENTATION], check=True, capture_output=True,
                          text=True, cwd=REPO, env=child_env(pure))
    return (proc.stderr + proc.stdout).strip()


def phases(src: Path, pure: bool) -> dict[str, float]:
    proc = subprocess.run([sys.executable, "-c", PHASES, str(src)], check=True,
                          capture_output=True, text=True, cwd=REPO, env=child_env(pure))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(src: Path, repeat: int, pure: bool) -> dict:
    """Best of ``repeat`` conversions, each in a fresh process (its own peak memory)."""
    logdir = OUT / "logs"
    best: dict | None = None
    for _ in range(repeat):
        proc = subprocess.run([sys.executable, "-c", CHILD, str(src), str(logdir)], check=True,
                              capture_output=True, text=True, cwd=REPO, env=child_env(pure))
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        if best is None or r["seconds"] < best["seconds"]:
            best = r
    assert best is not None
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=1, help="runs per size; the fastest is shown")
    ap.add_argument("--phases", action="store_true",
                    help="seconds per pipeline step on the 61-layer dumps instead")
    ap.add_argument("--pure", action="store_true",
                    help="also run the Python sources (TB_AD_LAYER_PURE_PYTHON=1) and print both")
    args = ap.parse_args()
    impls = [False, True] if args.pure else [False]
    print(f"implementation: {implementation(False)}", flush=True)
    if args.phases:
        for dequant in ("none", "op", "aten"):
            src = generate("dsv3_61", 61, dequant)
            for pure in impls:
                t = phases(src, pure)
                label = f"dsv3_61/{dequant}" + (" (py)" if pure else "")
                print(f"{label:<19} " + "  ".join(f"{k} {v:.3f}" for k, v in t.items())
                      + f"  (sum {sum(t.values()):.2f} s)", flush=True)
        return
    # DeepSeek-V3 size (61 layers) with the three ways expert weights reach the unfused MoE op:
    # bare weight lists (few, very long lines), one dequant op per weight (tens of thousands of
    # nodes), and aten fake-quant chains (node-dense); then 1x/4x/16x by layer count.
    rows = [("dsv3_61", 61, "none"), ("dsv3_61", 61, "op"), ("dsv3_61", 61, "aten"),
            ("x1", 16, "op"), ("x4", 64, "op")] + ([] if args.quick else [("x16", 256, "op")])
    pure_col = f" {'py s':>6} {'py MB/s':>7}" if args.pure else ""
    print(f"{'dump':>14} {'layers':>6} {'MB':>8} {'nodes':>9} {'s':>7} {'MB/s':>7} {'us/node':>8} "
          f"{'peak MB':>8} {'peak/file':>9} {'load ms (med/max)':>18} {'text ms':>8}{pure_col}")
    for name, layers, dequant in rows:
        src = generate(name, layers, dequant)
        r = run(src, max(1, args.repeat), pure=False)
        mb = r["bytes"] / 1e6
        if args.pure:
            p = run(src, max(1, args.repeat), pure=True)
            pure_col = f" {p['seconds']:6.2f} {mb / p['seconds']:7.1f}"
        print(f"{name + '/' + dequant:>14} {r['layers']:>6} {mb:8.1f} {r['nodes']:9,} "
              f"{r['seconds']:7.2f} {mb / r['seconds']:7.1f} {r['seconds'] / r['nodes'] * 1e6:8.1f} "
              f"{r['peak'] / 1e6:8.0f} "
              f"{r['peak'] / r['bytes']:9.1f} {r['load_ms_median']:12.2f}/{r['load_ms_max']:<5.2f} "
              f"{r['text_ms_median']:8.2f}{pure_col}",
              flush=True)


if __name__ == "__main__":
    main()
