"""GPU traces: read them, pick one replay or pass, split it into layers, map kernels to FX nodes.

Flow: ``reader.read_trace`` (``nsys_sqlite`` / ``nsys_rep`` / ``torch_profiler`` -> ``TraceDB``)
-> ``activity`` (counts per stream, graphs and launches, in SQL) -> ``replay.select`` (one
CUDA-graph replay with per-node stats, or one eager pass via ``steps`` and ``passes``) ->
``annotations`` (the trace's own layer ranges) -> ``segment.segment_layers`` (layers across all
streams: ranges, graph alignment or ``periodicity``) -> ``mapping.map_kernels`` (kernels ->
nodes with the ``kernel_map`` table, ``align``) -> ``summary`` (the contract's records of kernels
and layer summaries); ``shapes`` finds the ops (with their recorded input dims) around each
mapped kernel's launch call, which bind the graph's symbolic sizes. ``ingest`` runs the whole
flow for the converter (``ingest_trace``) and the ``kernels`` command (``kernel_sequences``);
``inventory`` is the ``inspect`` command. Every choice of the part of a trace to use travels as
one :class:`~tb_ad_layer.options.TraceChoice`.
"""
from tb_ad_layer.trace.graph_nodes import LayerNodes, MappableNode, ModelNodes
from tb_ad_layer.trace.ingest import TraceResult, ingest_trace, kernel_sequences
from tb_ad_layer.trace.kernel import GraphLaunchBlock, Kernel, ReplayStats
from tb_ad_layer.trace.kernel_map import KernelMap, load_kernel_map

__all__ = [
    "GraphLaunchBlock",
    "Kernel",
    "KernelMap",
    "LayerNodes",
    "MappableNode",
    "ModelNodes",
    "ReplayStats",
    "TraceResult",
    "ingest_trace",
    "kernel_sequences",
    "load_kernel_map",
]
