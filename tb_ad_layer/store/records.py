"""The run store's rows as named records: what the writer takes and the reader returns.

Rows are NamedTuples: SQLite takes and gives tuples, so a record costs nothing on the way in
or out, and fields are read by name (``row.start_ns``) rather than by position. The reader
validates every row it returns against these types (:func:`msgspec.convert`), so a store whose
columns hold the wrong kind of value is reported as damaged instead of serving it.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import msgspec

from tb_ad_layer.contract.api import TraceInfo
from tb_ad_layer.contract.document import LayeringDoubt


class KernelRow(NamedTuple):
    """One kernel (or copy, or whole CUDA graph launch) of the stored replay or forward pass,
    as the converter writes it. Times are ns relative to the start of that replay."""

    name: str               #: full demangled name
    short: str              #: short name, e.g. nvjet_gemm
    start_ns: int
    end_ns: int
    device: int | None
    stream: str             #: stream key, e.g. pid1234/dev0/ctx1/s7 (a ``streams`` row)
    graph_id: int | None
    graph_node_id: int | None
    correlation: int | None
    layer: int | None       #: decoder layer it was mapped to
    node: str | None        #: node id it was mapped to
    reason: str | None      #: why it was not mapped to a node
    replays: int | None     #: replays it was seen in (column ``count``)
    median_ns: float | None  #: duration statistics over those replays (a median may be x.5)
    min_ns: int | None
    max_ns: int | None
    p90_ns: float | None = None  #: 90th and 99th percentiles over those replays (nearest rank)
    p99_ns: float | None = None
    rank: int = 0           #: the rank (GPU) it ran on (:mod:`tb_ad_layer.store.schema`)


class StoredKernel(NamedTuple):
    """A :class:`KernelRow` as read back, with the ``id`` the store gave it (insertion order)."""

    id: int
    name: str
    short: str
    start_ns: int
    end_ns: int
    device: int | None
    stream: str
    graph_id: int | None
    graph_node_id: int | None
    correlation: int | None
    layer: int | None
    node: str | None
    reason: str | None
    replays: int | None
    median_ns: float | None
    min_ns: int | None
    max_ns: int | None
    p90_ns: float | None = None
    p99_ns: float | None = None
    rank: int = 0


class KernelSpan(NamedTuple):
    """A stored kernel as a timeline draws it (:meth:`RunStore.kernel_spans`)."""

    stream: str
    id: int
    short: str
    name: str
    start_ns: int
    end_ns: int
    device: int | None
    layer: int | None
    node: str | None


class StreamRow(NamedTuple):
    """One CUDA stream of the trace."""

    key: str                #: stream key, e.g. pid1234/dev0/ctx1/s7
    label: str              #: display name, e.g. "GPU 0 · stream 7"
    device: int | None
    pid: int | None
    context: int | None
    stream: int | None      #: the CUDA stream id
    rank: int = 0           #: the rank whose stream it is


class RankRecord(NamedTuple):
    """One rank of a traced run (``ranks`` row): the GPU one trace, or one device of a trace,
    holds."""

    rank: int
    device: int | None
    trace: str              #: the trace file it was read from
    replays: int            #: replays (or passes) its kernels' statistics cover
    kernel_count: int       #: its kernels of the stored replay or pass
    gpu_time_us: float | None  #: typical GPU time of its layers and the work outside them
    info: TraceInfo         #: what was read, picked and mapped (``meta.trace`` of its own)


class RankLayerRow(NamedTuple):
    """One layer of the traced stage on one rank (``rank_layers`` row, without the
    document)."""

    rank: int
    layer: int
    gpu_time_us: float | None


class KernelTiming(NamedTuple):
    """A stored kernel as the analysis reads it (:meth:`RunStore.kernel_timings`): where it ran
    in the stored replay, what it was mapped to, and its statistics over every replay."""

    id: int
    short: str
    name: str
    start_ns: int
    end_ns: int
    stream: str
    correlation: int | None
    layer: int | None
    node: str | None
    reason: str | None
    replays: int | None
    median_ns: float | None
    min_ns: int | None
    max_ns: int | None
    p90_ns: float | None
    p99_ns: float | None


class HostCallRow(NamedTuple):
    """One CUDA runtime API call or synchronisation on the host (``host_calls`` row); times are
    ns on the kernels' clock, relative to the stored replay's start (negative: before it)."""

    start_ns: int
    end_ns: int
    tid: int | None
    correlation: int | None
    name: str               #: API name, e.g. cudaGraphLaunch, cudaStreamSynchronize
    kind: str               #: runtime | sync


class MemcpyRow(NamedTuple):
    """One memory copy of the stored replay (``memcpy`` row)."""

    start_ns: int
    end_ns: int
    stream: str | None
    correlation: int | None
    direction: str          #: HtoD, DtoH, DtoD, HtoH, PtoP or Unknown
    bytes: int | None
    src_kind: str | None    #: memory kind of the source: Pageable, Pinned, Device, Array...
    dst_kind: str | None


class GpuRow(NamedTuple):
    """A device's GPU name as the trace records it (``gpus`` row)."""

    device: int
    name: str


class TraceDimRow(NamedTuple):
    """A symbolic size the trace's recorded input shapes bind (``trace_dims`` row)."""

    symbol: str
    value: int | None       #: None: the trace records two values (a conflict, see source)
    source: str             #: the op and node that recorded it, or the conflicting values


class StageRecord(NamedTuple):
    """One converted transform stage (``stages`` row)."""

    idx: int                #: stage index: the API's ``stage`` parameter
    file: str               #: dump file name
    order: int              #: NNN prefix of the dump file: its place in the pipeline
    stage: str
    transform: str
    module: str             #: GraphModule section converted
    modules: list[str]      #: every GraphModule section of the dump file
    node_count: int
    call_count: int
    layer_count: int
    doubts: list[LayeringDoubt]  #: doubts about the layering: the stage's, then each layer's


class LayerRecord(NamedTuple):
    """One layer of a stage, without its document (``layers`` row)."""

    layer: int
    kind: str
    attention: str | None
    node_count: int
    gpu_time_us: float | None   #: null without a trace
    group_counts: dict[str, int]


class FileRecord(NamedTuple):
    """An input file of the conversion."""

    path: str
    sha256: str
    size_bytes: int         #: column ``size``
    role: str               #: dump | trace


class StoreMeta(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """The ``meta`` table, one key per field (values are JSON)."""

    schema_version: int
    run: str
    model: str
    source_dir: str
    converter_version: str
    created: str
    trace: TraceInfo | None
    #: what a torch.compile log (TORCH_TRACE) records about compilation: compile ids, graph
    #: breaks, recompilations, retried attempts; absent for a dump directory
    compile_log: dict[str, Any] | None = None


class EncodedDoc(NamedTuple):
    """A document as the ``docs`` table keeps it: the SHA-256 (hex) of its JSON, the JSON's
    length and the JSON compressed (:mod:`tb_ad_layer.store.encoding`); ``data`` is None for a
    document handed to the writer before (:class:`~tb_ad_layer.store.encoding.DocEncoder`)."""

    hash: str
    size: int
    data: bytes | None


class EncodedLayer(NamedTuple):
    """A ``layers`` row with its document, encoded: what a conversion worker hands the writer
    (plain values and bytes, which pickle across processes in a compiled build too)."""

    layer: int
    kind: str
    attention: str | None
    node_count: int
    gpu_time_us: float | None
    group_counts: str       #: JSON text
    source_file: str
    doc: EncodedDoc


class EncodedStage(NamedTuple):
    """A ``stages`` row with its ``outside`` nodes and its layers, encoded
    (:func:`tb_ad_layer.store.encoding.encode_stage`)."""

    file: str
    order_no: int
    stage: str
    transform: str
    module: str
    modules: str            #: JSON text
    node_count: int
    call_count: int
    layer_count: int
    doubts: str             #: JSON text
    outside_count: int
    outside: EncodedDoc
    layers: list[EncodedLayer]
