"""Pick the graph of a dump file to show, joining the sections it calls into one graph.

A dump file can hold several GraphModule sections (DESIGN.md): a whole model
(``monolithic.model``, ``(root)``, ``model``, ``captured_model``), a piecewise split whose root
calls ``submod_N`` sections with the weights arriving as placeholders, and ``torch.cond`` branch
sections. The layers of a split model are found across its sections, so a root that calls
sections is *joined*: each call of a section is replaced by that section's nodes, its
placeholders read what the call passes in their place (a weight passed in stays a weight), and
``getitem(call, k)`` reads the section's k-th output. The nodes of a called section are named
``<call>.<node>`` (``submod_2.add_tensor``), unique in the joined graph, and keep the section
they came from in :attr:`Node.section`; the split's plumbing (the calls and their getitems)
disappears, since it computes nothing. ``torch.cond`` branches are alternatives, not steps: they
stay sections of their own, and the ``cond`` node lists them in :attr:`Node.subgraphs`.
"""
from __future__ import annotations

from dataclasses import dataclass

from tb_ad_layer.dump.graph import OUTPUT, PLACEHOLDER, ROOT, Graph, Node, Weight
from tb_ad_layer.dump.line import REF, bracket_problem
from tb_ad_layer.errors import InputError

PREFERRED_MODULE = "monolithic.model"
_GETITEM = "<built-in function getitem>"
_MAX_DEPTH = 32


def choose_graph(path: str, modules: list[Graph], name: str | None = None) -> Graph:
    """The section ``name`` (or, by default, ``monolithic.model``, else the largest section that
    no other section calls), with the sections it calls joined in.

    Args:
        path: the dump file the sections were read from, to name it in errors.
        modules: every GraphModule section of that file, in file order.
        name: the section to show; ``None`` chooses as above.
    Raises:
        InputError: no section is named ``name``, or none holds an operation, or a section
            calls itself.
    """
    by_name = {g.module: g for g in modules}
    if name is not None:
        if name not in by_name:
            raise InputError(f"no GraphModule named {name!r}; this file has: "
                             f"{', '.join(g.module for g in modules)}", path=path,
                             field="--module")
        return _join(path, by_name[name], by_name)
    if PREFERRED_MODULE in by_name:
        return _join(path, by_name[PREFERRED_MODULE], by_name)
    called: set[str] = set()
    for g in modules:
        for callee in _callees(g, by_name).values():
            called.add(callee)
        for node in g.nodes:
            if node.subgraphs:
                called.update(node.subgraphs)
    best: Graph | None = None
    best_calls = -1
    for g in modules:
        if g.module in called:
            continue
        calls = _call_count(g, by_name, 0)
        if calls > best_calls:
            best, best_calls = g, calls
    if best is None or best_calls <= 0:
        raise InputError("no GraphModule section holds any operation", path=path)
    return _join(path, best, by_name)


def _section_name(caller: str, target: str) -> str:
    return target if caller == ROOT else f"{caller}.{target}"


def _callees(graph: Graph, by_name: dict[str, Graph]) -> dict[int, str]:
    """Positions of the nodes of ``graph`` that call another section, and that section's name."""
    out: dict[int, str] = {}
    for j in graph.call_args:
        node = graph.nodes[j]
        for name in (_section_name(graph.module, node.target), node.target):
            if name in by_name and name != graph.module:
                out[j] = name
                break
    return out


def _call_count(graph: Graph, by_name: dict[str, Graph], depth: int) -> int:
    callees = _callees(graph, by_name)
    total = graph.call_count - len(callees)
    if depth < _MAX_DEPTH:
        for callee in callees.values():
            total += _call_count(by_name[callee], by_name, depth + 1)
    return total


@dataclass(slots=True)
class _Value:
    """What a name of a section stands for in the joined graph: a node or a weight."""

    node: str = ""
    weight: str = ""


def _join(path: str, root: Graph, by_name: dict[str, Graph]) -> Graph:
    if not _callees(root, by_name):
        return root
    out = Graph(module=root.module, source=root.source, transform=root.transform,
                stage=root.stage)
    joiner = _Joiner(path, by_name, out)
    env = joiner.emit(root, "", {}, 0, [root.module])
    out.outputs = tuple(v.node for name in root.outputs if (v := env.get(name)) and v.node)
    return out


class _Joiner:
    """Emits the nodes of a section into the joined graph, calls of sections inlined."""

    def __init__(self, path: str, by_name: dict[str, Graph], out: Graph) -> None:
        self.path = path
        self.by_name = by_name
        self.out = out

    def emit(self, graph: Graph, prefix: str, bound: dict[str, _Value], depth: int,
             stack: list[str]) -> dict[str, _Value]:
        """Emit ``graph``'s nodes with names prefixed by ``prefix``; ``bound`` gives what its
        placeholders stand for. Returns what each of its names stands for."""
        env: dict[str, _Value] = {}
        callees = _callees(graph, self.by_name)
        # Outputs of each inlined call, for the getitems that read them.
        results: dict[str, list[_Value]] = {}
        section = graph.module if prefix else ""
        for node in graph.nodes:
            if node.kind == OUTPUT:
                if prefix:
                    continue
                self._append(node, node.name, env, section)
                continue
            if node.kind == PLACEHOLDER and node.name in bound:
                env[node.name] = bound[node.name]
                continue
            if node.index in callees:
                callee = self.by_name[callees[node.index]]
                if callee.module in stack or depth >= _MAX_DEPTH:
                    raise InputError(f"GraphModule {callee.module!r} calls itself (through "
                                     f"{' -> '.join(stack)})", path=self.path, line=node.line)
                args = self._arguments(graph, node, env)
                inner = callee.nodes
                params = [n.name for n in inner if n.kind == PLACEHOLDER]
                # Not strict: a call may pass fewer arguments than the section has placeholders
                # (one left to its default); those left unbound stay placeholders of the joined
                # graph, and an argument beyond the last placeholder binds nothing.
                binding = {p: v for p, v in zip(params, args, strict=False) if v is not None}
                sub_env = self.emit(callee, f"{prefix}{node.name}.", binding, depth + 1,
                                    stack + [callee.module])
                values = [sub_env.get(o, _Value()) for o in callee.outputs]
                results[node.name] = values
                if len(values) == 1:
                    env[node.name] = values[0]
                continue
            if node.target == _GETITEM and node.inputs and node.inputs[0] in results:
                k = _constant_index(node.args)
                values = results[node.inputs[0]]
                if k is not None and 0 <= k < len(values) and (values[k].node or values[k].weight):
                    env[node.name] = values[k]
                    continue
            self._append(node, prefix + node.name, env, section)
        return env

    def _append(self, node: Node, name: str, env: dict[str, _Value], section: str) -> None:
        inputs: list[str] = []
        weights: list[str] = []
        for i in node.inputs:
            v = env.get(i)
            if v is None:
                continue
            if v.node:
                inputs.append(v.node)
            elif v.weight:
                weights.append(v.weight)
        weights.extend(node.weights)
        for w in weights:
            if w not in self.out.weights:
                src = self._weight(w)
                self.out.weights[w] = src
        copy = Node(name=name, kind=node.kind, target=node.target, shape=node.shape,
                    dtype=node.dtype, inputs=tuple(dict.fromkeys(inputs)),
                    weights=tuple(dict.fromkeys(weights)), args=node.args, line=node.line,
                    index=len(self.out.nodes), subgraphs=node.subgraphs, section=section)
        self.out.nodes.append(copy)
        env[node.name] = _Value(node=name)

    def _weight(self, name: str) -> Weight:
        best = Weight(name)
        for g in self.by_name.values():
            w = g.weights.get(name)
            if w is not None and (w.shape != "?" or best.shape == "?"):
                best = w
                if w.shape != "?":
                    break
        return best

    def _arguments(self, graph: Graph, node: Node, env: dict[str, _Value]) -> list[_Value | None]:
        """What each positional argument of a call of a section stands for (None: a constant)."""
        text = graph.call_args.get(node.index, "")
        out: list[_Value | None] = []
        for item in _top_level_items(text):
            m = REF.fullmatch(item)
            if m is not None:
                ref = m.group(1)
                value = env.get(ref)
                if value is None and ref in graph.weights:
                    value = _Value(weight=ref)
                out.append(value)
            else:
                out.append(None)
        return out


def _top_level_items(text: str) -> list[str]:
    """The comma-separated items of an argument text that are not inside brackets."""
    if not text.strip():
        return []
    if bracket_problem(text):
        return [text]
    items: list[str] = []
    depth = 0
    start = 0
    quote = ""
    for k, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:k].strip())
            start = k + 1
    items.append(text[start:].strip())
    return items


def _constant_index(args: str) -> int | None:
    """The integer index of ``getitem(%x : ..., k)``."""
    tail = args.rsplit(",", 1)
    if len(tail) != 2:
        return None
    text = tail[1].strip()
    return int(text) if text.isdigit() else None
