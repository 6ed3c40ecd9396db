"""Regenerate ``demo_logs/``: the ready logdir the README's first command opens.

Inputs are generated deterministically (tools/make_ad_dump.py, tools/make_traces.py) into a
scratch directory, then converted with the real CLI:

- ``dsv3_decode``: DeepSeek-V3-style model (MLA; 3 dense layers, then MoE with shared experts on
  an aux stream), every transform stage, with a CUDA-graph decode trace (nsys SQLite schema).
- ``dsv3_prefill``: the same dumps with an eager prefill trace (NVTX-marked forward passes).
- ``dsv3_decode_unfused``: the same model one fusion stage earlier (its sharding stage, before
  MoE and norm fusion) with its own decode trace: compare it with ``dsv3_decode``.
- ``dsv3_tp4``: a smaller model of the same kind (6 layers, the final stage) on 4 GPUs (one nsys
  trace of 4 devices, converted with ``--device all``): rank 2 is planted slower at layer 4 and
  rank 1 at layer 5 (stragglers), rank 3 noisier at layer 2 (no straggler).
- ``llama_decode``: a dense Llama-style model (GQA) with a PyTorch profiler decode trace.
- ``llama_torch_compile``: torch.compile's structured logs (TORCH_TRACE) of a tiny real Llama
  compiled by Inductor: the Dynamo, AOT and post-grad graphs as stages.
- ``qwen3_export_model``: the dumps ``tb_ad_layer.export_model`` wrote of a live tiny Qwen3.

    python tools/make_demo.py                 # rewrite demo_logs/
    python tools/make_demo.py --out /tmp/demo # elsewhere (tests compare against the committed copy)
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Fixed so that regenerating gives the same stores (the converter records creation time).
os.environ.setdefault("SOURCE_DATE_EPOCH", "1795000000")


def _run(*args: str) -> None:
    subprocess.run([sys.executable, *args], check=True, cwd=REPO, stdout=subprocess.DEVNULL)


def _convert(src: Path, logdir: Path, run: str, *extra: str) -> None:
    subprocess.run([sys.executable, "-m", "tb_ad_layer.cli", "convert", str(src), "--logdir",
                    str(logdir), "--run", run, "-q", *extra], check=True, cwd=REPO)
    print(f"  {run}")


def build(out: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="tb-ad-layer-demo-") as tmp:
        scratch = Path(tmp)
        dsv3 = scratch / "dsv3"
        llama = scratch / "llama"
        tp = scratch / "dsv3_tp4"
        traces = scratch / "traces"
        _run("tools/make_ad_dump.py", "--model", "dsv3", "--layers", "12", "--dense-layers", "3",
             "--experts", "64", "--stages", "all", "--out", str(dsv3))
        _run("tools/make_ad_dump.py", "--model", "llama", "--layers", "8", "--stages", "final",
             "--out", str(llama))
        _run("tools/make_ad_dump.py", "--model", "dsv3", "--layers", "6", "--dense-layers", "1",
             "--experts", "64", "--stages", "final", "--out", str(tp))
        final = sorted(dsv3.glob("*.truth.json"))[-1]
        sharded = next(dsv3.glob("060_*.truth.json"))
        gen = ["tools/make_traces.py", "--out", str(traces)]
        _run(*gen, "--name", "dsv3_decode", "--phase", "decode", "--plan-from", str(final),
             "--replays", "200", "--format", "sqlite")
        _run(*gen, "--name", "dsv3_prefill", "--phase", "prefill", "--plan-from", str(final),
             "--passes", "2", "--format", "sqlite")
        _run(*gen, "--name", "dsv3_unfused", "--phase", "decode", "--plan-from", str(sharded),
             "--replays", "200", "--format", "sqlite")
        _run(*gen, "--name", "dsv3_tp4", "--phase", "decode", "--plan-from",
             str(next(tp.glob("*.truth.json"))), "--replays", "40", "--devices", "4",
             "--format", "sqlite", "--slow", "2:4:1.3:0.02", "--slow", "1:5:1.15:0.02",
             "--slow", "3:2:1.05:0.4")
        _run(*gen, "--name", "llama_decode", "--phase", "decode", "--plan-from",
             str(next(llama.glob("*.truth.json"))), "--replays", "200", "--format", "torch")
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        print(f"converting into {out}")
        _convert(dsv3, out, "dsv3_decode", "--stages", "all", "--model", "deepseek-v3-style",
                 "--trace", str(traces / "dsv3_decode.sqlite"), "--phase", "decode")
        _convert(dsv3, out, "dsv3_prefill", "--stages", "all", "--model", "deepseek-v3-style",
                 "--trace", str(traces / "dsv3_prefill.sqlite"), "--phase", "prefill")
        _convert(dsv3, out, "dsv3_decode_unfused", "--stages", sharded.name[:3],
                 "--model", "deepseek-v3-style", "--trace", str(traces / "dsv3_unfused.sqlite"),
                 "--phase", "decode")
        _convert(tp, out, "dsv3_tp4", "--model", "deepseek-v3-style",
                 "--trace", str(traces / "dsv3_tp4.sqlite"), "--device", "all",
                 "--phase", "decode")
        _convert(llama, out, "llama_decode", "--model", "llama-style",
                 "--trace", str(traces / "llama_decode.pt.trace.json.gz"), "--phase", "decode")
        # torch.compile's structured logs of a real Llama compiled by Inductor, recompiled once
        # (committed by tools/make_torch_trace.py), and the dumps export_model wrote of a live
        # Qwen3 (tools/make_export_model_fixture.py): both inputs beyond AutoDeploy's own dumps.
        _convert(REPO / "tests" / "fixtures" / "torch_trace" / "llama_inductor" / "trace", out,
                 "llama_torch_compile", "--stages", "all", "--model", "llama")
        _convert(REPO / "tests" / "fixtures" / "export_model" / "qwen3", out, "qwen3_export_model",
                 "--stages", "all", "--model", "qwen3")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "demo_logs")
    build(ap.parse_args().out.resolve())


if __name__ == "__main__":
    main()
