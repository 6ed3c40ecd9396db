"""The shape text of a layer document (``s44xs70x64``, ``4x(s0 + 1)``), split into its dims.

The dump writer prints a tensor's shape with ``x`` between dims, and symbolic dims are
expressions of their own (``Max(1, s0)``, ``s0*s1``); the trace's recorded shapes bind them and
the roofline evaluates them, so both read the text alike, here.
"""
from __future__ import annotations


def split_dims(shape: str) -> list[str]:
    """Dims of a shape text (``s44xs70x64`` -> ``[s44, s70, 64]``): ``x`` separates dims only
    outside parentheses and after a digit or ``)`` (``Max`` and ``Mod`` hold an x of their own).
    ``scalar`` and the empty text have no dims; any other text that is not a shape (``?``) is
    one dim that no size evaluates."""
    if shape in ("scalar", ""):
        return []
    dims: list[str] = []
    depth = 0
    cur = ""
    for i, ch in enumerate(shape):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "x" and depth == 0 and i > 0 and (shape[i - 1].isdigit() or shape[i - 1] == ")"):
            dims.append(cur.strip())
            cur = ""
        else:
            cur += ch
    dims.append(cur.strip())
    return dims
