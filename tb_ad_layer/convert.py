"""The conversion pipeline: dump directory (+ trace) -> layered graphs -> run store.

Stages are processed one at a time (read, parse, assign layers, store), so memory holds one
stage's graph, not the whole directory. A trace is mapped onto the last converted stage; so is
every rank's of a multi-GPU run, each rank's layer documents stored beside the first's.
"""
from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from tb_ad_layer.contract.api import TraceInfo
from tb_ad_layer.contract.document import LayerDocument, LayeringDoubt, TraceSummary
from tb_ad_layer.dump.reader import DumpFile, parse_dump, read_header
from tb_ad_layer.dump.stages import StageFile, discover_stages, select_stages
from tb_ad_layer.errors import InputError
from tb_ad_layer.gc_pause import gc_paused
from tb_ad_layer.layers.document import LayerTimes, NodeKernels, layer_record, outside_records
from tb_ad_layer.layers.history import StageHistory, needs_history
from tb_ad_layer.layers.layered import LayeredGraph, layer_graph, stage_history
from tb_ad_layer.layers.seed_json import read_seed_json
from tb_ad_layer.options import ConvertOptions
from tb_ad_layer.progress import Progress
from tb_ad_layer.store.encoding import DocEncoder, encode_doc, encode_layer, encode_stage
from tb_ad_layer.store.records import EncodedDoc, EncodedStage
from tb_ad_layer.store.writer import StoreWriter, store_path
from tb_ad_layer.version import __version__


@dataclass(frozen=True, slots=True)
class MappedTrace:
    """A trace mapped onto a stage: the run's ``trace`` record, the kernels of the stage's nodes
    (by node id) and each layer's summary (by layer index), as the layer documents store them."""

    info: TraceInfo
    node_kernels: NodeKernels
    summaries: Mapping[int, TraceSummary]
    #: the rank (GPU) the trace's kernels ran on (:mod:`tb_ad_layer.store.schema`)
    rank: int = 0
    #: the run's other ranks, mapped onto the same stage, by rank (none for a one-GPU run)
    others: tuple[MappedTrace, ...] = ()

    @property
    def ranks(self) -> tuple[MappedTrace, ...]:
        """Every rank's mapped trace, this one (the first) first."""
        return (self,) + self.others

    def times(self, layer: int) -> LayerTimes:
        """What the trace says about ``layer``, for :func:`~tb_ad_layer.layers.document.layer_record`."""
        return LayerTimes(self.node_kernels, self.summaries.get(layer))


#: Maps a trace onto the last converted stage: called with the stage's layered graph and the
#: store writer (``None`` when nothing is stored, as in ``tb-ad-layer extract``), into which it
#: writes the trace's streams and kernels; returns what the stage's documents take of it.
TraceAttacher = Callable[[LayeredGraph, StoreWriter | None], MappedTrace]


def stage_documents(lg: LayeredGraph, trace: MappedTrace | None = None) -> Iterator[LayerDocument]:
    """The layer documents of ``lg`` in layer order, each built once, with the trace's times
    when ``trace`` is given; made one at a time, as the store takes them (a layer document can
    be megabytes)."""
    for index in sorted(lg.layers):
        yield layer_record(lg, index, trace.times(index) if trace is not None else None)


def encoded_stage(ls: LoadedStage, trace: MappedTrace | None = None,
                  encoder: Callable[[bytes], EncodedDoc] = encode_doc) -> EncodedStage:
    """A layered stage as the store keeps it: its row, its nodes outside every layer and its
    layer documents, each built once as the contract's records (with ``trace``'s times when a
    trace was mapped onto it) and encoded (:func:`~tb_ad_layer.store.encoding.encode_stage`);
    plain values and bytes, so that a conversion worker can hand it over."""
    lg, sf = ls.lg, ls.stage
    graph = lg.graph
    return encode_stage(file=ls.name or sf.path.name, order_no=sf.order, stage=sf.stage,
                        transform=sf.transform, module=graph.module,
                        modules=ls.dump.module_names() if ls.dump else [graph.module],
                        node_count=len(graph.nodes), call_count=graph.call_count,
                        layer_count=len(lg.layers), doubts=lg.doubts,
                        outside=outside_records(
                            lg, trace.node_kernels if trace is not None else None),
                        layers=stage_documents(lg, trace), encoder=encoder)


def store_stage(writer: StoreWriter, lg: LayeredGraph, *, file: str, order_no: int, stage: str,
                transform: str, modules: Sequence[str], trace: MappedTrace | None = None) -> int:
    """Store a layered stage: its row, its nodes outside every layer and its layer documents,
    each built once as the contract's records (with ``trace``'s times when a trace was mapped
    onto it); return the stage's index."""
    graph = lg.graph
    idx = writer.add_stage(file=file, order_no=order_no, stage=stage, transform=transform,
                           module=graph.module, modules=modules, node_count=len(graph.nodes),
                           call_count=graph.call_count, layer_count=len(lg.layers),
                           doubts=lg.doubts,
                           outside=outside_records(
                               lg, trace.node_kernels if trace is not None else None))
    writer.add_layers(idx, stage_documents(lg, trace))
    return idx


@dataclass(slots=True)
class LoadedStage:
    """One stage, parsed and layered."""

    stage: StageFile
    dump: DumpFile | None
    lg: LayeredGraph
    size_bytes: int
    seconds: float
    #: the stage's name in the run store where it is no file of its own (a graph of a
    #: torch.compile log: ``dynamo_output_graph``); empty: the file's name
    name: str = ""


@dataclass(slots=True)
class StageSummary:
    """What was converted of one stage: its file name, node count, layer kinds by index, the
    seconds it took to read, parse and layer, the file's size, and the doubts about its layers."""

    file: str
    nodes: int
    layers: dict[int, str]
    seconds: float
    size_bytes: int
    doubts: list[LayeringDoubt] = field(default_factory=list)


@dataclass(slots=True)
class ConvertResult:
    """The outcome of :func:`convert`: the run store written, the run's name, a summary per
    converted stage, and what the trace attacher returned (``None`` without a trace)."""

    store: Path
    run: str
    stages: list[StageSummary] = field(default_factory=list)
    trace: TraceInfo | None = None


def _mb(size_bytes: int) -> str:
    return f"{size_bytes / 1e6:.1f} MB"


#: An earlier stage's layers, or how to read them when the stage needs them.
History = StageHistory | Callable[[], StageHistory | None] | None


def load_stage(stage: StageFile, module: str | None = None, history: History = None) -> LoadedStage:
    """Read, parse and layer one dump file (or a seed-schema layer JSON); ``history`` holds the
    layers of an earlier stage of the same model (:func:`load_history`), or reads them
    (``lambda: load_history(...)``) when the stage needs them
    (:func:`~tb_ad_layer.layers.history.needs_history`): a stage that names every weight after
    its module is not worth a second file's parse."""
    t0 = time.perf_counter()
    with gc_paused():
        if stage.path.suffix == ".json":
            lg = read_seed_json(stage.path)
            return LoadedStage(stage, None, lg, stage.path.stat().st_size,
                               time.perf_counter() - t0)
        dump = parse_dump(stage.path)
        graph = dump.select(module)
        if callable(history):
            history = history() if needs_history(graph) else None
        lg = layer_graph(graph, history)
    return LoadedStage(stage, dump, lg, dump.size_bytes, time.perf_counter() - t0)


def resolve_inputs(source: str | Path, stages: Sequence[str] | None = None,
                   dump_file: str | None = None) -> list[StageFile]:
    """The stage files to convert from a dump directory, one dump file, or a seed JSON."""
    p = Path(source)
    if p.is_file():
        if p.suffix == ".json":
            return [StageFile(path=p, order=0, stage="seed_json", transform=p.stem)]
        transform, stage = read_header(p)
        return [StageFile(path=p, order=0, stage=stage or "dump", transform=transform or p.stem)]
    found = discover_stages(p)
    if dump_file:
        return select_stages(found, [dump_file])
    return select_stages(found, stages)


def history_stage(source: str | Path, first: StageFile) -> StageFile | None:
    """The stage that ``first`` and the stages after it carry their layers from: the first
    (export) stage of ``source``'s dump directory, when it comes before ``first``; None for a
    single file or when ``first`` is the first stage."""
    p = Path(source)
    if not p.is_dir() or first.path.suffix != ".txt":
        return None
    base = discover_stages(p)[0]
    return base if (base.order, base.path.name) < (first.order, first.path.name) else None


def load_history(source: str | Path, first: StageFile, progress: Progress) -> StageHistory | None:
    """The layers of the stage ``first`` carries them from (:func:`history_stage`), or None.

    At export, module paths name every layer; later stages name fused weights by counters, so
    their layers follow the export's through the node names that survive. A history that
    cannot be read is left out with a warning: the stage is then layered from its own graph.
    """
    base = history_stage(source, first)
    if base is None:
        return None
    try:
        ls = load_stage(base)
    except InputError as e:
        progress.warn(f"the stage history is not used: {e}")
        return None
    progress(f"history: {_describe(ls)}")
    return stage_history(ls.lg)


def warn_doubts(path: Path, doubts: Sequence[LayeringDoubt], progress: Progress) -> None:
    """One warning line per doubt about the layers of the stage read from ``path`` (printed
    also when quiet): ``<file>: <message>``. Commands print them once they have succeeded, so
    that a failure is still one line on stderr."""
    for doubt in doubts:
        progress.warn(f"{path}: {doubt.message}")


def _describe(ls: LoadedStage) -> str:
    lg = ls.lg
    kinds: dict[str, int] = {}
    for info in lg.layers.values():
        kinds[info.kind] = kinds.get(info.kind, 0) + 1
    kind_text = ", ".join(f"{v} {k}" for k, v in sorted(kinds.items()))
    return (f"{ls.name or ls.stage.path.name}: {_mb(ls.size_bytes)}, {len(lg.graph.nodes):,} nodes, "
            f"{len(lg.layers)} layers ({kind_text or 'none'}) in {ls.seconds:.2f}s")


#: A :class:`~tb_ad_layer.layers.history.StageHistory` as it crosses processes: (source,
#: layers, layer_count). The history is a compiled class in the real build, which may not
#: unpickle; a tuple always does.
HistoryTuple = tuple[str, dict[str, int], int]


def _history(value: HistoryTuple | None) -> StageHistory | None:
    return StageHistory(*value) if value is not None else None


class StageTask(NamedTuple):
    """One stage to convert without a trace, as plain values (it crosses processes): the
    source it comes from, the module to use, the stage file, and whether it is the first stage
    converted (which carries its layers, if it must, from the dump directory's export stage).
    ``conversion`` names the conversion it belongs to (:func:`_encoder`)."""

    conversion: str
    source: str
    module: str | None
    path: str
    order: int
    stage: str
    transform: str
    first: bool


class StageOutcome(NamedTuple):
    """What converting a :class:`StageTask` gives: its progress line, its summary, the stage
    encoded for the store, and its layers for the next stage."""

    describe: str
    summary: StageSummary
    encoded: EncodedStage
    history: HistoryTuple


def stage_outcome(task: StageTask, fetch: Callable[[], Any], publish: Callable[[Any], None],
                  progress: Progress) -> StageOutcome:
    """Convert one stage: read, parse and layer it (asking ``fetch`` for the layers of the
    stage before when its own names cannot say them, :func:`load_stage`), hand its own layers
    on (``publish``) as soon as it is layered, then build and encode its documents. Runs in a
    worker process (:class:`~tb_ad_layer.stage_pool.StagePool`) or in this one."""
    sf = StageFile(path=Path(task.path), order=task.order, stage=task.stage,
                   transform=task.transform)
    with gc_paused():
        history: History = (lambda: load_history(task.source, sf, progress)) if task.first \
            else (lambda: _history(fetch()))
        ls = load_stage(sf, task.module, history)
        carried = stage_history(ls.lg)
        value: HistoryTuple = (carried.source, carried.layers, carried.layer_count)
        publish(value)
        encoded = encoded_stage(ls, encoder=_encoder(task.conversion))
        return StageOutcome(_describe(ls), _summary(ls), encoded, value)


#: The document encoder of the conversion this process works for: (conversion, encoder).
_ENCODER: list[tuple[str, DocEncoder]] = []


def _encoder(conversion: str) -> DocEncoder:
    """The document encoder of ``conversion`` in this process (a worker's, or this one's for a
    serial conversion): each distinct document is compressed once per process and conversion,
    and sent to the writer once."""
    if not _ENCODER or _ENCODER[0][0] != conversion:
        _ENCODER[:] = [(conversion, DocEncoder())]
    return _ENCODER[0][1]


def _summary(ls: LoadedStage) -> StageSummary:
    lg = ls.lg
    return StageSummary(file=ls.name or ls.stage.path.name, nodes=len(lg.graph.nodes),
                        layers={i: info.kind for i, info in lg.layers.items()},
                        seconds=ls.seconds, size_bytes=ls.size_bytes, doubts=list(lg.doubts))


#: Dumps smaller than this in all are converted in this process whatever ``jobs`` says: a
#: worker takes about a second to start (it imports the converter), the time it takes to
#: convert some 10 MB of dumps.
PARALLEL_MIN_BYTES = 8 << 20


@contextmanager
def _stage_outcomes(tasks: Sequence[StageTask], jobs: int, size_bytes: int,
                    progress: Progress) -> Iterator[Iterator[StageOutcome]]:
    """The outcome of each task in order: from ``jobs`` worker processes, or in this process
    when one job (or one task) is asked for, or the dumps (``size_bytes`` in all) are too small
    to be worth a worker's start. Leaving ends every worker."""
    # Imported here: multiprocessing costs a conversion's start-up some 30 ms.
    from tb_ad_layer.stage_pool import StagePool, run_in_process

    if jobs <= 1 or len(tasks) <= 1 or size_bytes < PARALLEL_MIN_BYTES:
        yield run_in_process(stage_outcome, tasks, progress)
        return
    with StagePool(stage_outcome, tasks, jobs) as pool:
        yield pool.results(progress)


def convert(options: ConvertOptions, *, attach_trace: TraceAttacher | None = None,
            progress: Progress | None = None) -> ConvertResult:
    """Convert a dump directory into ``<logdir>/<run>/plugins/ad_layer/run.sqlite``.

    Args:
        options: what to convert into which run (:class:`~tb_ad_layer.options.ConvertOptions`).
        attach_trace: called as ``attach_trace(lg, writer)`` for the last stage, to map a trace
            onto it and store its kernels; the stage's documents are built with what it
            returns, and its ``info`` becomes :attr:`ConvertResult.trace` and the run's
            ``trace`` metadata. Required when
            ``options.traces`` is set: the caller builds it from those records
            (:func:`tb_ad_layer.trace_attach.trace_attacher`), and it maps every rank's
            trace (:attr:`MappedTrace.others`); each rank's layer documents are stored.
        progress: progress printer; ``None`` prints only warnings (once the store is
            written, one line on stderr per doubt about the final stage's layers,
            :func:`warn_doubts`).
    Raises:
        InputError: bad input; nothing is written and any previous store is kept.
        ValueError: ``options.traces`` is set but no ``attach_trace`` maps them.
    """
    if options.traces and attach_trace is None:
        raise ValueError("options.traces is set but no attach_trace was given to map it")
    progress = progress or Progress(quiet=True)
    src = options.source
    run = options.run or _guess_model(src)
    _check_run_name(run)
    # A TORCH_TRACE directory: its stages are read and layered together (they are small).
    compiled, compile_log = torch_trace_stages(src, options.stages, progress)
    files = [ls.stage for ls in compiled] if compiled else resolve_inputs(src, options.stages)
    for path in [src.resolve()] + [f.path for f in files]:
        _check_path_text(path)
    total = compiled[0].size_bytes if compiled else sum(f.path.stat().st_size for f in files)
    progress(f"converting {len(files)} stage(s), {_mb(total)} from {src} into run '{run}'")
    result = ConvertResult(store=store_path(options.logdir, run), run=run)
    # Stages without the trace go through stage_outcome, in worker processes with jobs > 1; the
    # stage the trace is mapped onto is converted here, where the trace attacher writes its
    # kernels.
    traced = attach_trace is not None and bool(files)
    untraced = files[:-1] if traced else files
    conversion = uuid.uuid4().hex
    tasks = [] if compiled else [
        StageTask(conversion, str(src), options.module, str(sf.path), sf.order, sf.stage,
                  sf.transform, k == 0) for k, sf in enumerate(untraced)]
    # The stage whose graph is held: one at a time; the last is freed while the store is synced.
    held: list[LoadedStage] = []
    with StoreWriter(result.store) as writer, gc_paused(), \
            _stage_outcomes(tasks, options.jobs, sum(sf.path.stat().st_size for sf in untraced)
                            if not compiled else 0, progress) as outcomes:
        previous: HistoryTuple | None = None
        if compiled:
            # A torch.compile log's stages come layered (they are read together): no workers.
            for log in sorted({c.stage.path for c in compiled}):
                writer.add_file(log, "dump")
            for k, ls in enumerate(compiled[:len(untraced)], 1):
                progress(f"[{k}/{len(files)}] {_describe(ls)}")
                writer.add_encoded_stage(encoded_stage(ls, None, _encoder(conversion)))
                result.stages.append(_summary(ls))
        for k, (sf, out) in enumerate(zip(untraced if not compiled else [], outcomes,
                                          strict=True), 1):
            # Hashed on the writer's thread while the stages are converted.
            writer.add_file(sf.path, "dump")
            progress(f"[{k}/{len(files)}] {out.describe}")
            writer.add_encoded_stage(out.encoded)
            result.stages.append(out.summary)
            previous = out.history
        if traced:
            assert attach_trace is not None
            sf, k = files[-1], len(files)
            if compiled:
                ls = compiled[-1]
            else:
                writer.add_file(sf.path, "dump")
                history: History = (lambda: load_history(src, sf, progress)) if k == 1 \
                    else (lambda: _history(previous))
                ls = load_stage(sf, options.module, history)
            held.append(ls)
            progress(f"[{k}/{len(files)}] {_describe(ls)}")
            trace = attach_trace(ls.lg, writer)
            result.trace = trace.info
            encoded = encoded_stage(ls, trace, _encoder(conversion))
            idx = writer.add_encoded_stage(encoded)
            # Every rank's documents of the traced stage; the first rank's are the ones just
            # stored (the same hashes: stored once).
            writer.add_rank_layers(trace.rank, idx, encoded.layers)
            del encoded
            for other in trace.others:
                progress(f"rank {other.rank}: layer documents")
                writer.add_rank_layers(other.rank, idx, (
                    encode_layer(doc, _encoder(conversion))
                    for doc in stage_documents(ls.lg, other)))
            del trace
            result.stages.append(_summary(ls))
            del ls
        writer.set_meta("run", run)
        writer.set_meta("model", options.model or _guess_model(src))
        writer.set_meta("source_dir", str(src.resolve()))
        writer.set_meta("converter_version", __version__)
        writer.set_meta("created", _created())
        writer.set_meta("trace", result.trace)
        if compile_log is not None:
            writer.set_meta("compile_log", compile_log)
        writer.commit(meanwhile=held.clear)
        compiled.clear()
    if options.events:
        # Imported here: TensorBoard's protobuf modules cost start-up some 50 ms.
        from tb_ad_layer.store.events import write_run_events

        progress(f"wrote TensorBoard summary {write_run_events(result.store)}")
    progress(f"wrote {result.store}")
    # The final stage is the one users open first: its layering must not be silently wrong.
    # (Every stage's doubts are stored, and in result.stages.)
    if files and result.stages:
        warn_doubts(files[-1].path, result.stages[-1].doubts, progress)
    return result


def torch_trace_stages(source: str | Path, stages: Sequence[str] | None, progress: Progress
                       ) -> tuple[list[LoadedStage], dict[str, Any] | None]:
    """The layered stages of a TORCH_TRACE directory (``([], None)`` for any other source) and
    what its log records about compilation (stored as the run's ``compile_log``).

    ``stages``: ``last`` or ``all`` take every kind of graph the log holds (Dynamo, AOT,
    Inductor post-grad: three views of one compilation, not a history of transforms, so the
    trace is mapped onto the last, whose nodes are what kernels run); otherwise kinds
    (``dynamo``, ``aot``, ``post_grad``) or their record names (``dynamo_output_graph``).
    Graph breaks, recompilations and retried attempts are printed.
    """
    from tb_ad_layer.compile_log.load import load_torch_trace
    from tb_ad_layer.compile_log.records import is_torch_trace
    from tb_ad_layer.compile_log.torch_trace import KINDS, TRANSFORMS

    if not is_torch_trace(source):
        return [], None
    t0 = time.perf_counter()
    wanted = None if not stages or list(stages) in (["last"], ["all"]) else list(stages)
    kinds = None
    if wanted is not None:
        by_name = {**{k: k for k in KINDS}, **{v: k for k, v in TRANSFORMS.items()}}
        unknown = [w for w in wanted if w not in by_name]
        if unknown:
            raise InputError(f"no stage {unknown[0]!r} in a torch.compile log; its stages: "
                             f"{', '.join(KINDS)}", field="--stages")
        kinds = [by_name[w] for w in wanted]
    loaded = load_torch_trace(source, kinds)
    if not loaded.stages:
        raise InputError("the torch.compile log holds none of the stages asked for "
                         f"(it has: {', '.join(loaded.trace.kinds)})", path=Path(source),
                         field="--stages")
    for line in loaded.trace.lines():
        progress(line)
    for w in loaded.trace.warnings:
        progress.warn(w)
    size = sum(f.stat().st_size for f in loaded.trace.files)
    seconds = (time.perf_counter() - t0) / len(loaded.stages)
    out = [LoadedStage(StageFile(path=loaded.trace.files[0], order=order, stage=kind,
                                 transform=TRANSFORMS[kind]),
                       None, lg, size, seconds, name=TRANSFORMS[kind])
           for order, (kind, lg) in enumerate(zip(loaded.kinds, loaded.stages, strict=True), 1)]
    return out, loaded.summary()


def _created() -> str:
    # SOURCE_DATE_EPOCH (the reproducible-builds convention) pins it for regenerated demo logs.
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = datetime.fromtimestamp(int(epoch), UTC) if epoch and epoch.isdigit() \
        else datetime.now(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _guess_model(src: Path) -> str:
    return src.stem if src.is_file() else src.resolve().name


def _check_path_text(path: Path) -> None:
    """Refuse a path whose name holds bytes that are not UTF-8: the run store records it as
    UTF-8 text."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raise InputError("the path is not UTF-8 text, which the run store records; rename it",
                         path=path) from None


def _check_run_name(run: str) -> None:
    parts = Path(run).parts
    if not run or Path(run).is_absolute() or any(p in ("..", ".") for p in parts) \
            or "\\" in run or any(p.startswith(".") for p in parts):
        raise InputError(f"bad run name {run!r}: use a relative name without '..' or "
                         f"hidden parts", field="--run")
