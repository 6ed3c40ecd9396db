"""FLOPs and bytes of fused MoE ops and bytes moved by collectives, from the graph's shapes.

Fused MoE (AutoDeploy's ``torch_moe``, ``trtllm_moe_fused``, ``triton_moe_fused``...: ``x``
[..., H], ``selected_experts`` [T, top_k], ``routing_weights``, then the experts' weights, either
stacked ``[E, N, K]`` (``w3_w1`` [E, 2I, H] and ``w2`` [E, H, I]) or one ``[N, K]`` per expert):
each of the T tokens runs its top_k experts, so FLOPs = T * top_k * (the sum of 2*N*K over one
expert's matrices): 2*H*I*3 for a gated MLP. The bytes are the activations plus the expert
weights a step touches, an assumption the formula states: every expert when T * top_k >= E
(decode batches spread over all experts), else at most T * top_k of them.

Collectives (``all_reduce``, fused all-reduce + residual + RMSNorm, ``all_gather``,
``reduce_scatter``, ``all_to_all``) move bus bytes as nccl-tests counts them, for n ranks and a
tensor of S bytes: all-reduce 2(n-1)/n * S; all-gather (n-1)/n * S of the gathered output;
reduce-scatter (n-1)/n * S of the input; all-to-all (n-1)/n * S. An all-gather's and a
reduce-scatter's n is the ratio of its output to its input in the graph; an all-reduce's comes
from ``--dim world_size=N`` or from the GPUs a multi-GPU trace records, and is otherwise unknown,
said so.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping

from tb_ad_layer.analysis.run import Node
from tb_ad_layer.analysis.tensors import (
    Unknown,
    dtype_bytes,
    shape_dims,
    tensor_bytes,
)
from tb_ad_layer.contract.shape_text import split_dims

MOE = re.compile(r"moe", re.IGNORECASE)
COLLECTIVE = re.compile(r"all_?reduce|all_?gather|reduce_?scatter|all_?to_?all", re.IGNORECASE)
_KINDS = (("reduce-scatter", re.compile(r"reduce_?scatter", re.I)),
          ("all-gather", re.compile(r"all_?gather", re.I)),
          ("all-to-all", re.compile(r"all_?to_?all", re.I)),
          ("all-reduce", re.compile(r"all_?reduce", re.I)))
_EXPERT = re.compile(r"experts?_(\d+)_", re.IGNORECASE)
_SCALE = re.compile(r"scale|bias|zero|amax|alpha", re.IGNORECASE)


class NotExperts(Exception):
    """A MoE-named op that is not an expert computation (routing, alignment, masks): counted
    as bytes like any other op."""


def _tensors(node: Node) -> list[tuple[str, str]]:
    """(shape, dtype) of the values the node reads, in argument order."""
    return [node.values[i] for i in node.inputs if i in node.values
            and node.values[i][0] not in ("", "scalar", "?") and not node.values[i][0].startswith("(")]


def moe(node: Node, dims: Mapping[str, int]) -> tuple[float, float, str, str]:
    """FLOPs, bytes, formula and dtype of a fused MoE op (raises :class:`Unknown`, or
    :class:`NotExperts` for a MoE-named op without experts' weights)."""
    tensors = _tensors(node)
    stacked = [(n, s, d) for n, s, d in node.weights
               if len(split_dims(s)) == 3 and not _SCALE.search(n)]
    listed = [(n, s, d) for n, s, d in node.weights if _EXPERT.search(n) and not _SCALE.search(n)]
    if len(tensors) < 2 or not (stacked or listed):
        raise NotExperts()
    (x_shape, x_dtype), (sel_shape, _) = tensors[0], tensors[1]
    x = shape_dims(x_shape, dims)
    sel = shape_dims(sel_shape, dims)
    if len(sel) != 2 or not x:
        raise Unknown("MoE selected_experts is not [tokens, top_k]")
    tokens, top_k = math.prod(x[:-1]), sel[-1]
    hidden = x[-1]
    if stacked:
        experts = shape_dims(stacked[0][1], dims)[0]
        matrices = [shape_dims(s, dims) for _, s, _ in stacked]
        if any(m[0] != experts for m in matrices):
            raise Unknown("MoE stacked weights disagree on the number of experts")
        per_expert = sum(2.0 * m[1] * m[2] for m in matrices)
        w_shapes = "; ".join("x".join(str(v) for v in m) for m in matrices)
        wdtype = stacked[0][2]
    else:
        if any(s in ("?", "") for _, s, _ in listed):
            raise Unknown("MoE experts' weights are passed as a list whose shapes the dump "
                          "does not print")
        experts = len({_EXPERT.search(n)[1] for n, _, _ in listed})  # type: ignore[index]
        matrices = [shape_dims(s, dims) for _, s, _ in listed]
        if any(len(m) != 2 for m in matrices):
            raise Unknown("MoE expert weights are not matrices")
        per_expert = sum(2.0 * m[0] * m[1] for m in matrices) / experts
        w_shapes = f"{len(listed)} per-expert matrices"
        wdtype = listed[0][2]
    if experts <= 0:
        raise Unknown("MoE with no experts")
    routed = tokens * top_k
    touched = min(experts, routed)
    weight_bytes = sum(tensor_bytes(s, d, dims) for _, s, d in node.weights)
    # What belongs to one expert (stacked [E, ...], scales included, or named per expert) is
    # read for the experts touched; anything else the op reads whole.
    own = sum(tensor_bytes(s, d, dims) for n, s, d in node.weights
              if (_EXPERT.search(n) if not stacked else
                  len(split_dims(s)) >= 2 and shape_dims(s, dims)[0] == experts))
    weight_bytes_touched = weight_bytes - own * (1 - touched / experts)
    act_bytes = sum(tensor_bytes(s, d, dims) for s, d in tensors[:3]) \
        + tokens * hidden * dtype_bytes(node.dtype if not node.dtype.startswith("(") else x_dtype)
    flops = routed * per_expert
    assumption = ("all experts touched: tokens*top_k >= experts" if routed >= experts else
                  "tokens*top_k experts touched at most: tokens*top_k < experts")
    formula = (f"moe tokens*top_k*(sum of 2*N*K over one expert's matrices), tokens={tokens} "
               f"top_k={top_k} experts={experts} H={hidden} per-expert FLOPs={per_expert:g} "
               f"({w_shapes}); weight bytes of {touched} of {experts} experts ({assumption})")
    return flops, act_bytes + weight_bytes_touched, formula, wdtype


def _kind(op: str) -> str:
    for name, pattern in _KINDS:
        if pattern.search(op):
            return name
    raise Unknown("not a collective")


def _output(node: Node) -> tuple[str, str]:
    """The node's (first) output shape and dtype (a fused all-reduce + norm has two)."""
    if node.shape.startswith("("):
        shape = node.shape.strip("()").split(",")[0].strip()
        dtype = node.dtype.strip("()").split(",")[0].strip()
        return shape, dtype
    return node.shape, node.dtype


def collective(node: Node, dims: Mapping[str, int], world_size: int | None,
               world_from: str) -> tuple[float, str, int]:
    """Bus bytes, formula and rank count of a collective (raises :class:`Unknown`)."""
    kind = _kind(node.op)
    tensors = _tensors(node)
    if not tensors:
        raise Unknown(f"{kind}: input shape unknown")
    size_in = tensor_bytes(tensors[0][0], tensors[0][1], dims)
    out_shape, out_dtype = _output(node)
    n: int | None = None
    where = world_from
    if kind in ("all-gather", "reduce-scatter") and out_shape not in ("", "?"):
        size_out = tensor_bytes(out_shape, out_dtype, dims)
        big, small = (size_out, size_in) if kind == "all-gather" else (size_in, size_out)
        if small > 0 and big % small == 0 and big >= small:
            n, where = int(big // small), "the ratio of its output to its input"
    if n is None:
        n = world_size
    if n is None:
        raise Unknown(f"{kind}: world size unknown ({world_from}): pass --dim world_size=N")
    if n < 1:
        raise Unknown(f"{kind}: world size {n} is not a rank count")
    if kind == "all-reduce":
        size, factor, text = size_in, 2.0 * (n - 1) / n, "2(n-1)/n"
    elif kind == "all-gather":
        size, factor, text = size_in * n, (n - 1) / n, "(n-1)/n"
    else:
        size, factor, text = size_in, (n - 1) / n, "(n-1)/n"
    what = "of the gathered output" if kind == "all-gather" else "of the input"
    fused = " (the fused residual add and norm not counted)" if "norm" in node.op.lower() else ""
    return (factor * size,
            f"{kind} bus bytes {text} x S, n={n} ({where}), S={size:g} B {what}{fused}", n)
