"""The format-neutral, column-oriented content of one trace file.

Readers fill one ``TraceData``; everything downstream works on it. Per-row data lives in
``array`` columns rather than objects so that millions of kernel rows stay cheap: only the
kernels of the chosen replay become ``Kernel`` objects (``TraceData.kernel``).
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from tb_ad_layer.trace.kernel import KIND_KERNEL, GraphLaunchBlock, Kernel, stream_key

#: Value stored in the integer columns where the trace has no value (NULL, or 0 for graph ids).
NONE = -1


@dataclass(slots=True, frozen=True)
class StreamInfo:
    """One CUDA stream: (OS process id, device, context, stream id)."""

    pid: int
    device: int
    context: int
    stream: int

    @property
    def key(self) -> str:
        """Text id, e.g. ``pid1234/dev0/ctx1/s7``."""
        return stream_key(self.pid, self.device, self.context, self.stream)


@dataclass(slots=True, frozen=True)
class NameInfo:
    """A distinct activity name: full demangled text, short family name, kind (kernel/memcpy/memset)."""

    full: str
    short: str
    kind: str = KIND_KERNEL


@dataclass(slots=True, frozen=True)
class NvtxRange:
    """A CPU-side annotation range (NVTX push/pop or start/end; profiler user annotation), ns."""

    start_ns: int
    end_ns: int
    text: str
    tid: int = 0


@dataclass(slots=True)
class LaunchTimes:
    """CPU start time of each CUDA launch call, sorted by correlation id (for NVTX matching)."""

    correlation: array
    start_ns: array


@dataclass
class TraceData:
    """Everything a reader extracted from one trace file.

    Row ``i`` of the activity table is ``start[i]``, ``end[i]`` (ns), ``stream[i]`` (index into
    ``streams``), ``name[i]`` (index into ``names``), ``correlation[i]``, ``graph_id[i]``,
    ``graph_node_id[i]``; missing values are ``NONE``. Rows are in file order, not sorted.

    ``graph_launch_correlations`` holds the correlation ids of ``cudaGraphLaunch`` calls;
    ``graph_launches`` the whole-graph blocks of graph-mode captures. NVTX ranges and CPU launch
    times are loaded on first use, because only prefill pass detection needs them and they can be
    as large as the kernel table.
    """

    source: Path
    format: str
    schema_version: str | None = None
    graph_trace_mode: str | None = None
    start: array = field(default_factory=lambda: array("q"))
    end: array = field(default_factory=lambda: array("q"))
    stream: array = field(default_factory=lambda: array("i"))
    name: array = field(default_factory=lambda: array("i"))
    correlation: array = field(default_factory=lambda: array("q"))
    graph_id: array = field(default_factory=lambda: array("q"))
    graph_node_id: array = field(default_factory=lambda: array("q"))
    streams: list[StreamInfo] = field(default_factory=list)
    names: list[NameInfo] = field(default_factory=list)
    graph_launches: list[GraphLaunchBlock] = field(default_factory=list)
    graph_launch_correlations: set[int] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)
    nvtx_loader: Callable[[], list[NvtxRange]] | None = None
    launch_loader: Callable[[], LaunchTimes] | None = None
    _nvtx: list[NvtxRange] | None = None
    _launches: LaunchTimes | None = None

    def __len__(self) -> int:
        return len(self.start)

    @property
    def nvtx(self) -> list[NvtxRange]:
        """NVTX ranges (loaded once, on first access); empty when the trace has none."""
        if self._nvtx is None:
            self._nvtx = self.nvtx_loader() if self.nvtx_loader is not None else []
        return self._nvtx

    @property
    def launch_times(self) -> LaunchTimes | None:
        """CPU launch times by correlation id, or None when the trace has no runtime API rows."""
        if self._launches is None and self.launch_loader is not None:
            self._launches = self.launch_loader()
        return self._launches

    @property
    def devices(self) -> list[int]:
        """Sorted device ids that ran at least one row."""
        used = set(self.stream)
        return sorted({self.streams[s].device for s in used})

    def kernel(self, i: int) -> Kernel:
        """Materialise row ``i`` as a ``Kernel`` (NONE columns become None)."""
        info = self.streams[self.stream[i]]
        name = self.names[self.name[i]]
        corr = self.correlation[i]
        gid = self.graph_id[i]
        gnid = self.graph_node_id[i]
        return Kernel(
            name=name.full, short=name.short, start_ns=self.start[i], end_ns=self.end[i],
            device=info.device, pid=info.pid, context=info.context, stream=info.stream,
            stream_key=info.key, correlation=None if corr == NONE else corr,
            graph_id=None if gid == NONE else gid, graph_node_id=None if gnid == NONE else gnid,
            kind=name.kind, index=i)

    def kernels(self, rows: Iterable[int]) -> list[Kernel]:
        """Materialise several rows, sorted by start time (ties: stream, then row order)."""
        out = [self.kernel(i) for i in rows]
        out.sort(key=lambda k: (k.start_ns, k.stream_key, k.index))
        return out

    def append_rows(self, start: Iterable[int], end: Iterable[int], stream: Iterable[int],
                    name: Iterable[int], correlation: Iterable[int], graph_id: Iterable[int],
                    graph_node_id: Iterable[int]) -> None:
        """Append one batch of rows, given column by column (equal lengths)."""
        self.start.extend(start)
        self.end.extend(end)
        self.stream.extend(stream)
        self.name.extend(name)
        self.correlation.extend(correlation)
        self.graph_id.extend(graph_id)
        self.graph_node_id.extend(graph_node_id)
