"""Reader for AutoDeploy graph dump text files (``{NNN}_{stage}_{transform}.txt``).

The format is the one TensorRT-LLM's graph writer prints (see DESIGN.md): a short header, then
per GraphModule a banner and one line per FX node. Parsing is a single pass over the lines with
a few compiled regular expressions, so throughput is bound by the regex engine, not by Python
per character; long MoE lines with hundreds of list arguments cost one ``findall`` each.

Every malformed input raises :class:`~tb_ad_layer.errors.InputError` naming the file and line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Sequence

from tb_ad_layer.dump.graph import CALL, OUTPUT, PLACEHOLDER, Graph, Node, Weight
from tb_ad_layer.errors import InputError

BANNER: Final = "=" * 80
PREFERRED_MODULE: Final = "monolithic.model"

# `%name` optionally followed by its printed metadata ` : <shape> : <dtype>`. Shapes and dtypes
# of tuple outputs are parenthesised lists; neither ever contains " : ".
_REF: Final = re.compile(
    r"%([A-Za-z_]\w*)(?: : (\([^()]*\)|[^\s,()\[\]:]+) : (\([^()]*\)|[\w./]+))?"
)
# Innermost list: node references inside list args are printed bare (``[getitem_3, view_2]``).
_GROUP: Final = re.compile(r"\[([^\[\]]*)\]")
# A bare identifier that is not part of a dotted name (torch.bfloat16) or a call.
_BARE: Final = re.compile(r"(?<![\w.%'\"])([A-Za-z_]\w*)(?![\w.(])")
_QUOTED: Final = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_NOT_REFS: Final = frozenset({"None", "True", "False", "inf", "nan", "Ellipsis"})
_SYMBOL: Final = re.compile(r"[su]\d+$")
_TRAILING_INDEX: Final = re.compile(r"_\d+$")
_ARGS_KEPT: Final = 1000  # characters of raw argument text kept per node, for display
_HEADER: Final = re.compile(r"# (Transform|Stage|GraphModules found): ?(.*)")

_PREVIEW: Final = 60


@dataclass(slots=True)
class DumpFile:
    """A parsed dump file: its header and every GraphModule section it holds."""

    path: str
    transform: str
    stage: str
    modules: list[Graph]
    size_bytes: int

    def module_names(self) -> list[str]:
        return [g.module for g in self.modules]

    def select(self, name: str | None = None) -> Graph:
        """The GraphModule to show: ``name`` if given, else ``monolithic.model``, else the
        section with the most call nodes."""
        if name is not None:
            for g in self.modules:
                if g.module == name:
                    return g
            raise InputError(
                f"no GraphModule named {name!r}; this file has: {', '.join(self.module_names())}",
                path=self.path, field="--module")
        for g in self.modules:
            if g.module == PREFERRED_MODULE:
                return g
        best = max(self.modules, key=lambda g: g.call_count)
        if best.call_count == 0:
            raise InputError("no GraphModule section holds any operation", path=self.path)
        return best


def _meta_ok(text: str) -> bool:
    """A printed shape/dtype: one token, or a parenthesised tuple (cheap check, hot path)."""
    if not text:
        return False
    if text[0] == "(":
        return text[-1] == ")"
    return " " not in text and "," not in text and ")" not in text


def _preview(line: str) -> str:
    return line[:_PREVIEW] + ("..." if len(line) > _PREVIEW else "")


def read_text(path: str | Path) -> str:
    """Read a dump file as UTF-8 text, refusing binary and unreadable files with a clear error."""
    return _decode(Path(path), _read_bytes(path))


def _read_bytes(path: str | Path) -> bytes:
    p = Path(path)
    try:
        data = p.read_bytes()
    except IsADirectoryError:
        raise InputError("is a directory, expected a dump file", path=p) from None
    except OSError as e:
        raise InputError(f"cannot read file: {e.strerror or e}", path=p) from None
    if not data or data.isspace():  # (not data.strip(): that copies the whole file)
        raise InputError("empty file, expected an AutoDeploy graph dump", path=p)
    nul = data.find(b"\0", 0, 1 << 16)
    if nul >= 0:
        raise InputError("binary file, expected an AutoDeploy graph dump (text)", path=p,
                         line=data.count(b"\n", 0, nul) + 1)
    return data


def _decode(p: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError("not UTF-8 text", path=p, line=data.count(b"\n", 0, e.start) + 1) from None


def read_header(path: str | Path) -> tuple[str, str]:
    """Cheaply read ``(transform, stage)`` from the first lines of a dump file."""
    transform = stage = ""
    try:
        with open(path, "rb") as f:
            for _ in range(8):
                raw = f.readline(4096)
                if not raw:
                    break
                m = _HEADER.match(raw.decode("utf-8", "replace").rstrip("\r\n"))
                if m and m.group(1) == "Transform":
                    transform = m.group(2).strip()
                elif m and m.group(1) == "Stage":
                    stage = m.group(2).strip()
    except OSError as e:
        raise InputError(f"cannot read file: {e.strerror or e}", path=path) from None
    return transform, stage


def parse_dump(path: str | Path, text: str | None = None) -> DumpFile:
    """Parse one dump file into its GraphModule sections.

    Args:
        path: the file; read here unless ``text`` is given (``path`` then only names errors).
        text: the file's contents, if already read.
    """
    p = str(path)
    if text is None:
        data = _read_bytes(path)
        size = len(data)
        lines = _decode(Path(path), data).split("\n")
        del data
    else:
        size = len(text)
        lines = text.split("\n")
    del text  # the lines are all that is needed; don't hold the file twice
    transform = stage = ""
    modules: list[Graph] = []
    i = 0
    n = len(lines)
    # Header: everything up to the first banner.
    while i < n and lines[i].rstrip("\r") != BANNER:
        line = lines[i].rstrip("\r")
        m = _HEADER.match(line)
        if m:
            if m.group(1) == "Transform":
                transform = m.group(2).strip()
            elif m.group(1) == "Stage":
                stage = m.group(2).strip()
        elif line.strip() and not line.startswith("#"):
            raise InputError(f"not an AutoDeploy graph dump (unexpected text before the first "
                             f"GraphModule banner: {_preview(line)!r})", path=p, line=i + 1)
        i += 1
    if i >= n:
        raise InputError("not an AutoDeploy graph dump (no '# GraphModule:' section)", path=p)
    while i < n:
        line = lines[i].rstrip("\r")
        if line == BANNER:
            if i + 2 >= n or not lines[i + 1].startswith("# GraphModule:") \
                    or lines[i + 2].rstrip("\r") != BANNER:
                raise InputError("malformed GraphModule banner (expected '=' * 80, "
                                 "'# GraphModule: <name>', '=' * 80)", path=p, line=i + 1)
            name = lines[i + 1][len("# GraphModule:"):].strip()
            i = _parse_section(p, lines, i + 3, name, modules, transform, stage)
        elif line.strip() == "":
            i += 1
        else:
            raise InputError(f"unexpected line outside a GraphModule section: {_preview(line)!r}",
                             path=p, line=i + 1)
    return DumpFile(path=p, transform=transform, stage=stage, modules=modules, size_bytes=size)


def _parse_section(path: str, lines: Sequence[str], start: int, module: str, out: list[Graph],
                   transform: str, stage: str) -> int:
    """Parse node lines from ``start`` until the next banner or the end; return that index."""
    graph = Graph(module=module, source=path, transform=transform, stage=stage)
    nodes = graph.nodes
    defined: dict[str, int] = {}          # name -> line
    weights = graph.weights
    pending: dict[str, int] = {}          # name referenced before (or without) a definition -> line
    raw_refs: list[list[str]] = []
    n = len(lines)
    i = start
    while i < n:
        line = lines[i]
        if line.endswith("\r"):
            line = line[:-1]
        lineno = i + 1
        if line == BANNER:
            break
        i += 1
        if not line or line.isspace() or line.startswith("#"):
            continue
        if line.startswith("%"):
            parts = line.rsplit(" : ", 2)
            if len(parts) != 3:
                raise InputError(f"truncated or malformed node line (expected "
                                 f"' : <shape> : <dtype>'): {_preview(line)!r}",
                                 path=path, line=lineno)
            head, shape, dtype = parts
            if not _meta_ok(shape) or not _meta_ok(dtype):
                raise InputError(f"truncated or malformed node metadata "
                                 f"{_preview(shape + ' : ' + dtype)!r}", path=path, line=lineno)
            eq = head.find(" = ")
            if eq < 0:
                name = head[1:]
                kind, target, args = PLACEHOLDER, "", ""
                if not name.isidentifier():
                    raise InputError(f"bad placeholder name {_preview(name)!r}",
                                     path=path, line=lineno)
            else:
                name = head[1:eq]
                call = head[eq + 3:]
                paren = call.find("(")
                if paren <= 0 or not call.endswith(")"):
                    raise InputError(f"truncated or malformed call (expected "
                                     f"'<target>(<args>)'): {_preview(line)!r}",
                                     path=path, line=lineno)
                kind, target, args = CALL, call[:paren], call[paren + 1:-1]
                if not name.isidentifier():
                    raise InputError(f"bad node name {_preview(name)!r}", path=path, line=lineno)
                if args.count("(") != args.count(")") or args.count("[") != args.count("]"):
                    raise InputError(f"unbalanced brackets in arguments of %{name} "
                                     f"(truncated line?)", path=path, line=lineno)
        elif line.startswith("output"):
            rest = line[len("output"):].strip()
            if rest.startswith("(") and rest.endswith(")"):
                rest = rest[1:-1]
            name, kind, target, args, shape, dtype = "output", OUTPUT, "", rest, "", ""
        else:
            raise InputError(f"unrecognised line (expected '%name ...' or 'output ...'): "
                             f"{_preview(line)!r}", path=path, line=lineno)
        if name in defined:
            raise InputError(f"duplicate node name %{name} (first defined on line "
                             f"{defined[name]})", path=path, line=lineno)
        idx = len(nodes)
        refs: list[str] = []
        if args:
            for ref, shape_, dtype_ in _REF.findall(args):
                refs.append(ref)
                if ref not in defined:
                    pending.setdefault(ref, lineno)
                    if shape_ and ref not in weights:
                        weights[ref] = Weight(ref, shape_, dtype_)
            if "[" in args:
                cleaned = _QUOTED.sub(" ", args) if "'" in args or '"' in args else args
                for grp in _GROUP.findall(cleaned):
                    if "%" in grp:
                        grp = _REF.sub(" ", grp)
                    found = _BARE.findall(grp)
                    if not found:
                        continue
                    refs.extend(found)
                    # Set difference runs in C: long expert-weight lists cost little here (one
                    # argument each: with several, CPython iterates over the dicts instead). New
                    # names are then taken in list order, so that graph.weights' order does not
                    # depend on string hashing (PYTHONHASHSEED).
                    new = set(found).difference(defined).difference(pending)
                    if new:
                        for ref in found:
                            if ref in new and ref not in pending and ref not in _NOT_REFS \
                                    and not _SYMBOL.match(ref):
                                pending[ref] = lineno
        if kind != OUTPUT:
            defined[name] = lineno
        raw_refs.append(refs)
        if len(args) > _ARGS_KEPT:
            args = f"{args[:_ARGS_KEPT]}... (+{len(args) - _ARGS_KEPT:,} characters)"
        nodes.append(Node(name=name, kind=kind, target=target, shape=shape, dtype=dtype,
                          inputs=(), weights=(), args=args, line=lineno, index=idx))
        if kind == OUTPUT:
            graph.outputs = tuple(dict.fromkeys(refs))
    _resolve(path, graph, defined, pending, raw_refs)
    out.append(graph)
    return i


def _resolve(path: str, graph: Graph, defined: dict[str, int], pending: dict[str, int],
             raw_refs: list[list[str]]) -> None:
    """Split every node's references into node inputs and weights, now that all names are known.

    A never-defined reference is a weight/buffer, unless its name follows the graph's own node
    naming (``getitem_99`` where ``getitem`` nodes exist): that is a missing node, an error.
    """
    weights = graph.weights
    if pending:
        bases = {_TRAILING_INDEX.sub("", n.name) for n in graph.nodes if n.kind == CALL}
        for ref, lineno in pending.items():
            if ref in defined:
                if defined[ref] > lineno:
                    raise InputError(f"%{ref} is used before its definition on line "
                                     f"{defined[ref]}", path=path, line=lineno)
                continue
            base = _TRAILING_INDEX.sub("", ref) if ref[-1].isdigit() else ref
            if base in bases:
                raise InputError(f"reference to undefined node %{ref}", path=path, line=lineno)
            if ref not in weights:
                weights[ref] = Weight(ref)
    for node, refs in zip(graph.nodes, raw_refs):
        if not refs:
            continue
        inputs: list[str] = []
        wts: list[str] = []
        for r in dict.fromkeys(refs):
            if r in defined:
                inputs.append(r)
            elif r in weights:
                wts.append(r)
        node.inputs = tuple(inputs)
        node.weights = tuple(wts)
