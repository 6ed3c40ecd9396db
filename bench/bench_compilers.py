"""Converter throughput with its hot modules compiled by mypyc and by Cython, beside the sources.

The product compiles the modules of ``build_support/compiled.py`` (``MODULES``) with mypyc. This
builds the same plain ``.py`` sources of this checkout two ways, each into its own temporary
copy of the package (the checkout's own build is left alone):

- ``mypyc``: one mypyc group at ``opt_level=3``, as ``build_support/compiled.py`` builds it;
- ``cython``: Cython 3 in pure-Python mode, one extension module per source, the annotations
  read as types (Cython's default), C compiled at ``-O3`` as mypyc's is; no ``.pxd`` files;

and stamps each copy as a build does (``tb_ad_layer/_compiled.py`` then loads its extension
modules). It then converts the 61-layer generated op dump and the real 61-layer DeepSeek-V3
export of ``bench/bench_convert.py`` with each variant and with the Python sources, each run in a
fresh process, and prints a table: median wall seconds and MB/s, least CPU seconds and MB per
CPU second, the speed-up in CPU time over the sources, and the build time of each variant.

    python bench/bench_compilers.py                 # 3 runs per dump and variant
    python bench/bench_compilers.py --repeat 5
    python bench/bench_compilers.py --keep /tmp/v   # keep the built copies in /tmp/v

Needs a C compiler, Python headers, mypy (a build dependency) and Cython (``pip install
cython``). The machine's other work slows the wall clock: the CPU column is steadier.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

import bench_convert  # noqa: E402

from build_support.compiled import GROUP, MODULES  # noqa: E402

STAMP_FILE = "_compiled_stamp.json"

BUILD_MYPYC = r"""
import sys
from setuptools import setup
from mypyc.build import mypycify
group, modules = sys.argv[1], sys.argv[2:]
setup(name="variant", py_modules=[], packages=[],
      ext_modules=mypycify(["--config-file=", *modules], opt_level="3", group_name=group),
      script_args=["build_ext", "--inplace", "-j", "2"])
"""

BUILD_CYTHON = r"""
import sys
from Cython.Build import cythonize
from setuptools import Extension, setup
modules = sys.argv[1:]
extensions = [Extension(m[:-3].replace("/", "."), [m], extra_compile_args=["-O3"])
              for m in modules]
setup(name="variant", py_modules=[], packages=[],
      ext_modules=cythonize(extensions, compiler_directives={"language_level": 3}, quiet=True,
                            nthreads=2),
      script_args=["build_ext", "--inplace", "-j", "2"])
"""

# Which implementation a variant's process runs, and from where.
WHICH = r"""
import tb_ad_layer, tb_ad_layer.dump.reader as r
from tb_ad_layer._compiled import describe
print(describe() + "; reader from " + r.__file__)
"""


def copy_sources(into: Path) -> None:
    """The checkout's tracked files of the package (as they are in the work tree), no build
    outputs."""
    files = subprocess.run(["git", "ls-files", "-z", "tb_ad_layer"], cwd=REPO, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for name in files:
        if not name or "/plugin/static/" in name:
            continue
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)


def stamp(into: Path, compiler: str, library: str) -> None:
    sources = {m[:-3].replace("/", "."): hashlib.sha256((into / m).read_bytes()).hexdigest()
               for m in MODULES}
    record = {"compiler": compiler, "library": library, "sources": sources}
    (into / "tb_ad_layer" / STAMP_FILE).write_text(json.dumps(record, indent=1) + "\n",
                                                   encoding="utf-8")


def build(variant: str, into: Path) -> float:
    """Build ``variant`` (``mypyc``, ``cython`` or ``python``) into ``into``; its build seconds."""
    copy_sources(into)
    t0 = time.perf_counter()
    if variant == "mypyc":
        import mypy.version

        args = [BUILD_MYPYC, GROUP, *MODULES]
        compiler, library = f"mypyc {mypy.version.__version__}", f"{GROUP}__mypyc"
    elif variant == "cython":
        import Cython

        args = [BUILD_CYTHON, *MODULES]
        compiler, library = f"cython {Cython.__version__}", ""
    else:
        return 0.0
    proc = subprocess.run([sys.executable, "-c", *args], cwd=into, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{variant} build failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    seconds = time.perf_counter() - t0
    stamp(into, compiler, library)
    return seconds


def env_for(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TB_AD_LAYER_PURE_PYTHON"}
    env["PYTHONPATH"] = str(tree)
    return env


def which(tree: Path) -> str:
    proc = subprocess.run([sys.executable, "-c", WHICH], cwd=tree, env=env_for(tree),
                          capture_output=True, text=True, check=True)
    return (proc.stderr + proc.stdout).strip()


def convert_once(tree: Path, src: Path, logdir: Path) -> dict[str, float]:
    proc = subprocess.run([sys.executable, "-c", bench_convert.CHILD, str(src), str(logdir)],
                          cwd=tree, env=env_for(tree), capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"converting {src} in {tree} failed:\n{proc.stderr[-4000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="conversions per dump and variant")
    ap.add_argument("--keep", type=Path, help="build the variants here and keep them")
    ap.add_argument("--variants", default="python,mypyc,cython",
                    help="comma-separated, among python, mypyc, cython")
    args = ap.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    dumps = [("dsv3_61/op", bench_convert.generate("dsv3_61", 61, "op")),
             ("dsv3_61l (real)", bench_convert.real_dump("dsv3_61l"))]
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        trees: dict[str, Path] = {}
        builds: dict[str, float] = {}
        for variant in variants:
            tree = root / variant
            if tree.exists():
                shutil.rmtree(tree)
            tree.mkdir(parents=True)
            print(f"building {variant} ...", flush=True)
            builds[variant] = build(variant, tree)
            trees[variant] = tree
            print(f"  {variant}: {which(tree)} (built in {builds[variant]:.0f} s)", flush=True)
        print(f"{args.repeat} conversion(s) per dump and variant, each in a fresh process; "
              f"{os.cpu_count()} CPU(s), load average "
              f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
        print(f"{'dump':<16} {'variant':<7} {'MB':>6} {'median s':>8} {'MB/s':>6} "
              f"{'min cpu s':>9} {'MB/cpu s':>8} {'cpu vs python':>13}")
        logdir = root / "logs"
        for label, src in dumps:
            base: float | None = None
            for variant in variants:
                runs = [convert_once(trees[variant], src, logdir) for _ in range(args.repeat)]
                mb = runs[0]["bytes"] / 1e6
                wall = statistics.median(r["seconds"] for r in runs)
                cpu = min(r["cpu"] for r in runs)
                if variant == "python":
                    base = cpu
                ratio = f"{base / cpu:12.2f}x" if base else f"{'':>13}"
                print(f"{label:<16} {variant:<7} {mb:6.1f} {wall:8.2f} {mb / wall:6.1f} "
                      f"{cpu:9.2f} {mb / cpu:8.1f} {ratio}", flush=True)


if __name__ == "__main__":
    main()
