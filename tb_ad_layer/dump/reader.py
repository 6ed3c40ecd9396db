"""Reader for AutoDeploy graph dump text files (``{NNN}_{stage}_{transform}.txt``).

The format is the one TensorRT-LLM's graph writer prints (see DESIGN.md): a short header, then
per GraphModule a banner and one line per FX node. Older writers print no banners (one graph
right after the header) and the oldest prints dtypes without shapes; all three are read. The
syntax of a node line is :mod:`tb_ad_layer.dump.line`'s; this module reads the file's structure,
resolves every reference to a node, a weight/buffer or another section (a ``torch.cond`` branch,
a piecewise-split submodule), and checks that the graph is in SSA form.

Every malformed input raises :class:`~tb_ad_layer.errors.InputError` naming the file and line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, cast

from tb_ad_layer.dump.graph import CALL, OUTPUT, PLACEHOLDER, ROOT, Graph, Node, Weight
from tb_ad_layer.dump.line import LineError, output_references, references, split_call, split_placeholder
from tb_ad_layer.dump.sections import choose_graph
from tb_ad_layer.errors import InputError

BANNER: Final = "=" * 80
_TRAILING_INDEX: Final = re.compile(r"_\d+$")
_IDENT: Final = re.compile(r"[A-Za-z_]\w*")
_ARGS_KEPT: Final = 1000  # characters of raw argument text kept per node, for display
_HEADER: Final = re.compile(r"# (Transform|Stage|GraphModules found): ?(.*)")

_PREVIEW: Final = 60


@dataclass(slots=True)
class DumpFile:
    """A parsed dump file: its header and every GraphModule section it holds, in file order."""

    path: str
    transform: str
    stage: str
    modules: list[Graph]
    size_bytes: int
    declared_modules: int | None = None
    _joined: dict[str, Graph] = field(default_factory=dict, repr=False)

    def module_names(self) -> list[str]:
        """The names of the GraphModule sections, in file order."""
        return [g.module for g in self.modules]

    def select(self, name: str | None = None) -> Graph:
        """The graph to show: the section ``name`` if given, else the model's whole graph (see
        :func:`tb_ad_layer.dump.sections.choose_graph`), with the sections it calls joined in.
        Each answer is kept, so asking again returns the same graph."""
        key = name if name is not None else ""
        graph = self._joined.get(key)
        if graph is None:
            graph = choose_graph(self.path, self.modules, name)
            self._joined[key] = graph
        return graph


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


def _line_at(text: str, pos: int) -> tuple[str, int]:
    """The line of ``text`` that starts at ``pos`` (without its ``\\n``; empty past the end),
    and the position of the next one (beyond ``len(text)`` after the last)."""
    end = text.find("\n", pos)
    if end < 0:
        end = len(text)
    return text[pos:end], end + 1


def _is_node_line(line: str) -> bool:
    return line.startswith("%") or line.startswith("output")


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
        text = _decode(Path(path), data)
        del data  # don't hold the file twice
    else:
        size = len(text)
    # The text is read line by line in place (the line at ``pos`` is line ``i + 1``): a list of
    # all lines would be a second copy of the file, written once and read once.
    transform = stage = ""
    declared: int | None = None
    sections: list[_Section] = []
    i = 0
    pos = 0
    n = len(text)
    # Header: everything up to the first banner, or (older writers) the first node line.
    while pos <= n:
        line, after = _line_at(text, pos)
        line = line.rstrip("\r")
        if line == BANNER or _is_node_line(line):
            break
        m = _HEADER.match(line)
        if m:
            if m.group(1) == "Transform":
                transform = m.group(2).strip()
            elif m.group(1) == "Stage":
                stage = m.group(2).strip()
            else:
                count = m.group(2).strip()
                # Informative only: a count no file could hold (Python also refuses to convert
                # thousands of digits) is not kept.
                declared = int(count) if count.isdigit() and len(count) <= 9 else None
        elif line.strip() and not line.startswith("#"):
            raise InputError(f"not an AutoDeploy graph dump (unexpected text before the first "
                             f"node line: {_preview(line)!r})", path=p, line=i + 1)
        i += 1
        pos = after
    if pos > n:
        raise InputError("not an AutoDeploy graph dump (no '# GraphModule:' section and no "
                         "node line)", path=p)
    if _line_at(text, pos)[0].rstrip("\r") != BANNER:
        # Writers before the banners printed one graph right after the header.
        pos, i = _parse_section(p, text, pos, i, ROOT, sections, transform, stage)
    while pos <= n:
        line, after = _line_at(text, pos)
        line = line.rstrip("\r")
        if line == BANNER:
            title, after_title = _line_at(text, after)
            closing, after_banner = _line_at(text, after_title)
            if after_title > n or not title.startswith("# GraphModule:") \
                    or closing.rstrip("\r") != BANNER:
                raise InputError("malformed GraphModule banner (expected '=' * 80, "
                                 "'# GraphModule: <name>', '=' * 80)", path=p, line=i + 1)
            name = title[len("# GraphModule:"):].strip()
            if any(s.graph.module == name for s in sections):
                raise InputError(f"a second GraphModule section named {name!r}", path=p,
                                 line=i + 2)
            pos, i = _parse_section(p, text, after_banner, i + 3, name, sections, transform,
                                    stage)
        elif line.strip() == "":
            i += 1
            pos = after
        else:
            raise InputError(f"unexpected line outside a GraphModule section: {_preview(line)!r}",
                             path=p, line=i + 1)
    names = {s.graph.module for s in sections}
    for s in sections:
        _resolve(p, s, names)
    return DumpFile(path=p, transform=transform, stage=stage,
                    modules=[s.graph for s in sections], size_bytes=size,
                    declared_modules=declared)


class _Section:
    """A section while it is read: its graph, and what is known of the names it mentions.

    Only node names are looked up while reading: a reference that names no node defined before
    it is a weight/buffer, a called section or an error, decided once every name is known
    (:func:`_resolve`). A weight printed with its metadata is recorded in ``graph.weights`` at
    once, so that the common case, a weight referenced once, costs one lookup in the defined
    nodes and one insertion into the weights.
    """

    def __init__(self, graph: Graph, ascii_text: bool) -> None:
        self.graph = graph
        # Whether the file is ASCII, and so every name in it (CPython knows it of every
        # string: the check is free on the file's text, not on each name cut from it).
        self.ascii_text = ascii_text
        # The nodes defined so far, by name.
        self.defined: dict[str, Node] = {}
        # Names referenced while no node of that name was defined, in order of that first
        # reference.
        self.pending: list[str] = []
        # The line of that first reference for the pending names not in graph.weights at the
        # time (a weight recorded at its first reference keeps the line itself).
        self.bare_line: dict[str, int] = {}
        # Per node: its inputs (node positions).
        self.inputs: list[list[int]] = []
        # Whether some node references a pending name (its weights hold them all until
        # _resolve sorts out called sections).
        self.unresolved = False
        # Each output line's position and references, resolved once every name is known.
        self.outputs: list[tuple[int, list[str]]] = []
        # Per node: the records of its weights, parallel to its weight names, as the line made
        # or found them; None where a name was still unknown there (found by name later).
        self.records: list[tuple[Weight, ...] | None] = []

    def first_line(self, ref: str) -> int:
        """The line of the first reference to the pending name ``ref``."""
        line = self.bare_line.get(ref)
        return line if line is not None else self.graph.weights[ref].line


def _parse_section(path: str, text: str, pos: int, i: int, module: str, out: list[_Section],
                   transform: str, stage: str) -> tuple[int, int]:
    """Parse node lines from position ``pos`` of ``text`` (line ``i + 1``) until the next
    banner or the end; return the position and index of that line."""
    graph = Graph(module=module, source=path, transform=transform, stage=stage)
    nodes = graph.nodes
    weights = graph.weights
    ascii_text = text.isascii()
    section = _Section(graph, ascii_text)
    defined = section.defined
    pending = section.pending
    bare_line = section.bare_line
    inputs_of = section.inputs
    # Per node position: the last node that took it as an input (to keep each input once).
    taken_by: list[int] = []
    # One string object per distinct dtype and shape, and per distinct target (a graph has a
    # few hundred of each).
    interned: dict[str, str] = {}
    targets: dict[str, str] = {}
    # Whether a target is a bare name (a call of another section), per distinct target.
    bare_target: dict[str, bool] = {}
    # The last node's target (and whether it is bare), dtype and shape, as kept.
    last_target = ""
    last_bare = False
    last_dtype = ""
    last_shape = ""
    n = len(text)
    while pos <= n:
        # The line is text[start:stop] (without its '\r\n' or '\n'). A node line is read in
        # place; only the parts kept are copied out of the text.
        start = pos
        end = text.find("\n", pos)
        if end < 0:
            end = n
        stop = end - 1 if end > start and text[end - 1] == "\r" else end
        lineno = i + 1
        node_line = start < stop and text[start] == "%"
        line = ""
        if not node_line:
            line = text[start:stop]
            if line == BANNER:
                break
            if not line or line.isspace() or line.startswith("#"):
                i += 1
                pos = end + 1
                continue
        i += 1
        pos = end + 1
        try:
            if node_line:
                name, kind, target, args, shape, dtype = _node_line(text, start, stop,
                                                                    ascii_text)
            elif line.startswith("output"):
                name, kind, target, args, shape, dtype = "output", OUTPUT, "", \
                    line[len("output"):].strip(), "", ""
            else:
                raise LineError(f"unrecognised line (expected '%name ...' or 'output ...'): "
                                f"{_preview(line)!r}")
        except LineError as e:
            raise InputError(str(e), path=path, line=lineno) from None
        j = len(nodes)
        if kind == OUTPUT and name in defined:
            # An output line defines no name, but one after a node named ``output`` is
            # refused all the same.
            raise _duplicate(path, name, defined[name], lineno)
        inputs: list[int] = []
        unresolved: list[str] | None = None
        # The records of the references in `unresolved` (None for one without metadata).
        found: list[Weight | None] = []
        # Whether every record in `found` is known (no None among them).
        all_found = True
        if kind == OUTPUT:
            section.outputs.append((j, output_references(args)))
        elif args:
            marked, bare = references(args, ascii_text)
            count = len(marked) // 4
            # The ``%`` references, then the bare ones (a reference of the line to its own
            # name finds it undefined, which _resolve reports).
            for r in range(count + len(bare)):
                ref_shape: str | None = None
                if r < count:
                    ref = cast(str, marked[4 * r + 1])
                    ref_shape = marked[4 * r + 2]
                else:
                    ref = bare[r - count]
                node = defined.get(ref)
                if node is not None:
                    p = node.index
                    if taken_by[p] != j:
                        taken_by[p] = j
                        inputs.append(p)
                    continue
                if ref_shape:
                    ref_dtype = cast(str, marked[4 * r + 3])
                    # A MoE dump has one weight per expert and projection but a few dozen
                    # distinct weight shapes: one string of each, so that the weights' records
                    # share them (memory, and the cache lines every later pass over the
                    # weights reads). A weight is referenced once as a rule: its record is
                    # made before one probe of the table both looks for and enters it.
                    weight = Weight(ref, interned.setdefault(ref_shape, ref_shape),
                                    interned.setdefault(ref_dtype, ref_dtype), lineno)
                    entered = weights.setdefault(ref, weight)
                    if entered is weight and (not bare_line or ref not in bare_line):
                        pending.append(ref)
                    found.append(entered)
                else:
                    if ref not in bare_line and ref not in weights:
                        bare_line[ref] = lineno
                        pending.append(ref)
                    found.append(None)
                    all_found = False
                if unresolved is None:
                    unresolved = [ref]
                else:
                    unresolved.append(ref)
        if kind == CALL:
            # Lines of one op come in runs (a MoE layer's expert weights): a target equal to
            # the last one is taken with one comparison instead of two lookups.
            if target == last_target:
                target = last_target
                is_bare = last_bare
            else:
                kept = targets.get(target)
                if kept is None:
                    is_bare = _IDENT.fullmatch(target) is not None
                    bare_target[target] = is_bare
                    targets[target] = target
                else:
                    target = kept
                    is_bare = bare_target[target]
                last_target = target
                last_bare = is_bare
            if is_bare:
                # A call of another section (a piecewise-split submodule) binds its
                # placeholders to these arguments by position: keep them whole.
                graph.call_args[j] = args
        if dtype != last_dtype:
            last_dtype = interned.setdefault(dtype, dtype)
        dtype = last_dtype
        if shape != last_shape:
            last_shape = interned.setdefault(shape, shape)
        shape = last_shape
        if len(args) > _ARGS_KEPT:
            args = f"{args[:_ARGS_KEPT]}... (+{len(args) - _ARGS_KEPT:,} characters)"
        inputs_of.append(inputs)
        taken_by.append(-1)
        weight_names: tuple[str, ...] = ()
        records: tuple[Weight, ...] | None = ()
        if unresolved is not None:
            section.unresolved = True
            weight_names = _once(unresolved)
            records = None
            if all_found and len(weight_names) == len(found):
                records = tuple(cast("list[Weight]", found))
        section.records.append(records)
        # (Most nodes of a MoE dump read weights only: no list of input names for them.)
        input_names = tuple([nodes[p].name for p in inputs]) if inputs else ()
        node = Node(name, kind, target, shape, dtype, input_names, weight_names, args,
                    lineno, j)
        if kind != OUTPUT:
            # Defined once the references are read (one of the line to its own name finds it
            # undefined, which _resolve reports); one probe of the table both defines the name
            # and finds an earlier node of that name, and nothing read from the line since can
            # raise an error that would have to come first.
            first = defined.setdefault(name, node)
            if first is not node:
                raise _duplicate(path, name, first, lineno)
        nodes.append(node)
    out.append(section)
    return pos, i


def _duplicate(path: str, name: str, first: Node, lineno: int) -> InputError:
    return InputError(f"duplicate node name %{name} (first defined on line {first.line})",
                      path=path, line=lineno)


def _once(names: list[str]) -> tuple[str, ...]:
    """``names`` without repeats, in order."""
    if len(names) == 1:
        return (names[0],)
    if len(names) == 2:
        return (names[0],) if names[0] == names[1] else (names[0], names[1])
    return tuple(dict.fromkeys(names))


def _node_line(text: str, start: int, end: int, ascii_text: bool
               ) -> tuple[str, str, str, str, str, str]:
    """``(name, kind, target, args, shape, dtype)`` of the ``%...`` line ``text[start:end]``
    (``ascii_text``: ``text`` is ASCII)."""
    eq = text.find(" = ", start, end)
    # A call line when no ' : ' comes before its ' = ' (only that stretch is searched: the
    # arguments of a call hold a ' : ' per reference).
    if eq > start and text.find(" : ", start, eq + 2) < 0:
        name = text[start + 1:eq]
        if not _is_name(name, ascii_text):
            raise LineError(f"bad node name {_preview(name)!r}")
        target, args, shape, dtype = split_call(text, eq + 3, end, start)
        if not target:
            raise LineError(f"%{name} calls an empty target")
        return name, CALL, target, args, shape, dtype
    colon = text.find(" : ", start, end)
    if colon < 0:
        raise LineError(f"a placeholder line needs '%name : <shape> : <dtype>': "
                        f"{_preview(text[start:end])!r}")
    name = text[start + 1:colon]
    if not _is_name(name, ascii_text):
        raise LineError(f"bad placeholder name {_preview(name)!r}")
    shape, dtype = split_placeholder(text[colon + 3:end])
    return name, PLACEHOLDER, "", "", shape, dtype


def _is_name(text: str, ascii_text: bool = False) -> bool:
    """``_IDENT.fullmatch(text)``; for ASCII text (every real name) that is what
    ``str.isidentifier`` says, without running the pattern. ``ascii_text``: ``text`` is known
    to be ASCII."""
    if ascii_text or text.isascii():
        return text.isidentifier()
    return _IDENT.fullmatch(text) is not None


def _resolve(path: str, section: _Section, sections: set[str]) -> None:
    """Split every node's references into node inputs, weights and called sections, now that
    all names are known, and check that every node reads only nodes defined before it.

    A never-defined reference is a weight/buffer, unless it names another section of the file
    (a ``torch.cond`` branch) or follows the graph's own node naming (``getitem_99`` where
    ``getitem`` nodes exist): that is a missing node, an error.
    """
    graph = section.graph
    nodes = graph.nodes
    weights = graph.weights
    defined = section.defined
    bare_line = section.bare_line
    subgraphs = _subgraph_names(graph.module, sections)
    if section.pending:
        late = _defined_late(section)
        bases: set[str] | None = None
        for ref in section.pending:
            node = defined.get(ref) if late else None
            if node is not None:
                lineno = section.first_line(ref)
                if node.line == lineno:
                    raise InputError(f"%{ref} reads its own value (a node cannot be its own "
                                     f"input)", path=path, line=lineno)
                raise InputError(f"%{ref} is used before its definition on line "
                                 f"{node.line} (not in SSA order)", path=path, line=lineno)
            if subgraphs and ref in subgraphs:
                continue
            if bases is None:
                bases = {_node_base(node.name, section.ascii_text) for node in nodes
                         if node.kind == CALL}
            if (_node_base(ref, section.ascii_text) if ref[-1].isdigit() else ref) in bases:
                raise InputError(f"reference to undefined node %{ref}",
                                 path=path, line=section.first_line(ref))
            line = bare_line.get(ref)
            if line is not None and ref not in weights:
                weights[ref] = Weight(ref, line=line)
        if subgraphs:
            for ref in [w for w in weights if w in subgraphs]:
                del weights[ref]  # metadata printed beside a section reference
    if subgraphs and section.unresolved:
        # The references of a node to called sections are not weights.
        for node in nodes:
            if node.kind == OUTPUT or not any(ref in subgraphs for ref in node.weights):
                continue
            node.subgraphs = tuple(subgraphs[ref] for ref in node.weights if ref in subgraphs)
            node.weights = tuple(ref for ref in node.weights if ref not in subgraphs)
            section.records[node.index] = None
    for j, refs in section.outputs:
        if refs:
            _resolve_output(section, j, refs, subgraphs)
            section.records[j] = None
    graph.set_input_positions(section.inputs)
    graph.set_weight_records(_weight_records(section))


def _weight_records(section: _Section) -> list[tuple[Weight, ...]]:
    """Every node's weight records: those its line gave, the others (a name read without
    metadata, a node whose weights _resolve changed) found by name now that all are known."""
    weights = section.graph.weights
    nodes = section.graph.nodes
    out: list[tuple[Weight, ...]] = []
    for j, records in enumerate(section.records):
        if records is None:
            records = tuple([weights[w] for w in nodes[j].weights])
        out.append(records)
    return out


def _defined_late(section: _Section) -> bool:
    """Whether a node of ``section`` defines a name referenced before it.

    Until :func:`_resolve` enters the weights referenced without metadata, the names referenced
    before any definition are the keys of ``graph.weights`` and ``bare_line``. The smaller of
    the two sides is walked, each name probing the other: a MoE dump references twice as many
    weights as it has nodes, and only a damaged dump answers yes.
    """
    defined = section.defined
    if len(section.pending) <= len(defined):
        for ref in section.pending:
            if ref in defined:
                return True
        return False
    weights = section.graph.weights
    bare_line = section.bare_line
    for name in defined:
        if name in weights or name in bare_line:
            return True
    return False


def _resolve_output(section: _Section, j: int, refs: list[str], subgraphs: dict[str, str]
                    ) -> None:
    """The inputs, weights and called sections of the output line at position ``j`` (an
    output reads any node of its section, also one printed after it)."""
    graph = section.graph
    node = graph.nodes[j]
    inputs: list[int] = []
    input_names: list[str] = []
    wts: list[str] = []
    subs: list[str] = []
    for ref in dict.fromkeys(refs):
        found = section.defined.get(ref)
        if found is not None:
            inputs.append(found.index)
            input_names.append(found.name)
        elif ref in subgraphs:
            subs.append(subgraphs[ref])
        elif ref in graph.weights:
            wts.append(ref)
    section.inputs[j] = inputs
    graph.outputs = node.inputs = tuple(input_names)
    node.weights = tuple(wts)
    if subs:
        node.subgraphs = tuple(subs)


def _node_base(name: str, ascii_text: bool = False) -> str:
    """``name`` without a trailing ``_<digits>`` (``getitem_99`` -> ``getitem``);
    ``ascii_text``: ``name`` is known to be ASCII."""
    if ascii_text or name.isascii():
        # (The digits after the last '_', cut out: most are a few characters, where
        # name.rstrip would copy all the rest.)
        k = name.rfind("_")
        if k < 0 or k == len(name) - 1 or not name[-1].isdigit() \
                or not name[k + 1:].isdigit():
            return name
        return name[:k]
    return _TRAILING_INDEX.sub("", name)


def _subgraph_names(module: str, sections: set[str]) -> dict[str, str]:
    """Names by which a section refers to other sections: ``true_graph_0`` from ``(root)``,
    ``submod_3`` from ``piecewise.split_gm`` (the section ``piecewise.split_gm.submod_3``)."""
    prefix = "" if module == ROOT else module + "."
    out: dict[str, str] = {}
    for name in sections:
        if name == module:
            continue
        if prefix and name.startswith(prefix) and "." not in name[len(prefix):]:
            out[name[len(prefix):]] = name
        elif "." not in name and name not in out:
            out[name] = name
    return out
