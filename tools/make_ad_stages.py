#!/usr/bin/env python3
"""Write multi-stage AutoDeploy dump fixtures of full-depth models, with per-node truth.

Dev-only tool (torch and transformers are no runtime dependencies of tb_ad_layer). Made with
torch 2.13.0 (CPU) and transformers 5.23.0:

    pip install torch==2.13.0 transformers==5.23.0
    python tools/make_ad_stages.py                        # every model, into tests/fixtures/ad_stages
    python tools/make_ad_stages.py --models llama3_1_8b bamba_9b --out /tmp/stages

Each model is built at its real layer count and layer-type pattern with tiny widths, exported
the way AutoDeploy exports, and taken through re-implementations of AutoDeploy's transforms
(tools/model_dumps/ad_transforms.py, each citing the TensorRT-LLM source it follows); the
stages where the graph changed, the export and the final compile_model are written with their
real counters (tools/model_dumps/ad_stages.py). Output is byte-identical from one run to the
next: seed 0, pinned addresses, gzip without timestamps, PYTHONHASHSEED=0 (the script re-runs
itself under it).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch
import transformers

from model_dumps.ad_stages import SPECS, make_stages, write_readme

RUNTIME = ("A full run takes about 15 minutes on 2 CPU cores (one process; DeepSeek-V3 "
           "about 1 min, GLM-4.5 about 2 min, Zamba2-2.7B about 2.5 min, Gemma-3-1B about "
           "25 s, Gemma-3n-E4B about 45 s).")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("tests/fixtures/ad_stages"))
    ap.add_argument("--models", nargs="*", default=list(SPECS), choices=list(SPECS))
    args = ap.parse_args(argv)
    print(f"torch {torch.__version__}, transformers {transformers.__version__} "
          "(fixtures made with 2.13.0 / 5.23.0)")
    failed = []
    for name in args.models:
        start = time.monotonic()
        print(f"{name}: {SPECS[name].title}", flush=True)
        try:
            make_stages(SPECS[name], args.out, log=lambda m: print(m, flush=True))
        except Exception as exc:  # report every model that fails, then exit non-zero
            failed.append(name)
            print(f"{name}: FAILED: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
            continue
        print(f"  ({time.monotonic() - start:.1f} s)", flush=True)
    write_readme(args.out, "python tools/make_ad_stages.py", RUNTIME)
    print(f"{args.out / 'README.md'} written")
    return 1 if failed else 0


if __name__ == "__main__":
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.execve(sys.executable, [sys.executable, *sys.argv],
                  dict(os.environ, PYTHONHASHSEED="0"))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
