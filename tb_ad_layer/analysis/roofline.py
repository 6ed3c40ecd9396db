"""Roofline per node: FLOPs and bytes from the op, shapes and dtypes, achieved TFLOP/s and TB/s,
and whether the node is compute- or memory-bound against the GPU's peak.

Counted: GEMMs (``linear``: x [..., K] by a weight [N, K]; ``mm`` [M, K] x [K, N]; ``bmm``) as
2*M*N*K FLOPs and their operands' and output's bytes (weight scales included), fused ops of
several linears (a gated MLP's gate/up and down) as the sum over their 2-D weights; attention
from heads, head size and sequence and KV length (4*B*H*S*S_kv*D FLOPs), with the KV length read
from the k input's shape, or for ops that read a KV cache from ``--dim kv_len=N`` (a paged
cache's shape does not say how much of it a step reads); fused MoE ops and collectives as
:mod:`tb_ad_layer.analysis.moe_comm` counts them; every other op as bytes only (inputs and
output: elementwise ops, norms, copies are memory-bound).

Symbolic sizes (``s70``, ``(s27 + 1)//2``) are resolved from ``--dim s70=1024`` or from the
input shapes the trace recorded (:mod:`tb_ad_layer.analysis.sizes`); an unresolved one makes the
node's figures unknown, and its reason says which size to pass and why the trace did not give
it. Sizes are never guessed.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from tb_ad_layer.analysis.gpus import Peak, dtype_class
from tb_ad_layer.analysis.moe_comm import COLLECTIVE, MOE, NotExperts, collective, moe
from tb_ad_layer.analysis.run import Node
from tb_ad_layer.analysis.tensors import (
    Unknown,
    dtype_bytes,
    shape_dims,
    tensor_bytes,
)
from tb_ad_layer.analysis.timeline import us
from tb_ad_layer.contract.analysis import Bound, NodeRoofline, NodeSize
from tb_ad_layer.contract.shape_text import split_dims

_GEMM = re.compile(r"linear|(^|\.)mm\.|\bmm\b|matmul|bmm|addmm|gemm", re.IGNORECASE)
_ATTENTION = re.compile(r"attention|sdpa|(^|[._])mla([._]|$)|(^|[._])mha([._]|$)", re.IGNORECASE)
def _operands(node: Node) -> list[tuple[str, str]]:
    """(shape, dtype) of the tensors the node reads: node inputs with a shape, then weights."""
    out = []
    for i in node.inputs:
        sd = node.values.get(i)
        if sd is not None and sd[0] not in ("", "scalar") and sd[1] not in ("", "unknown"):
            out.append(sd)
    return out + [(shape, dtype) for _, shape, dtype in node.weights]


_NOT_A_MATRIX = re.compile(r"scale|bias|zero|amax", re.IGNORECASE)
_FUSED_LINEARS = re.compile(r"mlp|swiglu|gated|fused_gemm", re.IGNORECASE)


def _linears(node: Node, x_sd: tuple[str, str], dims: Mapping[str, int]
             ) -> tuple[float, float, str, str]:
    """A linear, or a fused op of several (a gated MLP: gate/up then down), over ``x``: each of
    its 2-D weights ``[N, K]`` adds 2*M*N*K; scales and biases count as bytes only."""
    x = shape_dims(x_sd[0], dims)
    matrices = [(s, d) for name, s, d in node.weights
                if not _NOT_A_MATRIX.search(name) and len(split_dims(s)) == 2]
    if not matrices or not x:
        raise Unknown("GEMM operand shapes are not matrices")
    m = math.prod(x[:-1])
    first = shape_dims(matrices[0][0], dims)
    if first[-1] != x[-1]:
        raise Unknown(f"GEMM shapes do not agree (K {x[-1]} vs {first[-1]})")
    flops = 0.0
    sizes = []
    for shape, _ in matrices:
        n, k = shape_dims(shape, dims)
        flops += 2.0 * m * n * k
        sizes.append(f"N={n} K={k}")
    nbytes = tensor_bytes(x_sd[0], x_sd[1], dims) \
        + sum(tensor_bytes(s, d, dims) for _, s, d in node.weights) \
        + m * shape_dims(node.shape, dims)[-1] * dtype_bytes(node.dtype)
    what = "gemm 2*M*N*K" if len(matrices) == 1 else f"{len(matrices)} gemms, sum of 2*M*N*K"
    return flops, nbytes, f"{what}, M={m} " + "; ".join(sizes), matrices[0][1]


def _gemm(node: Node, dims: Mapping[str, int]) -> tuple[float, float, str, str]:
    x_sd = next((node.values[i] for i in node.inputs if i in node.values), None)
    if x_sd is None:
        raise Unknown("GEMM input shape unknown")
    if node.weights:
        return _linears(node, x_sd, dims)
    x = shape_dims(x_sd[0], dims)
    rest = [node.values[i] for i in node.inputs[1:] if i in node.values]
    if not rest:
        raise Unknown("GEMM second operand unknown")
    w_shape, w_dtype = rest[0]
    w = shape_dims(w_shape, dims)
    if len(x) < 2 or len(w) < 2:
        raise Unknown("GEMM operand shapes are not matrices")
    m, k, n = x[-2], w[-2], w[-1]
    if x[-1] != k:
        raise Unknown(f"GEMM shapes do not agree (K {x[-1]} vs {k})")
    batch = math.prod(x[:-2]) if len(x) > 2 else 1
    flops = 2.0 * batch * m * n * k
    out_bytes = batch * m * n * dtype_bytes(node.dtype)
    nbytes = tensor_bytes(x_sd[0], x_sd[1], dims) + tensor_bytes(w_shape, w_dtype, dims) + out_bytes
    where = f"B={batch} " if batch != 1 else ""
    return flops, nbytes, f"gemm 2*M*N*K, {where}M={m} N={n} K={k}", w_dtype


def _attention(node: Node, dims: Mapping[str, int]) -> tuple[float, float, str, str]:
    tensors = [node.values[i] for i in node.inputs if i in node.values]
    qkv = [sd for sd in tensors[:3] if not sd[0].startswith("(")]
    if len(qkv) < 3:
        raise Unknown("attention inputs q, k, v not found")
    q, k, v = (shape_dims(sd[0], dims) for sd in qkv)
    if len(q) != 4 or len(k) != 4:
        raise Unknown("attention q/k are not 4-d (batch, heads, sequence, head size)")
    bsnd = "bsnd" in node.args
    b, s, h, d = (q[0], q[1], q[2], q[3]) if bsnd else (q[0], q[2], q[1], q[3])
    hkv, skv = (k[2], k[1]) if bsnd else (k[1], k[2])
    cached = len(tensors) > 3 or "cache" in node.op.lower()
    how = "k input"
    if cached:
        if "kv_len" not in dims:
            raise Unknown("attention with a KV cache: its length is not in the graph's shapes; "
                          "pass --dim kv_len=N")
        skv, how = dims["kv_len"], "--dim kv_len"
    flops = 4.0 * b * h * s * skv * d
    el = dtype_bytes(qkv[0][1])
    nbytes = (2 * b * s * h * d + 2 * b * skv * hkv * d) * el
    return flops, nbytes, (f"attention 4*B*H*S*S_kv*D, B={b} H={h} S={s} S_kv={skv} ({how}) "
                           f"D={d} H_kv={hkv}"), qkv[0][1]


def _bytes_only(node: Node, dims: Mapping[str, int]) -> tuple[None, float, str, str]:
    operands = _operands(node)
    nbytes = sum(tensor_bytes(s, d, dims) for s, d in operands)
    if node.shape.startswith("("):
        outs = [s.strip() for s in node.shape.strip("()").split(",") if s.strip()]
        dts = [t.strip() for t in node.dtype.strip("()").split(",")]
        nbytes += sum(tensor_bytes(s, t, dims) for s, t in zip(outs, dts, strict=False)
                      if t not in ("None", "unknown"))
    elif node.shape not in ("", "?") and node.dtype not in ("", "unknown", "None"):
        nbytes += tensor_bytes(node.shape, node.dtype, dims)
    if nbytes <= 0:
        raise Unknown("no tensor shapes to count bytes from")
    return None, nbytes, "bytes of inputs and output", node.dtype


def node_roofline(node: Node, time_ns: float, dims: Mapping[str, int], peak: Peak,
                  sizes: Sequence[NodeSize] = (), world_size: int | None = None,
                  world_from: str = "") -> NodeRoofline:
    """The roofline figures of ``node`` run in ``time_ns`` (its median GPU time). ``sizes``:
    where each of the node's symbolic sizes came from; ``world_size``: the ranks a collective
    spans when the graph's shapes do not say (``world_from`` names where it was read)."""
    flops: float | None = None
    nbytes: float | None = None
    formula = ""
    reason: str | None = None
    dtype = node.dtype
    ranks: int | None = None
    comm = COLLECTIVE.search(node.op) is not None
    try:
        if comm:
            nbytes, formula, ranks = collective(node, dims, world_size, world_from)
        elif MOE.search(node.op):
            try:
                flops, nbytes, formula, dtype = moe(node, dims)
            except NotExperts:
                flops, nbytes, formula, dtype = _bytes_only(node, dims)
        elif _ATTENTION.search(node.op):
            flops, nbytes, formula, dtype = _attention(node, dims)
        elif _GEMM.search(node.op) or (_FUSED_LINEARS.search(node.op) and node.weights):
            flops, nbytes, formula, dtype = _gemm(node, dims)
        else:
            flops, nbytes, formula, dtype = _bytes_only(node, dims)
    except Unknown as e:
        flops = nbytes = None
        reason = _with_why(str(e), sizes)
    seconds = time_ns / 1e9
    if comm:
        bus = nbytes / seconds / 1e9 if nbytes is not None and seconds > 0 else None
        return NodeRoofline(
            layer=node.layer, node=node.id, op=node.op, time_us=us(time_ns), flops=None,
            bytes=nbytes, formula=formula, intensity=None, achieved_tflops=None,
            achieved_tbs=None, bound="communication" if nbytes is not None else None,
            achieved_bus_gbs=_r(bus), world_size=ranks, sizes=list(sizes), peak_share=None,
            reason=reason)
    tflops = flops / seconds / 1e12 if flops is not None and seconds > 0 else None
    tbs = nbytes / seconds / 1e12 if nbytes is not None and seconds > 0 else None
    intensity = flops / nbytes if flops is not None and nbytes else None
    bound: Bound | None = None
    share = None
    peak_flops = peak.tflops(dtype_class(dtype))
    if nbytes is not None:
        if flops is None:
            bound = "memory"
        elif peak_flops is not None and peak.tbs:
            bound = "compute" if intensity is not None and intensity > peak_flops / peak.tbs \
                else "memory"
        if bound == "compute" and tflops is not None and peak_flops:
            share = tflops / peak_flops
        elif bound == "memory" and tbs is not None and peak.tbs:
            share = tbs / peak.tbs
        if reason is None and peak.tbs is None:
            reason = "no peak for this GPU: pass --gpu NAME"
    return NodeRoofline(
        layer=node.layer, node=node.id, op=node.op, time_us=us(time_ns),
        flops=flops, bytes=nbytes, formula=formula, intensity=_r(intensity),
        achieved_tflops=_r(tflops), achieved_tbs=_r(tbs), bound=bound, achieved_bus_gbs=None,
        world_size=None, sizes=list(sizes), peak_share=_r(share), reason=reason)


def _with_why(reason: str, sizes: Sequence[NodeSize]) -> str:
    """An unresolved size's reason naming every unknown size of the node and why neither
    ``--dim`` nor the trace gave it: ``symbolic sizes s44, s70 (the trace records no input
    shapes...): pass --dim s44=N --dim s70=N``."""
    missing = [x for x in sizes if x.source == "unknown"]
    if not reason.startswith("symbolic size") or not missing:
        return reason
    by_why: dict[str, list[str]] = {}
    for x in missing:
        by_why.setdefault(x.detail, []).append(x.symbol)
    what = "; ".join(f"{', '.join(syms)} ({why})" for why, syms in by_why.items())
    return (f"symbolic size{'s' if len(missing) > 1 else ''} {what}: pass "
            + " ".join(f"--dim {x.symbol}=N" for x in missing))


def _r(value: float | None) -> float | None:
    return round(value, 4) if value is not None else None
