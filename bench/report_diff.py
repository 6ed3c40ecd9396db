#!/usr/bin/env python3
"""Benchmark ``tb-ad-layer report`` and ``diff`` on a 61-layer DeepSeek-V3 decode run with every
replay aggregated.

Builds, under ``bench/out/report_diff/`` (kept between runs; ``--regen`` rebuilds): the final
stage of a 61-layer DeepSeek-V3 (``tools/make_ad_dump.py``: 3 dense layers, then MoE with 256
experts, hidden size 7168) and two decode traces of it (``tools/make_traces.py`` from the dump's
truth: every layer on its own stream set, ``--replays`` CUDA-graph replays each, two seeds), each
converted into a run. Then times, in this process, loading a run and building its report (JSON
and Markdown), and comparing the two runs; and, as a user runs them, the two commands end to end
in a fresh interpreter (start-up included). Prints the figures. Target: under 1 s each.

    python bench/report_diff.py                 # 200 replays
    python bench/report_diff.py --replays 50 --regen
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LAYERS, DENSE = 61, 3


def _tool(name: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def build(out: Path, replays: int, regen: bool) -> tuple[Path, Path]:
    """The two converted runs (built when missing)."""
    from tb_ad_layer.cli import main as cli

    dump = out / "dump"
    logdir = out / "logs"
    runs = (logdir / "a", logdir / "b")
    if not regen and all((r / "plugins" / "ad_layer" / "run.sqlite").exists() for r in runs):
        return runs
    t0 = time.perf_counter()
    if regen or not any(dump.glob("*.txt")):
        subprocess.run([sys.executable, str(ROOT / "tools" / "make_ad_dump.py"), "--model", "dsv3",
                        "--layers", str(LAYERS), "--dense-layers", str(DENSE), "--experts", "256",
                        "--hidden", "7168", "--out", str(dump)], check=True,
                       stdout=subprocess.DEVNULL)
    final = sorted(dump.glob("*.txt"), key=lambda p: int(p.name.split("_", 1)[0]))[-1]
    mt = _tool("make_traces")
    plan = mt.plan_from_truth(final.with_suffix(".truth.json"), final)
    for run, seed in zip(runs, (1, 2), strict=True):
        paths = mt.generate(out / "traces", run.name, plan,
                            mt.Options(layout="per-layer", replays=replays, seed=seed,
                                       reshuffle_streams=True))
        code = cli(["convert", str(dump), "--logdir", str(logdir), "--run", run.name, "-q",
                    "--trace", str(paths["sqlite"]), "--phase", "decode"])
        if code != 0:
            raise SystemExit(f"convert failed ({code})")
    print(f"built the dump, two traces of {replays} replays and their runs in "
          f"{time.perf_counter() - t0:.1f} s", flush=True)
    return runs


def timed(fn, repeat: int) -> tuple[float, float, float]:  # type: ignore[no-untyped-def]
    """Best and median wall time, and median CPU time (this process and its children): on a
    shared machine the wall time also counts waiting for a core, the CPU time does not."""
    walls, cpus = [], []
    for _ in range(repeat):
        c0 = _cpu()
        t0 = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(_cpu() - c0)
    return min(walls), statistics.median(walls), statistics.median(cpus)


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replays", type=int, default=200)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "report_diff")
    ap.add_argument("--regen", action="store_true")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    a, b = build(args.out, args.replays, args.regen)

    from tb_ad_layer.analysis.commands import open_run
    from tb_ad_layer.analysis.diff import diff_stores
    from tb_ad_layer.analysis.markdown import diff_markdown, report_markdown
    from tb_ad_layer.analysis.report import ReportOptions, report_for_store
    from tb_ad_layer.contract.record import encode

    def report() -> None:
        store = open_run(str(a))
        try:
            r = report_for_store(store, ReportOptions())
            encode(r)
            report_markdown(r)
        finally:
            store.close()

    def diff() -> None:
        sa, sb = open_run(str(a)), open_run(str(b))
        try:
            d = diff_stores(sa, sb)
            encode(d)
            diff_markdown(d)
        finally:
            sa.close()
            sb.close()

    store = open_run(str(a))
    r = report_for_store(store, ReportOptions())
    store.close()
    size = len(encode(r))
    print(f"run a: {len(r.layers)} layers, {r.step.kernel_count:,} kernels + "
          f"{r.step.memory_op_count} memory ops per replay, statistics over {r.step.replays} "
          f"replays; {len(r.tails):,} nodes with tails, report JSON {size / 1e6:.2f} MB")
    print(f"  (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    for name, fn in (("report", report), ("diff", diff)):
        best, med, cpu = timed(fn, args.repeat)
        print(f"  {name:6s} in process: wall best {best * 1000:5.0f} ms, median {med * 1000:5.0f} "
              f"ms; CPU {cpu * 1000:5.0f} ms (target < 1000 ms)")
    for name, argv in (("report", ["report", str(a), "--format", "json"]),
                       ("diff", ["diff", str(a), str(b), "--format", "json"])):
        def command(argv: list[str] = argv) -> None:
            done = subprocess.run([sys.executable, "-m", "tb_ad_layer.cli", *argv], check=False,
                                  stdout=subprocess.DEVNULL, cwd=ROOT)
            if done.returncode not in (0, 1):  # diff exits 1 on a regression
                raise SystemExit(f"tb-ad-layer {argv[0]} failed ({done.returncode})")
        best, med, cpu = timed(command, max(1, args.repeat // 2))
        print(f"  tb-ad-layer {name:6s} end to end: wall best {best * 1000:5.0f} ms, median "
              f"{med * 1000:5.0f} ms; CPU {cpu * 1000:5.0f} ms (fresh interpreter included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
