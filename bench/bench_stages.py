"""Every stage at full size: converting a dump directory of 85 stages of the 17 MB DeepSeek-V3
dump, serially and in worker processes, and what the run store costs on disk and per layer load.

The directory is made the way AutoDeploy writes one (a file per transform, most transforms
leaving the graph as it was): tools/make_ad_dump.py writes the four distinct stages of a 61-layer
DeepSeek-V3 with unfused MoE and one dequant op per expert weight (~17 MB and ~47k nodes each:
export 001, pattern matcher 040, sharding 060, compile 085), and every counter between them
repeats the stage before with its own transform name; 85 files, ~1.46 GB, under --out (default
/tmp/tb_ad_layer_bench_stages; never commit it).

Prints, per ``--jobs`` value: wall time, CPU time of the converting process and its workers,
peak RSS of the largest process (the coordinator or one worker), the store's size against the
dump directory's, MB/s of dumps; the ratios of wall and CPU time between the ``--jobs`` values;
whether the stores are equal row for row; then ``api/layer`` of the plugin on the final stage
(cold: a fresh plugin opening the store; uncached: another layer of the open store; cached: the
same answer again), with the CPU time of an uncached load's parts (the row's read, the
document's decompression, which the compact store adds, and the contract's decode); and with
``--levels`` the zlib levels on the final stage's documents. The machine's load
(``os.getloadavg``) is printed before and after.

    python bench/bench_stages.py                    # --jobs 1 and 2
    python bench/bench_stages.py --jobs 1 2 4 --stages 20
    python bench/bench_stages.py --levels           # zlib level 1 vs 6 only
    python bench/bench_stages.py --layer-only STORE # api/layer timings of an existing store
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("001_export_export_to_gm", "040_pattern_matcher_match_rope_pattern",
           "060_sharding_sharding_transform_executor", "085_compile_compile_model")


def generate(out: Path, stages: int) -> Path:
    """The 4 distinct stages under ``out/src``, and ``stages`` files under ``out/dir<stages>``
    (the last is the compile stage; the others repeat the latest distinct stage before them)."""
    src = out / "src"
    if not all((src / f"{s}.txt").exists() for s in SOURCES):
        src.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(REPO / "tools" / "make_ad_dump.py"), "--model", "dsv3",
                        "--layers", "61", "--dense-layers", "3", "--unfused-moe",
                        "--expert-dequant", "op", "--experts", "256", "--hidden", "7168",
                        "--stages", "all", "--out", str(src)], check=True,
                       stdout=subprocess.DEVNULL)
    d = out / f"dir{stages}"
    if len(list(d.glob("*.txt"))) == stages:
        return d
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    orders = [int(s[:3]) for s in SOURCES]
    # Counters 1..84 spread over `stages - 1` files, then the compile stage at 85.
    counters = sorted({max(1, round(1 + i * 83 / max(1, stages - 2))) for i in range(stages - 1)})
    for n in counters + [85]:
        base = max(i for i, o in enumerate(orders) if o <= n)
        if n == orders[base]:
            shutil.copyfile(src / f"{SOURCES[base]}.txt", d / f"{SOURCES[base]}.txt")
            continue
        stage = SOURCES[base].split("_", 2)[1]
        text = (src / f"{SOURCES[base]}.txt").read_text()
        text = re.sub(r"^# Transform: .*$", f"# Transform: noop_{n:03d}", text, count=1,
                      flags=re.M)
        (d / f"{n:03d}_{stage}_noop_{n:03d}.txt").write_text(text)
    return d


def convert(dump: Path, logdir: Path, run: str, jobs: int) -> dict[str, float]:
    """Convert every stage of ``dump`` in a child process; wall and CPU seconds, peak RSS."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tb_ad_layer.cli", "convert", str(dump), "--logdir",
                    str(logdir), "--run", run, "--stages", "all", "--jobs", str(jobs), "-q"],
                   check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss_mb": after.ru_maxrss / 1024}


def table_rows(store: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table, sorted, without the metadata that says when it was made and
    under which run name."""
    conn = sqlite3.connect(store)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        out = {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr)
               for t in tables}
    finally:
        conn.close()
    out["meta"] = [r for r in out["meta"] if r[0] not in ("created", "run")]
    return out


def layer_timings(logdir: Path, run: str) -> dict[str, float]:
    """``api/layer`` on the final stage, median ms of wall and CPU time: cold (a fresh plugin
    opening the store), uncached (every other layer of the open store: read, decompress,
    decode, encode), cached (the same answers again)."""
    code = r"""
import json, sys, time
from tb_ad_layer.plugin.data import PluginData
from tb_ad_layer.plugin.routes import Query
logdir, run = sys.argv[1], sys.argv[2]
def ask(data, layer):
    t, c = time.perf_counter(), time.process_time()
    data.layer_payload(Query("/api/layer", (run, None, str(layer), None), ""))
    return (time.perf_counter() - t) * 1e3, (time.process_time() - c) * 1e3
def median(values):
    return sorted(values)[len(values) // 2]
cold = [ask(PluginData(logdir), layer) for layer in (3, 20, 40, 60)]
data = PluginData(logdir)
ask(data, 0)
uncached = [ask(data, layer) for layer in range(1, 61)]
cached = [ask(data, layer) for layer in range(1, 61)]
out = {f"{name}_{kind}_ms": median([v[i] for v in values])
       for name, values in (("cold", cold), ("uncached", uncached), ("cached", cached))
       for i, kind in enumerate(("wall", "cpu"))}
# Where an uncached answer's time goes, CPU ms per layer of the final stage: the row read
# from SQLite (the compressed document), its decompression, the contract's decode of the
# JSON. "decompress" is what the compact store adds to a layer load over a store of plain
# JSON documents (whose read would be the size of the JSON, not of the compressed data).
import sqlite3, zlib, msgspec
from tb_ad_layer.contract.document import LayerDocument
from tb_ad_layer.store.writer import store_path
conn = sqlite3.connect(f"file:{store_path(logdir, run)}?mode=ro", uri=True)
final = conn.execute("SELECT max(stage) FROM layers").fetchone()[0]
decoder = msgspec.json.Decoder(LayerDocument)
parts = {"read": [], "decompress": [], "decode": [], "json_mb": [], "stored_mb": []}
for layer in range(1, 61):
    c = time.process_time()
    data = conn.execute("SELECT d.data FROM layers l JOIN docs d ON d.hash = l.doc "
                        "WHERE l.stage = ? AND l.layer = ?", (final, layer)).fetchone()[0]
    parts["read"].append((time.process_time() - c) * 1e3)
    c = time.process_time()
    text = zlib.decompress(data)
    parts["decompress"].append((time.process_time() - c) * 1e3)
    c = time.process_time()
    decoder.decode(text)
    parts["decode"].append((time.process_time() - c) * 1e3)
    parts["json_mb"].append(len(text) / 1e6)
    parts["stored_mb"].append(len(data) / 1e6)
# The answer's gzip form, made once per answer when the browser asks for it: at the level the
# plugin serves (GZIP) and at level 6 (what it served before: the figure this level beat).
import gzip
from tb_ad_layer.plugin.plugin import GZIP
served = PluginData(logdir)
parts["gzip_served"], parts["gzip_level6"] = [], []
for layer in range(1, 61):
    body = served.layer_payload(Query("/api/layer", (run, None, str(layer), None), "")).body
    for key, level in (("gzip_served", GZIP), ("gzip_level6", 6)):
        c = time.process_time()
        gzip.compress(body, compresslevel=level, mtime=0)
        parts[key].append((time.process_time() - c) * 1e3)
out.update({f"{k}_cpu_ms" if not k.endswith("_mb") else k: median(v) for k, v in parts.items()})
print(json.dumps(out))
"""
    import json
    out = subprocess.run([sys.executable, "-c", code, str(logdir), run], check=True,
                         capture_output=True, text=True).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def levels(dump: Path) -> None:
    """zlib levels 1 and 6 on the final stage's 61 documents: ratio, compress and decompress
    speed."""
    from tb_ad_layer.contract.record import encode
    from tb_ad_layer.convert import load_stage, resolve_inputs, stage_documents
    final = resolve_inputs(dump)[-1]
    docs = [encode(d) for d in stage_documents(load_stage(final).lg)]
    raw = sum(map(len, docs))
    print(f"documents of {final.path.name}: {len(docs)}, {raw / 1e6:.1f} MB of JSON")
    for level in (1, 6, 9):
        t0 = time.process_time()
        packed = [zlib.compress(d, level) for d in docs]
        comp = time.process_time() - t0
        t0 = time.process_time()
        for p in packed:
            zlib.decompress(p)
        decomp = time.process_time() - t0
        size = sum(map(len, packed))
        print(f"  zlib level {level}: {raw / size:.1f}x smaller ({size / 1e6:.2f} MB), compress "
              f"{raw / 1e6 / comp:.0f} MB/s, decompress {raw / 1e6 / decomp:.0f} MB/s (CPU time)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/tb_ad_layer_bench_stages"))
    ap.add_argument("--stages", type=int, default=85)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--levels", action="store_true", help="only compare zlib levels")
    ap.add_argument("--layer-only", metavar="LOGDIR/RUN",
                    help="only time api/layer of an existing run")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()}, {os.cpu_count()} cores")
    if args.layer_only:
        logdir, run = Path(args.layer_only).parent, Path(args.layer_only).name
        print(f"api/layer {layer_timings(logdir, run)}")
        return 0
    dump = generate(args.out, args.stages)
    if args.levels:
        levels(dump)
        return 0
    size = sum(p.stat().st_size for p in dump.glob("*.txt"))
    print(f"{dump}: {args.stages} stages, {size / 1e6:.0f} MB")
    logdir = args.out / "logs"
    stores = {}
    runs = {}
    for jobs in args.jobs:
        run = f"jobs{jobs}"
        figures = runs[jobs] = convert(dump, logdir, run, jobs)
        store = logdir / run / "plugins" / "ad_layer" / "run.sqlite"
        stores[jobs] = store
        ratio = store.stat().st_size / size
        print(f"--jobs {jobs}: {figures['wall_s']:.1f} s wall, {figures['cpu_s']:.1f} s CPU, "
              f"peak RSS {figures['peak_rss_mb']:.0f} MB (largest process), store "
              f"{store.stat().st_size / 1e6:.0f} MB = {ratio:.3f}x the dumps; "
              f"{size / 1e6 / figures['wall_s']:.0f} MB/s wall, "
              f"{size / 1e6 / figures['cpu_s']:.1f} MB/s per CPU second", flush=True)
    first = args.jobs[0]
    for jobs in args.jobs[1:]:
        a, b = runs[first], runs[jobs]
        print(f"--jobs {jobs} against --jobs {first}: wall {a['wall_s'] / b['wall_s']:.2f}x "
              f"faster, CPU {b['cpu_s'] / a['cpu_s']:.2f}x as much")
    rows = table_rows(stores[first])
    for jobs in args.jobs[1:]:
        same = table_rows(stores[jobs]) == rows
        print(f"store of --jobs {jobs} equal to --jobs {first} row for row: {same}")
    counts = {t: len(r) for t, r in rows.items()}
    print(f"rows: {counts}")
    timings = [layer_timings(logdir, f"jobs{first}") for _ in range(3)]
    print("api/layer (final stage, ms, median of 3 runs): " + ", ".join(
        f"{k} {statistics.median(t[k] for t in timings):.2f}" for k in timings[0]))
    print(f"load average {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
