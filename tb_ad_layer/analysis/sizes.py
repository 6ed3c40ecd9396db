"""Symbolic sizes (``s70``) of the traced stage: given with ``--dim s70=1024``, or bound by the
trace's recorded input shapes (the run store's ``trace_dims``, written at conversion), ``--dim``
taking precedence; and, per node, where each of its sizes came from or why it is unknown."""
from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tb_ad_layer.analysis.run import Node
from tb_ad_layer.contract.analysis import NodeSize, TraceDim
from tb_ad_layer.store.records import TraceDimRow

_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
#: Names in size expressions that are functions, not sizes (sympy's printing), and words a
#: shape text can hold that are not sizes.
NOT_SYMBOLS = frozenset({"Mod", "Max", "Min", "floor", "ceiling", "FloorDiv", "CeilDiv",
                         "scalar", "x"})
NO_SHAPES = "the trace records no input shapes (profile with record_shapes=True)"
NOT_RECORDED = "the trace recorded no op of a node reading it with its input shapes"


@functools.lru_cache(maxsize=8192)
def shape_symbols(shape: str) -> tuple[str, ...]:
    """The symbols of one shape text, in first-seen order: ``s44xs70x64`` -> ``(s44, s70)``.
    A ``x`` between dims is a separator, not a name."""
    out: list[str] = []
    for part in re.split(r"(?<=[0-9)])x", shape):
        for s in _SYMBOL.findall(part):
            if s not in NOT_SYMBOLS and s not in out:
                out.append(s)
    return tuple(out)


@dataclass(frozen=True)
class Sizes:
    """The stage's sizes: ``given`` (``--dim``), ``traced`` (symbol -> value, where) and
    ``conflicts`` (symbol -> why) from the trace; ``recorded``: whether the trace recorded
    input shapes at all."""

    given: Mapping[str, int] = field(default_factory=dict)
    traced: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    conflicts: Mapping[str, str] = field(default_factory=dict)
    recorded: bool = False

    @functools.cached_property
    def values(self) -> dict[str, int]:
        """Every known size, ``--dim`` over the trace."""
        out = {s: v for s, (v, _) in self.traced.items()}
        out.update(self.given)
        return out

    def why(self, symbol: str) -> str:
        """Why ``symbol`` has no value."""
        if symbol in self.conflicts:
            return f"{self.conflicts[symbol]}, so it is left unbound"
        return NOT_RECORDED if self.recorded else NO_SHAPES

    def of(self, symbol: str) -> NodeSize:
        """Where ``symbol``'s value came from."""
        if symbol in self.given:
            return NodeSize(symbol=symbol, value=self.given[symbol], source="dim",
                            detail=f"--dim {symbol}={self.given[symbol]}")
        if symbol in self.traced:
            v, where = self.traced[symbol]
            return NodeSize(symbol=symbol, value=v, source="trace", detail=where)
        return NodeSize(symbol=symbol, value=None, source="unknown", detail=self.why(symbol))

    def node_sizes(self, node: Node) -> list[NodeSize]:
        """The sizes of ``node``'s shapes (its output, the values it reads, its weights)."""
        seen: list[str] = []
        shapes = [node.shape] + [node.values[i][0] for i in node.inputs if i in node.values] \
            + [s for _, s, _ in node.weights]
        for shape in shapes:
            for s in shape_symbols(shape):
                if s not in seen:
                    seen.append(s)
        return [self.of(s) for s in seen]

    def records(self) -> list[TraceDim] | None:
        """The trace's sizes as the report lists them; None when it recorded no shapes."""
        if not self.recorded:
            return None
        rows = [TraceDim(symbol=s, value=v, source=w) for s, (v, w) in self.traced.items()]
        rows += [TraceDim(symbol=s, value=None, source=w) for s, w in self.conflicts.items()]
        return sorted(rows, key=lambda r: r.symbol)


def stage_sizes(given: Mapping[str, int], rows: Sequence[TraceDimRow] | None) -> Sizes:
    """The sizes of ``--dim`` and of the store's ``trace_dims`` rows (None: the trace recorded
    no shapes)."""
    if rows is None:
        return Sizes(given=dict(given))
    return Sizes(given=dict(given),
                 traced={r.symbol: (r.value, r.source) for r in rows if r.value is not None},
                 conflicts={r.symbol: r.source for r in rows if r.value is None}, recorded=True)
