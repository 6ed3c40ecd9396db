"""One FX graph as torch.compile logs it (``GraphModule.print_readable``) -> a dump ``Graph``.

The payload is Python: ``def forward(self, L_x_: "f32[2, 8][8, 1]cpu", ...)`` and one statement
per node, ``name: "f32[2, 8, 64][512, 64, 1]cpu" = torch._C._nn.linear(x, w, None)``. It is
read with :mod:`ast`, so that any expression the code printer writes (slices, keyword
arguments, nested tuples, ``x /= y;  name: "T" = x`` for an in-place op) is read whole.

A node here looks the way AutoDeploy's writer prints it, so that the layer rules read it as they
read a dump: targets as ``str(target)`` prints them (``aten.mm.default``, ``<built-in function
linear>``, a method name such as ``view``), shapes as dims joined by ``x``, dtypes as
``torch.float32``. Parameters and buffers are graph inputs in a Dynamo graph (``L_self_modules_
model_modules_layers_modules_0_modules_self_attn_modules_q_proj_parameters_weight_``): they
become weights named like a dump's (``model_layers_0_self_attn_q_proj_weight``), never nodes,
so the existing layer rules find layers from them. AOT and Inductor graphs name their inputs
``primals_N``/``argN_1``; ``input_names`` gives the Dynamo names of those positions.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import Final

from tb_ad_layer.dump.graph import CALL, OUTPUT, PLACEHOLDER, Graph, Node, Weight
from tb_ad_layer.errors import InputError

_ARGS_KEPT: Final = 1000
_CLASS_LINE: Final = re.compile(r"^(\s*)class\s+[^(:]*\(", re.MULTILINE)
_ANNOTATION: Final = re.compile(r"^([a-z]\w*)\[(.*?)\]\[.*?\](\w*)$", re.DOTALL)
_SYM: Final = re.compile(r"^Sym\((.*)\)$", re.DOTALL)
_AOT_INPUT: Final = re.compile(r"^\s*(\w+)\s*:.*#\s*\w*AOTInput\(idx=(\d+)\)", re.MULTILINE)
#: ``<prefix>_modules_`` / ``_parameters_`` / ``_buffers_``: the path segments of a parameter
#: input's name (Dynamo's source names for ``self.model.layers[0].q_proj.weight``).
_PATH_MARK: Final = re.compile(r"(?:^|_)(?:modules|parameters|buffers)_")
_PARAM_MARK: Final = re.compile(r"(?:^|_)(?:parameters|buffers)_")
_DTYPES: Final = {
    "f32": "torch.float32", "f16": "torch.float16", "bf16": "torch.bfloat16", "f64": "torch.float64",
    "i64": "torch.int64", "i32": "torch.int32", "i16": "torch.int16", "i8": "torch.int8",
    "u8": "torch.uint8", "b8": "torch.bool", "c64": "torch.complex64", "c128": "torch.complex128",
    "f8e4m3fn": "torch.float8_e4m3fn", "f8e5m2": "torch.float8_e5m2",
}
_BINOPS: Final = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv",
    ast.Mod: "mod", ast.Pow: "pow", ast.MatMult: "matmul", ast.BitAnd: "and_", ast.BitOr: "or_",
    ast.BitXor: "xor", ast.LShift: "lshift", ast.RShift: "rshift",
}
_UNARY: Final = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert", ast.Not: "not_"}
_COMPARE: Final = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt",
                   ast.GtE: "ge", ast.Is: "is_", ast.IsNot: "is_not"}


def weight_name(input_name: str) -> str | None:
    """The dump-style weight name of a Dynamo parameter or buffer input, None for another input.

    ``l_self_modules_model_modules_layers_modules_0_modules_mlp_modules_up_proj_parameters_weight_``
    -> ``model_layers_0_mlp_up_proj_weight``: the local the path starts from (``self``, or a
    resumed frame's ``m``) is dropped, the ``modules``/``parameters``/``buffers`` markers go, and
    the name is lower-cased as FX prints a dump's weights (``A_log`` -> ``a_log``).
    """
    if _PARAM_MARK.search(input_name) is None:
        return None
    first = _PATH_MARK.search(input_name)
    if first is None:
        return None
    rest = _PATH_MARK.sub("_", input_name[first.start():])
    name = rest.strip("_").lower()
    return name or None


def graph_code(payload: str) -> str:
    """The payload as parseable Python: a class printed as ``class <lambda>(...)`` (AOT and
    Inductor graphs) gets a name."""
    return _CLASS_LINE.sub(lambda m: f"{m.group(1)}class GraphModule(", payload)


def aot_input_indices(payload: str) -> dict[str, int]:
    """``primals_3`` -> 2: the Dynamo input position each AOT input stands for, from its
    ``# PlainAOTInput(idx=N)`` comment (torch 2.8+); empty when the payload has none."""
    return {m.group(1): int(m.group(2)) for m in _AOT_INPUT.finditer(payload)}


def _shape_dtype(annotation: str | None) -> tuple[str, str]:
    if annotation is None:
        return "?", "unknown"
    text = annotation.strip()
    sym = _SYM.match(text)
    if sym:
        return "scalar", "SymInt"
    m = _ANNOTATION.match(text)
    if not m:
        return "?", text[:40] or "unknown"
    dims = _top_level_split(m.group(2))
    shape = "x".join(dims) if dims else "scalar"
    return shape, _DTYPES.get(m.group(1), m.group(1))


def _top_level_split(text: str) -> list[str]:
    out: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    last = "".join(cur).strip()
    if last:
        out.append(last)
    return out


def _annotation_text(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


class _Builder:
    """Builds the Graph statement by statement, resolving names to nodes and weights."""

    def __init__(self, graph: Graph, prefix: str, first_line: int) -> None:
        self.graph = graph
        self.prefix = prefix
        self.first_line = first_line
        # A local of the code -> the node it names (prefixed name) or ("w", weight name).
        self.nodes: dict[str, str] = {}
        self.weights: dict[str, str] = {}
        self.submodules: set[str] = set()
        # Locals known to be tensors (annotated with a dtype and shape).
        self.tensors: set[str] = set()
        # The nodes made so far, by their (prefixed) name.
        self.defined: dict[str, Node] = {}

    def weight(self, name: str, shape: str, dtype: str, line: int) -> None:
        if name not in self.graph.weights:
            self.graph.weights[name] = Weight(name, shape, dtype, line)

    def add(self, name: str, kind: str, target: str, shape: str, dtype: str,
            value: ast.expr | None, line: int, extra_inputs: Sequence[str] = ()) -> None:
        inputs: list[str] = []
        weights: list[str] = []
        for local in [*extra_inputs, *self._names(value)]:
            if local in self.nodes:
                ref = self.nodes[local]
                if ref not in inputs:
                    inputs.append(ref)
            elif local in self.weights:
                ref = self.weights[local]
                if ref not in weights:
                    weights.append(ref)
        full = self.prefix + name
        if dtype.startswith("torch.") and shape != "?":
            self.tensors.add(name)
        args = _args_text(value)
        node = Node(full, kind, target, shape, dtype, tuple(inputs), tuple(weights), args,
                    line, len(self.graph.nodes))
        self.graph.nodes.append(node)
        self.defined[full] = node
        self.nodes[name] = full

    def _names(self, value: ast.expr | None) -> list[str]:
        if value is None:
            return []
        return [n.id for n in ast.walk(value) if isinstance(n, ast.Name)]


def _args_text(value: ast.expr | None) -> str:
    if value is None:
        return ""
    if isinstance(value, ast.Call):
        parts = [ast.unparse(a) for a in value.args]
        parts += [f"{k.arg}={ast.unparse(k.value)}" if k.arg else f"**{ast.unparse(k.value)}"
                  for k in value.keywords]
        text = ", ".join(parts)
    else:
        text = ast.unparse(value)
    return text[:_ARGS_KEPT]


def _subscript_kind(index: ast.expr) -> str:
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    # The code printer writes ``x[(slice(None, 1, None), None)]``: slices as calls.
    if any(isinstance(p, ast.Slice) or (isinstance(p, ast.Constant) and p.value in (None, Ellipsis))
           or (isinstance(p, ast.Call) and isinstance(p.func, ast.Name) and p.func.id == "slice")
           for p in parts):
        return "slice"
    return "index"


def _target(value: ast.expr, locals_: set[str], tensors: set[str]) -> tuple[str, list[str]]:
    """``(target, extra inputs)``: the call target as a dump prints it, and the node a method is
    called on."""
    if isinstance(value, ast.Call):
        func = value.func
        root = _root_name(func)
        if isinstance(func, ast.Attribute) and root is not None and root in locals_:
            return func.attr, []
        text = ast.unparse(func)
        if text.startswith("torch.ops."):
            return text[len("torch.ops."):], []
        last = text.rsplit(".", 1)[-1]
        return f"<built-in function {last}>", []
    if isinstance(value, ast.BinOp):
        return f"<built-in function {_BINOPS.get(type(value.op), 'binop')}>", []
    if isinstance(value, ast.UnaryOp):
        return f"<built-in function {_UNARY.get(type(value.op), 'unary')}>", []
    if isinstance(value, ast.Compare) and value.ops:
        return f"<built-in function {_COMPARE.get(type(value.ops[0]), 'compare')}>", []
    if isinstance(value, ast.Subscript):
        # ``x[..., :4]`` on a tensor is a slice (torch.export prints ``aten.slice``); the dump's
        # ``getitem`` is what reads one result of a multi-output op, and the layer rules keep
        # it with that op.
        base = _root_name(value.value)
        if base is not None and base in tensors:
            return f"<built-in function {_subscript_kind(value.slice)}>", []
        return "<built-in function getitem>", []
    if isinstance(value, ast.Attribute):
        return "<built-in function getattr>", []
    if isinstance(value, ast.Constant):
        return "<built-in function constant>", []
    return f"<built-in function {type(value).__name__.lower()}>", []


def parse_graph(payload: str, *, module: str, source: str, prefix: str = "", first_line: int = 0,
                input_names: Sequence[str] | None = None, stage: str = "",
                transform: str = "") -> Graph:
    """The graph of one logged FX graph payload.

    Args:
        payload: the graph's Python text (the record's payload lines without their tab).
        module: the graph's name (``[0/1] dynamo_output_graph``).
        source: the log file, for messages and ``Graph.source``.
        prefix: put before every node name (``"[0/1] "``): names repeat across graphs.
        first_line: the log line of the payload's first line, so node lines point into the log.
        input_names: the Dynamo input name of each input position (for AOT/Inductor graphs,
            whose inputs are ``primals_N``): a position whose Dynamo name is a parameter or
            buffer becomes that weight.
    Raises:
        InputError: the payload is not Python, or has no ``forward``.
    """
    code = graph_code(payload)
    try:
        tree = ast.parse(code)
    except SyntaxError as e:
        raise InputError(f"graph {module} is not readable Python ({e.msg})", path=source,
                         line=first_line + (e.lineno or 1) - 1) from None
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef)), None)
    body = cls.body if cls is not None else tree.body
    forward = next((n for n in body if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)
    if forward is None:
        raise InputError(f"graph {module} has no forward()", path=source, line=first_line)
    graph = Graph(module=module, source=source, transform=transform, stage=stage)
    b = _Builder(graph, prefix, first_line)
    if cls is not None:
        b.submodules = {n.name for n in cls.body if isinstance(n, ast.ClassDef)}
    aot = aot_input_indices(code)
    params = [a for a in forward.args.args if a.arg != "self"]
    placeholder_args: dict[str, tuple[str, str, int]] = {}
    for pos, arg in enumerate(params):
        shape, dtype = _shape_dtype(_annotation_text(arg.annotation))
        line = first_line + arg.lineno - 1
        dynamo_name = arg.arg
        idx = aot.get(arg.arg, pos)
        if input_names is not None and 0 <= idx < len(input_names):
            dynamo_name = input_names[idx]
        w = weight_name(dynamo_name)
        if w is not None:
            b.weight(w, shape, dtype, line)
            b.weights[arg.arg] = w
            b.tensors.add(arg.arg)
        else:
            placeholder_args[arg.arg] = (shape, dtype, line)
    # A Dynamo graph renames each input at once (``l_x_ = L_x_``): the node is the new name.
    aliases: dict[str, str] = {}
    for stmt in forward.body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Name)
                and stmt.value.id in params_names(params)):
            aliases[stmt.value.id] = stmt.targets[0].id
    for arg_name, (shape, dtype, line) in placeholder_args.items():
        name = aliases.get(arg_name, arg_name)
        b.add(name, PLACEHOLDER, "", shape, dtype, None, line)
        b.nodes[arg_name] = b.nodes[name]
        if name in b.tensors:
            b.tensors.add(arg_name)
    for arg_name, w in list(b.weights.items()):
        if arg_name in aliases:
            b.weights[aliases[arg_name]] = w
            b.tensors.add(aliases[arg_name])
    # An in-place op is printed as the op on its first argument, then the node named after it
    # (``x /= y;  div = x``, ``x[i] = y;  setitem = x``): (that argument, target, what it read).
    pending: tuple[str, str, ast.expr] | None = None
    for stmt in forward.body:
        line = first_line + stmt.lineno - 1
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            op = _BINOPS.get(type(stmt.op), "binop").rstrip("_")
            pending = (stmt.target.id, f"<built-in function i{op}>", stmt.value)
            continue
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Subscript)):
            base = _root_name(stmt.targets[0])
            if base is not None:
                read = ast.Tuple(elts=[stmt.targets[0].slice, stmt.value], ctx=ast.Load())
                pending = (base, "<built-in function setitem>", read)
            continue
        if isinstance(stmt, ast.Return):
            value = stmt.value
            # FX names the output node ``output`` unless a value took the name first.
            out_name = "output"
            k = 0
            while out_name in b.nodes:
                k += 1
                out_name = f"output_{k}"
            b.add(out_name, OUTPUT, "", "?", "unknown", value, line)
            graph.outputs = graph.nodes[-1].inputs
            continue
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
            name, value, annotation = stmt.target.id, stmt.value, _annotation_text(stmt.annotation)
        elif (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
              and isinstance(stmt.targets[0], ast.Name)):
            name, value, annotation = stmt.targets[0].id, stmt.value, None
        else:
            continue
        if isinstance(value, ast.Constant) and value.value is None:
            continue  # ``x = None``: the printer freeing a value
        if isinstance(value, ast.Name):
            if value.id in aliases:
                continue
            if pending is not None and pending[0] == value.id:
                shape, dtype = _shape_dtype(annotation)
                known = b.defined.get(b.nodes.get(value.id, ""))
                if annotation is None and known is not None:
                    shape, dtype = known.shape, known.dtype  # (``setitem = x`` prints no type)
                b.add(name, CALL, pending[1], shape, dtype, pending[2], line,
                      extra_inputs=[value.id])
                pending = None
                continue
            if value.id in b.nodes:
                b.nodes[name] = b.nodes[value.id]
                continue
        if (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name)
                and value.value.id == "self"):
            # get_attr: a submodule (a higher-order op's body) or a tensor attribute.
            if value.attr in b.submodules:
                continue
            shape, dtype = _shape_dtype(annotation)
            w = weight_name(value.attr) or value.attr.lower()
            b.weight(w, shape, dtype, line)
            b.weights[name] = w
            continue
        target, extra = _target(value, set(b.nodes) | set(b.weights), b.tensors)
        shape, dtype = _shape_dtype(annotation)
        b.add(name, CALL, target, shape, dtype, value, line, extra)
    return graph


def params_names(params: Sequence[ast.arg]) -> set[str]:
    """The names of a forward's inputs."""
    return {a.arg for a in params}


def input_names(payload: str) -> list[str]:
    """The input names of a graph's ``forward``, in order (a Dynamo graph's ``L_x_`` names,
    lower-cased at the first letter the way its nodes are: ``l_x_``)."""
    try:
        tree = ast.parse(graph_code(payload))
    except SyntaxError:
        return []
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef)), None)
    body = cls.body if cls is not None else tree.body
    forward = next((n for n in body if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)
    if forward is None:
        return []
    return [a.arg for a in forward.args.args if a.arg != "self"]


def check_names(graph: Graph) -> None:
    """Every input of every node is an earlier node (the printer's order is topological)."""
    seen: set[str] = set()
    for node in graph.nodes:
        for i in node.inputs:
            if i not in seen:
                raise InputError(f"node {node.name} reads {i} before it is defined",
                                 path=graph.source, line=node.line)
        seen.add(node.name)
