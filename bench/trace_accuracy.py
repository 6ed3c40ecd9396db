#!/usr/bin/env python3
"""Print how well traces are cut into layers and mapped to nodes, beside seed 000's stream grouping.

For every model kind of ``tests/fixtures/dumps`` (dense, MLA with dense first layers then MoE,
MoE, Mamba hybrid, gated delta net) a decode trace is generated with per-layer stream sets in
both formats (nsys SQLite, profiler JSON) and ingested with the converter's view of the dump;
the committed trace fixtures are ingested too. Per trace: layers found vs expected, the share of
layer kernels in the right layer and on the right node, and the same for seed 000's stream
grouping on the same replay. The real traces of ``../shared/traces`` have no per-kernel truth:
their layer counts and sizes are printed against the figures of their README.

    python bench/trace_accuracy.py
"""
from __future__ import annotations

import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    from tb_ad_layer.trace.ingest import ingest_trace, kernel_sequences
    from tests.trace.accuracy import (MODEL_DUMPS, agreement, baseline_agreement, dump_model, generate_from_dump,
                                      load)
    from tests.trace.helpers import FIXTURES, SHARED_TRACES, load_truth

    print(f"{'trace':52} {'layers':>7} {'layer':>7} {'node':>7} {'outside':>8} | {'seed layers':>11} "
          f"{'layer':>7} {'node':>7}")
    rows = []
    tmp = tempfile.mkdtemp(prefix="tb-ad-layer-accuracy-")
    try:
        for name in sorted(MODEL_DUMPS):
            _, model = dump_model(name)
            paths = generate_from_dump(Path(tmp) / name, name, ("sqlite", "torch"), layout="per-layer", replays=8,
                                       seed=7, jitter=0.15, reshuffle_streams=True)
            truth = load(paths)
            for fmt in ("sqlite", "torch"):
                rows.append((f"{name} decode, per-layer streams ({fmt})", paths[fmt], truth, model))
        for stem, model_name in (("ad_dsv3_decode_streams", "dsv3_mla_moe"),
                                 ("qwen3_next_prefill_modules", "qwen3_next_gdn")):
            _, model = dump_model(model_name)
            truth = load_truth(FIXTURES / f"{stem}.truth.json")
            for suffix in (".sqlite", ".pt.trace.json.gz"):
                rows.append((f"fixture {stem}{suffix}", FIXTURES / f"{stem}{suffix}", truth, model))
        for label, path, truth, model in rows:
            result = ingest_trace(path, model)
            got = agreement(truth, result.kernels)
            found, seed = baseline_agreement(truth, result.kernels, model)
            print(f"{label:52} {result.meta['layers_found']:>3}/{truth['num_layers']:<3} {got.layer_share:>7.1%} "
                  f"{got.node_share:>7.1%} {got.outside_share:>8.1%} | {found:>11} {seed.layer_share:>7.1%} "
                  f"{seed.node_share:>7.1%}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("\nreal traces (no dump): layers found, kernels per layer, outside, how")
    for name in ("b300_r1_distill_sglang_decode.trace.json.gz", "h100_qwen1.5_0.5b_hf_eager.trace.json.gz",
                 "h100_2gpu_1s.sqlite"):
        seq = kernel_sequences(SHARED_TRACES / name)
        sizes = Counter(layer["kernel_count"] for layer in seq["layers"])
        outside = sum(1 for k in seq["outside"] if k["kind"] == "kernel")
        seg = seq["segmentation"]
        print(f"  {name:48} {seq['num_layers']:>3} layers, kernels per layer {dict(sizes)}, {outside} outside "
              f"(step {seq['step']}), {seg['method']} confidence {seg['confidence']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
