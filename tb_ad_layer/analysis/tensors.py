"""Tensor sizes from a dump's shape and dtype texts: dims (literal or symbolic expressions
resolved from known sizes), bytes per element, bytes of a tensor. A size that cannot be known
raises :class:`Unknown`, whose message says why."""
from __future__ import annotations

import ast
import functools
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from tb_ad_layer.contract.shape_text import split_dims

_DTYPE_BYTES = (("float8", 1.0), ("fp8", 1.0), ("float4", 0.5), ("fp4", 0.5), ("uint4", 0.5),
                ("bfloat16", 2.0), ("float16", 2.0), ("half", 2.0), ("float64", 8.0),
                ("double", 8.0), ("float32", 4.0), ("int64", 8.0), ("long", 8.0),
                ("int32", 4.0), ("int16", 2.0), ("uint8", 1.0), ("int8", 1.0), ("bool", 1.0),
                ("float", 4.0))
_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_FUNCS: dict[str, Callable[..., Any]] = {
    "Mod": lambda a, b: a % b, "Max": max, "Min": min, "floor": math.floor, "ceiling": math.ceil,
    "FloorDiv": lambda a, b: a // b, "CeilDiv": lambda a, b: -(-a // b)}


class Unknown(Exception):
    """A figure that cannot be computed; the message says why."""


def dtype_bytes(dtype: str) -> float:
    """Bytes per element of a dump dtype (``torch.bfloat16``)."""
    d = dtype.lower()
    for key, size in _DTYPE_BYTES:
        if key in d:
            return size
    raise Unknown(f"dtype {dtype} has no known size")


def _eval(node: ast.AST, dims: Mapping[str, int]) -> int:
    if isinstance(node, ast.Expression):
        return _eval(node.body, dims)
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in dims:
            raise Unknown(f"symbolic size {node.id}: pass --dim {node.id}=N")
        return dims[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval(node.operand, dims)
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left, dims), _eval(node.right, dims)
        if isinstance(node.op, ast.Add):
            return a + b
        if isinstance(node.op, ast.Sub):
            return a - b
        if isinstance(node.op, ast.Mult):
            return a * b
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and b == 0:
            raise Unknown("size divides by zero")
        if isinstance(node.op, ast.FloorDiv):
            return a // b
        if isinstance(node.op, ast.Mod):
            return a % b
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS:
        return int(_FUNCS[node.func.id](*(_eval(x, dims) for x in node.args)))
    raise Unknown("size expression not understood")


def dim_value(text: str, dims: Mapping[str, int]) -> int:
    """One dim as an integer: a literal, or an expression whose symbols ``dims`` gives."""
    if text.isdigit():
        return int(text)
    if text in ("?", ""):
        raise Unknown("a size the dump does not print (?)")
    unresolved = sorted({s for s in _SYMBOL.findall(text) if s not in _FUNCS and s not in dims})
    if unresolved:
        raise Unknown(f"symbolic size {', '.join(unresolved)}: pass "
                      + " ".join(f"--dim {s}=N" for s in unresolved))
    try:
        return _eval(ast.parse(text, mode="eval"), dims)
    except SyntaxError:
        raise Unknown(f"size {text!r} not understood") from None


def shape_dims(shape: str, dims: Mapping[str, int]) -> list[int]:
    """A single tensor's dims as integers (raises :class:`Unknown`)."""
    if shape.startswith("("):
        raise Unknown("several outputs")
    return [dim_value(d, dims) for d in split_dims(shape)]


def tensor_bytes(shape: str, dtype: str, dims: Mapping[str, int]) -> float:
    """Bytes of one tensor (raises :class:`Unknown`)."""
    got = _tensor_bytes(shape, dtype, tuple(sorted(dims.items())))
    if isinstance(got, str):
        raise Unknown(got)
    return got


@functools.lru_cache(maxsize=4096)
def _tensor_bytes(shape: str, dtype: str, dims: tuple[tuple[str, int], ...]) -> float | str:
    """:func:`tensor_bytes`, or why not, cached: the same shapes recur in every layer."""
    try:
        return math.prod(shape_dims(shape, dict(dims))) * dtype_bytes(dtype)
    except Unknown as e:
        return str(e)


