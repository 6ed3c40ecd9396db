"""GPU traces: read them, cut one replay or pass, split it into layers, map kernels to FX nodes.

Flow: ``reader.read_trace`` (``nsys_sqlite`` / ``nsys_rep`` / ``torch_profiler`` -> ``TraceData``)
-> ``replay.select`` (one CUDA-graph replay with per-node stats, or one eager pass via ``passes``)
-> ``segment.segment_layers`` (layers from repetition, ``periodicity``) -> ``mapping.map_kernels``
(kernels -> nodes with the ``kernel_map`` table) -> ``summary`` / ``chrome``. ``ingest`` runs the
whole flow for the converter (``ingest_trace``) and the ``kernels`` command (``kernel_sequences``).
"""
from tb_ad_layer.trace.ingest import TraceResult, ingest_trace, kernel_sequences
from tb_ad_layer.trace.kernel import GraphLaunchBlock, Kernel, ReplayStats
from tb_ad_layer.trace.kernel_map import KernelMap, load_kernel_map
from tb_ad_layer.trace.mapping import LayerNodes, MappableNode

__all__ = ["GraphLaunchBlock", "Kernel", "KernelMap", "LayerNodes", "MappableNode", "ReplayStats", "TraceResult",
           "ingest_trace", "kernel_sequences", "load_kernel_map"]
