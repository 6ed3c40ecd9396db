"""The options of a conversion and of putting a trace onto it, as typed records.

The command line (:mod:`tb_ad_layer.cli`) builds these from its arguments; the pipeline glue
(:mod:`tb_ad_layer.convert`, :mod:`tb_ad_layer.trace_attach`) reads them. Library code never
sees an ``argparse.Namespace``: a caller from Python builds the same records, and a field that
is renamed or retyped here is caught by the type checker at every use.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

#: What a trace captured: ``decode`` = CUDA graph replays, ``prefill`` = eager kernels.
Phase = Literal["decode", "prefill"]
PHASES: tuple[Phase, ...] = ("decode", "prefill")


@dataclass(frozen=True, slots=True)
class TraceChoice:
    """Which part of a trace to use: one record, so that ``convert``, ``kernels`` and
    ``inspect`` (and every function between the command line and the replay picker) choose
    alike and a new criterion is added in one place.

    Every ``None`` means: choose as ``tb-ad-layer inspect`` explains.

    Attributes:
        phase: what the trace captured; ``None`` detects it.
        device: the GPU to use; ``None`` takes the busiest.
        graph_id: the CUDA graph to use; ``None`` takes the one with the most kernels.
        step: the profiler step (``ProfilerStep#N``); ``None`` takes the last complete one.
    """

    phase: Phase | None = None
    device: int | None = None
    graph_id: int | None = None
    step: int | None = None


#: The choice that detects everything (what a command without those options does).
AUTO_CHOICE = TraceChoice()


@dataclass(frozen=True, slots=True)
class TraceOptions:
    """Which trace to map onto the converted graph, and which part of it to use.

    Attributes:
        path: an Nsight Systems ``.nsys-rep`` or ``.sqlite`` export, or a PyTorch profiler
            ``.json`` / ``.json.gz`` trace.
        choice: which phase, device, graph and step to use (:class:`TraceChoice`).
        kernel_map: a JSON file of extra op -> kernel-name rules, taking precedence over the
            built-in table; ``None`` uses the built-in table alone.
    """

    path: Path
    choice: TraceChoice = AUTO_CHOICE
    kernel_map: Path | None = None


#: What ``--device all`` says: every device of one trace is a rank of the run.
ALL_DEVICES = "all"


@dataclass(frozen=True, slots=True)
class ConvertOptions:
    """What to convert into which run store.

    Attributes:
        source: a dump directory (``AD_DUMP_GRAPHS_DIR``), one dump file, or a seed-schema
            layer JSON.
        logdir: the TensorBoard log directory; the store goes to
            ``<logdir>/<run>/plugins/ad_layer/run.sqlite``.
        run: the run name, a relative path under ``logdir``; ``None`` takes the source's name.
        stages: ``("last",)``, ``("all",)``, or dump file names / ``NNN`` prefixes.
        module: the GraphModule section to use; ``None`` takes ``monolithic.model``, else the
            largest.
        model: the model name recorded in the run; ``None`` takes the source's name.
        traces: the traces to map onto the last converted stage: none, one, or one per rank
            of a multi-GPU run. A rank is the device a trace's chosen part ran on, or the
            trace's position when two traces name the same device (processes that each see
            their GPU as device 0). The first rank (the lowest) is the one the layer documents
            carry; every rank's kernels are stored (:mod:`tb_ad_layer.store.schema`).
        all_devices: ``traces`` holds one trace, and each of its devices is a rank
            (``--device all``); that trace's ``choice.device`` is then None.
        jobs: worker processes that convert stages at once (:mod:`tb_ad_layer.stage_pool`);
            1 converts them in this process, one after another. The store is the same either
            way. The command line defaults to the cores the process may use; a library
            caller gets one process unless it asks, since spawning workers costs start-up
            time and it may run its own pool.
        events: also write a TensorBoard event file into the run directory (a text summary
            and per-layer scalars for TensorBoard's Text and Scalars tabs). Off by default:
            TensorBoard opens on the first tab that has data, so with event files it would
            open on Scalars instead of AD Layers.
    """

    source: Path
    logdir: Path
    run: str | None = None
    stages: tuple[str, ...] = ("last",)
    module: str | None = None
    model: str | None = None
    traces: tuple[TraceOptions, ...] = ()
    all_devices: bool = False
    jobs: int = 1
    events: bool = False

    def __post_init__(self) -> None:
        if self.all_devices and len(self.traces) != 1:
            raise ValueError("all_devices needs exactly one trace (its devices are the ranks)")
        if self.all_devices and self.traces[0].choice.device is not None:
            raise ValueError("all_devices takes every device: the trace's choice names none")

    @property
    def trace(self) -> TraceOptions | None:
        """The first trace, if any (the only one of a one-GPU run)."""
        return self.traces[0] if self.traces else None
