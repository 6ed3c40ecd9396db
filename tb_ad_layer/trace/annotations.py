"""Layer boundaries the trace states itself: module annotations and NVTX ranges per layer.

The most authoritative boundary is a range that the model's own code opened around a layer:

- profiler traces recorded ``with_modules`` hold ``nn.Module: <Class>_N`` ranges; a kernel
  belongs to the range that contains its CPU launch (the CUDA call with the kernel's
  correlation id), on the same thread;
- eager nsys traces may hold NVTX ranges per layer (``model.layers.3``, ``layer 3``...), used
  the same way;
- kernels replayed from a CUDA graph were launched by one ``cudaGraphLaunch``, so their CPU
  point is where their node was *captured*: ``CUDA_GRAPH_NODE_EVENTS`` lead from a replayed
  node, through ``originalGraphNodeId``, to the capture-time node and its timestamp and thread,
  and the NVTX ranges open then give the layer (as TensorRT-LLM's layer-wise tools do);
- next to them, CUDA-graph kernels that carry their module or layer in their args (PyTorch's
  ``mark_kernels`` / ``cuda_graph_annotations``: ``model.layers.3.mlp``, ``layer: 3``): each
  distinct layer path in those texts is one layer.

Which ranges are the layers is decided from their shape, not their names: ranges whose texts
differ only in their numbers form a *class* (``nn.Module: Qwen2DecoderLayer_#``,
``model.layers.#``); the layer class has at least two disjoint instances, each holding several
kernels, and covers more kernels than any other such class (sub-modules cover fewer, the model
itself is one instance). Classes of other layer types interleaved with it (hybrid models whose
attention and Mamba layers are different classes) join it. Hook ranges (``FSDP::...``) and
profiler steps never count.
"""
from __future__ import annotations

import bisect
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from tb_ad_layer.trace.kernel import Kernel
from tb_ad_layer.trace.steps import is_hook_range
from tb_ad_layer.trace.tracedb import CpuRange, TraceDB

_NUMBER = re.compile(r"\d+")
_STEP = re.compile(r"^ProfilerStep#\d+$")
#: A layer launches at least this many kernels (median over the class's instances).
MIN_LAYER_KERNELS = 3
#: Layer ranges hold at least this share of the replay's or pass's kernels.
MIN_COVERAGE = 0.5
MODULE_PREFIX = "nn.Module: "

CAPTURE_NVTX = "capture-nvtx"
KERNEL_ANNOTATIONS = "kernel-annotations"
#: Where a module path or annotation names a layer: ``model.layers.3``, ``layer 3``,
#: ``transformer.h.12``, ``blocks_4``.
_LAYER_IN_TEXT = re.compile(r"(?:^|[._\s/:])(?:layers|layer|h|blocks|block)[._\s:]?(\d+)(?=$|[._\s/:])",
                            re.IGNORECASE)
MODULES = "module-annotations"
NVTX_RANGES = "nvtx-ranges"


@dataclass
class AnnotatedLayers:
    """Per kernel (same order as given) the index of the layer range holding its CPU point, or
    None; ``kinds`` names each layer's class; ``source`` says which ranges were used."""

    source: str
    labels: list[int | None]
    kinds: list[str]

    @property
    def count(self) -> int:
        return len(self.kinds)


_INSTANCE = re.compile(r"_\d+$")


def _class_of(text: str) -> str | None:
    """The class key of a range text: a module's name without its instance number
    (``nn.Module: Qwen2DecoderLayer_#``), other texts with their numbers as ``#``; None when the
    text has no number."""
    if text.startswith(MODULE_PREFIX):
        return _INSTANCE.sub("_#", text) if _INSTANCE.search(text) else None
    if not _NUMBER.search(text):
        return None
    return _NUMBER.sub("#", text)


def _kind_of(key: str) -> str:
    text = key[len(MODULE_PREFIX):] if key.startswith(MODULE_PREFIX) else key
    return text.rstrip("_#. ") or text


def capture_points(db: TraceDB, kernels: Sequence[Kernel]) -> list[tuple[int, int] | None]:
    """Per kernel, the (thread, time) where its graph node was captured, via
    ``CUDA_GRAPH_NODE_EVENTS``; None where the trace does not lead there."""
    if not db.has_node_events or not any(k.graph_node_id is not None for k in kernels):
        return [None] * len(kernels)
    events: dict[int, tuple[int | None, int, int]] = {}
    for s, tid, node, orig in db.rows("SELECT s, tid, node, orig FROM gne WHERE node IS NOT NULL"):
        prev = events.get(node)
        # A node may have several events; the creation (earliest) one carries its capture time.
        if prev is None or (orig is not None and prev[0] is None) or (orig == prev[0] and s < prev[1]):
            events[node] = (orig, s, tid or 0)
    out: list[tuple[int, int] | None] = []
    for k in kernels:
        node = k.graph_node_id
        point = None
        seen: set[int] = set()
        while node is not None and node in events and node not in seen:
            seen.add(node)
            orig, s, tid = events[node]
            if orig is None:
                point = (tid, s)
                break
            node = orig
        out.append(point)
    return out


def launch_points(kernels: Sequence[Kernel]) -> list[tuple[int, int] | None]:
    """Per kernel, the (thread, time) of its CPU launch call, None when unknown."""
    return [(k.launch_tid or 0, k.launch_ns) if k.launch_ns is not None else None for k in kernels]


def _index_points(points: Sequence[tuple[int, int] | None]) -> dict[int, list[int]]:
    by_tid: dict[int, list[int]] = {}
    for p in points:
        if p is not None:
            by_tid.setdefault(p[0], []).append(p[1])
    for times in by_tid.values():
        times.sort()
    return by_tid


def _count_in(by_tid: dict[int, list[int]], r: CpuRange) -> int:
    times = by_tid.get(r.tid)
    if not times:
        return 0
    return bisect.bisect_right(times, r.end_ns) - bisect.bisect_left(times, r.start_ns)


def _disjoint(ranges: list[CpuRange]) -> bool:
    ordered = sorted(ranges, key=lambda r: (r.tid, r.start_ns))
    return all(a.tid != b.tid or a.end_ns < b.start_ns for a, b in pairwise(ordered))


def _overlaps(a: CpuRange, b: CpuRange) -> bool:
    return a.tid == b.tid and a.start_ns <= b.end_ns and b.start_ns <= a.end_ns


def layer_ranges(
    ranges: Sequence[CpuRange], points: Sequence[tuple[int, int] | None]
) -> list[tuple[CpuRange, str]]:
    """The ranges that are decoder layers, in time order, each with its class key; empty when
    no class of ranges looks like layers."""
    by_tid = _index_points(points)
    if not by_tid:
        return []
    classes: dict[str, list[tuple[CpuRange, int]]] = {}
    for r in ranges:
        if is_hook_range(r.text) or _STEP.match(r.text):
            continue
        key = _class_of(r.text)
        if key is None:
            continue
        n = _count_in(by_tid, r)
        if n:
            classes.setdefault(key, []).append((r, n))
    candidates = {key: inst for key, inst in classes.items()
                  if len(inst) >= 2 and _disjoint([r for r, _ in inst])
                  and statistics.median(n for _, n in inst) >= MIN_LAYER_KERNELS}
    if not candidates:
        return []
    best = max(
        sorted(candidates), key=lambda key: (sum(n for _, n in candidates[key]), -len(candidates[key]))
    )
    chosen = [(r, best) for r, _ in candidates[best]]
    chosen += _sibling_layers(ranges, classes, chosen, by_tid)
    chosen.sort(key=lambda item: item[0].start_ns)
    return chosen


_LAYER_NAME = re.compile(r"(layer|block)s?$", re.IGNORECASE)


def _sibling_layers(
    ranges: Sequence[CpuRange],
    classes: dict[str, list[tuple[CpuRange, int]]],
    chosen: list[tuple[CpuRange, str]],
    by_tid: dict[int, list[int]],
) -> list[tuple[CpuRange, str]]:
    """Layers of other classes beside the chosen ones (hybrid models whose attention, Mamba and
    MoE layers are different modules): ranges under the same parent that overlap no chosen
    layer, hold several kernels, and are of a class never found inside a layer (so not a norm or
    a linear); between the first and last chosen layer any such range counts, beyond them only
    one named like a layer or block."""
    inst = [r for r, _ in chosen]
    tid = inst[0].tid
    lo, hi = min(r.start_ns for r in inst), max(r.end_ns for r in inst)
    parents = [r for r in ranges if r.tid == tid and r.start_ns <= lo and r.end_ns >= hi
               and not is_hook_range(r.text) and not _STEP.match(r.text)]
    parent = min(parents, key=lambda r: r.end_ns - r.start_ns) if parents else None
    inner = {key for key, members in classes.items()
             if any(c.tid == r.tid and c.start_ns <= r.start_ns and r.end_ns <= c.end_ns for r, _ in members
                    for c in inst)}
    found: list[tuple[CpuRange, str]] = []
    for key, members in classes.items():
        if key in inner or key == chosen[0][1]:
            continue
        for r, n in members:
            if r.tid != tid or n < MIN_LAYER_KERNELS or any(_overlaps(r, c) for c in inst):
                continue
            if parent is not None and not (parent.start_ns <= r.start_ns and r.end_ns <= parent.end_ns):
                continue
            between = lo <= r.start_ns and r.end_ns <= hi
            named = _LAYER_NAME.search(_kind_of(key)) is not None
            if between or named:
                found.append((r, key))
    # Only the outermost: a layer's own sub-modules are not layers.
    return [(r, key) for r, key in found
            if not any(o is not r and o.start_ns <= r.start_ns and r.end_ns <= o.end_ns for o, _ in found)]


def annotated_layers(db: TraceDB, kernels: Sequence[Kernel]) -> AnnotatedLayers | None:
    """Layer labels from the trace's own ranges (capture-time NVTX for graph replays, module or
    NVTX ranges for eager passes), or None when the trace has none that look like layers."""
    if not kernels:
        return None
    attempts: list[tuple[str, list[tuple[int, int] | None], tuple[str, ...]]] = []
    if any(k.graph_node_id is not None for k in kernels):
        attempts.append((CAPTURE_NVTX, capture_points(db, kernels), ("nvtx", "annotation")))
    else:
        points = launch_points(kernels)
        attempts.append((MODULES, points, ("module",)))
        attempts.append((NVTX_RANGES, points, ("nvtx", "annotation")))
    for source, points, srcs in attempts:
        if not any(p is not None for p in points):
            continue
        found = layer_ranges(db.ranges(srcs), points)
        if len(found) < 2:
            continue
        covered = sum(_count_in(_index_points(points), r) for r, _ in found)
        if covered < MIN_COVERAGE * sum(1 for p in points if p is not None):
            continue
        starts: dict[int, list[tuple[int, int, int]]] = {}
        for idx, (r, _) in enumerate(found):
            starts.setdefault(r.tid, []).append((r.start_ns, r.end_ns, idx))
        for lst in starts.values():
            lst.sort()
        labels: list[int | None] = []
        for p in points:
            label = None
            if p is not None:
                lst = starts.get(p[0], [])
                j = bisect.bisect_right(lst, (p[1], 1 << 62, 1 << 62)) - 1
                if j >= 0 and lst[j][0] <= p[1] <= lst[j][1]:
                    label = lst[j][2]
            labels.append(label)
        return AnnotatedLayers(source, labels, [_kind_of(key) for _, key in found])
    return kernel_annotation_layers(db, kernels)


def kernel_annotation_layers(db: TraceDB, kernels: Sequence[Kernel]) -> AnnotatedLayers | None:
    """Layer labels from the annotations graph kernels carry (``TraceDB.memo``'s node
    annotations, read by the profiler reader): a kernel belongs to the layer its annotation's
    layer path names (``model.layers.3`` in ``model.layers.3.self_attn.q_proj``); layers in the
    order their kernels first run. None with fewer than two layers, or when under half the
    kernels carry one."""
    notes = db.memo.get("node_annotations")
    if not isinstance(notes, dict) or not notes:
        return None
    keys: list[str | None] = []
    for k in kernels:
        text = notes.get(k.graph_node_id) if k.graph_node_id is not None else None
        m = _LAYER_IN_TEXT.search(text) if isinstance(text, str) else None
        keys.append(text[:m.end()].lower() if m and isinstance(text, str) else None)
    order: dict[str, int] = {}
    for key in keys:
        if key is not None and key not in order:
            order[key] = len(order)
    covered = sum(1 for key in keys if key is not None)
    if len(order) < 2 or covered < MIN_COVERAGE * len(kernels):
        return None
    kinds = [_kind_of(_NUMBER.sub("#", key)) for key in order]
    return AnnotatedLayers(KERNEL_ANNOTATIONS, [order[key] if key is not None else None for key in keys],
                           kinds)
