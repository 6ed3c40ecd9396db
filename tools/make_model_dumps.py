#!/usr/bin/env python3
"""Write graph-dump fixtures from tiny Hugging Face models, exported the way AutoDeploy exports.

Dev-only tool: neither torch nor transformers is a runtime dependency of tb_ad_layer. The
committed fixtures (tests/fixtures/dumps/<model>/) and benchmark dumps (bench/data/) were made
with torch 2.13.0 (CPU wheel) and transformers 5.23.0:

    pip install torch==2.13.0 transformers==5.23.0
    python tools/make_model_dumps.py                      # all fixtures
    python tools/make_model_dumps.py --models zamba2      # some
    python tools/make_model_dumps.py --bench              # bench/data/*.txt.gz (about 15 CPU minutes)

Output is byte-identical from one run to the next: seed 0 everywhere, memory addresses in
targets pinned, gzip without timestamps, and the script re-runs itself under PYTHONHASHSEED=0.

Per model (tools/model_dumps/):

1. ``models`` and ``more_models``: a tiny config (hidden 64, 2-5 layers, bfloat16 except
   Llama's, GPT-NeoX's and GPT-2's float32), random init, no download. Only DeepSeek-V3 is
   patched, as AutoDeploy's own export patch does
   (routed experts as per-expert weight lists into ``auto_deploy.torch_moe``); every other
   model runs transformers' code unchanged, pure-torch Mamba / Mamba2 / gated-delta-rule paths
   included.
2. ``ad_export``: AutoDeploy's ``export_to_gm``: the model on ``meta`` (tied and shared weights
   kept shared), ``torch.export.export(model, (), {input_ids, position_ids}, strict=False,
   dynamic_shapes=Dim.DYNAMIC batch and sequence)`` under ``torch.inference_mode()``,
   ``ep.module()``, the model's tensors put back, then AutoDeploy's clean-ups: de-duplicated
   ``get_attr`` nodes, device arguments, unused ``aten._assert_*`` nodes, each followed by its
   canonicalisation (dead-code elimination keeping impure nodes such as ``_guards_fn``). Mamba1
   models (Jamba, FalconMamba, Mamba, Zamba) and RecurrentGemma are exported with a static
   sequence: their scan is a Python loop over time steps, which export can only unroll for one
   length (MiniMax's lightning attention likewise loops over blocks of the sequence).
3. ``writer``: ``001_export_export_to_gm.txt`` in the exact text of AutoDeploy's graph writer
   (``str(SymInt)`` dims such as ``s44xs70 + (Mod(4 - (Mod(s70, 4)), 4))x8x16``), then
   AutoDeploy's ``cleanup_noop_slice`` and ``002_post_export_cleanup_noop_slice.txt``, then its
   ``cleanup_noop_add`` and ``003_post_export_cleanup_noop_add.txt`` where that changes the graph.
   ``writer_check`` rebuilds four graphs of shared/dumps/real_writer/ and compares the text
   with the real writer's files on every run.
4. ``truth``: ``<stem>.truth.json`` beside each dump: per printed node its decoder layer from
   ``node.meta["nn_module_stack"]``, innermost module path and class, and group; per layer its
   kind (``attention+mlp``, ``mla+moe``, ``attention+mamba+mlp``, ``gdn+moe``, ``mamba``, ...),
   all derived from the module structure.
5. ``dump_check``: every written dump is read back and checked line by line (standard library
   only; tests/dump/test_model_fixtures.py uses the same checker).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch
import transformers

from model_dumps.bench import BENCH, make_bench
from model_dumps.generate import make_fixture
from model_dumps.models import BUILDERS as FIRST_BUILDERS
from model_dumps.more_models import MORE_BUILDERS
from model_dumps.writer_check import CASES, check_writer

TORCH_VERSION_USED = "2.13.0"
TRANSFORMERS_VERSION_USED = "5.23.0"
REAL_WRITER = Path(__file__).resolve().parents[2] / "shared" / "dumps" / "real_writer"
BUILDERS = {**FIRST_BUILDERS, **MORE_BUILDERS}


def _pin_hash_seed() -> None:
    """Re-run under ``PYTHONHASHSEED=0``: some models build buffers in set order (Gemma3's
    per-layer-type RoPE tables), which string hashing would otherwise shuffle between runs."""
    if os.environ.get("PYTHONHASHSEED") != "0":
        env = dict(os.environ, PYTHONHASHSEED="0")
        os.execve(sys.executable, [sys.executable, *sys.argv], env)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("tests/fixtures/dumps"))
    ap.add_argument("--models", nargs="*", default=list(BUILDERS), choices=list(BUILDERS))
    ap.add_argument("--bench", action="store_true",
                    help="write the full-size benchmark dumps (bench/data/) instead")
    ap.add_argument("--bench-out", type=Path, default=Path("bench/data"))
    ap.add_argument("--real-writer", type=Path, default=REAL_WRITER,
                    help="dumps of AutoDeploy's own writer to check the writer against")
    args = ap.parse_args(argv)
    print(f"torch {torch.__version__} (fixtures made with {TORCH_VERSION_USED}), transformers "
          f"{transformers.__version__} (fixtures made with {TRANSFORMERS_VERSION_USED})")
    if args.real_writer.is_dir():
        differ = check_writer(args.real_writer)
        if differ:
            print(f"the writer does not reproduce {differ}")
            return 1
        print(f"writer: same text as AutoDeploy's writer on {len(CASES)} dumps of {args.real_writer}")
    if args.bench:
        for name in BENCH:
            start = time.monotonic()
            for file, text_bytes, gz_bytes, nodes in make_bench(name, args.bench_out):
                print(f"{file:<58} {text_bytes:>9} B ({gz_bytes} B gzip)  nodes={nodes}")
            print(f"  ({time.monotonic() - start:.1f} s)")
        return 0
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
