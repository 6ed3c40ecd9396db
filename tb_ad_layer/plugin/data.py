"""The plugin's data layer: every API answer, computed from the run stores under the logdir.

Each ``*_payload`` method answers one route of the table
(:func:`tb_ad_layer.plugin.plugin.route_table`) from its :class:`~tb_ad_layer.plugin.routes.Query`.
Every parameter is validated here against what exists (runs discovered under the logdir, stages
and layers of that store), and a refusal is an :class:`~tb_ad_layer.plugin.errors.ApiError`
carrying the known values. Answers are contract records (:mod:`tb_ad_layer.contract.api`)
encoded by msgspec, so a 200 is always valid JSON of the documented shape; the store is read
only through :class:`~tb_ad_layer.store.reader.RunStore`, which refuses damaged content, and a
damaged store is answered with a 409 naming the damage and the command that rebuilds it.

Speed: answers are cached as encoded payloads keyed by the route, its parameters and the file
identity of every store involved, so a re-converted run is never served stale and a repeated
request costs a stat and a dictionary lookup.
"""
from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import msgspec

from tb_ad_layer.contract.api import (
    CompareResponse,
    CompareSide,
    LayerResponse,
    LayerRow,
    OverviewLayer,
    OverviewResponse,
    RunInfo,
    RunsResponse,
    StageDiff,
    StageInfo,
    StagesResponse,
    UnreadableRun,
)
from tb_ad_layer.contract.document import LayerDocument
from tb_ad_layer.errors import InputError
from tb_ad_layer.export.chrome import export_chrome_trace
from tb_ad_layer.export.dot import to_dot
from tb_ad_layer.export.seed_json import seed_json_text
from tb_ad_layer.plugin.compare import compare_docs, layer_time_us
from tb_ad_layer.plugin.discovery import RunDiscovery, RunHandle
from tb_ad_layer.plugin.errors import BAD_REQUEST, NOT_FOUND, UNREADABLE, ApiError, show
from tb_ad_layer.plugin.responses import JSON, Payload, json_payload, safe_filename
from tb_ad_layer.plugin.routes import Query
from tb_ad_layer.plugin.stage_graph import StageSummary, stage_graph, summarize
from tb_ad_layer.plugin.timeline import DEFAULT_MAX_ITEMS, MAX_MAX_ITEMS, KernelIndex, timeline
from tb_ad_layer.store.records import LayerRecord, RankRecord, StageRecord

logger = logging.getLogger(__name__)

_INT = re.compile(r"-?[0-9]{1,9}")
_FLOAT = re.compile(r"-?(?:[0-9]{1,15}(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]{1,3})?")


def parse_int(value: object, name: str, known: list[Any]) -> int:
    """An integer parameter; 400 (with ``known``) when missing or not an integer."""
    if isinstance(value, bool):
        value = str(value)
    if isinstance(value, int):
        return value
    if value is None or value == "":
        raise ApiError(BAD_REQUEST, f"missing parameter {name!r}", known)
    if not isinstance(value, str) or not _INT.fullmatch(value):
        raise ApiError(BAD_REQUEST, f"parameter {name!r} must be an integer, got {show(value)}",
                       known)
    return int(value)


def parse_float(value: object, name: str) -> float | None:
    """An optional finite number parameter (µs); None when absent."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str) and _FLOAT.fullmatch(value):
        number = float(value)
    else:
        raise ApiError(BAD_REQUEST, f"parameter {name!r} must be a number (µs), got "
                                    f"{show(value)}")
    if number != number or number in (float("inf"), float("-inf")):
        raise ApiError(BAD_REQUEST, f"parameter {name!r} must be finite, got {show(value)}")
    return number


class PayloadCache:
    """A least-recently-used map of encoded answers, bounded by their total size."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = budget_bytes
        self._items: OrderedDict[Hashable, Payload] = OrderedDict()
        self._held_bytes = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Payload | None:
        """The answer cached under ``key`` (now the most recently used), or None."""
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
            return item

    def put(self, key: Hashable, payload: Payload) -> None:
        """Cache ``payload``, dropping the least recently used answers beyond the budget."""
        size_bytes = payload.size_bytes
        if size_bytes > self.budget_bytes // 4:
            return  # one huge answer must not flush everything else
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._held_bytes -= old.size_bytes
            self._items[key] = payload
            self._held_bytes += size_bytes
            while self._held_bytes > self.budget_bytes and self._items:
                _, dropped = self._items.popitem(last=False)
                self._held_bytes -= dropped.size_bytes


class PluginData:
    """All API answers for one logdir. Thread-safe; one instance per TensorBoard process."""

    def __init__(self, logdir: str | Path | None, *, rescan_interval_s: float = 2.0,
                 cache_bytes: int = 48 << 20) -> None:
        self.discovery = RunDiscovery(logdir, rescan_interval_s=rescan_interval_s)
        self._cache = PayloadCache(cache_bytes)
        self._inflight: dict[Hashable, threading.Lock] = {}
        self._inflight_lock = threading.Lock()

    # -- caching ----------------------------------------------------------------------------

    def _cached(self, key: Hashable, compute: Callable[[], Payload]) -> Payload:
        """The payload cached under ``key``, computed once when missing. Single flight: when
        fifty clients ask for the same cold answer at once, one computes it and the others
        wait for that result instead of repeating it. Errors are never cached."""
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        with self._inflight_lock:
            flight = self._inflight.setdefault(key, threading.Lock())
        try:
            with flight:
                cached = self._cache.get(key)
                if cached is not None:
                    return cached
                try:
                    payload = compute()
                except InputError as e:  # the store refused what it holds: damaged
                    logger.warning("ad_layer: %s", e)
                    raise ApiError(UNREADABLE, e.message) from None
                self._cache.put(key, payload)
                return payload
        finally:
            with self._inflight_lock:
                if self._inflight.get(key) is flight:
                    del self._inflight[key]

    # -- validation helpers -----------------------------------------------------------------

    @staticmethod
    def _stages(handle: RunHandle) -> list[StageRecord]:
        stages: list[StageRecord] = handle.memoize("stages", lambda: handle.store().stages())
        return stages

    def _stage(self, handle: RunHandle, value: str | None) -> int:
        """A stage index from ``value`` (an index as listed, or ``last``/absent)."""
        known = [s.idx for s in self._stages(handle)]
        if not known:
            raise ApiError(NOT_FOUND, f"run {handle.name!r} has no stages", known)
        if value is None or value == "" or value == "last":
            return known[-1]
        if not _INT.fullmatch(value):
            raise ApiError(BAD_REQUEST, f"parameter 'stage' must be a stage index or 'last', "
                                        f"got {show(value)}", known)
        index = int(value)
        if index not in known:
            raise ApiError(NOT_FOUND, f"unknown stage {index} in run {handle.name!r}", known)
        return index

    @staticmethod
    def _ranks(handle: RunHandle) -> list[RankRecord]:
        ranks: list[RankRecord] = handle.memoize("ranks", lambda: handle.store().ranks())
        return ranks

    def _rank(self, handle: RunHandle, value: str | None) -> int | None:
        """A rank from ``value`` (a rank of the run; absent: the first); None for a run
        without a trace, which has no rank."""
        known = [r.rank for r in self._ranks(handle)]
        if value is None or value == "":
            return known[0] if known else None
        index = parse_int(value, "rank", known)
        if index not in known:
            raise ApiError(NOT_FOUND, f"unknown rank {index} in run {handle.name!r}"
                                      + ("" if known else " (it has no trace)"), known)
        return index

    @staticmethod
    def _layer_rows(handle: RunHandle, stage: int) -> list[LayerRecord]:
        rows: list[LayerRecord] = handle.memoize(("layers", stage),
                                                 lambda: handle.store().layers(stage))
        return rows

    def _summary(self, handle: RunHandle, stage: int) -> StageSummary:
        """What the stage's layer documents say as a whole (identical layers, shared inputs;
        :mod:`.stage_graph`): the documents are read once per stage and run store."""
        def compute() -> StageSummary:
            docs = []
            for r in self._layer_rows(handle, stage):
                try:
                    docs.append((r.layer, self._document(handle, stage, r.layer)))
                except (InputError, ApiError):
                    continue  # a damaged document is reported where it is asked for, not here
            return summarize(docs)
        summary: StageSummary = handle.memoize(("summary", stage), compute)
        return summary

    def _same_as(self, handle: RunHandle, stage: int) -> dict[int, int]:
        """The stage's identical layers (see :mod:`.identical`), computed once per run store."""
        return self._summary(handle, stage).same_as

    def _layer(self, handle: RunHandle, stage: int, value: str | None,
               name: str = "layer") -> int:
        known = [r.layer for r in self._layer_rows(handle, stage)]
        index = parse_int(value, name, known)
        if index not in known:
            raise ApiError(NOT_FOUND, f"unknown layer {index} in stage {stage} of run "
                                      f"{handle.name!r}", known)
        return index

    @staticmethod
    def _document(handle: RunHandle, stage: int, layer: int,
                  rank: int | None = None) -> LayerDocument:
        doc = handle.store().layer_document(stage, layer, rank)
        if doc is None:  # listed a moment ago, so the layers table contradicts itself
            raise ApiError(UNREADABLE, f"layer {layer} of stage {stage} has no document in "
                                       f"run {handle.name!r}; convert the run again")
        return doc

    # -- api/runs ---------------------------------------------------------------------------

    def _run_info(self, handle: RunHandle) -> RunInfo | UnreadableRun:
        if handle.error is not None:
            return UnreadableRun(run=handle.name, error=handle.error)

        def build() -> RunInfo | UnreadableRun:
            try:
                meta = handle.store().meta
                stages = self._stages(handle)
                if not stages:
                    return UnreadableRun(run=handle.name, error="the run store holds no stage; "
                                                                "convert the run again")
                default = stages[-1].idx
                same = self._same_as(handle, default)
                return RunInfo(
                    run=handle.name, error=None, model=meta.model, source_dir=meta.source_dir,
                    created=meta.created, converter_version=meta.converter_version,
                    schema_version=meta.schema_version,
                    stages=[StageInfo(index=s.idx, file=s.file, stage=s.stage,
                                      transform=s.transform, module=s.module,
                                      node_count=s.node_count, doubts=s.doubts)
                            for s in stages],
                    default_stage=default,
                    layers=[LayerRow(layer=r.layer, kind=r.kind, attention=r.attention,
                                     node_count=r.node_count, gpu_time_us=r.gpu_time_us,
                                     same_as=same.get(r.layer))
                            for r in self._layer_rows(handle, default)],
                    trace=meta.trace, ranks=[r.rank for r in self._ranks(handle)])
            except InputError as e:  # damaged: listed with the reason, not fatal to the list
                return UnreadableRun(run=handle.name, error=e.message)
        info: RunInfo | UnreadableRun = handle.memoize("run_info", build)
        return info

    def runs_payload(self, q: Query) -> Payload:
        """``api/runs``: every discovered run; one that cannot be read (another schema version,
        damaged, not a run store) is listed as ``{"run", "error"}`` instead of failing the
        whole list."""
        handles = self.discovery.handles()
        key = (q.path, tuple((h.name, h.identity) for h in handles))
        return self._cached(key, lambda: json_payload(
            RunsResponse(runs=[self._run_info(h) for h in handles])))

    # -- api/layer --------------------------------------------------------------------------

    def layer_payload(self, q: Query) -> Payload:
        """``api/layer``: the stored layer document of ``rank`` (default: the first),
        checked against the contract, plus ``run``, ``stage`` and ``rank``."""
        run, stage, layer, rank = q.values
        handle = self.discovery.get(run)

        def compute() -> Payload:
            s = self._stage(handle, stage)
            n = self._layer(handle, s, layer)
            r = self._rank(handle, rank)
            doc = self._document(handle, s, n, r)
            fields = msgspec.structs.asdict(doc)
            return json_payload(LayerResponse(run=handle.name, stage=s, rank=r, **fields))
        return self._cached((q.path, q.values, handle.identity), compute)

    # -- api/overview -----------------------------------------------------------------------

    def overview_payload(self, q: Query) -> Payload:
        """``api/overview``: per-layer kind, node count, GPU time and per-group time."""
        run, stage = q.values
        handle = self.discovery.get(run)

        def compute() -> Payload:
            s = self._stage(handle, stage)
            store = handle.store()
            # Per-group GPU time lives in the layers' trace summaries: only the traced stage
            # (one per run) has them, and the answer is cached.
            times = store.group_times(s)
            same = self._same_as(handle, s)
            layers = [OverviewLayer(layer=r.layer, kind=r.kind, attention=r.attention,
                                    node_count=r.node_count, gpu_time_us=r.gpu_time_us,
                                    groups=times.get(r.layer, {}), group_counts=r.group_counts,
                                    same_as=same.get(r.layer))
                      for r in self._layer_rows(handle, s)]
            # The trace maps onto the last stage; its kernels outside every layer (embedding,
            # final norm, lm head, sampling) show there as time outside the layers.
            trace = store.meta.trace
            stages = self._stages(handle)
            traced = trace is not None and bool(stages) and s == stages[-1].idx
            return json_payload(OverviewResponse(
                run=handle.name, stage=s, layers=layers, none_node_count=store.outside_count(s),
                outside_gpu_time_us=trace.outside_time_us if traced and trace else None))
        return self._cached((q.path, q.values, handle.identity), compute)

    # -- api/stage_graph --------------------------------------------------------------------

    def stage_graph_payload(self, q: Query) -> Payload:
        """``api/stage_graph``: the whole stage as layer boxes, folds of repeating layers, the
        nodes outside the layers and the shared inputs (:mod:`.stage_graph`)."""
        run, stage = q.values
        handle = self.discovery.get(run)

        def compute() -> Payload:
            s = self._stage(handle, stage)
            store = handle.store()
            rows = self._layer_rows(handle, s)
            trace = store.meta.trace
            stages = self._stages(handle)
            traced = trace is not None and bool(stages) and s == stages[-1].idx
            return json_payload(stage_graph(
                handle.name, s, rows, self._summary(handle, s), store.nodes(s, -1),
                store.group_times(s), trace.outside_time_us if traced and trace else None))
        return self._cached((q.path, q.values, handle.identity), compute)

    # -- api/stages -------------------------------------------------------------------------

    def stages_payload(self, q: Query) -> Payload:
        """``api/stages``: one layer through every stage, with added/removed/changed node ids
        against the previous stage (matched by id)."""
        run, layer = q.values
        handle = self.discovery.get(run)

        def compute() -> Payload:
            store = handle.store()
            have = store.layer_indexes()
            n = parse_int(layer, "layer", have)
            if n not in have:
                raise ApiError(NOT_FOUND, f"unknown layer {n} in run {handle.name!r}", have)
            out = []
            prev: dict[str, tuple[str, str, str, list[str]]] | None = None
            for st in self._stages(handle):
                doc = store.layer_document(st.idx, n)
                cur = {node.id: (node.op, node.shape, node.dtype, node.inputs)
                       for node in (doc.nodes if doc is not None else [])}
                added: list[str] = []
                removed: list[str] = []
                changed: list[str] = []
                if prev is not None:
                    added = [k for k in cur if k not in prev]
                    removed = [k for k in prev if k not in cur]
                    changed = [k for k in cur if k in prev and cur[k] != prev[k]]
                out.append(StageDiff(index=st.idx, file=st.file, stage=st.stage,
                                     transform=st.transform, node_count=len(cur), added=added,
                                     removed=removed, changed=changed))
                prev = cur
            return json_payload(StagesResponse(run=handle.name, layer=n, stages=out))
        return self._cached((q.path, q.values, handle.identity), compute)

    # -- api/timeline -----------------------------------------------------------------------

    def timeline_payload(self, q: Query) -> Payload:
        """``api/timeline``: kernels per stream in a window, merged into buckets per stream
        when more than ``max_items``. A run without a trace has no streams."""
        run, layer, start_us, end_us, max_items, rank = q.values
        handle = self.discovery.get(run)

        def compute() -> Payload:
            stages = self._stages(handle)
            r = self._rank(handle, rank)
            n: int | None = None
            if layer is not None and layer != "":
                known = [r.layer for r in self._layer_rows(handle, stages[-1].idx)] \
                    if stages else []
                n = parse_int(layer, "layer", known)
                if n not in known:
                    raise ApiError(NOT_FOUND, f"unknown layer {n} in run {handle.name!r}", known)
            window_start_us = parse_float(start_us, "start_us")
            window_end_us = parse_float(end_us, "end_us")
            if window_start_us is not None and window_end_us is not None \
                    and window_end_us < window_start_us:
                raise ApiError(BAD_REQUEST, f"end_us ({window_end_us}) is before start_us "
                                            f"({window_start_us})")
            limit = DEFAULT_MAX_ITEMS
            if max_items is not None and max_items != "":
                limit = parse_int(max_items, "max_items", [])
                if not 1 <= limit <= MAX_MAX_ITEMS:
                    raise ApiError(BAD_REQUEST, f"max_items must be between 1 and "
                                                f"{MAX_MAX_ITEMS}, got {limit}")
            index: KernelIndex = handle.memoize(
                ("kernel_index", r), lambda: KernelIndex.from_store(handle.store(), r))
            return json_payload(timeline(index, handle.name, n, window_start_us, window_end_us,
                                         limit, r))
        return self._cached((q.path, q.values, handle.identity), compute)

    # -- api/compare ------------------------------------------------------------------------

    def compare_payload(self, q: Query) -> Payload:
        """``api/compare``: (a_run, a_stage, a_layer) against (b_run, b_stage, b_layer);
        ``b_run`` defaults to ``a_run``, stages to the last."""
        a_run, a_stage, a_layer, b_run, b_stage, b_layer = q.values
        if a_run is None or a_run == "":
            raise ApiError(BAD_REQUEST, "missing parameter 'a_run'", self.discovery.run_names())
        ha = self.discovery.get(a_run)
        hb = ha if b_run is None or b_run == "" else self.discovery.get(b_run)

        def compute() -> Payload:
            sa, sb = self._stage(ha, a_stage), self._stage(hb, b_stage)
            la = self._layer(ha, sa, a_layer, "a_layer")
            lb = self._layer(hb, sb, b_layer, "b_layer")
            doc_a, doc_b = self._document(ha, sa, la), self._document(hb, sb, lb)
            side_a = CompareSide(run=ha.name, stage=sa, layer=la, time_us=layer_time_us(doc_a))
            side_b = CompareSide(run=hb.name, stage=sb, layer=lb, time_us=layer_time_us(doc_b))
            response: CompareResponse = compare_docs(side_a, doc_a, side_b, doc_b)
            return json_payload(response)
        return self._cached((q.path, q.values, ha.identity, hb.identity), compute)

    # -- downloads --------------------------------------------------------------------------

    def _layer_download(self, q: Query, suffix: str,
                        render: Callable[[LayerDocument], tuple[bytes, str]]) -> Payload:
        run, stage, layer = q.values
        handle = self.discovery.get(run)

        def compute() -> Payload:
            s = self._stage(handle, stage)
            n = self._layer(handle, s, layer)
            doc = self._document(handle, s, n)
            stem = safe_filename(Path(doc.source_file or handle.name).stem, "layer")
            body, content_type = render(doc)
            return Payload(body, content_type, filename=f"{stem}_layer{n}{suffix}")
        return self._cached((q.path, q.values, handle.identity), compute)

    def layer_json_payload(self, q: Query) -> Payload:
        """``api/download/layer.json``: the layer as seed-schema JSON."""
        return self._layer_download(q, ".json", lambda doc: (
            seed_json_text(doc).encode("utf-8"), JSON))

    def layer_dot_payload(self, q: Query) -> Payload:
        """``api/download/layer.dot``: the layer as Graphviz DOT."""
        return self._layer_download(q, ".dot", lambda doc: (
            to_dot(doc).encode("utf-8"), "text/vnd.graphviz; charset=utf-8"))

    def trace_json_payload(self, q: Query) -> Payload:
        """``api/download/trace.json``: the run's kernels as Chrome trace JSON."""
        (run,) = q.values
        handle = self.discovery.get(run)

        def compute() -> Payload:
            store = handle.store()
            if store.kernel_count() == 0:
                raise ApiError(NOT_FOUND, f"run {handle.name!r} has no trace (convert with "
                                          f"--trace)")
            name = safe_filename(handle.name.replace("/", "_"), "run") + ".trace.json"
            return Payload(export_chrome_trace(store).encode("utf-8"), JSON, filename=name)
        return self._cached((q.path, q.values, handle.identity), compute)
