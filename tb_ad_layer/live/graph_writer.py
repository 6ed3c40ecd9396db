"""Print FX GraphModules in the text format of TensorRT-LLM AutoDeploy's graph writer.

The real writer is ``tensorrt_llm/_torch/auto_deploy/utils/graph_writer.py``
(``GraphWriter.dump_graph`` and ``dump_ssa_with_meta``). This module prints the same text, line for
line: the three header lines, one banner per GraphModule found by ``named_modules()`` (the root
printed as ``(root)``), then one line per placeholder / call / output node; ``get_attr`` nodes are
not printed. Symbolic dims print as ``str(SymInt)`` (``s44xs70 - 1x64``). The one deliberate
difference: a target whose ``str()`` holds a memory address (``<built-in method stack of type
object at 0x7f45...>``) is printed with the address pinned to ``0x7f0000000000``, so that a
regenerated dump is byte-identical to the committed one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch
from torch import fx

PINNED_ADDRESS = "0x7f0000000000"
_ADDRESS_RE = re.compile(r" at 0x[0-9a-f]+>")


def dtype_or_type(val: Any) -> Any:
    """A tensor's dtype, else the value's type name (``SymInt``, ``int``, ``NoneType``)."""
    if hasattr(val, "dtype"):
        return val.dtype
    return type(val).__name__


def shape_str(val: Any) -> str:
    """Dims joined by ``x`` (``scalar`` for 0-d), ``?`` for a value without a shape."""
    if hasattr(val, "shape"):
        dims = [str(int(d)) if str(d).isdigit() else str(d) for d in val.shape]
        return "x".join(dims) if dims else "scalar"
    return "?"


def shape_dtype_str(val: Any) -> str:
    return f"{shape_str(val)} : {dtype_or_type(val)}"


def target_str(target: Any) -> str:
    """``str(target)`` with any memory address pinned (see the module docstring)."""
    return _ADDRESS_RE.sub(f" at {PINNED_ADDRESS}>", str(target))


def node_line(node: fx.Node) -> str | None:
    """The writer's line for one node; None for ``get_attr`` (never printed)."""
    if node.op == "placeholder":
        info = shape_dtype_str(node.meta["val"]) if "val" in node.meta else "? : unknown"
        return f"%{node.name} : {info}"
    if node.op in ("call_function", "call_method", "call_module"):
        inputs: list[str] = []
        for arg in node.args:
            if hasattr(arg, "name"):
                if hasattr(arg, "meta") and "val" in arg.meta:
                    inputs.append(f"%{arg.name} : {shape_dtype_str(arg.meta['val'])}")
                else:
                    inputs.append(f"%{arg.name} : ? : unknown")
            else:
                inputs.append(str(arg))
        if "val" in node.meta:
            out_val = node.meta["val"]
            if isinstance(out_val, (tuple, list)):
                shapes: list[str] = []
                dtypes: list[str] = []
                for v in out_val:
                    if v is not None:
                        shapes.append(shape_str(v))
                        dtypes.append(str(dtype_or_type(v)))
                    else:
                        shapes.append("?")
                        dtypes.append("None")
                out_info = f"({', '.join(shapes)}) : ({', '.join(dtypes)})"
            else:
                out_info = shape_dtype_str(out_val)
        else:
            out_info = "? : N/A"
        return f"%{node.name} = {target_str(node.target)}({', '.join(inputs)}) : {out_info}"
    if node.op == "output":
        outputs = node.args[0] if isinstance(node.args[0], (tuple, list)) else [node.args[0]]
        names = [f"%{o.name}" if hasattr(o, "name") else str(o) for o in outputs]
        return f"output {', '.join(names)}"
    return None


def graph_modules(mod: torch.nn.Module) -> list[tuple[str, fx.GraphModule]]:
    """Every GraphModule in ``mod`` (itself first, as ``(root)``), in ``named_modules()`` order."""
    return [(name or "(root)", sub) for name, sub in mod.named_modules()
            if isinstance(sub, fx.GraphModule)]


def dump_text(mod: torch.nn.Module, stage: str, transform: str) -> str:
    """The whole file the writer writes after ``transform`` of ``stage``."""
    gms = graph_modules(mod)
    parts = [f"# Transform: {transform}\n", f"# Stage: {stage}\n",
             f"# GraphModules found: {len(gms)}\n\n"]
    for name, gm in gms:
        parts.append(f"\n{'=' * 80}\n# GraphModule: {name}\n{'=' * 80}\n\n")
        for node in gm.graph.nodes:
            line = node_line(node)
            if line is not None:
                parts.append(line + "\n")
    return "".join(parts)


def dump_file_name(counter: int, stage: str, transform: str) -> str:
    """``{counter:03d}_{stage}_{transform}.txt``: three digits, more past 999."""
    return f"{counter:03d}_{stage}_{transform}.txt"


def write_dump(directory: Path, counter: int, mod: torch.nn.Module, stage: str,
               transform: str) -> Path:
    """Write one stage's dump into ``directory``; returns its path."""
    path = directory / dump_file_name(counter, stage, transform)
    path.write_text(dump_text(mod, stage, transform), encoding="utf-8")
    return path
