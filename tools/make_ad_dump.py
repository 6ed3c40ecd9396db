#!/usr/bin/env python3
"""Deterministic generator of synthetic TensorRT-LLM AutoDeploy FX graph dumps.

Writes dump files in the exact text format of TensorRT-LLM's graph writer
(``dump_ssa_with_meta`` + ``GraphWriter.dump_graph``; see docs/DESIGN "The dump
format") together with a ground-truth file ``<stem>.truth.json`` that records,
for every node line of the ``(root)`` GraphModule except ``output``, the layer,
group, sub-group and CUDA stream that the model's own code would give it.

Standard library only; output is byte-for-byte deterministic for a given
command line.

Examples::

    # committed fixtures
    python tools/make_ad_dump.py --model dsv3 --layers 5 --dense-layers 2 \
        --experts 32 --hidden 512 --stages all --out tests/fixtures/dumps/ad_dsv3
    python tools/make_ad_dump.py --model llama --layers 3 --stages final \
        --out tests/fixtures/dumps/ad_llama
    python tools/make_ad_dump.py --model dsv3 --layers 5 --dense-layers 2 \
        --experts 32 --hidden 512 --stages final --legacy-names \
        --out tests/fixtures/dumps/ad_dsv3_legacy
    # benchmark-sized DeepSeek-V3 final stage (~29 MB, ~181k nodes)
    python tools/make_ad_dump.py --model dsv3 --layers 61 --dense-layers 3 \
        --unfused-moe --experts 256 --hidden 7168 --out /tmp/dsv3_full

Add ``--check`` to re-read the written files and validate dump/truth consistency.

Printing rules reproduced from the real writer:

* placeholder ``%name : <shape> : <dtype>``; call
  ``%name = <target>(<args>) : <shape> : <dtype>``; multi-output
  ``: (<s1>, <s2>) : (<d1>, <d2>)``; ``output %a, %b``.
* each positional arg is ``%ref : <shape> : <dtype>`` for a node (a reference
  to a multi-output node prints ``%ref : ? : tuple``, as ``_get_shape_str`` of a
  tuple is ``?`` and its "dtype" is the type name), otherwise ``str(arg)``:
  strings print bare (``AUTO``), lists print like Python lists with node
  references as bare names (``[getitem_3, view_2]``).
* ``get_attr`` nodes are not printed; weights are references never defined.
* Keyword arguments are never printed.
* The file header is followed by ``"\\n" + "=" * 80`` per GraphModule, so two
  blank lines separate the header from the first section.

Node naming follows torch.fx: a per-base counter over the whole graph
(``view``, ``view_1``, ...), so suffixes say nothing about layers.  One
namespace is shared by all stages of a run, as a real FX graph keeps its
namespace across transforms: a node that survives a transform keeps its name,
a replacement gets a fresh one, based on its target (an op packet such as
``auto_deploy.trtllm_moe_fused`` or ``aten.to`` gives ``trtllm_moe_fused``,
``to``; a function gives its ``__name__``, ``split_output``).

What the final stage's fusions and cache insertion create is named as
TensorRT-LLM AutoDeploy's transforms name it (``transform/library/``), by running
counters over the graph in graph order, never by layer:

* ``fuse_gemms`` / ``fuse_finegrained_fp8_gemms`` (fusion.py): ``fused_weight_{i}``
  (+ ``fused_weight_{i}_weight_scale_inv`` for block fp8), i counting the groups
  fused; the output split by the transform's local ``split_output`` function
  (one function object per group) and ``getitem``;
* ``fuse_swiglu`` / ``fuse_finegrained_fp8_swiglu`` (fuse_swiglu.py):
  ``fused_swiglu_gate_up_{j}`` / ``fused_finegrained_fp8_swiglu_{j}_gate_up_weight``
  and ``..._gate_up_weight_scale``, j counting the fused SwiGLU ops (dense MLPs
  and shared experts);
* ``fuse_moe`` (fused_moe.py): ``fused_moe_w3_w1_stacked_{k}`` and
  ``fused_moe_w2_stacked_{k}``, k counting the MoE ops; the input cast by an
  inserted ``aten.to``; both inserted as op packets;
* cache insertion (kvcache.py): ``kv_cache_{i}`` / ``mla_cache_{i}``, i counting
  the cached attention ops; the backend's prepare-metadata op right after the
  last placeholder.

``--legacy-names`` writes these as older dumps did, after their layer
(``fused_qkv_a_N_weight``, ``fused_gate_up_N_weight``, ...), the rest unchanged.

Truth convention for a residual add fused with the next norm
(``flashinfer_fused_add_rms_norm``, ``trtllm_fused_allreduce_residual_rmsnorm``):
the fused node and its getitems belong to the layer whose residual add it is
(layer N, though it reads layer N+1's input-norm weight: it is layer N's
residual output, an external input of layer N+1); after the last layer, where it
fuses the model's final norm, to the last layer.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

EQ80 = "=" * 80

BF16 = "torch.bfloat16"
FP8 = "torch.float8_e4m3fn"
F32 = "torch.float32"
I32 = "torch.int32"
I64 = "torch.int64"
BOOL = "torch.bool"


def shp(*dims):
    """Shape string as the writer prints it."""
    if not dims:
        return "scalar"
    return "x".join(str(d) for d in dims)


class Raw:
    """A non-node argument whose str() is given verbatim (e.g. torch.float32)."""

    __slots__ = ("s",)

    def __init__(self, s):
        self.s = s

    def __repr__(self):
        return self.s

    __str__ = __repr__


class Ref:
    """A value that prints as ``%name : shape : dtype``: node output or weight.

    A multi-output node has ``shapes``/``dtypes`` lists; referenced as an
    argument it prints ``%name : ? : tuple`` (the writer's ``_get_shape_str``
    of a tuple is ``?`` and its "dtype" is the type name).
    """

    __slots__ = ("name", "shape", "dtype", "arg", "shapes", "dtypes")

    def __init__(self, name, shape, dtype, shapes=None, dtypes=None):
        self.name = name
        self.shape = shape
        self.dtype = dtype
        self.shapes = shapes
        self.dtypes = dtypes
        if shapes is not None:
            self.arg = "%" + name + " : ? : tuple"
        else:
            self.arg = "%" + name + " : " + shape + " : " + dtype

    def __repr__(self):  # inside lists FX prints Node.__repr__ == name
        return self.name


class W(Ref):
    """An undefined reference (parameter / buffer)."""

    __slots__ = ()


def fmt_arg(a):
    if isinstance(a, Ref):
        return a.arg
    if isinstance(a, (list, tuple)):
        return repr_list(a)
    return str(a)


def repr_list(a):
    # Python's str() of a list/tuple uses repr() of the elements.
    if isinstance(a, tuple):
        if len(a) == 1:
            return "(" + repr(a[0]) + ",)"
        return "(" + ", ".join([repr(x) for x in a]) + ")"
    return "[" + ", ".join([repr(x) for x in a]) + "]"


def short_op(target):
    """Base name for a node of ``target``: ``aten.view.default`` -> ``view``."""
    if target.startswith("<built-in function "):
        return target[len("<built-in function "):-1]
    parts = target.split(".")
    if len(parts) >= 2:
        return parts[1]
    return target


# --------------------------------------------------------------------------
# Graph + namespace
# --------------------------------------------------------------------------


class Namespace:
    """torch.fx-like name allocation shared by all stages of one run."""

    def __init__(self):
        self.counts = {}
        self.by_key = {}

    def name(self, key, base, target):
        prev = self.by_key.get(key)
        if prev is not None and prev[0] == target:
            return prev[1]
        n = self.counts.get(base, 0)
        self.counts[base] = n + 1
        nm = base if n == 0 else f"{base}_{n}"
        self.by_key[key] = (target, nm)
        return nm


def derive_module(layer, group, sub):
    if layer is None:
        return None
    base = f"model.layers.{layer}"
    if group in ("mla", "attention"):
        return base + ".self_attn"
    if group == "moe":
        return base + {"moe_router": ".mlp.gate", "moe_experts": ".mlp.experts",
                       "shared_experts": ".mlp.shared_experts"}.get(sub, ".mlp")
    if group == "mlp":
        return base + ".mlp"
    return base


class Graph:
    def __init__(self, ns, export_naming):
        self.ns = ns
        self.export_naming = export_naming
        self.lines = []
        self.truth = []  # (name, layer, group, sub, stream, op)
        self.keys = set()
        self.layer = None
        self.group = "other"
        self.sub = None
        self.stream = "main"
        self.mod = None

    def at(self, layer, group, sub=None, stream="main", mod=None):
        """Set the truth context of the following nodes.

        ``mod`` is the nn.Module path (as nn_module_stack would record it);
        when None it is derived from layer/group/sub_group.
        """
        self.layer = layer
        self.group = group
        self.sub = sub
        self.stream = stream
        self.mod = mod
        return self

    def _rec(self, name, op, group, sub):
        group = group if group is not None else self.group
        sub = sub if sub is not None else self.sub
        mod = self.mod if self.mod is not None else derive_module(self.layer, group, sub)
        self.truth.append((name, self.layer, group, sub, self.stream, op, mod))

    def placeholder(self, name, shape, dtype):
        self.lines.append("%" + name + " : " + shape + " : " + dtype)
        self.truth.append((name, None, "other", None, "main", "placeholder", None))
        return Ref(name, shape, dtype)

    def call(self, key, target, args, shape, dtype, group=None, sub=None, base=None):
        """Emit one call node. ``shape``/``dtype`` are lists for multi-output."""
        if key in self.keys:
            raise RuntimeError(f"duplicate node key {key!r}")
        self.keys.add(key)
        if base is None:
            base = short_op(target)
            if (not self.export_naming and not target.startswith("aten.")
                    and not target.startswith("<")):
                base = base + "_default"
        name = self.ns.name(key, base, target)
        multi = isinstance(shape, list)
        if multi:
            out = "(" + ", ".join(shape) + ") : (" + ", ".join(dtype) + ")"
        else:
            out = shape + " : " + dtype
        self.lines.append("%" + name + " = " + target + "("
                          + ", ".join([fmt_arg(a) for a in args]) + ") : " + out)
        self._rec(name, target, group, sub)
        if multi:
            return Ref(name, "(" + ", ".join(shape) + ")", "(" + ", ".join(dtype) + ")",
                       shape, dtype)
        return Ref(name, shape, dtype)

    def getitem(self, src, i, group=None, sub=None):
        return self.call(src.name + f"[{i}]", "<built-in function getitem>",
                         [src, i], src.shapes[i], src.dtypes[i], group, sub,
                         base="getitem")

    def output(self, refs):
        self.lines.append("output " + ", ".join("%" + r.name for r in refs))

    def text(self):
        return "\n".join(self.lines) + "\n"


# --------------------------------------------------------------------------
# Stage presets
# --------------------------------------------------------------------------


class Stage:
    def __init__(self, num, stage, transform, **kw):
        self.num = num
        self.stage = stage
        self.transform = transform
        self.export = False
        self.norm = "aten"  # aten | torch | flashinfer
        self.linear = "aten"  # aten | simple
        self.fp8 = "fake"  # fake | trtllm
        self.rope = "aten"  # aten | torch | fused
        self.attn = "torch"  # torch | cached
        self.router = "aten"  # aten | fused
        self.moe = "torch_moe"  # torch_moe | fused
        self.mlp = "unfused"  # unfused | fused
        self.fuse_gemms = False  # fuse_gemms (+ fp8 variant), fuse_swiglu, fuse_moe weights
        self.tp = False
        self.dist = "torch"  # torch | trtllm
        self.fuse_norm = False  # add+norm / allreduce+residual+norm fusion
        self.multistream = False
        self.symbolic = True
        self.extra_module = False
        for k, v in kw.items():
            if not hasattr(self, k):
                raise KeyError(k)
            setattr(self, k, v)

    @property
    def stem(self):
        return f"{self.num:03d}_{self.stage}_{self.transform}"


def stage_presets(which, unfused_moe, world):
    tp = world > 1
    export = Stage(1, "export", "export_to_gm", export=True)
    pattern = Stage(40, "pattern_matcher", "match_rope_pattern", norm="torch",
                    linear="simple", rope="torch")
    shard = Stage(60, "sharding", "sharding_transform_executor", norm="torch",
                  linear="simple", rope="torch", tp=tp, extra_module=True)
    final = Stage(85, "compile", "compile_model", norm="flashinfer", linear="simple",
                  fp8="trtllm", rope="fused", attn="cached", router="fused",
                  moe="torch_moe" if unfused_moe else "fused", mlp="fused",
                  fuse_gemms=True, tp=tp, dist="trtllm", fuse_norm=True,
                  multistream=True, symbolic=False)
    if which == "final":
        return [final]
    return [export, pattern, shard, final]


# --------------------------------------------------------------------------
# Shared building blocks
# --------------------------------------------------------------------------


def fn_address(i):
    """A fixed, plausible CPython address for the i-th function object of a kind."""
    return hex(0x7F3B2C1D4E40 + 0x1A0 * i)


def scale_shape(out_f, in_f):
    return shp(int(math.ceil(out_f / 128.0)), int(math.ceil(in_f / 128.0)))


class Builder:
    def __init__(self, g, cfg, st):
        self.g = g
        self.c = cfg
        self.st = st
        self.legacy = cfg.legacy_names
        # Running counters of the post-load fusions, in graph order, as the transforms keep them
        # (one graph per stage, so they restart in every stage): fuse_gemms' group index
        # (fused_weight_{i}), fuse_swiglu's op index (fused_*swiglu*_{j}), fuse_moe's op index
        # (fused_moe_*_stacked_{k}).
        self.n_gemm = 0
        self.n_swiglu = 0
        self.n_moe = 0
        B, S = cfg.batch, cfg.seq
        if st.symbolic:
            self.B, self.S, self.T = "s0", "s1", "s0*s1"
        else:
            self.B, self.S, self.T = B, S, B * S
        self.W = cfg.world if st.tp else 1

    # ---- helpers -----------------------------------------------------------
    def bs(self, *rest):
        return shp(self.B, self.S, *rest)

    def t2(self, *rest):
        return shp(self.T, *rest)

    def w(self, name, shape, dtype=BF16):
        return W(name, shape, dtype)

    def B_int(self):
        return self.sym[0] if self.st.symbolic else self.c.batch

    def S_int(self):
        return self.sym[1] if self.st.symbolic else self.c.seq

    def emit_sym(self, ids):
        """Exported graphs read dynamic batch/seq sizes with aten.sym_size.int."""
        self.sym = None
        if self.st.symbolic:
            self.g.at(None, "other")
            s0 = self.g.call("sym.0", "aten.sym_size.int", [ids, 0], "?", "SymInt",
                             base="sym_size_int")
            s1 = self.g.call("sym.1", "aten.sym_size.int", [ids, 1], "?", "SymInt",
                             base="sym_size_int")
            self.sym = (s0, s1)

    def gather(self, key, x, full_shape):
        if self.st.dist == "torch":
            return self.g.call(key, "auto_deploy.torch_dist_all_gather.default", [x, -1],
                               full_shape, x.dtype)
        return self.g.call(key, "auto_deploy.trtllm_dist_all_gather.default", [x, -1, None],
                           full_shape, x.dtype)

    def norm(self, key, x, weight, eps=1e-06):
        """RMSNorm in the stage's representation; returns normalized output."""
        g, st = self.g, self.st
        out_shape = x.shape
        if st.norm == "aten":
            a = g.call(key + ".to32", "aten._to_copy.default", [x], out_shape, F32)
            p = g.call(key + ".pow", "aten.pow.Tensor_Scalar", [a, 2], out_shape, F32)
            m_shape = out_shape.rsplit("x", 1)[0] + "x1"
            m = g.call(key + ".mean", "aten.mean.dim", [p, [-1], True], m_shape, F32)
            e = g.call(key + ".addeps", "aten.add.Tensor", [m, eps], m_shape, F32)
            r = g.call(key + ".rsqrt", "aten.rsqrt.default", [e], m_shape, F32)
            mu = g.call(key + ".mul", "aten.mul.Tensor", [a, r], out_shape, F32)
            b = g.call(key + ".to16", "aten._to_copy.default", [mu], out_shape, BF16)
            return g.call(key + ".mulw", "aten.mul.Tensor", [weight, b], out_shape, BF16)
        if st.norm == "torch":
            return g.call(key + ".rms", "auto_deploy.torch_rmsnorm.default",
                          [x, weight, eps], out_shape, BF16)
        return g.call(key + ".rms", "auto_deploy.flashinfer_rms_norm.default",
                      [x, weight, eps], out_shape, BF16)

    def linear(self, key, x, wname, out_f, in_f, out_shape, fp8, bias=None, wref=None,
               scale_name=None):
        """A projection with weight ``wname`` (shape out_f x in_f); an fp8 one reads the block
        scale ``scale_name`` (default ``<wname>_scale_inv``, the checkpoint's name)."""
        g, st = self.g, self.st
        if fp8:
            wr = wref or self.w(wname, shp(out_f, in_f), FP8)
            sr = self.w(scale_name or wname + "_scale_inv", scale_shape(out_f, in_f), F32)
            if st.fp8 == "fake":
                return g.call(key, "auto_deploy.torch_fake_quant_finegrained_fp8_linear.default",
                              [x, wr, bias, [], [sr], [], []], out_shape, BF16)
            return g.call(key, "auto_deploy.trtllm_finegrained_fp8_linear.default",
                          [x, wr, bias, sr], out_shape, BF16)
        wr = wref or self.w(wname, shp(out_f, in_f), BF16)
        if st.linear == "aten":
            return g.call(key, "aten.linear.default", [x, wr], out_shape, BF16)
        return g.call(key, "auto_deploy.torch_linear_simple.default", [x, wr, bias],
                      out_shape, BF16)

    def fused_gemm(self, key, x, sizes, in_f, fp8, legacy_name, sub_groups):
        """One group of projections that read the same input, fused by ``fuse_gemms`` (bf16) or
        ``fuse_finegrained_fp8_gemms`` (block-fp8), as fusion.py writes them: the concatenated
        weight ``fused_weight_{i}`` (i counts the groups fused, in graph order, from 0) and, for
        fp8, its block scale ``fused_weight_{i}_weight_scale_inv``; the output is split again by
        the transform's local ``split_output`` function and one ``getitem`` per projection.
        ``--legacy-names`` writes the layer-named weight ``legacy_name`` split by
        ``aten.split_with_sizes`` instead. Returns the projections' outputs."""
        g = self.g
        out_f = sum(sizes)
        lead = self.bs()
        shapes = [lead + f"x{n}" for n in sizes]
        if self.legacy:
            fused = self.linear(key, x, legacy_name, out_f, in_f, lead + f"x{out_f}", fp8=fp8)
            sp = g.call(key + ".split", "aten.split_with_sizes.default", [fused, list(sizes), -1],
                        shapes, [BF16] * len(sizes))
        else:
            i = self.n_gemm
            self.n_gemm += 1
            wname = f"fused_weight_{i}"
            fused = self.linear(key, x, wname, out_f, in_f, lead + f"x{out_f}", fp8=fp8,
                                scale_name=wname + "_weight_scale_inv")
            owner = ("QuantizationFusionMixin._insert_fused_quant_gemm" if fp8
                     else "_insert_fused_gemm")
            # every fused group defines its own split_output closure: its own address
            target = f"<function {owner}.<locals>.split_output at {fn_address(i)}>"
            sp = g.call(key + ".split", target, [fused], shapes, [BF16] * len(sizes),
                        base="split_output")
        return [g.getitem(sp, k, sub=sub) for k, sub in enumerate(sub_groups)]

    def all_reduce(self, key, x):
        if self.st.dist == "torch":
            return self.g.call(key, "auto_deploy.torch_dist_all_reduce.default",
                               [x, "AUTO"], x.shape, x.dtype)
        return self.g.call(key, "auto_deploy.trtllm_dist_all_reduce.default",
                           [x, "AUTO"], x.shape, x.dtype)

    def add_norm(self, key, x, resid, weight, allreduce):
        """Fused (allreduce +) residual add + RMSNorm; returns (normed, new_resid)."""
        g = self.g
        if allreduce:
            f = g.call(key, "dist.trtllm_fused_allreduce_residual_rmsnorm.default",
                       [x, resid, weight, 1e-06, "AUTO"],
                       [resid.shape, resid.shape], [BF16, BF16],
                       base="trtllm_fused_allreduce_residual_rmsnorm_default")
        else:
            f = g.call(key, "auto_deploy.flashinfer_fused_add_rms_norm.default",
                       [x, resid, weight, 1e-06], [resid.shape, resid.shape], [BF16, BF16])
        return f

    def decoder(self, emb):
        """The decoder layers (self.layer), then the final norm and the lm head, whose logits end
        the graph. A layer hands the next one its residual and, when it fused the add with the
        next norm, the normed value."""
        g, d = self.g, self.d
        H, W = d.H, self.W
        resid, normed = emb, None
        for n in range(self.c.layers):
            resid, normed = self.layer(n, resid, normed)
        g.at(None, "norm", mod="model.norm")
        if normed is None:
            normed = self.norm("final_norm", resid, self.w("model_norm_weight", shp(H)))
        g.at(None, "other", mod="lm_head")
        vloc = d.vocab // W
        logits = self.linear("lm_head", normed, "lm_head_weight", vloc, H, self.bs(vloc),
                             fp8=False)
        if W > 1:
            logits = self.gather("lm_head.gather", logits, self.bs(d.vocab))
        g.output([logits])

    def input_norm(self, n, resid, normed):
        """Layer n's input norm, unless the previous layer's fused add+norm made it already."""
        if normed is not None:
            return normed
        self.g.at(n, "norm", mod=f"model.layers.{n}.input_layernorm")
        return self.norm(f"L{n}.in_norm", resid,
                         self.w(f"model_layers_{n}_input_layernorm_weight", shp(self.d.H)))

    def end_layer(self, n, ffn, resid2, reduced, ffn_group):
        """The end of layer n: the residual add of its FFN output ``ffn``, returned as
        ``(resid, normed)``. With fused norms the add is fused with the next norm (layer n+1's
        input norm, or the model's final norm after the last layer) into one node that reads the
        next norm's weight. That node and its getitems belong to layer n: they are layer n's
        residual output, an external input of layer n+1 (after the last layer they stay in it);
        ``reduced``: the FFN already all-reduced its output."""
        g, c, W = self.g, self.c, self.W
        H = self.d.H
        L = f"L{n}."
        last = n == c.layers - 1
        nxt_w = (self.w("model_norm_weight", shp(H)) if last
                 else self.w(f"model_layers_{n + 1}_input_layernorm_weight", shp(H)))
        if self.st.fuse_norm:
            g.at(n, "norm", mod=f"model.layers.{n}")
            f = self.add_norm((f"L{n + 1}." if not last else "final_") + "in_norm",
                              ffn, resid2, nxt_w, allreduce=not reduced and W > 1)
            nn_ = g.getitem(f, 0)
            if last:
                return None, nn_
            return g.getitem(f, 1), nn_
        if not reduced and W > 1:
            g.at(n, ffn_group)
            ffn = self.all_reduce(L + "ffn.ar", ffn)
        g.at(n, ffn_group)  # the residual add belongs to the block whose output it adds
        return g.call(L + "ffn.resid", "aten.add.Tensor", [resid2, ffn], resid2.shape, BF16), None

    def emit_extra_module(self):
        """A small GraphModule written before (root) to exercise module selection."""
        lines = [
            "%x : " + self.bs(self.c.hidden) + " : " + BF16,
            "%mul = aten.mul.Tensor(%x : " + self.bs(self.c.hidden) + " : " + BF16
            + ", 0.5) : " + self.bs(self.c.hidden) + " : " + BF16,
            "output %mul",
        ]
        return "submod_0", "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# DeepSeek-V3
# --------------------------------------------------------------------------


class Dsv3Dims:
    def __init__(self, H, E, world):
        self.H = H
        if H >= 7168:
            self.heads, self.nope, self.rope, self.v = 128, 128, 64, 128
            self.q_lora, self.kv_lora = 1536, 512
            self.inter, self.moe_inter = 18432, 2048
            self.vocab, self.max_pos = 129280, 163840
        else:
            self.heads, self.nope, self.rope, self.v = 16, 16, 8, 16
            self.q_lora, self.kv_lora = H // 2, H // 4
            self.inter, self.moe_inter = 2 * H, H // 2
            self.vocab, self.max_pos = 2048, 4096
        self.E = E
        if E >= 64:
            self.n_group, self.topk_group, self.top_k = 8, 4, 8
        else:
            self.n_group = max(1, min(4, E // 4))
            self.topk_group = max(1, self.n_group // 2)
            self.top_k = max(1, min(4, E // 2))
        self.qk = self.nope + self.rope
        self.scaling = 2.5
        self.softmax_scale = 1.0 / math.sqrt(self.qk)
        self.page_size = 64
        self.num_pages = 64


class Dsv3(Builder):
    def __init__(self, g, cfg, st):
        Builder.__init__(self, g, cfg, st)
        self.d = Dsv3Dims(cfg.hidden, cfg.experts, cfg.world)

    def build(self):
        g, st, c, d = self.g, self.st, self.c, self.d
        H = d.H
        g.at(None, "other")
        # ---- placeholders ---------------------------------------------------
        ids = g.placeholder("input_ids", self.bs(), I64)
        pos = g.placeholder("position_ids", self.bs(), I64)
        md = {}
        if st.attn == "cached":
            B = c.batch
            md["batch_info_host"] = g.placeholder("batch_info_host", shp(3), I32)
            md["cu_seqlen_host"] = g.placeholder("cu_seqlen_host", shp(B + 1), I32)
            md["cu_num_pages"] = g.placeholder("cu_num_pages", shp(B + 1), I32)
            md["cu_num_pages_host"] = g.placeholder("cu_num_pages_host", shp(B + 1), I32)
            md["cache_loc"] = g.placeholder("cache_loc", shp(d.num_pages), I32)
            md["last_page_len"] = g.placeholder("last_page_len", shp(B), I32)
            md["last_page_len_host"] = g.placeholder("last_page_len_host", shp(B), I32)
            md["seq_len_with_cache_host"] = g.placeholder("seq_len_with_cache_host", shp(B), I32)
            # one cache per cached MLA op, "mla_cache_{i}": i counts the MLA ops in graph order
            self.caches = [
                g.placeholder(f"mla_cache_{i}",
                              shp(d.num_pages, d.page_size, d.kv_lora + d.rope), BF16)
                for i in range(c.layers)]
        self.md = md
        self.pos = pos
        # ---- model-level prep ----------------------------------------------
        if st.attn == "cached" and not self.legacy:
            self.prepare_metadata()  # inserted right after the last placeholder
        self.emit_sym(ids)
        g.at(None, "other", mod="model.embed_tokens")
        emb = g.call("embed", "aten.embedding.default",
                     [self.w("model_embed_tokens_weight", shp(d.vocab, H)), ids],
                     self.bs(H), BF16)
        if st.attn == "cached" and self.legacy:
            self.prepare_metadata()
        g.at(None, "other", mod="model.rotary_emb")
        if st.rope in ("aten", "torch"):
            cos_c = self.w("model_rotary_emb_cos_cached", shp(d.max_pos, d.rope), BF16)
            sin_c = self.w("model_rotary_emb_sin_cached", shp(d.max_pos, d.rope), BF16)
            self.cos = g.call("rope.cos", "aten.index.Tensor", [cos_c, [pos]],
                              self.bs(d.rope), BF16)
            self.sin = g.call("rope.sin", "aten.index.Tensor", [sin_c, [pos]],
                              self.bs(d.rope), BF16)
        else:
            cs = self.w("_ad_rotary_cos_sin_0", shp(d.max_pos, 2 * d.rope), F32)
            ch = g.call("rope.chunk", "aten.chunk.default", [cs, 2, -1],
                        [shp(d.max_pos, d.rope), shp(d.max_pos, d.rope)], [F32, F32])
            self.cos = g.getitem(ch, 0)
            self.sin = g.getitem(ch, 1)

        self.decoder(emb)

    def prepare_metadata(self):
        """The MLA backend's prepare-metadata op and its getitems (model-level)."""
        g, md = self.g, self.md
        g.at(None, "other")
        prep = g.call("mla_prep", "auto_deploy.flashinfer_mla_prepare_metadata.default",
                      [self.pos, md["batch_info_host"], md["cu_seqlen_host"],
                       md["seq_len_with_cache_host"]],
                      [shp(self.T), shp(self.T)], [I32, I32])
        self.fi_batch = g.getitem(prep, 0)
        self.fi_pos = g.getitem(prep, 1)

    # -------------------------------------------------------------------------
    def layer(self, n, resid, normed):
        g, st, c, d = self.g, self.st, self.c, self.d
        H, W = d.H, self.W
        L = f"L{n}."
        pre = f"model_layers_{n}_"
        dense = n < c.dense_layers
        normed = self.input_norm(n, resid, normed)
        # -- MLA -----------------------------------------------------------------
        o = self.mla(n, normed)
        # -- post-attention residual + norm --
        post_w = self.w(pre + "post_attention_layernorm_weight", shp(H))
        if st.fuse_norm:
            g.at(n, "norm", mod=f"model.layers.{n}.post_attention_layernorm")
            f = self.add_norm(L + "post_norm", o, resid, post_w, allreduce=W > 1)
            normed2 = g.getitem(f, 0)
            resid2 = g.getitem(f, 1)
        else:
            if W > 1:
                g.at(n, "mla")
                o = self.all_reduce(L + "attn.ar", o)
            g.at(n, "mla")
            resid2 = g.call(L + "attn.resid", "aten.add.Tensor", [resid, o], resid.shape, BF16)
            g.at(n, "norm", mod=f"model.layers.{n}.post_attention_layernorm")
            normed2 = self.norm(L + "post_norm", resid2, post_w)
        # -- FFN ---------------------------------------------------------------
        if dense:
            ffn, reduced = self.dense_mlp(n, normed2)
        else:
            ffn, reduced = self.moe(n, normed2)
        return self.end_layer(n, ffn, resid2, reduced, "mlp" if dense else "moe")

    # -------------------------------------------------------------------------
    def mla(self, n, x):
        g, st, d = self.g, self.st, self.d
        H, W = d.H, self.W
        L = f"L{n}."
        pre = f"model_layers_{n}_self_attn_"
        hl = d.heads // W
        kv_a_out = d.kv_lora + d.rope
        g.at(n, "mla")
        if st.fuse_gemms:
            g.at(n, "mla", None)
            q_a, kv_a = self.fused_gemm(L + "qkv_a", x, (d.q_lora, kv_a_out), H, True,
                                        f"fused_qkv_a_{n}_weight", ("q_branch", "kv_branch"))
        else:
            g.at(n, "mla", "q_branch")
            q_a = self.linear(L + "q_a", x, pre + "q_a_proj_weight", d.q_lora, H,
                              self.bs(d.q_lora), fp8=True)
            g.at(n, "mla", "kv_branch")
            kv_a = self.linear(L + "kv_a", x, pre + "kv_a_proj_with_mqa_weight", kv_a_out, H,
                               self.bs(kv_a_out), fp8=True)
        # q branch
        g.at(n, "mla", "q_branch", mod=f"model.layers.{n}.self_attn.q_a_layernorm")
        q_an = self.norm(L + "q_a_norm", q_a, self.w(pre + "q_a_layernorm_weight", shp(d.q_lora)))
        g.at(n, "mla", "q_branch")
        q = self.linear(L + "q_b", q_an, pre + "q_b_proj_weight", hl * d.qk, d.q_lora,
                        self.bs(hl * d.qk), fp8=True)
        qv = g.call(L + "q.view", "aten.view.default", [q, [self.B_int(), self.S_int(), hl, d.qk]],
                    self.bs(hl, d.qk), BF16)
        qs = g.call(L + "q.split", "aten.split_with_sizes.default", [qv, [d.nope, d.rope], -1],
                    [self.bs(hl, d.nope), self.bs(hl, d.rope)], [BF16, BF16])
        q_nope = g.getitem(qs, 0)
        q_pe = g.getitem(qs, 1)
        # kv branch
        g.at(n, "mla", "kv_branch")
        kvs = g.call(L + "kv.split", "aten.split_with_sizes.default", [kv_a, [d.kv_lora, d.rope], -1],
                     [self.bs(d.kv_lora), self.bs(d.rope)], [BF16, BF16])
        ckv = g.getitem(kvs, 0)
        k_pe = g.getitem(kvs, 1)
        g.at(n, "mla", "kv_branch", mod=f"model.layers.{n}.self_attn.kv_a_layernorm")
        ckv_n = self.norm(L + "kv_a_norm", ckv, self.w(pre + "kv_a_layernorm_weight", shp(d.kv_lora)))
        g.at(n, "mla", "kv_branch")
        k_pe_v = g.call(L + "k_pe.view", "aten.view.default",
                        [k_pe, [self.B_int(), self.S_int(), 1, d.rope]],
                        self.bs(1, d.rope), BF16)
        # rope
        g.at(n, "mla", "rope")
        q_rot, k_rot = self.rope(L, q_pe, k_pe_v, hl)
        # attention core
        g.at(n, "mla", None)
        kv_b = self.w(pre + "kv_b_proj_weight", shp(hl * (d.nope + d.v), d.kv_lora), BF16)
        if st.attn == "cached":
            md = self.md
            att = g.call(L + "attn", "auto_deploy.flashinfer_mla_with_cache.default",
                         [q_nope, q_rot, ckv_n, k_rot, kv_b,
                          md["batch_info_host"], md["cu_seqlen_host"], md["cu_num_pages"],
                          md["cu_num_pages_host"], md["cache_loc"], md["last_page_len"],
                          md["last_page_len_host"], md["seq_len_with_cache_host"],
                          self.fi_batch, self.fi_pos, self.caches[n],
                          d.softmax_scale, d.kv_lora],
                         self.bs(hl, d.v), BF16)
        else:
            att = g.call(L + "attn", "auto_deploy.torch_mla.default",
                         [q_nope, q_rot, ckv_n, k_rot, kv_b, True, d.softmax_scale, "bsnd"],
                         self.bs(hl, d.v), BF16)
        av = g.call(L + "attn.view", "aten.view.default",
                    [att, [self.B_int(), self.S_int(), hl * d.v]], self.bs(hl * d.v), BF16)
        return self.linear(L + "o_proj", av, pre + "o_proj_weight", H, hl * d.v, self.bs(H), fp8=True)

    def rope(self, L, q_pe, k_pe, hl):
        g, st, d = self.g, self.st, self.d
        if st.rope == "fused":
            r = g.call(L + "rope", "auto_deploy.triton_rope_on_interleaved_qk_inputs.default",
                       [q_pe, k_pe, self.cos, self.sin, self.pos],
                       [q_pe.shape, k_pe.shape], [BF16, BF16])
            return g.getitem(r, 0), g.getitem(r, 1)
        # per-layer slicing of cos/sin beside q and k belongs to the layer
        cu = g.call(L + "rope.cos_u", "aten.unsqueeze.default", [self.cos, 2],
                    self.bs(1, d.rope), BF16)
        su = g.call(L + "rope.sin_u", "aten.unsqueeze.default", [self.sin, 2],
                    self.bs(1, d.rope), BF16)
        if st.rope == "torch":
            r = g.call(L + "rope", "auto_deploy.torch_rope_with_qk_interleaving.default",
                       [q_pe, k_pe, cu, su, 2], [q_pe.shape, k_pe.shape], [BF16, BF16])
            return g.getitem(r, 0), g.getitem(r, 1)
        outs = []
        for nm, t, h in (("q", q_pe, hl), ("k", k_pe, 1)):
            k = L + "rope." + nm
            v = g.call(k + ".view", "aten.view.default",
                       [t, [self.B_int(), self.S_int(), h, d.rope // 2, 2]],
                       self.bs(h, d.rope // 2, 2), BF16)
            tr = g.call(k + ".transpose", "aten.transpose.int", [v, 4, 3],
                        self.bs(h, 2, d.rope // 2), BF16)
            rs = g.call(k + ".reshape", "aten.reshape.default",
                        [tr, [self.B_int(), self.S_int(), h, d.rope]], t.shape, BF16)
            m1 = g.call(k + ".mulcos", "aten.mul.Tensor", [rs, cu], t.shape, BF16)
            s1 = g.call(k + ".slice1", "aten.slice.Tensor", [rs, 3, 0, d.rope // 2],
                        self.bs(h, d.rope // 2), BF16)
            s2 = g.call(k + ".slice2", "aten.slice.Tensor", [rs, 3, d.rope // 2, 9223372036854775807],
                        self.bs(h, d.rope // 2), BF16)
            ng = g.call(k + ".neg", "aten.neg.default", [s2], s2.shape, BF16)
            ct = g.call(k + ".cat", "aten.cat.default", [[ng, s1], -1], t.shape, BF16)
            m2 = g.call(k + ".mulsin", "aten.mul.Tensor", [ct, su], t.shape, BF16)
            outs.append(g.call(k + ".add", "aten.add.Tensor", [m1, m2], t.shape, BF16))
        return outs[0], outs[1]

    # -------------------------------------------------------------------------
    def swiglu(self, key, x, gate_name, up_name, down_name, gate_up_name, inter, out_shape):
        """Gated MLP; returns output. Weights fp8 (DeepSeek-V3 FP8 checkpoint).

        Fused, it is what ``fuse_finegrained_fp8_swiglu`` (fuse_swiglu.py) makes of a matched
        ``torch_finegrained_fp8_swiglu_mlp``: the buffers
        ``fused_finegrained_fp8_swiglu_{j}_gate_up_weight`` and ``..._gate_up_weight_scale``, j
        counting those ops (dense MLPs and shared experts alike) in graph order; the down
        projection keeps its own weight and scale.
        ``--legacy-names`` writes the layer-named ``gate_up_name`` (+ ``_scale_inv``)."""
        g, st, d = self.g, self.st, self.d
        H = d.H
        il = inter // self.W
        if st.mlp == "fused":
            if self.legacy:
                gu_name, gu_scale = gate_up_name, gate_up_name + "_scale_inv"
            else:
                prefix = f"fused_finegrained_fp8_swiglu_{self.n_swiglu}"
                self.n_swiglu += 1
                gu_name, gu_scale = prefix + "_gate_up_weight", prefix + "_gate_up_weight_scale"
            gu = self.w(gu_name, shp(2 * il, H), FP8)
            dw = self.w(down_name, shp(H, il), FP8)
            return g.call(key, "auto_deploy.fused_finegrained_fp8_swiglu_mlp.default",
                          [x, gu, dw, self.w(gu_scale, scale_shape(2 * il, H), F32),
                           self.w(down_name + "_scale_inv", scale_shape(H, il), F32)],
                          out_shape, BF16)
        lead = out_shape.rsplit("x", 1)[0]
        gt = self.linear(key + ".gate", x, gate_name, il, H, lead + f"x{il}", fp8=True)
        up = self.linear(key + ".up", x, up_name, il, H, lead + f"x{il}", fp8=True)
        si = g.call(key + ".silu", "aten.silu.default", [gt], gt.shape, BF16)
        mu = g.call(key + ".mul", "aten.mul.Tensor", [si, up], gt.shape, BF16)
        return self.linear(key + ".down", mu, down_name, H, il, out_shape, fp8=True)

    def dense_mlp(self, n, x):
        g = self.g
        pre = f"model_layers_{n}_mlp_"
        g.at(n, "mlp")
        out = self.swiglu(f"L{n}.mlp", x, pre + "gate_proj_weight", pre + "up_proj_weight",
                          pre + "down_proj_weight", f"fused_gate_up_{n}_weight",
                          self.d.inter, x.shape)
        return out, False

    def moe(self, n, x):
        """Returns (output [B,S,H], already_all_reduced)."""
        g, st, c, d = self.g, self.st, self.c, self.d
        H, W = d.H, self.W
        L = f"L{n}."
        pre = f"model_layers_{n}_mlp_"
        shared_pre = pre + "shared_experts_"
        ms = st.multistream

        def shared(inp):
            g.at(n, "moe", "shared_experts", "aux" if ms else "main")
            return self.swiglu(L + "shared", inp, shared_pre + "gate_proj_weight",
                               shared_pre + "up_proj_weight", shared_pre + "down_proj_weight",
                               shared_pre + "gate_up_proj_weight", d.moe_inter, x.shape)

        sh_out = None
        if ms:
            # shared experts first, on the aux stream (multi_stream_moe)
            g.at(n, "moe", "aux_stream", "aux")
            beg = g.call(L + "aux.begin", "auto_deploy.begin_aux_stream_passthrough.default",
                         [x], x.shape, BF16)
            s = shared(beg)
            g.at(n, "moe", "aux_stream", "aux")
            sh_out = g.call(L + "aux.end", "auto_deploy.end_aux_stream_passthrough.default",
                            [s], s.shape, BF16)
        # router
        g.at(n, "moe", None)
        x2 = g.call(L + "moe.flat", "aten.view.default", [x, [-1, H]], self.t2(H), BF16)
        g.at(n, "moe", "moe_router")
        gate_w = self.w(pre + "gate_weight", shp(d.E, H), BF16)
        bias = self.w(pre + "gate_e_score_correction_bias", shp(d.E), BF16)
        if st.router == "fused":
            wt = g.call(L + "router.t", "aten.t.default", [gate_w], shp(H, d.E), BF16)
            logits = g.call(L + "router.gemm", "trtllm.dsv3_router_gemm_op.default",
                            [x2, wt, None, Raw(F32)], self.t2(d.E), F32)
            tc = g.call(L + "router.topk", "trtllm.noaux_tc_op.default",
                        [logits, bias, d.n_group, d.topk_group, d.top_k, d.scaling],
                        [self.t2(d.top_k), self.t2(d.top_k)], [BF16, I32])
            weights = g.getitem(tc, 0)
            ids = g.getitem(tc, 1)
        else:
            weights, ids = self.router_aten(L, x2, gate_w, bias)
        # expert-parallel localisation (sharding): generic arithmetic
        ep = W if (W > 1 and st.moe == "fused") else 1
        if st.tp:
            epr = d.E // W
            fl = g.call(L + "ep.floordiv", "aten.floordiv.default", [ids, epr], ids.shape, ids.dtype)
            eq = g.call(L + "ep.eq", "aten.eq.Scalar", [fl, 0], ids.shape, BOOL)
            lid = g.call(L + "ep.sub", "aten.sub.Tensor", [ids, 0], ids.shape, ids.dtype)
            weights = g.call(L + "ep.mul", "aten.mul.Tensor", [weights, eq], weights.shape, weights.dtype)
            ids = lid
        # routed experts
        g.at(n, "moe", "moe_experts")
        if st.moe == "fused" and not self.legacy:
            # fuse_moe (fused_moe.py): the experts' weights stacked into
            # fused_moe_w3_w1_stacked_{k} / fused_moe_w2_stacked_{k}, k counting the MoE ops in
            # graph order; the input cast to the weights' dtype by an inserted aten.to; both
            # ops inserted as op packets (no overload in the target, no "_default" in the name).
            el = d.E // ep
            k = self.n_moe
            self.n_moe += 1
            x_in = g.call(L + "moe.to", "aten.to", [x2, Raw(FP8)], x2.shape, FP8, base="to")
            routed = g.call(L + "moe", "auto_deploy.trtllm_moe_fused",
                            [x_in, ids, weights,
                             self.w(f"fused_moe_w3_w1_stacked_{k}",
                                    shp(el, 2 * d.moe_inter, H), FP8),
                             self.w(f"fused_moe_w2_stacked_{k}", shp(el, H, d.moe_inter), FP8)],
                            self.t2(H), BF16, base="trtllm_moe_fused")
        elif st.moe == "fused":
            el = d.E // ep
            routed = g.call(L + "moe", "auto_deploy.trtllm_moe_fused.default",
                            [x2, ids, weights,
                             self.w(pre + "experts_w3_w1_stacked", shp(el, 2 * d.moe_inter, H), FP8),
                             self.w(pre + "experts_w2_stacked", shp(el, H, d.moe_inter), FP8),
                             self.w(pre + "experts_w3_w1_stacked_scale_inv",
                                    shp(el) + "x" + scale_shape(2 * d.moe_inter, H), F32),
                             self.w(pre + "experts_w2_stacked_scale_inv",
                                    shp(el) + "x" + scale_shape(H, d.moe_inter), F32)],
                            self.t2(H), BF16)
        else:
            # EP-sliced lists in the sharding stage of a fused run; with
            # --unfused-moe the experts are TP-sharded and every list keeps E entries
            ne = d.E // W if (st.tp and not c.unfused_moe) else d.E
            il = d.moe_inter // W if (st.tp and c.unfused_moe) else d.moe_inter
            wshape = {"gate_proj": (il, H), "up_proj": (il, H), "down_proj": (H, il)}
            lists = []
            if c.expert_dequant == "none":
                # get_attr nodes inside a list print as their bare names
                for proj in ("gate_proj", "down_proj", "up_proj"):
                    lists.append([Raw(pre + f"experts_{e}_{proj}_weight") for e in range(ne)])
                for proj in ("gate_proj", "down_proj", "up_proj"):
                    lists.append([Raw(pre + f"experts_{e}_{proj}_weight_scale_inv")
                                  for e in range(ne)])
            else:
                deq = {"gate_proj": [], "down_proj": [], "up_proj": []}
                for e in range(ne):
                    for proj in ("gate_proj", "up_proj", "down_proj"):
                        deq[proj].append(self.dequant(
                            f"{L}exp{e}.{proj}",
                            pre + f"experts_{e}_{proj}_weight", *wshape[proj]))
                lists = [deq["gate_proj"], deq["down_proj"], deq["up_proj"]]
            routed = g.call(L + "moe", "auto_deploy.torch_moe.default",
                            [x2, ids, weights] + lists, self.t2(H), BF16)
        g.at(n, "moe", "moe_experts")
        rv = g.call(L + "moe.unflat", "aten.view.default",
                    [routed, [self.B_int(), self.S_int(), H]], x.shape, BF16)
        if ms:
            g.at(n, "moe", "aux_stream", "main")
            rv = g.call(L + "aux.wait", "auto_deploy.wait_aux_stream_passthrough.default",
                        [rv], rv.shape, BF16)
        else:
            sh_out = shared(x)
        g.at(n, "moe", None)
        merged = g.call(L + "moe.merge", "aten.add.Tensor", [rv, sh_out], x.shape, BF16)
        if W > 1 and st.fuse_norm:
            # the merge add is in the way of AR fusion: explicit all-reduce
            merged = self.all_reduce(L + "ffn.ar", merged)
            return merged, True
        return merged, False

    def dequant(self, key, wname, out_f, in_f):
        """Block-fp8 expert weight -> bf16, as a fake-quant torch_moe path traces it."""
        g = self.g
        w = self.w(wname, shp(out_f, in_f), FP8)
        sc = self.w(wname + "_scale_inv", scale_shape(out_f, in_f), F32)
        if self.c.expert_dequant == "op":
            return g.call(key, "auto_deploy.torch_fake_quant_finegrained_fp8_dequant.default",
                          [w, sc, 128], shp(out_f, in_f), BF16)
        so, si = int(math.ceil(out_f / 128.0)), int(math.ceil(in_f / 128.0))
        wc = g.call(key + ".to", "aten._to_copy.default", [w], shp(out_f, in_f), BF16)
        r0 = g.call(key + ".ri0", "aten.repeat_interleave.self_int", [sc, 128, 0],
                    shp(so * 128, si), F32)
        r1 = g.call(key + ".ri1", "aten.repeat_interleave.self_int", [r0, 128, 1],
                    shp(so * 128, si * 128), F32)
        if so * 128 != out_f or si * 128 != in_f:
            r1 = g.call(key + ".crop", "aten.slice.Tensor", [r1, 0, 0, out_f],
                        shp(out_f, si * 128), F32)
            r1 = g.call(key + ".crop1", "aten.slice.Tensor", [r1, 1, 0, in_f],
                        shp(out_f, in_f), F32)
        return g.call(key + ".mul", "aten.mul.Tensor", [wc, r1], shp(out_f, in_f), BF16)

    def router_aten(self, L, x2, gate_w, bias):
        """HF DeepseekV3TopkRouter as exported (noaux_tc in aten ops)."""
        g, d = self.g, self.d
        E = d.E
        lg = self.linear(L + "router.linear", x2, None, E, d.H, self.t2(E), fp8=False, wref=gate_w)
        f = g.call(L + "router.to32", "aten._to_copy.default", [lg], lg.shape, F32)
        sg = g.call(L + "router.sigmoid", "aten.sigmoid.default", [f], f.shape, F32)
        sb = g.call(L + "router.bias", "aten.add.Tensor", [sg, bias], f.shape, F32)
        gv = g.call(L + "router.gview", "aten.view.default", [sb, [-1, d.n_group, E // d.n_group]],
                    self.t2(d.n_group, E // d.n_group), F32)
        t1 = g.call(L + "router.top2", "aten.topk.default", [gv, 2],
                    [self.t2(d.n_group, 2), self.t2(d.n_group, 2)], [F32, I64])
        t1v = g.getitem(t1, 0)
        gs = g.call(L + "router.gsum", "aten.sum.dim_IntList", [t1v, [-1]], self.t2(d.n_group), F32)
        t2 = g.call(L + "router.topg", "aten.topk.default", [gs, d.topk_group, -1, True, False],
                    [self.t2(d.topk_group), self.t2(d.topk_group)], [F32, I64])
        gi = g.getitem(t2, 1)
        z = g.call(L + "router.zeros", "aten.zeros_like.default", [gs], gs.shape, F32)
        sc = g.call(L + "router.scatter", "aten.scatter.value", [z, 1, gi, 1], gs.shape, F32)
        us = g.call(L + "router.unsq", "aten.unsqueeze.default", [sc, -1], self.t2(d.n_group, 1), F32)
        ex = g.call(L + "router.expand", "aten.expand.default", [us, [-1, d.n_group, E // d.n_group]],
                    self.t2(d.n_group, E // d.n_group), F32)
        rs = g.call(L + "router.reshape", "aten.reshape.default", [ex, [-1, E]], self.t2(E), F32)
        nb = g.call(L + "router.not", "aten.logical_not.default", [rs], self.t2(E), BOOL)
        mf = g.call(L + "router.mask", "aten.masked_fill.Scalar", [sb, nb, 0.0], self.t2(E), F32)
        t3 = g.call(L + "router.topk", "aten.topk.default", [mf, d.top_k, -1, True, False],
                    [self.t2(d.top_k), self.t2(d.top_k)], [F32, I64])
        ids = g.getitem(t3, 1)
        ga = g.call(L + "router.gather", "aten.gather.default", [sg, 1, ids], self.t2(d.top_k), F32)
        ws = g.call(L + "router.wsum", "aten.sum.dim_IntList", [ga, [-1], True], self.t2(1), F32)
        we = g.call(L + "router.weps", "aten.add.Tensor", [ws, 1e-20], self.t2(1), F32)
        dv = g.call(L + "router.div", "aten.div.Tensor", [ga, we], self.t2(d.top_k), F32)
        wt = g.call(L + "router.scale", "aten.mul.Tensor", [dv, d.scaling], self.t2(d.top_k), F32)
        return wt, ids


# --------------------------------------------------------------------------
# Llama (dense GQA)
# --------------------------------------------------------------------------


class LlamaDims:
    def __init__(self, H):
        self.H = H
        if H >= 2048:
            self.hd = 128
            self.vocab = 128256
        else:
            self.hd = max(8, H // 8)
            self.vocab = 2048
        self.heads = H // self.hd
        self.kv = max(1, self.heads // 4)
        self.inter = int(round(H * 3.5 / 64.0)) * 64
        self.max_pos = 131072 if H >= 2048 else 4096
        self.scale = 1.0 / math.sqrt(self.hd)
        self.page_size = 64
        self.num_pages = 64


class Llama(Builder):
    def __init__(self, g, cfg, st):
        Builder.__init__(self, g, cfg, st)
        self.d = LlamaDims(cfg.hidden)

    def build(self):
        g, st, c, d = self.g, self.st, self.c, self.d
        H, W = d.H, self.W
        g.at(None, "other")
        ids = g.placeholder("input_ids", self.bs(), I64)
        pos = g.placeholder("position_ids", self.bs(), I64)
        self.pos = pos
        md = {}
        if st.attn == "cached":
            B = c.batch
            for nm, s in (("batch_info_host", shp(3)), ("cu_seqlen_host", shp(B + 1)),
                          ("cu_num_pages", shp(B + 1)), ("cu_num_pages_host", shp(B + 1)),
                          ("cache_loc", shp(d.num_pages)), ("last_page_len", shp(B)),
                          ("last_page_len_host", shp(B)), ("seq_len_with_cache_host", shp(B))):
                md[nm] = g.placeholder(nm, s, I32)
            # one cache per cached attention op, "kv_cache_{i}": i counts them in graph order
            self.caches = [g.placeholder(f"kv_cache_{i}",
                                         shp(d.num_pages, 2, d.page_size, d.kv // W, d.hd), BF16)
                           for i in range(c.layers)]
        self.md = md
        if st.attn == "cached" and not self.legacy:
            self.prepare_metadata()  # inserted right after the last placeholder
        self.emit_sym(ids)
        g.at(None, "other", mod="model.embed_tokens")
        emb = g.call("embed", "aten.embedding.default",
                     [self.w("model_embed_tokens_weight", shp(d.vocab, H)), ids], self.bs(H), BF16)
        if st.attn == "cached" and self.legacy:
            self.prepare_metadata()
        if st.rope in ("aten", "torch"):
            g.at(None, "other", mod="model.rotary_emb")
            cos_c = self.w("model_rotary_emb_cos_cached", shp(d.max_pos, d.hd), BF16)
            sin_c = self.w("model_rotary_emb_sin_cached", shp(d.max_pos, d.hd), BF16)
            self.cos = g.call("rope.cos", "aten.index.Tensor", [cos_c, [pos]], self.bs(d.hd), BF16)
            self.sin = g.call("rope.sin", "aten.index.Tensor", [sin_c, [pos]], self.bs(d.hd), BF16)
        self.decoder(emb)

    def prepare_metadata(self):
        """The flashinfer backend's prepare-metadata op and its getitems (model-level)."""
        g, md = self.g, self.md
        g.at(None, "other")
        prep = g.call("fi_prep", "auto_deploy.flashinfer_attention_prepare_metadata.default",
                      [self.pos, md["batch_info_host"], md["cu_seqlen_host"],
                       md["seq_len_with_cache_host"]],
                      [shp(self.T), shp(self.T)], [I32, I32])
        self.fi_batch = g.getitem(prep, 0)
        self.fi_pos = g.getitem(prep, 1)

    def layer(self, n, resid, normed):
        g, st, d = self.g, self.st, self.d
        H, W = d.H, self.W
        L = f"L{n}."
        pre = f"model_layers_{n}_"
        normed = self.input_norm(n, resid, normed)
        o = self.attention(n, normed)
        post_w = self.w(pre + "post_attention_layernorm_weight", shp(H))
        if st.fuse_norm:
            g.at(n, "norm", mod=f"model.layers.{n}.post_attention_layernorm")
            f = self.add_norm(L + "post_norm", o, resid, post_w, allreduce=W > 1)
            normed2, resid2 = g.getitem(f, 0), g.getitem(f, 1)
        else:
            if W > 1:
                g.at(n, "attention")
                o = self.all_reduce(L + "attn.ar", o)
            g.at(n, "attention")
            resid2 = g.call(L + "attn.resid", "aten.add.Tensor", [resid, o], resid.shape, BF16)
            g.at(n, "norm", mod=f"model.layers.{n}.post_attention_layernorm")
            normed2 = self.norm(L + "post_norm", resid2, post_w)
        # MLP
        g.at(n, "mlp")
        mp = pre + "mlp_"
        il = d.inter // W
        if st.mlp == "fused" and self.legacy:
            ffn = g.call(L + "mlp", "auto_deploy.fused_swiglu_mlp.default",
                         [normed2, self.w(mp + "gate_up_proj_weight", shp(2 * il, H)),
                          self.w(mp + "down_proj_weight", shp(H, il))], normed2.shape, BF16)
        elif st.mlp == "fused":
            # fuse_swiglu (fuse_swiglu.py): the gate+up buffer fused_swiglu_gate_up_{j}, j
            # counting the fused SwiGLU ops in graph order; args (x, gate_up, down, gate_up
            # bias, down bias), the biases None here
            j = self.n_swiglu
            self.n_swiglu += 1
            ffn = g.call(L + "mlp", "auto_deploy.fused_swiglu_mlp.default",
                         [normed2, self.w(f"fused_swiglu_gate_up_{j}", shp(2 * il, H)),
                          self.w(mp + "down_proj_weight", shp(H, il)), None, None],
                         normed2.shape, BF16)
        else:
            gt = self.linear(L + "mlp.gate", normed2, mp + "gate_proj_weight", il, H, self.bs(il), False)
            up = self.linear(L + "mlp.up", normed2, mp + "up_proj_weight", il, H, self.bs(il), False)
            si = g.call(L + "mlp.silu", "aten.silu.default", [gt], gt.shape, BF16)
            mu = g.call(L + "mlp.mul", "aten.mul.Tensor", [si, up], gt.shape, BF16)
            ffn = self.linear(L + "mlp.down", mu, mp + "down_proj_weight", H, il, self.bs(H), False)
        return self.end_layer(n, ffn, resid2, False, "mlp")

    def attention(self, n, x):
        g, st, d = self.g, self.st, self.d
        H, W = d.H, self.W
        L = f"L{n}."
        pre = f"model_layers_{n}_self_attn_"
        hl, kl = d.heads // W, max(1, d.kv // W)
        qo, ko = hl * d.hd, kl * d.hd
        Bi, Si = self.B_int(), self.S_int()
        if st.fuse_gemms:
            g.at(n, "attention", None)
            q, k, v = self.fused_gemm(L + "qkv", x, (qo, ko, ko), H, False, f"fused_qkv_{n}_weight",
                                      ("q_branch", "kv_branch", "kv_branch"))
        else:
            g.at(n, "attention", "q_branch")
            q = self.linear(L + "q", x, pre + "q_proj_weight", qo, H, self.bs(qo), False)
            g.at(n, "attention", "kv_branch")
            k = self.linear(L + "k", x, pre + "k_proj_weight", ko, H, self.bs(ko), False)
            v = self.linear(L + "v", x, pre + "v_proj_weight", ko, H, self.bs(ko), False)
        g.at(n, "attention", "q_branch")
        qv = g.call(L + "q.view", "aten.view.default", [q, [Bi, Si, hl, d.hd]], self.bs(hl, d.hd), BF16)
        g.at(n, "attention", "kv_branch")
        kv_ = g.call(L + "k.view", "aten.view.default", [k, [Bi, Si, kl, d.hd]], self.bs(kl, d.hd), BF16)
        vv = g.call(L + "v.view", "aten.view.default", [v, [Bi, Si, kl, d.hd]], self.bs(kl, d.hd), BF16)
        g.at(n, "attention", "rope")
        if st.rope == "fused":
            r = g.call(L + "rope", "auto_deploy.flashinfer_rope.default",
                       [qv, kv_, self.pos, self.w("_ad_rotary_cos_sin_0", shp(d.max_pos, d.hd), F32), True],
                       [qv.shape, kv_.shape], [BF16, BF16])
            qr, kr = g.getitem(r, 0), g.getitem(r, 1)
        else:
            cu = g.call(L + "rope.cos_u", "aten.unsqueeze.default", [self.cos, 2], self.bs(1, d.hd), BF16)
            su = g.call(L + "rope.sin_u", "aten.unsqueeze.default", [self.sin, 2], self.bs(1, d.hd), BF16)
            if st.rope == "torch":
                r = g.call(L + "rope", "auto_deploy.torch_rope_with_explicit_cos_sin.default",
                           [qv, kv_, cu, su, 2], [qv.shape, kv_.shape], [BF16, BF16])
                qr, kr = g.getitem(r, 0), g.getitem(r, 1)
            else:
                outs = []
                for nm, t in (("q", qv), ("k", kv_)):
                    kk = L + "rope." + nm
                    m1 = g.call(kk + ".mulcos", "aten.mul.Tensor", [t, cu], t.shape, BF16)
                    lead = t.shape.rsplit("x", 1)[0]
                    s1 = g.call(kk + ".slice1", "aten.slice.Tensor", [t, 3, 0, d.hd // 2],
                                lead + f"x{d.hd // 2}", BF16)
                    s2 = g.call(kk + ".slice2", "aten.slice.Tensor",
                                [t, 3, d.hd // 2, 9223372036854775807], lead + f"x{d.hd // 2}", BF16)
                    ng = g.call(kk + ".neg", "aten.neg.default", [s2], s2.shape, BF16)
                    ct = g.call(kk + ".cat", "aten.cat.default", [[ng, s1], -1], t.shape, BF16)
                    m2 = g.call(kk + ".mulsin", "aten.mul.Tensor", [ct, su], t.shape, BF16)
                    outs.append(g.call(kk + ".add", "aten.add.Tensor", [m1, m2], t.shape, BF16))
                qr, kr = outs
        g.at(n, "attention", None)
        if st.attn == "cached":
            md = self.md
            att = g.call(L + "attn", "auto_deploy.flashinfer_attention_with_cache.default",
                         [qr, kr, vv, md["batch_info_host"], md["cu_seqlen_host"], md["cu_num_pages"],
                          md["cu_num_pages_host"], md["cache_loc"], md["last_page_len"],
                          md["last_page_len_host"], md["seq_len_with_cache_host"],
                          self.fi_batch, self.fi_pos, self.caches[n], None, d.scale],
                         self.bs(hl, d.hd), BF16)
        else:
            att = g.call(L + "attn", "auto_deploy.torch_attention.default",
                         [qr, kr, vv, None, 0.0, True, d.scale, None, None, None, "bsnd"],
                         self.bs(hl, d.hd), BF16)
        av = g.call(L + "attn.view", "aten.view.default", [att, [Bi, Si, qo]], self.bs(qo), BF16)
        return self.linear(L + "o_proj", av, pre + "o_proj_weight", H, qo, self.bs(H), False)


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------


def build_stage(ns, cfg, st):
    g = Graph(ns, export_naming=st.export)
    cls = Dsv3 if cfg.model == "dsv3" else Llama
    b = cls(g, cfg, st)
    b.build()
    return b


def write_truth(path, cfg, st, g, module):
    kinds = {}
    for n in range(cfg.layers):
        if cfg.model == "dsv3":
            kinds[str(n)] = "mla+mlp" if n < cfg.dense_layers else "mla+moe"
        else:
            kinds[str(n)] = "attention+mlp"
    head = {
        "model": cfg.model,
        "dump": st.stem + ".txt",
        "num_layers": cfg.layers,
        "layer_kinds": kinds,
        "stage": st.stage,
        "transform": st.transform,
        "graph_module": module,
        "world_size": cfg.world if st.tp else 1,
    }
    parts = [json.dumps(head)[:-1], ', "nodes": {\n']
    rows = []
    for name, layer, group, sub, stream, op, mod in g.truth:
        rows.append("  " + json.dumps(name) + ": " + json.dumps(
            {"layer": layer, "group": group, "sub_group": sub, "stream": stream,
             "module": mod, "op": op}))
    parts.append(",\n".join(rows))
    parts.append("\n}}\n")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(parts))


def write_dump(path, st, sections):
    out = [f"# Transform: {st.transform}\n# Stage: {st.stage}\n"
           f"# GraphModules found: {len(sections)}\n\n"]
    for name, body in sections:
        out.append("\n" + EQ80 + "\n# GraphModule: " + name + "\n" + EQ80 + "\n\n")
        out.append(body)
    with open(path, "w", encoding="utf-8", newline="\n", buffering=1 << 20) as f:
        f.write("".join(out))


# --------------------------------------------------------------------------
# Self-check: re-read a written dump + truth and validate their consistency
# --------------------------------------------------------------------------


def _split_args(s):
    out, depth, start = [], 0, 0
    for i, ch in enumerate(s):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0 and s.startswith(", ", i):
            out.append(s[start:i])
            start = i + 2
    if s[start:]:
        out.append(s[start:])
    return out


def _parse_root(path):
    """Minimal reader of the (root) section: [(name, kind, target, refs, list_names)]."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    sections = text.split("\n" + EQ80 + "\n# GraphModule: ")
    root = None
    for sec in sections[1:]:
        name, rest = sec.split("\n", 1)
        if name == "(root)":
            root = rest.split(EQ80 + "\n\n", 1)[1]
    if root is None:
        raise ValueError(f"{path}: no (root) GraphModule")
    nodes = []
    for line in root.split("\n"):
        if not line:
            continue
        if line.startswith("output "):
            nodes.append((line[7:], "output", None, [], []))
            continue
        if " = " not in line.split(" : ", 1)[0]:
            nm = line[1:].split(" : ", 1)[0]
            nodes.append((nm, "placeholder", None, [], []))
            continue
        nm, rest = line[1:].split(" = ", 1)
        lp = rest.index("(")
        target = rest[:lp]
        depth = 0
        for i in range(lp, len(rest)):
            if rest[i] in "([":
                depth += 1
            elif rest[i] in ")]":
                depth -= 1
                if depth == 0:
                    break
        args = _split_args(rest[lp + 1:i])
        refs, lnames = [], []
        for a in args:
            if a.startswith("%"):
                refs.append(a[1:].split(" : ", 1)[0])
            elif a.startswith("["):
                for el in a[1:-1].split(", "):
                    if el and (el[0].isalpha() or el[0] == "_"):
                        lnames.append(el)
        nodes.append((nm, "call", target, refs, lnames))
    return nodes


FUSED_ADD_NORMS = ("fused_add_rms_norm", "fused_allreduce_residual_rmsnorm")


def check_dir(out_dir):
    import re
    # fused weights carry a counter, not a layer (``fused_weight_3``, ``fused_moe_w2_stacked_0``):
    # only module paths name layers
    layer_re = re.compile(r"(?:^|_)layers_(\d+)_")
    problems = []
    stems = sorted(f[:-4] for f in os.listdir(out_dir)
                   if f.endswith(".txt") and os.path.exists(os.path.join(out_dir, f[:-4] + ".truth.json")))
    for stem in stems:
        problems.extend(f"{stem}: {m}" for m in _check_stem(out_dir, stem, layer_re))
    return problems


def _check_stem(out_dir, stem, layer_re):
    """The problems of one dump file against its truth file."""
    problems = []
    err = problems.append
    nodes = _parse_root(os.path.join(out_dir, stem + ".txt"))
    with open(os.path.join(out_dir, stem + ".truth.json"), encoding="utf-8") as f:
        truth = json.load(f)
    tn = truth["nodes"]
    last = truth["num_layers"] - 1
    lines = [n for n in nodes if n[1] != "output"]
    if [n[0] for n in lines] != list(tn.keys()):
        err("truth node order/set differs from the dump")
        return problems
    defined = {}
    open_aux = {}
    for nm, _kind, target, refs, lnames in lines:
        t = tn[nm]
        lay = t["layer"]
        ins = []
        fused_add_norm = target is not None and any(f in target for f in FUSED_ADD_NORMS)
        for r in refs + lnames:
            if r in defined:
                ins.append(r)
            elif r in tn:
                err(f"{nm} uses {r} before it is defined")
            else:
                m = layer_re.search(r)
                if m:
                    wl = int(m.group(1))
                    # a fused add+norm that ends layer N reads layer N+1's input-norm weight
                    ahead = fused_add_norm and r.endswith("_input_layernorm_weight")
                    if ahead and (lay is None or wl != lay + 1):
                        err(f"{nm} (layer {lay}) fuses layer {wl}'s input norm: not layer "
                            f"{wl - 1}'s residual output")
                    if wl != lay and not ahead:
                        err(f"{nm} (layer {lay}) consumes layer-{wl} weight {r}")
                elif fused_add_norm and r == "model_norm_weight" and lay != last:
                    err(f"{nm} (layer {lay}) fuses the final norm: not the last layer's output")
        for r in ins:
            il = tn[r]["layer"]
            # after the layers, model-level nodes (final norm, lm head) read the last layer's output
            if lay is None and il is not None and t["group"] != "norm" and il != last:
                err(f"model-level {nm} consumes layer-{il} node {r}")
            if lay is not None and il is not None and il > lay:
                err(f"{nm} (layer {lay}) consumes later layer-{il} node {r}")
        mod = t.get("module")
        if lay is not None and not (mod == f"model.layers.{lay}"
                                    or (mod or "").startswith(f"model.layers.{lay}.")):
            err(f"{nm}: layer {lay} but module {mod}")
        if lay is None and mod is not None and mod.startswith("model.layers."):
            err(f"{nm}: no layer but module {mod}")
        if target and "begin_aux_stream_passthrough" in target:
            open_aux[lay] = nm
        if t["stream"] == "aux" and lay not in open_aux:
            err(f"{nm} on aux stream outside a begin/end region")
        if t["stream"] == "aux" and t["sub_group"] not in ("aux_stream", "shared_experts"):
            err(f"{nm} on aux stream with sub_group {t['sub_group']}")
        if target and "end_aux_stream_passthrough" in target:
            open_aux.pop(lay, None)
        defined[nm] = True
    for k, kind in truth["layer_kinds"].items():
        groups = set(v["group"] for v in tn.values() if v["layer"] == int(k))
        if not groups:
            err(f"layer {k} has no nodes")
        if kind.endswith("+moe") != ("moe" in groups):
            err(f"layer {k} kind {kind} but groups {sorted(groups)}")
    return problems


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=("dsv3", "llama"), required=True)
    p.add_argument("--layers", type=int, required=True)
    p.add_argument("--dense-layers", type=int, default=None,
                   help="dsv3: layers 0..K-1 are dense (default 3, capped at layers-1)")
    p.add_argument("--experts", type=int, default=256, help="dsv3 routed experts (default 256)")
    p.add_argument("--unfused-moe", action="store_true",
                   help="dsv3: keep auto_deploy.torch_moe with per-expert weight lists in the final stage")
    p.add_argument("--expert-dequant", choices=("none", "op", "aten"), default=None,
                   help="how torch_moe gets its fp8 expert weights: 'none' = bare weight and "
                        "scale names in six lists; 'op' = one dequant node per expert weight; "
                        "'aten' = _to_copy + 2x repeat_interleave + mul per expert weight "
                        "(default: aten with --unfused-moe, else none)")
    p.add_argument("--hidden", type=int, default=None,
                   help="hidden size (dsv3 default 7168 = real dims; llama default 4096)")
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seq", type=int, default=4)
    p.add_argument("--world-size", type=int, default=None,
                   help="tensor-parallel size of the sharded stages (dsv3 default 8, llama 1)")
    p.add_argument("--stages", choices=("final", "all"), default="final")
    p.add_argument("--legacy-names", action="store_true",
                   help="write the fused weights of older dumps, named after their layer "
                        "(fused_qkv_a_N_weight, fused_gate_up_N_weight, "
                        "model_layers_N_mlp_experts_w3_w1_stacked), instead of AutoDeploy's "
                        "running counters; the truth is the same")
    p.add_argument("--out", required=True)
    p.add_argument("--check", action="store_true",
                   help="re-read the written files and validate dump/truth consistency")
    a = p.parse_args(argv)

    if a.layers < 1:
        p.error("--layers must be >= 1")
    if a.batch < 1 or a.seq < 1:
        p.error("--batch and --seq must be >= 1")
    cfg = argparse.Namespace()
    cfg.model = a.model
    cfg.layers = a.layers
    cfg.batch, cfg.seq = a.batch, a.seq
    if a.model == "dsv3":
        cfg.hidden = a.hidden or 7168
        cfg.dense_layers = min(a.dense_layers if a.dense_layers is not None else 3, a.layers)
        cfg.experts = a.experts
        cfg.world = a.world_size or 8
        if cfg.hidden < 7168 and cfg.hidden % 64:
            p.error("--hidden must be a multiple of 64")
        if cfg.experts % cfg.world or cfg.experts < 4:
            p.error("--experts must be >= 4 and a multiple of --world-size")
    else:
        cfg.hidden = a.hidden or 4096
        cfg.dense_layers = a.layers
        cfg.experts = 0
        cfg.world = a.world_size or 1
        if cfg.hidden % 64:
            p.error("--hidden must be a multiple of 64")
    cfg.unfused_moe = a.unfused_moe
    cfg.legacy_names = a.legacy_names
    cfg.expert_dequant = a.expert_dequant or ("aten" if a.unfused_moe else "none")

    os.makedirs(a.out, exist_ok=True)
    ns = Namespace()
    report = []
    for st in stage_presets(a.stages, a.unfused_moe, cfg.world):
        t0 = time.time()
        b = build_stage(ns, cfg, st)
        sections = []
        if st.extra_module:
            sections.append(b.emit_extra_module())
        sections.append(("(root)", b.g.text()))
        dump_path = os.path.join(a.out, st.stem + ".txt")
        write_dump(dump_path, st, sections)
        write_truth(os.path.join(a.out, st.stem + ".truth.json"), cfg, st, b.g, "(root)")
        dt = time.time() - t0
        report.append((dump_path, os.path.getsize(dump_path), len(b.g.truth), dt))
    for path, size, nodes, dt in report:
        sys.stdout.write(f"{path}  {size} bytes  {nodes} nodes  {dt:.2f}s\n")
    if a.check:
        problems = check_dir(a.out)
        for m in problems[:50]:
            sys.stderr.write(f"check: {m}\n")
        if problems:
            sys.stderr.write(f"check: {len(problems)} problem(s)\n")
            return 1
        sys.stdout.write("check: ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
