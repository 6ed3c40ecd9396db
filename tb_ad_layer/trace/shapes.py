"""The input shapes a trace recorded for the ops that launched its kernels, and the symbolic sizes
of a graph node they bind.

PyTorch profiler traces recorded with ``record_shapes=True`` give every ``cpu_op`` event its
arguments' ``Input Dims`` (one list per argument; ``[]`` for scalars and None). Nsight Systems
traces of ``torch.autograd.profiler.emit_nvtx(record_shapes=True)`` write them into the op's NVTX
range text (``aten::linear, seq = 3, op_id = 7, sizes = [[2, 7, 64], [192, 64], []]``). The op
that launched a kernel is the innermost such range on the launching CUDA call's thread that spans
the call; the ops around it (``aten::linear`` around ``aten::addmm``) are its callers.

A node's symbols (``s70`` in ``s70x896``) are bound only by an op of the node's own name whose
recorded tensors agree with the node's operands in order, rank and every literal size: a value
is read, never guessed. This module knows shapes as text; the graph's nodes are handed to it by
the pipeline (:mod:`tb_ad_layer.trace_attach`).
"""
from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tb_ad_layer.contract.shape_text import split_dims
from tb_ad_layer.trace.kernel import Kernel
from tb_ad_layer.trace.tracedb import TraceDB

#: ``TraceDB.memo`` key of a profiler trace's ``cpu_op`` events with recorded input dims:
#: a list of ``(tid, start_ns, end_ns, name, dims)``.
CPU_OPS = "cpu_ops"
#: Callers of a launching op followed at most (a custom op's body is a few levels deep).
MAX_CHAIN = 32
_SIZES = re.compile(r"\bsizes = (\[)")
_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_OPERAND = re.compile(r"%[\w.]+ : ([^%]*?) : (torch\.\w+)")

#: One argument's recorded dims: a tensor's sizes, or None for anything that is not a tensor
#: with dims (scalars, None, lists of tensors).
Dims = tuple[int, ...] | None


@dataclass(frozen=True, slots=True)
class LaunchOp:
    """An op with its arguments' recorded dims, e.g. ``aten::linear`` and
    ``((2, 7, 64), (192, 64), None)``."""

    name: str
    dims: tuple[Dims, ...]


@dataclass(frozen=True, slots=True)
class Binding:
    """Sizes one node's op binds: symbol -> value, and the op that recorded them."""

    values: dict[str, int]
    op: str


def argument_dims(raw: object) -> tuple[Dims, ...] | None:
    """A recorded ``Input Dims`` / ``sizes`` list as :data:`Dims` per argument; None when it is
    not a list."""
    if not isinstance(raw, list):
        return None
    out: list[Dims] = []
    for entry in raw:
        if isinstance(entry, list) and entry and all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in entry):
            out.append(tuple(entry))
        else:
            out.append(None)
    return tuple(out)


def nvtx_op(text: str) -> LaunchOp | None:
    """The op and sizes of an ``emit_nvtx(record_shapes=True)`` range text, None for any other
    range."""
    m = _SIZES.search(text)
    if m is None:
        return None
    start = m.start(1)
    depth = 0
    for i in range(start, len(text)):
        depth += {"[": 1, "]": -1}.get(text[i], 0)
        if depth == 0:
            try:
                dims = argument_dims(json.loads(text[start:i + 1]))
            except ValueError:
                return None
            name = text.split(",", 1)[0].strip()
            return LaunchOp(name, dims) if dims is not None and name else None
    return None


class _Thread:
    """One thread's ops, properly nested, with each op's caller (the op around it)."""

    def __init__(self, ops: list[tuple[int, int, LaunchOp]]) -> None:
        ops.sort(key=lambda o: (o[0], -o[1]))
        self.starts = [o[0] for o in ops]
        self.ends = [o[1] for o in ops]
        self.ops = [o[2] for o in ops]
        self.parent = [-1] * len(ops)
        stack: list[int] = []
        for i, (s, _, _) in enumerate(ops):
            while stack and self.ends[stack[-1]] < s:
                stack.pop()
            self.parent[i] = stack[-1] if stack else -1
            stack.append(i)

    def around(self, t: int) -> tuple[LaunchOp, ...]:
        """The ops spanning time ``t``, innermost first."""
        i = bisect.bisect_right(self.starts, t) - 1
        while i >= 0 and self.ends[i] < t:
            i = self.parent[i]
        chain: list[LaunchOp] = []
        while i >= 0 and len(chain) < MAX_CHAIN:
            chain.append(self.ops[i])
            i = self.parent[i]
        return tuple(chain)


def _recorded_ops(db: TraceDB) -> dict[int, list[tuple[int, int, LaunchOp]]]:
    per_tid: dict[int, list[tuple[int, int, LaunchOp]]] = {}
    for tid, s, e, name, dims in db.memo.get(CPU_OPS, ()):
        per_tid.setdefault(tid, []).append((s, e, LaunchOp(name, dims)))
    if db.format != "torch-profiler":
        # Only NVTX texts that carry sizes: an nsys export can hold millions of ranges.
        for s, e, tid, text in db.rows("SELECT s, e, tid, text FROM rg WHERE src = 'nvtx' AND "
                                       "text LIKE '%sizes = [%'"):
            op = nvtx_op(str(text))
            if op is not None and s is not None and e is not None:
                per_tid.setdefault(int(tid or 0), []).append((int(s), int(e), op))
    return per_tid


def launch_ops(db: TraceDB, kernels: Iterable[Kernel]) -> dict[int, tuple[LaunchOp, ...]] | None:
    """Correlation id -> the ops around the CUDA call that launched ``kernels`` (innermost
    first), for the kernels mapped to a node; None when the trace recorded no input shapes at
    all (a trace without ``record_shapes``)."""
    per_tid = _recorded_ops(db)
    if not per_tid:
        return None
    threads = {tid: _Thread(ops) for tid, ops in per_tid.items()}
    out: dict[int, tuple[LaunchOp, ...]] = {}
    for k in kernels:
        if k.node is None or k.correlation is None or k.launch_ns is None \
                or k.correlation in out:
            continue
        thread = threads.get(k.launch_tid or 0)
        chain = thread.around(k.launch_ns) if thread is not None else ()
        if chain:
            out[k.correlation] = chain
    return out


def op_names(target: str) -> frozenset[str]:
    """The profiler names of an FX target: ``aten.linear.default`` -> ``aten::linear``,
    ``auto_deploy.trtllm_moe_fused`` -> ``auto_deploy::trtllm_moe_fused``; empty for targets
    that are not ops (``<built-in function getitem>``)."""
    parts = target.removeprefix("torch.ops.").split(".")
    if len(parts) < 2 or target.startswith("<") or not all(p.isidentifier() for p in parts[:2]):
        return frozenset()
    return frozenset({f"{parts[0]}::{parts[1]}"})


def operand_shapes(args: str) -> list[list[str]]:
    """The tensor operands of a node's argument text, in argument order, as dims (only operands
    printed with a shape and a torch dtype; rank-0 ones left out)."""
    out = []
    for m in _OPERAND.finditer(args):
        shape = m[1].strip()
        if shape.startswith("(") or shape == "?":
            continue
        dims = split_dims(shape)
        if dims:
            out.append(dims)
    return out


def _fit(operands: Sequence[Sequence[str]], op: LaunchOp) -> dict[str, int] | None:
    """Symbol -> value when every operand matches the op's recorded tensors in order (the next
    one of the same rank whose literal sizes agree), None when they do not fit."""
    tensors = [d for d in op.dims if d is not None]
    values: dict[str, int] = {}
    j = 0
    for dims in operands:
        while j < len(tensors):
            got = tensors[j]
            j += 1
            if len(got) != len(dims):
                continue
            trial = dict(values)
            ok = True
            for text, v in zip(dims, got, strict=True):
                if text.isdigit():
                    ok = int(text) == v
                elif _SYMBOL.fullmatch(text):
                    ok = trial.setdefault(text, v) == v
                if not ok:
                    break
            if ok:
                values = trial
                break
        else:
            return None
    return values


def bind_node(target: str, args: str, chain: Sequence[LaunchOp]) -> Binding | None:
    """The sizes the op of the node's own name in ``chain`` binds, None when no op of that name
    was recorded or its tensors do not fit the node's operands."""
    names = op_names(target)
    operands = operand_shapes(args)
    if not names or not operands:
        return None
    for op in chain:
        if op.name in names:
            values = _fit(operands, op)
            if values is not None:
                return Binding(values, op.name)
    return None


@dataclass(frozen=True, slots=True)
class StageDims:
    """The sizes a trace binds for one stage: ``bound`` symbol -> (value, where), ``conflicts``
    symbol -> why it is left unbound."""

    bound: dict[str, tuple[int, str]]
    conflicts: dict[str, str]


def collect(bindings: Iterable[tuple[str, Binding]]) -> StageDims:
    """Join the nodes' bindings (``(where, binding)``, ``where`` naming the node): a symbol
    bound to two values is a conflict, kept by neither."""
    seen: dict[str, dict[int, str]] = {}
    for where, b in bindings:
        for sym, v in b.values.items():
            seen.setdefault(sym, {}).setdefault(v, f"{b.op} at {where}")
    bound: dict[str, tuple[int, str]] = {}
    conflicts: dict[str, str] = {}
    for sym, by_value in sorted(seen.items()):
        if len(by_value) == 1:
            (v, where), = by_value.items()
            bound[sym] = (v, where)
        else:
            listed = "; ".join(f"{v} ({where})" for v, where in sorted(by_value.items())[:4])
            conflicts[sym] = f"the trace records {sym} as {listed}"
    return StageDims(bound, conflicts)

