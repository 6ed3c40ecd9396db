"""Check the writer against dumps that AutoDeploy's own writer printed (shared/dumps/real_writer).

Rebuilds the small graphs behind four of those dumps (``sym_shapes``: symbolic expressions,
multi-output nodes; ``fx_misc``: a tuple of nodes, a keyword-only edge, a device inside a list;
``dict_out_symtrace``: a dict output; ``cond``: ``torch.cond`` branch sections), prints them with
:mod:`writer` and compares the text with the real file, memory addresses aside (the real files
hold the addresses of that run). Returns the names that differ.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import torch
from torch import fx
from torch.export import Dim

from .writer import dump_text

_ADDR = re.compile(r" at 0x[0-9a-f]+>")


class _SymShapes(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        c = torch.cat([x, y], 1)
        d = torch.cat([x, x], 1)
        strided, shifted = x[:, ::2], x[:, 1:]
        padded = torch.nn.functional.pad(x, (0, 0, 0, 3))
        top = torch.topk(c, 2).values
        first, _ = torch.split(d, [x.shape[1], x.shape[1]], 1)
        total = c.sum() + d.sum() + strided.sum() + shifted.sum() + padded.sum() + top.sum()
        return total + first.sum()


def _sym_shapes() -> torch.nn.Module:
    x, y = torch.randn(2, 5, 4), torch.randn(2, 6, 4)
    dyn = {"x": {1: Dim.DYNAMIC}, "y": {1: Dim.DYNAMIC}}
    return torch.export.export(_SymShapes(), (x, y), dynamic_shapes=dyn, strict=False).module()


def _fx_misc() -> torch.nn.Module:
    g = fx.Graph()
    a, b = g.placeholder("a"), g.placeholder("b")
    w = g.get_attr("model.layers.0.mlp.w")
    m = g.call_function(torch.ops.aten.mul.Tensor, (a, w))
    s = g.call_function(torch.stack, ((m, b),))
    add = g.call_function(torch.ops.aten.add.Tensor, (s, 1))
    cp = g.call_function(torch.ops.aten._to_copy.default, (add,), {"dtype": torch.float16})
    z = g.call_function(torch.ops.aten.zeros.default, ([2, 4],))
    p = g.call_function(print, ([torch.device("cuda", 0), a],))
    g.output((cp, z, p))
    root = torch.nn.Module()
    root.model = torch.nn.Module()
    root.model.layers = torch.nn.ModuleList([torch.nn.Module()])
    root.model.layers[0].mlp = torch.nn.Module()
    root.model.layers[0].mlp.register_buffer("w", torch.ones(4))
    return fx.GraphModule(root, g)


class _DictOut(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor | None]:
        return {"logits": x * 2, "aux": None}


class _Cond(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(x.sum() > 0, lambda x: x * self.w, lambda x: x - self.w, (x,))


def _cond() -> torch.nn.Module:
    return torch.export.export(_Cond(), (torch.randn(3, 4),), strict=False).module()


CASES: dict[str, Callable[[], torch.nn.Module]] = {
    "sym_shapes/001_export_export_to_gm.txt": _sym_shapes,
    "fx_misc/001_factory_build.txt": _fx_misc,
    "dict_out_symtrace/001_factory_build.txt": lambda: fx.symbolic_trace(_DictOut()),
    "cond/001_export_export_to_gm.txt": _cond,
}


def check_writer(real_writer_dir: Path) -> list[str]:
    """Names of the real dumps that the writer does not reproduce (empty when all match)."""
    bad = []
    for rel, build in CASES.items():
        real = (real_writer_dir / rel).read_text(encoding="utf-8")
        stage, transform = Path(rel).stem.split("_", 1)[1].split("_", 1)
        ours = dump_text(build(), stage, transform)
        if _ADDR.sub(">", ours) != _ADDR.sub(">", real):
            bad.append(rel)
    return bad
