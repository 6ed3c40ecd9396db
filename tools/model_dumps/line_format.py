"""Split and check the lines of an AutoDeploy graph dump (standard library only).

A line is one of (DESIGN.md, "The dump format"):

- a header line: ``# Transform: <key>``, ``# Stage: <stage>``, ``# GraphModules found: <n>``,
  ``# GraphModule: <name>``, a rule of 80 ``=``, or blank;
- a placeholder: ``%name : <shape> : <dtype>``;
- a call: ``%name = <target>(<args>) : <shape> : <dtype>``, or with a tuple of shapes and one
  of dtypes ``: (<s1>, <s2>) : (<d1>, <d2>)``, or ``: ? : N/A``;
- an output: ``output <values>``.

Shapes can be sympy expressions holding spaces, ``+ - * //``, parentheses, commas and function
names (``1xs70 + (Mod(4 - (Mod(s70, 4)), 4))x4x32``), so a line is cut at its `` : ``
separators from the right end and at top-level commas only; shapes are kept verbatim.
:func:`parse_line` raises :class:`LineError` with the reason for any other line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_DTYPE_RE = re.compile(r"(?:torch\.[a-z0-9_]+|[A-Za-z_][A-Za-z0-9_]*|N/A)\Z")
_SHAPE_CHARS_RE = re.compile(r"[A-Za-z0-9_ +\-*/(),.%]+\Z")
_LIST_NAME_RE = re.compile(r"(?<![\w.'\"=])([A-Za-z_][A-Za-z0-9_]*)(?![\w'\"(=])")
_LITERAL_WORDS = {"None", "True", "False", "inf", "nan"}


class LineError(ValueError):
    """A line that has none of the documented shapes."""


@dataclass
class Line:
    """One node line: ``kind`` is ``placeholder``, ``call`` or ``output``."""

    kind: str
    name: str = ""
    target: str = ""
    shape: str = ""
    dtype: str = ""
    refs: list[tuple[str, str, str]] = field(default_factory=list)  # (%name, shape, dtype)
    list_names: list[str] = field(default_factory=list)  # names inside list/tuple args
    outputs: list[str] = field(default_factory=list)


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def check_shape(shape: str) -> None:
    """A shape: ``?``, ``scalar`` or dims joined by ``x`` (kept as one opaque string)."""
    if shape in ("?", "scalar"):
        return
    if not _SHAPE_CHARS_RE.match(shape) or not _balanced(shape) or shape != shape.strip():
        raise LineError(f"bad shape {shape!r}")


def check_dtype(dtype: str) -> None:
    if not _DTYPE_RE.match(dtype):
        raise LineError(f"bad dtype {dtype!r}")


def split_top(text: str) -> list[str]:
    """Split at ``", "`` outside brackets (an empty string gives no parts)."""
    parts: list[str] = []
    depth, start, i = 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0 and text[i + 1:i + 2] == " ":
            parts.append(text[start:i])
            start = i + 2
            i += 1
        i += 1
    if text:
        parts.append(text[start:])
    return parts


def _matching_open(text: str, close_at: int) -> int:
    """Index of the bracket that opens the one closing at ``close_at``."""
    depth = 0
    for i in range(close_at, -1, -1):
        if text[i] in ")]}":
            depth += 1
        elif text[i] in "([{":
            depth -= 1
            if depth == 0:
                return i
    raise LineError("unbalanced brackets")


def _split_out_info(text: str) -> tuple[str, str, str]:
    """(head, shape, dtype) of ``<head> : <shape> : <dtype>``, tuples kept in parentheses."""
    if text.endswith(")"):
        d_open = _matching_open(text, len(text) - 1)
        dtypes = text[d_open:]
        rest = text[:d_open]
        if not rest.endswith(" : ") or not rest[:-3].endswith(")"):
            raise LineError("no ' : ' before the dtype tuple")
        rest = rest[:-3]
        s_open = _matching_open(rest, len(rest) - 1)
        shapes, head = rest[s_open:], rest[:s_open]
        if not head.endswith(" : "):
            raise LineError("no ' : ' before the shape tuple")
        for s in split_top(shapes[1:-1]):
            check_shape(s)
        for d in split_top(dtypes[1:-1]):
            check_dtype(d)
        return head[:-3], shapes, dtypes
    parts = text.rsplit(" : ", 2)
    if len(parts) != 3:
        raise LineError("no ' : <shape> : <dtype>' at the end")
    head, shape, dtype = parts
    check_shape(shape)
    check_dtype(dtype)
    return head, shape, dtype


def _parse_arg(arg: str, line: Line) -> None:
    if arg.startswith("%"):
        head, shape, dtype = _split_out_info(arg)
        if not NAME_RE.match(head[1:]):
            raise LineError(f"bad reference {arg!r}")
        line.refs.append((head[1:], shape, dtype))
        return
    if "%" in arg:
        raise LineError(f"'%' inside a literal argument {arg!r}")
    if arg[:1] in "([" and _balanced(arg):
        # node references inside lists and tuples print bare: `[getitem_3, view_2]`
        for name in _LIST_NAME_RE.findall(arg):
            if name not in _LITERAL_WORDS:
                line.list_names.append(name)


def parse_line(text: str) -> Line | None:
    """The node line ``text`` split into its parts; None for header and blank lines."""
    if text == "" or text.startswith("# ") or text == "=" * 80:
        return None
    if text.startswith("output"):
        rest = text[len("output"):]
        if rest.startswith(" "):
            rest = rest[1:]
        elif rest.startswith("(") and rest.endswith(")"):
            rest = rest[1:-1]
        else:
            raise LineError("bad output line")
        outs = split_top(rest)
        return Line("output", outputs=[o[1:] if o.startswith("%") else o for o in outs])
    if not text.startswith("%"):
        raise LineError("neither a node, an output nor a header line")
    eq = text.find(" = ")
    colon = text.find(" : ")
    if eq != -1 and (colon == -1 or eq < colon):
        name = text[1:eq]
        if not NAME_RE.match(name):
            raise LineError(f"bad node name {name!r}")
        info = text[eq + 3:]
        if info.endswith(" : ? : N/A"):
            head, shape, dtype = info[:-len(" : ? : N/A")], "?", "N/A"
        else:
            head, shape, dtype = _split_out_info(info)
        if not head.endswith(")"):
            raise LineError("no argument list")
        a_open = _matching_open(head, len(head) - 1)
        target, args = head[:a_open], head[a_open + 1:-1]
        if not target:
            raise LineError("empty target")
        line = Line("call", name=name, target=target, shape=shape, dtype=dtype)
        for arg in split_top(args):
            _parse_arg(arg, line)
        return line
    head, shape, dtype = _split_out_info(text)
    if not NAME_RE.match(head[1:]):
        raise LineError(f"bad placeholder name {head[1:]!r}")
    return Line("placeholder", name=head[1:], shape=shape, dtype=dtype)
