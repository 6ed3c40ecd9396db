"""Shared paths and helpers of the trace tests."""
from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from tb_ad_layer.trace.graph_nodes import LayerNodes, ModelNodes
from tb_ad_layer.trace.kernel import Kernel

REPO = Path(__file__).resolve().parents[2]
SHARED_TRACES = REPO.parent / "shared" / "traces"
FIXTURES = REPO / "tests" / "fixtures" / "traces"
H100 = SHARED_TRACES / "h100_2gpu_1s.sqlite"
NSIGHT_GRAPH = SHARED_TRACES / "nsight-2025.5.2.sqlite"
HTA = SHARED_TRACES / "negative_queue_length_rank0_a100_cudagraph.json.gz"
B300 = SHARED_TRACES / "b300_r1_distill_sglang_decode.trace.json.gz"
HF_QWEN = SHARED_TRACES / "h100_qwen1.5_0.5b_hf_eager.trace.json.gz"


@dataclass
class Node:
    """A MappableNode as the converter would pass it."""

    name: str
    op: str
    group: str
    sub_group: str | None
    stream: str = "main"


def make_traces() -> ModuleType:
    """``tools/make_traces.py`` imported as a module."""
    if "make_traces" in sys.modules:
        return sys.modules["make_traces"]
    spec = importlib.util.spec_from_file_location("make_traces", REPO / "tools" / "make_traces.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["make_traces"] = mod
    spec.loader.exec_module(mod)
    return mod


def load_truth(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def layers_from_truth(truth: dict[str, Any], *, with_streams: bool = True) -> list[LayerNodes]:
    """LayerNodes of the generator's plan, optionally without the aux-stream hints."""
    out = []
    for layer in truth["layers"]:
        nodes = [Node(n["id"], n["op"], n["group"], n["sub_group"], n["stream"] if with_streams else "")
                 for n in layer["nodes"]]
        out.append(LayerNodes(layer["index"], layer["kind"], nodes))
    return out


def model_from_truth(truth: dict[str, Any]) -> ModelNodes:
    """The generator's plan as the converter would pass it: layers and the nodes outside them."""
    outside = truth.get("outside", {"before": [], "after": []})

    def nodes(recs: list[dict[str, Any]]) -> list[Node]:
        return [Node(n["id"], n["op"], n["group"], n["sub_group"], n["stream"]) for n in recs]

    return ModelNodes(
        layers_from_truth(truth), before=nodes(outside["before"]), after=nodes(outside["after"])
    )


def truth_key(truth: dict[str, Any]) -> str:
    return "graph_node_id" if truth["phase"] == "decode" else "correlation"


def expected(truth: dict[str, Any], k: Kernel) -> dict[str, Any] | None:
    """Ground-truth record of kernel ``k`` (same graph node, or same launch correlation)."""
    key = truth_key(truth)
    value = k.graph_node_id if key == "graph_node_id" else k.correlation
    for rec in truth["kernels"]:
        if rec[key] == value and rec["kind"] == k.kind:
            return rec
    return None


def expected_outcome(rec: dict[str, Any]) -> tuple[int | None, str | None]:
    """(layer, node) the pipeline must produce: model-level work and unknown kernels map to no node."""
    if rec["layer"] is None:
        return None, None
    if rec["kind"] != "kernel" or rec["short"] == "mystery_kernel":
        return rec["layer"], None
    return rec["layer"], rec["node"]
