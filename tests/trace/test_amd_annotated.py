"""ROCm-style traces (``hipGraphLaunch`` replays) and kernels annotated with their module.

Both are built from the real B300 SGLang decode trace (one ``cudaGraphLaunch`` of 356 kernels:
the embedding, 32 layers of 11 kernels, the final norm, lm head and a copy):

- the ROCm-style copy renames the launch to ``hipGraphLaunch`` and drops the graph ids, as a
  ROCm profiler trace of an MI300X vLLM decode step has them: the replay must still be found
  and cut into the same 32 layers, kernel for kernel;
- the annotated copy gives each replayed kernel a graph node id with the graph id packed into its
  upper 32 bits (recent CUPTI) and the ``module_fqn`` annotation PyTorch's ``mark_kernels``
  writes, placing one layer boundary one kernel later than the repeating pattern would: the
  annotation decides.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import msgspec

from tb_ad_layer.trace.annotations import KERNEL_ANNOTATIONS
from tb_ad_layer.trace.ingest import kernel_sequences as _kernel_sequences
from tests.trace.helpers import B300


def kernel_sequences(path: Path) -> dict[str, Any]:
    """The ``kernels`` command's record as its JSON values."""
    return msgspec.to_builtins(_kernel_sequences(path))


LAYERS = 32
PER_LAYER = 11


def _load() -> dict[str, Any]:
    with gzip.open(B300, "rt", encoding="utf-8") as fh:
        doc: dict[str, Any] = json.load(fh)
    return doc


def _replay(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The kernels of the graph launch, in start order."""
    launch = next(e for e in doc["traceEvents"] if e.get("name") == "cudaGraphLaunch")
    corr = launch["args"]["correlation"]
    ks = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"
          and e.get("args", {}).get("correlation") == corr]
    return sorted(ks, key=lambda e: e["ts"])


def _write(doc: dict[str, Any], path: Path) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(doc, fh)
    return path


def _layer_kernels(data: dict[str, Any]) -> list[list[tuple[str, float]]]:
    return [[(k["name"], k["start_us"]) for k in layer["kernels"]] for layer in data["layers"]]


def test_hip_graph_launch_is_a_replay(tmp_path: Path) -> None:
    doc = _load()
    for e in doc["traceEvents"]:
        if e.get("name") == "cudaGraphLaunch":
            e["name"] = "hipGraphLaunch"
        args = e.get("args")
        if e.get("cat") == "kernel" and isinstance(args, dict):
            args.pop("graph id", None)
            args.pop("graph node id", None)
    hip = kernel_sequences(_write(doc, tmp_path / "mi300x_style.trace.json.gz"))
    cuda = kernel_sequences(B300)
    assert hip["phase"] == "decode"
    assert hip["num_layers"] == cuda["num_layers"] == LAYERS
    assert _layer_kernels(hip) == _layer_kernels(cuda)
    assert all(len(layer) == PER_LAYER for layer in _layer_kernels(hip))


def test_kernel_annotations_are_layer_boundaries(tmp_path: Path) -> None:
    doc = _load()
    replay = _replay(doc)
    graph = 7
    for i, e in enumerate(replay):
        e["args"]["graph id"] = graph
        e["args"]["graph node id"] = (graph << 32) | (i + 1)
        # Layer N's kernels are 1 + 11 N .. 11 + 11 N; here layer 4 also takes layer 5's first
        # kernel (its fused add + RMSNorm), which the repeating pattern would give layer 5.
        j = i - 1
        layer = j // PER_LAYER if 0 <= j < LAYERS * PER_LAYER else None
        if layer == 5 and j % PER_LAYER == 0:
            layer = 4
        e["args"]["module_fqn"] = (f"model.layers.{layer}.block" if layer is not None
                                   else "model.embed_tokens" if i == 0 else "lm_head")
    data = kernel_sequences(_write(doc, tmp_path / "annotated.trace.json.gz"))
    assert data["segmentation"]["method"] == KERNEL_ANNOTATIONS
    sizes = [len(layer["kernels"]) for layer in data["layers"]]
    assert len(sizes) == LAYERS
    assert sizes[4] == PER_LAYER + 1 and sizes[5] == PER_LAYER - 1
    assert all(n == PER_LAYER for i, n in enumerate(sizes) if i not in (4, 5))
    # The graph id in the upper bits is gone from the node ids compared.
    ids = [k.get("graph_node_id") for layer in data["layers"] for k in layer["kernels"]]
    assert all(i is None or i < 1 << 32 for i in ids)
