"""Per-kernel agreement of a mapped trace with the generator's ground truth.

``generate_from_dump`` makes a trace of one of the committed FX dumps (``tests/fixtures/dumps``)
with ``tools/make_traces.py``; ``agreement`` compares what ingestion made of it with the truth:
the share of layer kernels in the right layer, and on the right node.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tb_ad_layer.convert import load_stage, resolve_inputs
from tb_ad_layer.trace.graph_nodes import ModelNodes
from tb_ad_layer.trace.kernel import KIND_KERNEL, Kernel
from tb_ad_layer.trace_attach import model_nodes
from tests.trace.helpers import REPO, load_truth, make_traces

DUMPS = REPO / "tests" / "fixtures" / "dumps"
#: One stage per model kind: AutoDeploy's final stage where the fixtures have it, else the
#: cleaned-up export of a real Hugging Face model.
MODEL_DUMPS = {
    "dsv3_mla_moe": ("ad_dsv3", "085_compile_compile_model"),
    "llama_dense": ("ad_llama", "085_compile_compile_model"),
    "deepseek_v3_export": ("deepseek_v3", "002_post_export_cleanup_noop_slice"),
    "qwen_moe_export": ("qwen_moe", "002_post_export_cleanup_noop_slice"),
    "nemotron_h_hybrid": ("nemotron_h", "002_post_export_cleanup_noop_slice"),
    "qwen3_next_gdn": ("qwen3_next", "002_post_export_cleanup_noop_slice"),
}

_NODE_BASE = 0x10000


@dataclass
class Agreement:
    """Layer kernels (truth says: in a layer) in the right layer and on the right node; outside
    kernels on the right outside node."""

    layer_kernels: int = 0
    right_layer: int = 0
    right_node: int = 0
    outside_kernels: int = 0
    outside_right: int = 0
    misses: list[str] = field(default_factory=list)

    @property
    def layer_share(self) -> float:
        return self.right_layer / self.layer_kernels if self.layer_kernels else 1.0

    @property
    def node_share(self) -> float:
        return self.right_node / self.layer_kernels if self.layer_kernels else 1.0

    @property
    def outside_share(self) -> float:
        return self.outside_right / self.outside_kernels if self.outside_kernels else 1.0


def dump_model(name: str) -> tuple[Path, ModelNodes]:
    """The dump stage of a model kind and the converter's own view of it (``model_nodes``)."""
    directory, stem = MODEL_DUMPS[name]
    stage = next(s for s in resolve_inputs(DUMPS / directory, ["all"]) if s.path.stem == stem)
    return stage.path, model_nodes(load_stage(stage).lg)


def generate_from_dump(
    out: Path, name: str, formats: tuple[str, ...] = ("sqlite",), **opts: Any
) -> dict[str, Path]:
    """Generate a trace of the model kind ``name`` (see ``MODEL_DUMPS``) with ``Options(**opts)``."""
    mt = make_traces()
    directory, stem = MODEL_DUMPS[name]
    plan = mt.plan_from_truth(DUMPS / directory / f"{stem}.truth.json")
    return mt.generate(out, name, plan, mt.Options(**opts), formats)


def truth_record(truth: dict[str, Any], k: Kernel, replay: Sequence[Kernel]) -> dict[str, Any] | None:
    """The truth of kernel ``k`` of the shown replay/pass ``replay``."""
    if truth["phase"] == "prefill":
        by_launch = truth.get("_by_launch")
        if by_launch is None:
            by_launch = truth["_by_launch"] = {}
            for rec in truth["kernels"]:
                by_launch.setdefault((rec["correlation"], rec["kind"]), rec)
        return by_launch.get((k.correlation, k.kind))
    seqs = _templates(truth)
    if k.graph_node_id is not None:
        return seqs.get(k.graph_node_id - _NODE_BASE)
    order = truth.get("replay_order", {}).get(str(k.correlation))
    if order is None:
        return None
    same = sorted((x for x in replay if x.correlation == k.correlation), key=lambda x: (x.start_ns, x.index))
    rank = next(i for i, x in enumerate(same) if x is k)
    return seqs.get(order[rank]) if rank < len(order) else None


def _templates(truth: dict[str, Any]) -> dict[int, dict[str, Any]]:
    cached = truth.get("_by_seq")
    if cached is None:
        cached = truth["_by_seq"] = {rec["seq"]: rec for rec in truth["kernels"] if rec["pass"] == 0}
    return cached


def agreement(
    truth: dict[str, Any], kernels: Sequence[Kernel], layer_of: dict[int, int] | None = None
) -> Agreement:
    """Agreement of ``kernels`` (each with ``layer``/``node`` set) with ``truth``; ``layer_of``
    maps a kernel's id to a layer for results that set no ``layer`` (the seed baseline)."""
    out = Agreement()
    for k in kernels:
        if k.kind != KIND_KERNEL:
            continue
        rec = truth_record(truth, k, kernels)
        if rec is None:
            continue
        got_layer = layer_of.get(id(k)) if layer_of is not None else k.layer
        if rec["layer"] is None:
            if rec["node"] is not None:
                out.outside_kernels += 1
                out.outside_right += k.node == rec["node"] and got_layer is None
            continue
        out.layer_kernels += 1
        out.right_layer += got_layer == rec["layer"]
        if got_layer == rec["layer"] and k.node == rec["node"]:
            out.right_node += 1
        elif len(out.misses) < 12:
            out.misses.append(f"{k.short} on {k.stream_key}: got layer {got_layer} node {k.node}, "
                              f"truth layer {rec['layer']} node {rec['node']} ({k.unmapped_reason})")
    return out


def load(paths: dict[str, Path]) -> dict[str, Any]:
    return load_truth(paths["truth"])


def seed_baseline():
    """``bench/seed_stream_grouping.py`` imported as a module."""
    import importlib.util
    import sys
    name = "seed_stream_grouping"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "bench" / "seed_stream_grouping.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def baseline_agreement(truth: dict[str, Any], kernels: Sequence[Kernel], expected: ModelNodes | None,
                       kmap: Any = None) -> tuple[int, Agreement]:
    """Seed 000's stream grouping on the same replay (copies of its kernels), each of its layers
    then mapped by the product's mapper onto the graph layer of the same position: the layer
    count it finds and its agreement with the truth."""
    from dataclasses import replace

    from tb_ad_layer.trace.graph_nodes import KernelMatcher
    from tb_ad_layer.trace.kernel_map import load_kernel_map
    from tb_ad_layer.trace.mapping import map_layer

    copies = [replace(k, layer=None, node=None, unmapped_reason=None) for k in kernels]
    groups = seed_baseline().stream_grouping_layers(copies)
    matcher = KernelMatcher(kmap or load_kernel_map())
    layer_of: dict[int, int] = {}
    for j, ks in enumerate(groups):
        if expected is not None and j < len(expected.layers):
            map_layer(expected.layers[j], ks, matcher)
            index = expected.layers[j].index
        else:
            index = j
        for k in ks:
            layer_of[id(k)] = index
    return len(groups), agreement(truth, copies, layer_of)


def grown_plan(plan: Any, layers: int, keep_first: int = 0) -> Any:
    """``plan`` (from ``tools/make_traces.py``) with ``layers`` layers: the first ``keep_first``
    layers once, then the others repeated in order, node ids suffixed with the new index. A
    2-5-layer export becomes a model deep enough for repetition to mean something."""
    from copy import copy

    mt = make_traces()
    src = plan.layers
    out = []
    for i in range(layers):
        j = i if i < keep_first else keep_first + (i - keep_first) % (len(src) - keep_first)
        nodes = [copy(n) for n in src[j].nodes]
        for n in nodes:
            n.id, n.layer = f"{n.id}__{i}", i
            if n.fork is not None:
                n.fork = f"{n.fork}__{i}"
        out.append(mt.PlanLayer(i, src[j].kind, nodes))
    return mt.Plan(plan.model, plan.prologue, out, plan.epilogue)
