"""The conversion pipeline: dump directory (+ trace) -> layered graphs -> run store.

Stages are processed one at a time (read, parse, assign layers, store), so memory holds one
stage's graph, not the whole directory. A trace is mapped onto the last converted stage.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tb_ad_layer.contract.document import LayeringDoubt
from tb_ad_layer.dump.reader import DumpFile, parse_dump, read_header
from tb_ad_layer.dump.stages import StageFile, discover_stages, select_stages
from tb_ad_layer.errors import InputError
from tb_ad_layer.gc_pause import gc_paused
from tb_ad_layer.layers.document import layer_document
from tb_ad_layer.layers.history import StageHistory, needs_history
from tb_ad_layer.layers.layered import LayeredGraph, layer_graph, stage_history
from tb_ad_layer.layers.seed_json import read_seed_json
from tb_ad_layer.options import ConvertOptions
from tb_ad_layer.progress import Progress
from tb_ad_layer.store.events import write_run_events
from tb_ad_layer.store.writer import StoreWriter, store_path
from tb_ad_layer.version import __version__

#: Maps a trace onto the last converted stage: called with the stage's layered graph, its layer
#: documents (filled in place with kernels and timings) and the store writer (``None`` when
#: nothing is stored, as in ``tb-ad-layer extract``); returns the run's ``trace`` summary.
TraceAttacher = Callable[[LayeredGraph, list[dict[str, Any]], StoreWriter | None], dict[str, Any]]


@dataclass(slots=True)
class LoadedStage:
    """One stage, parsed and layered."""

    stage: StageFile
    dump: DumpFile | None
    lg: LayeredGraph
    size_bytes: int
    seconds: float


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
    trace: dict[str, Any] | None = None


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
    return (f"{ls.stage.path.name}: {_mb(ls.size_bytes)}, {len(lg.graph.nodes):,} nodes, "
            f"{len(lg.layers)} layers ({kind_text or 'none'}) in {ls.seconds:.2f}s")


def convert(options: ConvertOptions, *, attach_trace: TraceAttacher | None = None,
            progress: Progress | None = None) -> ConvertResult:
    """Convert a dump directory into ``<logdir>/<run>/plugins/ad_layer/run.sqlite``.

    Args:
        options: what to convert into which run (:class:`~tb_ad_layer.options.ConvertOptions`).
        attach_trace: called as ``attach_trace(lg, docs, writer)`` for the last stage, to map a
            trace onto its layer documents and store its kernels; its return value becomes
            :attr:`ConvertResult.trace` and the run's ``trace`` metadata. Required when
            ``options.trace`` is set: the caller builds it from that record
            (:func:`tb_ad_layer.trace_attach.trace_attacher`).
        progress: progress printer; ``None`` prints only warnings (once the store is
            written, one line on stderr per doubt about the final stage's layers,
            :func:`warn_doubts`).
    Raises:
        InputError: bad input; nothing is written and any previous store is kept.
        ValueError: ``options.trace`` is set but no ``attach_trace`` maps it.
    """
    if options.trace is not None and attach_trace is None:
        raise ValueError("options.trace is set but no attach_trace was given to map it")
    progress = progress or Progress(quiet=True)
    src = options.source
    run = options.run or _guess_model(src)
    _check_run_name(run)
    files = resolve_inputs(src, options.stages)
    for path in [src.resolve()] + [f.path for f in files]:
        _check_path_text(path)
    total = sum(f.path.stat().st_size for f in files)
    progress(f"converting {len(files)} stage(s), {_mb(total)} from {src} into run '{run}'")
    result = ConvertResult(store=store_path(options.logdir, run), run=run)
    # The stage whose graph is held: one at a time; the last is freed while the store is synced.
    held: list[LoadedStage] = []
    with StoreWriter(result.store) as writer, gc_paused():
        history: History = lambda: load_history(src, files[0], progress)  # noqa: E731
        for k, sf in enumerate(files, 1):
            held.clear()
            # Hashed on the writer's thread while this one parses the file.
            writer.add_file(sf.path, "dump")
            ls = load_stage(sf, options.module, history)
            history = stage_history(ls.lg) if k < len(files) else None
            held.append(ls)
            progress(f"[{k}/{len(files)}] {_describe(ls)}")
            lg = ls.lg
            idx = writer.add_stage(file=sf.path.name, order_no=sf.order, stage=sf.stage,
                                   transform=sf.transform,
                                   modules=ls.dump.module_names() if ls.dump else [lg.graph.module],
                                   lg=lg)
            if k == len(files) and attach_trace is not None:
                # The trace is mapped across all layers at once, so it needs every document.
                docs = [layer_document(lg, i) for i in sorted(lg.layers)]
                result.trace = attach_trace(lg, docs, writer)
                writer.add_layer_docs(idx, docs)
                del docs
            else:
                writer.add_layers(idx, lg)
            # Only a summary is kept (and the stage in `held`), so memory holds one stage's
            # graph at a time.
            result.stages.append(StageSummary(file=sf.path.name, nodes=len(lg.graph.nodes),
                                              layers={i: info.kind
                                                      for i, info in lg.layers.items()},
                                              seconds=ls.seconds, size_bytes=ls.size_bytes,
                                              doubts=list(lg.doubts)))
            del ls, lg
        writer.set_meta("run", run)
        writer.set_meta("model", options.model or _guess_model(src))
        writer.set_meta("source_dir", str(src.resolve()))
        writer.set_meta("converter_version", __version__)
        writer.set_meta("created", _created())
        writer.set_meta("trace", result.trace)
        writer.commit(meanwhile=held.clear)
    if options.events:
        progress(f"wrote TensorBoard summary {write_run_events(result.store)}")
    progress(f"wrote {result.store}")
    # The final stage is the one users open first: its layering must not be silently wrong.
    # (Every stage's doubts are stored, and in result.stages.)
    if files and result.stages:
        warn_doubts(files[-1].path, result.stages[-1].doubts, progress)
    return result


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
