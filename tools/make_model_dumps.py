#!/usr/bin/env python3
"""Write graph-dump fixtures from tiny Hugging Face models, exported the way AutoDeploy exports.

(Docstring completed below.)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import List, Optional

import torch
import transformers

from model_dumps.generate import make_fixture
from model_dumps.models import BUILDERS as FIRST_BUILDERS
from model_dumps.more_models import MORE_BUILDERS

TORCH_VERSION_USED = "2.13.0"
TRANSFORMERS_VERSION_USED = "5.23.0"
BUILDERS = {**FIRST_BUILDERS, **MORE_BUILDERS}


def _pin_hash_seed() -> None:
    """Re-run under ``PYTHONHASHSEED=0``: some models build buffers in set order (Gemma3's
    per-layer-type RoPE tables), which string hashing would otherwise shuffle between runs."""
    if os.environ.get("PYTHONHASHSEED") != "0":
        env = dict(os.environ, PYTHONHASHSEED="0")
        os.execve(sys.executable, [sys.executable, *sys.argv], env)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("tests/fixtures/dumps"))
    ap.add_argument("--models", nargs="*", default=list(BUILDERS), choices=list(BUILDERS))
    args = ap.parse_args(argv)
    print(f"torch {torch.__version__} (fixtures made with {TORCH_VERSION_USED}), transformers "
          f"{transformers.__version__} (fixtures made with {TRANSFORMERS_VERSION_USED})")
    failed = []
    for name in args.models:
        start = time.monotonic()
        try:
            rows = make_fixture(BUILDERS[name](), args.out)
        except Exception as exc:  # report every model that fails, then exit non-zero
            failed.append(name)
            print(f"{name}: FAILED: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
            continue
        for r in rows:
            print(f"{r['file']:<58} {r['bytes']:>8} B  nodes={r['nodes']:<5} weights={r['weights']:<4}"
                  f" kinds={','.join(r['kinds'])}  per_layer={r['per_layer']}"
                  + (f"  removed={r['removed']}" if "removed" in r else ""))
        print(f"  ({time.monotonic() - start:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    _pin_hash_seed()
    sys.exit(main())
