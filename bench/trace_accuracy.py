#!/usr/bin/env python3
"""Print how well traces are cut into layers and mapped to nodes, beside seed 000's stream grouping.

For every FX-dump fixture of ``tests/fixtures/dumps`` and the final stage of every model of
``tests/fixtures/ad_stages`` (full depth, as AutoDeploy's transforms write it; per-layer streams
and one stream) (20 real Hugging Face architectures in both
export stages, and AutoDeploy's late stages) a decode trace is generated as AutoDeploy captures
look (per-layer stream sets, aux streams for shared experts and MLA's KV path, a stream carrying
one layer's tail and the next one's head, new stream ids every replay, jitter, several replays,
eager copies between them) in both formats (nsys SQLite, profiler JSON), and ingested with the
converter's view of the dump; the committed trace fixtures are ingested too. Per trace: layers
found vs expected, the share of layer kernels in the right layer and on the right node, the share
of model-level kernels on their node outside the layers, the same for seed 000's stream grouping
on the same replay, and what ``kernels`` finds without the dump (layers, right layer, confidence;
``exit 2`` where it reports no structure). The real traces of ``../shared/traces`` have no
per-kernel truth: their layer counts and sizes are printed against the figures of their README.

    python bench/trace_accuracy.py [--only SUBSTRING]
"""
from __future__ import annotations

import argparse
import gzip
import shutil
import sys
import tempfile
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _row(label: str, path: Path, truth: dict[str, Any], model: Any) -> str:
    from tb_ad_layer.errors import InputError
    from tb_ad_layer.trace.ingest import ingest_trace, kernel_sequences
    from tests.trace.accuracy import agreement, baseline_agreement

    result = ingest_trace(path, model)
    got = agreement(truth, result.kernels)
    found, seed = baseline_agreement(truth, result.kernels, model)
    try:
        seq = kernel_sequences(path)
        alone = ingest_trace(path, None)
        share = agreement(truth, alone.kernels).layer_share
        conf = seq.segmentation.confidence
        nodump = f"{seq.num_layers:>3} {share:>7.1%} {conf:>5.2f}" if conf is not None else \
            f"{seq.num_layers:>3} {share:>7.1%}  {(seq.segmentation.method or '')[:5]}"
    except InputError:
        nodump = f"{'exit 2':>17}"
    return (f"{label:44} {result.info.layers_found:>3}/{truth['num_layers']:<3} {got.layer_share:>7.1%} "
            f"{got.node_share:>7.1%} {got.outside_share:>8.1%} | {found:>5} {seed.layer_share:>7.1%} "
            f"{seed.node_share:>7.1%} | {nodump}")


def _grown(mt: Any) -> None:
    """Without --dump on deeper models: each export's layers repeated to 24 (a lone dense first
    layer kept once), one stream and per-layer stream sets."""
    from tb_ad_layer.trace.ingest import CONFIDENT, ingest_trace
    from tests.trace.accuracy import DUMPS, agreement, grown_plan
    from tests.trace.helpers import load_truth

    print(f"\nwithout --dump, 24-layer models grown from each export (one stream | per-layer streams); "
          f"'low' below confidence {CONFIDENT}")
    tmp = Path(tempfile.mkdtemp(prefix="tb-ad-layer-grown-"))
    try:
        for truth_path in sorted(DUMPS.glob("*/002_*.truth.json")):
            name = truth_path.parent.name
            kinds = load_truth(truth_path)["layer_kinds"]
            keep = 1 if len(kinds) > 2 and kinds["0"] != kinds["1"] and \
                len(set(kinds.values())) == 2 and list(kinds.values()).count(kinds["0"]) == 1 else 0
            plan = grown_plan(mt.plan_from_truth(truth_path), 24, keep)
            cells = []
            for layout in ("single", "per-layer"):
                paths = mt.generate(
                    tmp / f"{name}_{layout}",
                    "t",
                    plan,
                    mt.Options(layout=layout, replays=3, seed=3, jitter=0.15, reshuffle_streams=True),
                )
                truth = load_truth(paths["truth"])
                result = ingest_trace(paths["sqlite"], None)
                share = agreement(truth, result.kernels).layer_share
                conf = result.info.confidence or 0.0
                cells.append(f"{result.info.layers_found:>3}/24 {share:>7.1%} {conf:>5.2f}"
                             f"{' low' if conf < CONFIDENT else '    '}")
            print(f"  {name:20} " + " | ".join(cells), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="only dump fixtures whose path holds this text")
    args = ap.parse_args()

    from tb_ad_layer.convert import load_history, load_stage, resolve_inputs
    from tb_ad_layer.progress import Progress
    from tb_ad_layer.trace.ingest import kernel_sequences
    from tb_ad_layer.trace_attach import model_nodes
    from tests.trace.accuracy import DUMPS, dump_model
    from tests.trace.helpers import FIXTURES, SHARED_TRACES, load_truth, make_traces

    mt = make_traces()
    print(
        f"{'':52} {'layer':>7} {'node':>7} {'outside':>8} | {'seed 000 grouping':^21} | "
        f"{'without --dump':^17}"
    )
    print(
        f"{'trace (decode, per-layer streams)':44} {'layers':>7} {'right':>7} {'right':>7} {'on node':>8} | "
        f"{'found':>5} {'layer':>7} {'node':>7} | {'found':>3} {'layer':>7} {'conf':>5}"
    )
    tmp = tempfile.mkdtemp(prefix="tb-ad-layer-accuracy-")
    try:
        for truth_path in sorted(DUMPS.glob("*/*.truth.json")):
            name = f"{truth_path.parent.name}/{truth_path.name.split('.')[0]}"
            if args.only not in name:
                continue
            stem = truth_path.name[: -len(".truth.json")]
            stage = next(s for s in resolve_inputs(truth_path.parent, ["all"]) if s.path.stem == stem)
            model = model_nodes(load_stage(stage).lg)
            seed = zlib.crc32(name.encode()) % 1000
            paths = mt.generate(Path(tmp) / name.replace("/", "_"), "t", mt.plan_from_truth(truth_path),
                                mt.Options(layout="per-layer", replays=8, seed=seed, jitter=0.15,
                                           reshuffle_streams=True), ("sqlite", "torch"))
            truth = load_truth(paths["truth"])
            for fmt in ("sqlite", "torch"):
                line = _row(f"{name[:36]} ({fmt})", paths[fmt], truth, model)
                print(line, flush=True)
        for model_dir in sorted((ROOT / "tests" / "fixtures" / "ad_stages").glob("*/")):
            name = f"ad_stages/{model_dir.name}"
            if args.only not in name:
                continue
            # The final stage AutoDeploy writes, converted as `convert` does from its directory
            # (the export stage's layers carried through the node names).
            unpacked = Path(tmp) / name.replace("/", "_")
            unpacked.mkdir(parents=True)
            files = sorted(model_dir.glob("*.txt.gz"), key=lambda p: int(p.name.split("_", 1)[0]))
            for gz in (files[0], files[-1]):
                for src in (gz, gz.with_name(gz.name[:-len(".txt.gz")] + ".truth.json.gz")):
                    (unpacked / src.name[:-len(".gz")]).write_bytes(gzip.decompress(src.read_bytes()))
            final = resolve_inputs(unpacked)[-1]
            history = load_history(unpacked, final, Progress(quiet=True))
            model = model_nodes(load_stage(final, None, history).lg)
            plan = mt.plan_from_truth(final.path.with_suffix(".truth.json"), final.path)
            seed = zlib.crc32(name.encode()) % 1000
            for layout in ("per-layer", "single"):
                paths = mt.generate(unpacked / layout, "t", plan,
                                    mt.Options(layout=layout, replays=8, seed=seed, jitter=0.15,
                                               reshuffle_streams=layout == "per-layer"))
                truth = load_truth(paths["truth"])
                print(_row(f"{name[10:32]} final ({layout})", paths["sqlite"], truth, model), flush=True)
        if not args.only:
            for stem, model_name in (("ad_dsv3_decode_streams", "dsv3_mla_moe"),
                                     ("qwen3_next_prefill_modules", "qwen3_next_gdn")):
                _, model = dump_model(model_name)
                truth = load_truth(FIXTURES / f"{stem}.truth.json")
                for suffix in (".sqlite", ".pt.trace.json.gz"):
                    print(
                        _row(f"fixture {stem}{suffix}"[:44], FIXTURES / f"{stem}{suffix}", truth, model),
                        flush=True,
                    )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.only:
        return 0
    _grown(mt)
    print("\nreal traces (no dump): layers found, kernels per layer, outside, how")
    for name in ("b300_r1_distill_sglang_decode.trace.json.gz", "h100_qwen1.5_0.5b_hf_eager.trace.json.gz",
                 "h100_2gpu_1s.sqlite"):
        seq = kernel_sequences(SHARED_TRACES / name)
        sizes = Counter(layer.kernel_count for layer in seq.layers)
        outside = sum(1 for k in seq.outside if k.kind == "kernel")
        seg = seq.segmentation
        print(
            f"  {name:48} {seq.num_layers:>3} layers, kernels per layer {dict(sizes)}, {outside} outside "
            f"(step {seq.step}), {seg.method} confidence {seg.confidence}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
