"""Plain records for one GPU activity (kernel, memcpy, memset) and one whole CUDA-graph launch."""
from __future__ import annotations

from dataclasses import dataclass

#: ``Kernel.kind`` values. Copies and fills come from their own trace tables but live on the same
#: streams and inside the same graph replays, so they travel with the kernels.
KIND_KERNEL = "kernel"
KIND_MEMCPY = "memcpy"
KIND_MEMSET = "memset"


def stream_key(pid: int, device: int, context: int, stream: int) -> str:
    """The stable text id of one CUDA stream, unique per (process, device, context, stream id).

    Example: ``stream_key(1234, 0, 1, 7) == "pid1234/dev0/ctx1/s7"``.
    """
    return f"pid{pid}/dev{device}/ctx{context}/s{stream}"


@dataclass(slots=True)
class ReplayStats:
    """Duration statistics of one kernel position over every replay (or forward pass) seen.

    ``count`` is the number of replays that ran it; times are nanoseconds; ``p90_ns``/``p99_ns``
    are nearest-rank percentiles (None where not computed).
    """

    count: int
    median_ns: float
    min_ns: int
    max_ns: int
    p90_ns: float | None = None
    p99_ns: float | None = None


@dataclass(slots=True)
class Kernel:
    """One GPU activity of the chosen replay or forward pass.

    ``name`` is the full demangled name, ``short`` the shortened family name (see ``names``).
    ``correlation`` is the CUDA runtime launch correlation id; every kernel replayed from one CUDA
    graph launch carries that launch's id. ``graph_id``/``graph_node_id`` are None for eager work
    (traces write NULL or 0 there); ``eager`` is True for work launched outside any CUDA graph.
    ``index`` orders activities that start at the same time (the reader's row order).
    ``launch_ns``/``launch_tid`` are the CPU time and thread of the CUDA call that launched it
    (for a graph replay, the ``cudaGraphLaunch``), None when the trace does not record it.

    The last four fields are filled by segmentation and mapping: ``layer`` (decoder layer index,
    None outside every layer), ``node`` (FX node name), ``unmapped_reason`` (why ``node`` is None),
    ``stats`` (durations of this kernel position over all replays, None for a single pass).
    """

    name: str
    short: str
    start_ns: int
    end_ns: int
    device: int
    pid: int
    context: int
    stream: int
    stream_key: str
    correlation: int | None = None
    graph_id: int | None = None
    graph_node_id: int | None = None
    kind: str = KIND_KERNEL
    index: int = -1
    eager: bool = False
    launch_ns: int | None = None
    launch_tid: int | None = None
    layer: int | None = None
    node: str | None = None
    unmapped_reason: str | None = None
    stats: ReplayStats | None = None

    @property
    def duration_ns(self) -> int:
        """Own duration in ns; a record with end before start (clock glitch) counts as 0."""
        return max(0, self.end_ns - self.start_ns)

    @property
    def typical_ns(self) -> float:
        """Median over replays when known, else this replay's own duration (ns)."""
        return self.stats.median_ns if self.stats is not None else float(self.duration_ns)


@dataclass(slots=True)
class GraphLaunchBlock:
    """One whole CUDA graph launch as a single block on a stream.

    Graph-mode nsys captures (``--cuda-graph-trace=graph``) record only these, not the kernels
    inside, so they are shown as opaque blocks.
    """

    start_ns: int
    end_ns: int
    device: int
    pid: int
    context: int
    stream: int
    stream_key: str
    correlation: int | None
    graph_id: int | None
    graph_exec_id: int | None = None

    @property
    def duration_ns(self) -> int:
        """Duration in ns, never negative."""
        return max(0, self.end_ns - self.start_ns)
