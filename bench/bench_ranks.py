"""An 8-rank run: converting a multi-GPU trace with ``--device all`` against one rank, and the
latency of the cross-rank API (``api/ranks``) and of a layer at another rank (``api/layer&rank=``).

The inputs are generated the way the tests make them: the final stage of a DeepSeek-V3-style dump
(tools/make_ad_dump.py, ``--layers`` layers, 3 dense) and an nsys-like trace of ``--ranks``
devices replaying its decode CUDA graph ``--replays`` times (tools/make_traces.py), rank 3
planted 30 % slower at layer 10; under --out (default /tmp/tb_ad_layer_bench_ranks; never
commit it).

Prints: the trace's size; wall time of ``convert --device all`` (every rank; ``--jobs 1`` and
``--jobs 2``, the ranks' traces read in worker processes) and of ``convert --device 0`` (one
rank), each the best of ``--repeat`` runs, and the store sizes; then
``api/ranks`` cold (a fresh plugin opening the store: it reads every rank's kernels) and cached,
``api/layer`` of one layer at rank 3 (uncached) and ``report`` of the run (which includes the
ranks). The machine's load (``os.getloadavg``) is printed before and after.

    python bench/bench_ranks.py
    python bench/bench_ranks.py --layers 61 --ranks 8 --replays 50
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _run(*args: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def generate(out: Path, layers: int, ranks: int, replays: int) -> tuple[Path, Path]:
    dump = out / f"dsv3_{layers}"
    if not any(dump.glob("*.truth.json")):
        _run("tools/make_ad_dump.py", "--model", "dsv3", "--layers", str(layers),
             "--dense-layers", "3", "--stages", "final", "--out", str(dump))
    truth = sorted(dump.glob("*.truth.json"))[-1]
    name = f"tp{ranks}_{layers}_{replays}"
    trace = out / f"{name}.sqlite"
    if not trace.exists():
        _run("tools/make_traces.py", "--out", str(out), "--name", name, "--phase", "decode",
             "--plan-from", str(truth), "--replays", str(replays), "--devices", str(ranks),
             "--format", "sqlite", "--slow", f"3:{min(10, layers - 1)}:1.3:0.02")
    return dump, trace


def convert(dump: Path, trace: Path, logdir: Path, run: str, device: str, repeat: int,
            jobs: int = 1) -> float:
    times = [_run("-m", "tb_ad_layer.cli", "convert", str(dump), "--logdir", str(logdir),
                  "--run", run, "-q", "--trace", str(trace), "--device", device, "--jobs",
                  str(jobs)) for _ in range(repeat)]
    return min(times)


def timed(fn, n: int = 5) -> float:  # type: ignore[no-untyped-def]
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/tb_ad_layer_bench_ranks"))
    ap.add_argument("--layers", type=int, default=61)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--replays", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    print(f"load before: {os.getloadavg()[0]:.2f}")
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    dump, trace = generate(args.out, args.layers, args.ranks, args.replays)
    print(f"inputs: {dump.name} ({sum(f.stat().st_size for f in dump.glob('*.txt')) / 1e6:.1f} MB), "
          f"{trace.name} ({trace.stat().st_size / 1e6:.1f} MB, {args.ranks} devices, "
          f"{args.replays} replays) ready in {time.perf_counter() - t0:.1f} s")
    logdir = args.out / "logs"
    shutil.rmtree(logdir, ignore_errors=True)
    every = convert(dump, trace, logdir, "all", "all", args.repeat)
    every2 = convert(dump, trace, logdir, "all2", "all", args.repeat, jobs=2)
    one = convert(dump, trace, logdir, "one", "0", args.repeat)
    from tb_ad_layer.store.writer import store_path
    size_all = store_path(logdir, "all").stat().st_size
    size_one = store_path(logdir, "one").stat().st_size
    print(f"convert --device all ({args.ranks} ranks) --jobs 1: {every:.2f} s, store "
          f"{size_all / 1e6:.1f} MB; --jobs 2: {every2:.2f} s ({every / every2:.2f}x)")
    print(f"convert --device 0   (1 rank):  {one:.2f} s, store {size_one / 1e6:.1f} MB")
    print(f"per extra rank: {(every - one) / max(1, args.ranks - 1):.2f} s")

    from tb_ad_layer.analysis.report import ReportOptions, report_for_store
    from tb_ad_layer.plugin.data import PluginData
    from tests.plugin.conftest import answer

    def cold() -> None:
        answer(PluginData(logdir), "ranks", run="all")
    data = PluginData(logdir)
    body = answer(data, "ranks", run="all")
    import json
    stragglers = json.loads(body.body)["stragglers"]
    print(f"api/ranks: {len(body.body) / 1e3:.1f} kB, stragglers "
          f"{[(s['rank'], s['layer']) for s in stragglers]}")
    print(f"api/ranks cold (fresh plugin): {timed(cold) * 1e3:.0f} ms; cached: "
          f"{timed(lambda: answer(data, 'ranks', run='all'), 20) * 1e6:.0f} µs")
    layers = list(range(args.layers))
    k = iter(layers)
    print(f"api/layer rank=3 (uncached): "
          f"{timed(lambda: answer(data, 'layer', run='all', layer=next(k), rank=3)) * 1e3:.1f} ms")
    from tb_ad_layer.store.reader import RunStore
    store = RunStore(store_path(logdir, "all"))
    print(f"report (with {args.ranks} ranks): "
          f"{timed(lambda: report_for_store(store, ReportOptions()), 3):.2f} s")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
