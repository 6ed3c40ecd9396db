"""The in-memory form of one GraphModule section of an AutoDeploy graph dump.

A :class:`Graph` is an ordered list of :class:`Node` s (the dump's line order, which is FX's
topological order) plus the weights/buffers the nodes reference. Weights are never nodes: the
dump does not print ``get_attr`` lines, so a weight is known only by the references to it.

Edges are implicit: ``node.inputs`` names the producing nodes, in argument order, each once.
:meth:`Graph.consumers` gives the reverse direction.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

PLACEHOLDER: Final = "placeholder"
CALL: Final = "call"
OUTPUT: Final = "output"
#: The name of the one graph of a dump printed without GraphModule banners (writers before the
#: banners); a section it calls is named without a prefix.
ROOT: Final = "(root)"


class Weight:
    """A parameter or buffer: a reference that no line of the graph defines.

    ``name`` is the dotted module path with ``.`` replaced by ``_``
    (``model_layers_5_mlp_gate_weight``); ``shape``/``dtype`` are as printed at the reference
    (``?``/``unknown`` when it was only seen inside a list argument, which prints no metadata);
    ``line`` is the line of its first reference.
    """

    # A plain class rather than a dataclass: compiled, its constructor is native code (a
    # dataclass's generated ``__init__`` stays interpreted), and a MoE dump has one weight per
    # expert and projection.
    __slots__ = ("name", "shape", "dtype", "line")

    def __init__(self, name: str, shape: str = "?", dtype: str = "unknown", line: int = 0
                 ) -> None:
        self.name = name
        self.shape = shape
        self.dtype = dtype
        self.line = line

    def __repr__(self) -> str:
        return (f"Weight(name={self.name!r}, shape={self.shape!r}, dtype={self.dtype!r}, "
                f"line={self.line})")


class Node:
    """One FX node line.

    Attributes:
        name: SSA name without the ``%``.
        kind: :data:`PLACEHOLDER`, :data:`CALL` or :data:`OUTPUT`.
        target: the call target as printed (``aten.mm.default``,
            ``<built-in function getitem>``, a method name); empty for placeholders/output.
        shape: output shape as printed (``2x4x7168``, ``(8x8, 8x8)``, ``scalar``, ``?``).
        dtype: output dtype as printed (``torch.bfloat16``, ``(torch.bfloat16, None)``, ``N/A``).
        inputs: names of the nodes this node consumes, in argument order, each once.
        weights: names of the weights/buffers this node consumes, in argument order, each once.
        args: the raw positional-argument text, for display.
        line: 1-based line number in the dump file.
        index: position in :attr:`Graph.nodes`.
        subgraphs: the sections this node refers to as values (``torch.cond`` branches), by
            section name.
        section: the section the node was read from, when the graph joins several (a
            piecewise-split model); empty for the graph's own section.
    """

    # A plain class for the same reason as Weight: one per node line.
    __slots__ = ("name", "kind", "target", "shape", "dtype", "inputs", "weights", "args", "line",
                 "index", "subgraphs", "section")

    def __init__(self, name: str, kind: str, target: str, shape: str, dtype: str,
                 inputs: tuple[str, ...], weights: tuple[str, ...], args: str, line: int,
                 index: int = -1, subgraphs: tuple[str, ...] = (), section: str = "") -> None:
        self.name = name
        self.kind = kind
        self.target = target
        self.shape = shape
        self.dtype = dtype
        self.inputs = inputs
        self.weights = weights
        self.args = args
        self.line = line
        self.index = index
        self.subgraphs = subgraphs
        self.section = section

    def __repr__(self) -> str:
        return (f"Node(name={self.name!r}, kind={self.kind!r}, target={self.target!r}, "
                f"shape={self.shape!r}, dtype={self.dtype!r}, inputs={self.inputs!r}, "
                f"weights={self.weights!r}, line={self.line}, index={self.index})")

    @property
    def op_name(self) -> str:
        """A short, friendly op name:
        ``auto_deploy.torch_linear_simple.default`` -> ``torch_linear_simple``."""
        return friendly_op_name(self.target) if self.kind == CALL else self.kind


# friendly_op_name of every target seen, per distinct target string: a graph has a few hundred
# targets and up to millions of nodes. Emptied when it grows past _FRIENDLY_MAX (targets that
# print an address, ``<function f at 0x...>``, differ per process).
_FRIENDLY: Final[dict[str, str]] = {}
_FRIENDLY_MAX: Final = 1 << 14


def friendly_op_name(target: str) -> str:
    """Strip namespace and overload from an FX target for display and matching:
    ``aten.to.dtype`` -> ``to``, ``<built-in function getitem>`` -> ``getitem``,
    ``<function residual_add at 0x...>`` -> ``residual_add``,
    ``<function _insert_fused_gemm.<locals>.split_output at 0x...>`` -> ``split_output``,
    ``functools.partial(<function add at 0x...>, alpha=1)`` -> ``add``,
    ``model.layers.0.self_attn.q_proj`` (a submodule) -> ``q_proj``."""
    name = _FRIENDLY.get(target)
    if name is None:
        name = _friendly_op_name(target)
        if len(_FRIENDLY) >= _FRIENDLY_MAX:
            _FRIENDLY.clear()
        _FRIENDLY[target] = name
    return name


def _friendly_op_name(target: str) -> str:
    if target.startswith("functools.partial(") and len(target) > len("functools.partial(("):
        inner = target[len("functools.partial("):]
        end = inner.find(">") + 1 if inner.startswith("<") else inner.find(",")
        return _friendly_op_name(inner[:end] if end > 0 else inner.rstrip(")"))
    if target.startswith("<") and ">" in target:
        # The whole repr: a qualified name can hold "<locals>" (AutoDeploy's fuse_gemms splits
        # with ``<function _insert_fused_gemm.<locals>.split_output at 0x...>``).
        words = target[1:target.rindex(">")].split()
        for k in range(len(words) - 1):
            if words[k] in ("function", "method"):
                return words[k + 1].rsplit(".", 1)[-1]
        return words[-1] if words else target
    parts = target.split(".")
    if len(parts) >= 3 and not any(p.isdigit() for p in parts):
        return parts[-2]
    return parts[-1]


@dataclass(slots=True)
class Graph:
    """One GraphModule of a dump file.

    Attributes:
        module: the GraphModule's name as printed (``(root)``, ``monolithic.model``).
        source: the dump file path.
        nodes: nodes in line (topological) order.
        weights: referenced parameters/buffers by name, in first-reference order.
        outputs: names referenced by the ``output`` line.
        transform, stage: from the file header.
        call_args: the whole argument text of every call whose target is a bare name (a call of
            another section binds that section's placeholders to these arguments), by position.
        kernel_names: per node name, the GPU kernels a compiler recorded it became (Inductor's
            provenance in a torch.compile log); trace mapping matches those names first. Empty
            for a dump.
    """

    module: str
    source: str
    nodes: list[Node] = field(default_factory=list)
    weights: dict[str, Weight] = field(default_factory=dict)
    outputs: tuple[str, ...] = ()
    transform: str = ""
    stage: str = ""
    call_args: dict[int, str] = field(default_factory=dict, repr=False)
    kernel_names: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)
    _by_name: dict[str, Node] | None = field(default=None, repr=False)
    _consumers: dict[str, list[str]] | None = field(default=None, repr=False)
    _topology: tuple[list[list[int]], list[list[int]]] | None = field(default=None, repr=False)
    _input_positions: list[list[int]] | None = field(default=None, repr=False)
    _weight_records: list[tuple[Weight, ...]] | None = field(default=None, repr=False)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    @property
    def by_name(self) -> dict[str, Node]:
        if self._by_name is None:
            self._by_name = {n.name: n for n in self.nodes}
        return self._by_name

    def node(self, name: str) -> Node:
        return self.by_name[name]

    def consumers(self) -> dict[str, list[str]]:
        """Map from node name to the names of the nodes that consume it, in graph order."""
        if self._consumers is None:
            cons: dict[str, list[str]] = {n.name: [] for n in self.nodes}
            for n in self.nodes:
                for i in n.inputs:
                    cons[i].append(n.name)
            self._consumers = cons
        return self._consumers

    def topology(self) -> tuple[list[list[int]], list[list[int]]]:
        """``(inputs, consumers)`` as node positions, parallel to :attr:`nodes` (cached)."""
        if self._topology is None:
            inputs = self._input_positions
            if inputs is None or len(inputs) != len(self.nodes):
                index = {n.name: n.index for n in self.nodes}
                inputs = [[index[i] for i in n.inputs] for n in self.nodes]
            self._input_positions = None
            consumers: list[list[int]] = [[] for _ in self.nodes]
            for j, ins in enumerate(inputs):
                for i in ins:
                    consumers[i].append(j)
            self._topology = (inputs, consumers)
        return self._topology

    def set_input_positions(self, inputs: list[list[int]]) -> None:
        """Give the positions of every node's inputs, parallel to :attr:`nodes` (what
        :meth:`topology` would otherwise find by name), as the builder of the graph knows them."""
        self._input_positions = inputs
        self._topology = None

    def weight_records(self) -> list[tuple[Weight, ...]]:
        """Per node, the records of its weights: parallel to :attr:`nodes`, and each tuple to
        that node's :attr:`Node.weights` (cached)."""
        records = self._weight_records
        if records is None or len(records) != len(self.nodes):
            weights = self.weights
            records = [tuple([weights[w] for w in n.weights]) if n.weights else ()
                       for n in self.nodes]
            self._weight_records = records
        return records

    def set_weight_records(self, records: list[tuple[Weight, ...]]) -> None:
        """Give :meth:`weight_records` as the builder of the graph knows them (the reader makes
        each record where a node first refers to it), instead of looking every name up."""
        self._weight_records = records

    @property
    def call_count(self) -> int:
        count = 0
        for node in self.nodes:
            if node.kind == CALL:
                count += 1
        return count
