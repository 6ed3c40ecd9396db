"""The plugin's data layer: every API answer, computed from the run stores under the logdir.

Handlers in :mod:`tb_ad_layer.plugin.plugin` only turn query strings into calls of
:meth:`PluginData.payload` and payloads into responses; tests call the typed methods
(:meth:`PluginData.runs`, :meth:`PluginData.layer` ...) directly. Every parameter is validated
here against what exists (runs discovered under the logdir, stages and layers of that store),
and a refusal is an :class:`~tb_ad_layer.plugin.errors.ApiError` carrying the known values.

Speed: answers are cached as encoded payloads keyed by the endpoint, its parameters and the file
identity of every store involved, so a re-converted run is never served stale and a repeated
request costs a stat and a dictionary lookup. The layer document is stored as JSON text by the
converter and served without decoding it.
"""
from __future__ import annotations

import json
import logging
import re
import sqlite3
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Mapping

from tb_ad_layer.layers.dot import to_dot
from tb_ad_layer.layers.seed_json import to_seed_json
from tb_ad_layer.plugin.compare import compare_docs, layer_time_us
from tb_ad_layer.plugin.discovery import RunDiscovery, RunHandle
from tb_ad_layer.plugin.errors import ApiError, show
from tb_ad_layer.plugin.responses import JSON, Payload, json_payload, safe_filename
from tb_ad_layer.plugin.timeline import (DEFAULT_MAX_ITEMS, MAX_MAX_ITEMS, KernelIndex,
                                         timeline_json)
from tb_ad_layer.store.chrome_export import export_chrome_trace

logger = logging.getLogger(__name__)

_INT = re.compile(r"-?[0-9]{1,9}")
_FLOAT = re.compile(r"-?(?:[0-9]{1,15}(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]{1,3})?")

#: Parameters of each endpoint (docs/API.md); anything else in a query is ignored, so cache
#: busters and tracking parameters neither fail nor fragment the cache.
ENDPOINT_PARAMS: dict[str, tuple[str, ...]] = {
    "runs": (),
    "layer": ("run", "stage", "layer"),
    "overview": ("run", "stage"),
    "stages": ("run", "layer"),
    "timeline": ("run", "layer", "start_us", "end_us", "max_items"),
    "compare": ("a_run", "a_stage", "a_layer", "b_run", "b_stage", "b_layer"),
    "download/layer.json": ("run", "stage", "layer"),
    "download/layer.dot": ("run", "stage", "layer"),
    "download/trace.json": ("run",),
}
DOWNLOADS = ("layer.json", "layer.dot", "trace.json")


def parse_int(value: object, name: str, known: list[Any]) -> int:
    """An integer parameter; 400 (with ``known``) when missing or not an integer."""
    if isinstance(value, bool):
        value = str(value)
    if isinstance(value, int):
        return value
    if value is None or value == "":
        raise ApiError(400, f"missing parameter {name!r}", known)
    if not isinstance(value, str) or not _INT.fullmatch(value):
        raise ApiError(400, f"parameter {name!r} must be an integer, got {show(value)}", known)
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
        raise ApiError(400, f"parameter {name!r} must be a number (µs), got {show(value)}")
    if number != number or number in (float("inf"), float("-inf")):
        raise ApiError(400, f"parameter {name!r} must be finite, got {show(value)}")
    return number


class PayloadCache:
    """A least-recently-used map of encoded answers, bounded by their total size."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget = budget_bytes
        self._items: OrderedDict[tuple, Payload] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: tuple) -> Payload | None:
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
            return item

    def put(self, key: tuple, payload: Payload) -> None:
        size = payload.size
        if size > self.budget // 4:
            return  # one huge answer must not flush everything else
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old.size
            self._items[key] = payload
            self._bytes += size
            while self._bytes > self.budget and self._items:
                _, dropped = self._items.popitem(last=False)
                self._bytes -= dropped.size


class PluginData:
    """All API answers for one logdir. Thread-safe; one instance per TensorBoard process."""

    def __init__(self, logdir: str | Path | None, *, rescan_interval: float = 2.0,
                 cache_bytes: int = 48 << 20) -> None:
        self.discovery = RunDiscovery(logdir, rescan_interval=rescan_interval)
        self._cache = PayloadCache(cache_bytes)
        self._inflight: dict[tuple, threading.Lock] = {}
        self._inflight_lock = threading.Lock()

    # -- validation helpers ---------------------------------------------------------------

    @staticmethod
    def _stages(handle: RunHandle) -> list[dict[str, Any]]:
        return handle.memoize("stages", lambda: handle.store().stages())

    def _stage(self, handle: RunHandle, value: object) -> int:
        """A stage index from ``value`` (an index as listed, or ``last``/absent)."""
        stages = self._stages(handle)
        known = [s["index"] for s in stages]
        if not known:
            raise ApiError(404, f"run {handle.name!r} has no stages", known)
        if value is None or value == "" or value == "last":
            return known[-1]
        if isinstance(value, str) and not _INT.fullmatch(value):
            raise ApiError(400, f"parameter 'stage' must be a stage index or 'last', got "
                                f"{show(value)}", known)
        index = parse_int(value, "stage", known)
        if index not in known:
            raise ApiError(404, f"unknown stage {index} in run {handle.name!r}", known)
        return index

    @staticmethod
    def _layer_rows(handle: RunHandle, stage: int) -> list[dict[str, Any]]:
        return handle.memoize(("layers", stage), lambda: handle.store().layers(stage))

    def _layer(self, handle: RunHandle, stage: int, value: object, name: str = "layer") -> int:
        known = [r["layer"] for r in self._layer_rows(handle, stage)]
        index = parse_int(value, name, known)
        if index not in known:
            raise ApiError(404, f"unknown layer {index} in stage {stage} of run {handle.name!r}",
                           known)
        return index

    def _doc_text(self, handle: RunHandle, stage: int, layer: int) -> str:
        text = handle.store().layer_doc_text(stage, layer)
        if text is None:  # listed but no document: a store written by a broken converter
            raise ApiError(404, f"layer {layer} of stage {stage} has no document in run "
                                f"{handle.name!r}")
        return text

    def _doc(self, handle: RunHandle, stage: int, layer: int) -> dict[str, Any]:
        return json.loads(self._doc_text(handle, stage, layer))

    # -- api/runs ---------------------------------------------------------------------------

    def _run_entry(self, handle: RunHandle) -> dict[str, Any]:
        if handle.error is not None:
            return {"run": handle.name, "error": handle.error}

        def build() -> dict[str, Any]:
            store = handle.store()
            meta = store.meta
            stages = self._stages(handle)
            default = stages[-1]["index"] if stages else None
            layers = self._layer_rows(handle, default) if default is not None else []
            return {
                "run": handle.name, "error": None, "model": meta.get("model"),
                "source_dir": meta.get("source_dir"), "created": meta.get("created"),
                "converter_version": meta.get("converter_version"),
                "schema_version": meta.get("schema_version"),
                "stages": [{"index": s["index"], "file": s["file"], "stage": s["stage"],
                            "transform": s["transform"], "module": s["module"],
                            "node_count": s["node_count"]} for s in stages],
                "default_stage": default,
                "layers": [{"layer": r["layer"], "kind": r["kind"], "attention": r["attention"],
                            "node_count": r["node_count"], "gpu_time_us": r["gpu_time_us"]}
                           for r in layers],
                "trace": meta.get("trace"),
            }
        return handle.memoize("run_entry", build)

    def runs(self) -> dict[str, Any]:
        """``api/runs``: every discovered run; an unreadable one (other schema version, corrupt
        file) is listed as ``{"run", "error"}`` instead of failing the whole list."""
        out = []
        for handle in self.discovery.handles():
            try:
                out.append(self._run_entry(handle))
            except (sqlite3.Error, ApiError, ValueError) as e:
                out.append({"run": handle.name, "error": f"not a readable run store ({e})"})
        return {"runs": out}

    # -- api/layer --------------------------------------------------------------------------

    def _layer_text(self, handle: RunHandle, stage: object, layer: object) -> str:
        s = self._stage(handle, stage)
        n = self._layer(handle, s, layer)
        text = self._doc_text(handle, s, n).rstrip()
        # The stored document has no run/stage; appending them (last key wins in JSON.parse)
        # avoids decoding and re-encoding a document of hundreds of kilobytes.
        return f'{text[:-1]},"run":{json.dumps(handle.name)},"stage":{s}}}'

    def layer_text(self, run: object, stage: object = None, layer: object = None) -> str:
        """``api/layer`` as JSON text: the stored layer document plus ``run`` and ``stage``."""
        return self._layer_text(self.discovery.get(run), stage, layer)

    def layer(self, run: object, stage: object = None, layer: object = None) -> dict[str, Any]:
        """``api/layer`` decoded (for tests and callers that want the document)."""
        return json.loads(self.layer_text(run, stage, layer))

    # -- api/overview -----------------------------------------------------------------------

    def _overview(self, handle: RunHandle, stage: object) -> dict[str, Any]:
        s = self._stage(handle, stage)
        store = handle.store()
        rows = self._layer_rows(handle, s)
        layers = []
        for r in rows:
            groups: dict[str, float] = {}
            if r["gpu_time_us"] is not None:
                # Per-group GPU time lives in the layer's trace summary; only traced stages
                # (one per run) pay for decoding the documents, and the answer is cached.
                summary = self._doc(handle, s, r["layer"]).get("trace_summary") or {}
                groups = summary.get("groups") or {}
            layers.append({"layer": r["layer"], "kind": r["kind"], "attention": r["attention"],
                           "node_count": r["node_count"], "gpu_time_us": r["gpu_time_us"],
                           "groups": groups, "group_counts": r["group_counts"]})
        none_count = store.outside_count(s)
        # The trace maps onto the last stage; its kernels outside every layer (embedding, final
        # norm, lm head, sampling) show there as time outside the layers.
        trace = store.meta.get("trace") or {}
        stages = self._stages(handle)
        traced = bool(stages) and s == stages[-1]["index"]
        outside = trace.get("outside_time_us") if traced else None
        return {"run": handle.name, "stage": s, "layers": layers, "none_node_count": none_count,
                "outside_gpu_time_us": outside}

    def overview(self, run: object, stage: object = None) -> dict[str, Any]:
        """``api/overview``: per-layer kind, node count, GPU time and per-group time."""
        return self._overview(self.discovery.get(run), stage)

    # -- api/stages -------------------------------------------------------------------------

    def _stage_diff(self, handle: RunHandle, layer: object) -> dict[str, Any]:
        store = handle.store()
        stages = self._stages(handle)
        have = sorted({r[0] for r in store.query("SELECT DISTINCT layer FROM layers")})
        n = parse_int(layer, "layer", have)
        if n not in have:
            raise ApiError(404, f"unknown layer {n} in run {handle.name!r}", have)
        out = []
        prev: dict[str, tuple] | None = None
        for st in stages:
            doc = store.layer_doc(st["index"], n) or {"nodes": []}
            cur = {node["id"]: (node["op"], node["shape"], node["dtype"], node["inputs"])
                   for node in doc["nodes"]}
            if prev is None:
                added: list[str] = []
                removed: list[str] = []
                changed: list[str] = []
            else:
                added = [k for k in cur if k not in prev]
                removed = [k for k in prev if k not in cur]
                changed = [k for k in cur if k in prev and cur[k] != prev[k]]
            out.append({"index": st["index"], "file": st["file"], "stage": st["stage"],
                        "transform": st["transform"], "node_count": len(cur), "added": added,
                        "removed": removed, "changed": changed})
            prev = cur
        return {"run": handle.name, "layer": n, "stages": out}

    def stages(self, run: object, layer: object = None) -> dict[str, Any]:
        """``api/stages``: one layer through every stage, with added/removed/changed node ids
        against the previous stage (matched by id)."""
        return self._stage_diff(self.discovery.get(run), layer)

    # -- api/timeline -----------------------------------------------------------------------

    def _timeline(self, handle: RunHandle, layer: object, start_us: object, end_us: object,
                  max_items: object) -> str:
        stages = self._stages(handle)
        n: int | None = None
        if layer is not None and layer != "":
            known = [r["layer"] for r in self._layer_rows(handle, stages[-1]["index"])] \
                if stages else []
            n = parse_int(layer, "layer", known)
            if n not in known:
                raise ApiError(404, f"unknown layer {n} in run {handle.name!r}", known)
        a = parse_float(start_us, "start_us")
        b = parse_float(end_us, "end_us")
        if a is not None and b is not None and b < a:
            raise ApiError(400, f"end_us ({b}) is before start_us ({a})")
        limit = DEFAULT_MAX_ITEMS
        if max_items is not None and max_items != "":
            limit = parse_int(max_items, "max_items", [])
            if not 1 <= limit <= MAX_MAX_ITEMS:
                raise ApiError(400, f"max_items must be between 1 and {MAX_MAX_ITEMS}, "
                                    f"got {limit}")
        index = handle.memoize("kernel_index", lambda: KernelIndex.from_store(handle.store()))
        return timeline_json(index, n, a, b, limit, head={"run": handle.name, "layer": n})

    def timeline(self, run: object, layer: object = None, start_us: object = None,
                 end_us: object = None, max_items: object = None) -> dict[str, Any]:
        """``api/timeline``: kernels per stream in a window, merged into buckets per stream
        when more than ``max_items``. A run without a trace has no streams."""
        return json.loads(self._timeline(self.discovery.get(run), layer, start_us, end_us,
                                         max_items))

    # -- api/compare ------------------------------------------------------------------------

    def _compare(self, ha: RunHandle, a_stage: object, a_layer: object, hb: RunHandle,
                 b_stage: object, b_layer: object) -> dict[str, Any]:
        sa, sb = self._stage(ha, a_stage), self._stage(hb, b_stage)
        la, lb = self._layer(ha, sa, a_layer, "a_layer"), self._layer(hb, sb, b_layer, "b_layer")
        doc_a, doc_b = self._doc(ha, sa, la), self._doc(hb, sb, lb)
        return {"a": {"run": ha.name, "stage": sa, "layer": la, "time_us": layer_time_us(doc_a)},
                "b": {"run": hb.name, "stage": sb, "layer": lb, "time_us": layer_time_us(doc_b)},
                **compare_docs(doc_a, doc_b)}

    def _compare_handles(self, a_run: object, b_run: object) -> tuple[RunHandle, RunHandle]:
        ha = self.discovery.get(a_run) if a_run not in (None, "") else None
        if ha is None:
            raise ApiError(400, "missing parameter 'a_run'", self.discovery.run_names())
        hb = ha if b_run in (None, "") else self.discovery.get(b_run)
        return ha, hb

    def compare(self, a_run: object, a_stage: object = None, a_layer: object = None,
                b_run: object = None, b_stage: object = None,
                b_layer: object = None) -> dict[str, Any]:
        """``api/compare``: (a_run, a_stage, a_layer) against (b_run, b_stage, b_layer);
        ``b_run`` defaults to ``a_run``, stages to the last."""
        ha, hb = self._compare_handles(a_run, b_run)
        return self._compare(ha, a_stage, a_layer, hb, b_stage, b_layer)

    # -- downloads --------------------------------------------------------------------------

    def _download(self, handle: RunHandle, what: str, stage: object,
                  layer: object) -> Payload:
        if what == "trace.json":
            store = handle.store()
            if store.kernel_count() == 0:
                raise ApiError(404, f"run {handle.name!r} has no trace (convert with --trace)")
            name = safe_filename(handle.name.replace("/", "_"), "run") + ".trace.json"
            return Payload(export_chrome_trace(store).encode("utf-8"), JSON, filename=name)
        s = self._stage(handle, stage)
        n = self._layer(handle, s, layer)
        doc = self._doc(handle, s, n)
        stem = safe_filename(Path(str(doc.get("source_file") or handle.name)).stem, "layer")
        if what == "layer.json":
            text = json.dumps(to_seed_json(doc), indent=2, ensure_ascii=False) + "\n"
            return Payload(text.encode("utf-8"), JSON, filename=f"{stem}_layer{n}.json")
        return Payload(to_dot(doc).encode("utf-8"), "text/vnd.graphviz; charset=utf-8",
                       filename=f"{stem}_layer{n}.dot")

    def download(self, what: str, run: object, stage: object = None,
                 layer: object = None) -> Payload:
        """A download (``layer.json`` seed schema, ``layer.dot``, ``trace.json`` Chrome trace)
        as a payload with its file name."""
        if what not in DOWNLOADS:
            raise ApiError(404, f"unknown download {show(what)}", list(DOWNLOADS))
        return self._download(self.discovery.get(run), what, stage, layer)

    # -- the HTTP entry point ---------------------------------------------------------------

    def payload(self, endpoint: str, args: Mapping[str, str]) -> Payload:
        """The encoded answer of ``endpoint`` (a key of :data:`ENDPOINT_PARAMS`) for query
        ``args``, cached per store version. Raises :class:`ApiError`."""
        spec = ENDPOINT_PARAMS.get(endpoint)
        if spec is None:
            known = [e for e in ENDPOINT_PARAMS]
            raise ApiError(404, f"unknown endpoint {show(endpoint)}", known)
        params = tuple(args.get(p) for p in spec)
        if endpoint == "runs":
            handles = self.discovery.handles()
            key: tuple = (endpoint, tuple((h.name, h.identity) for h in handles))
            compute: Callable[[], Payload] = lambda: json_payload(self.runs())
        elif endpoint == "compare":
            ha, hb = self._compare_handles(params[0], params[3])
            key = (endpoint, params, ha.identity, hb.identity)
            compute = lambda: json_payload(self._compare(ha, params[1], params[2], hb,
                                                         params[4], params[5]))
        else:
            handle = self.discovery.get(params[0])
            key = (endpoint, params, handle.identity)
            rest = params[1:]
            if endpoint == "layer":
                compute = lambda: Payload(self._layer_text(handle, *rest).encode("utf-8"), JSON)
            elif endpoint == "overview":
                compute = lambda: json_payload(self._overview(handle, *rest))
            elif endpoint == "stages":
                compute = lambda: json_payload(self._stage_diff(handle, *rest))
            elif endpoint == "timeline":
                # Windows change at every pan: compress fast rather than small.
                compute = lambda: Payload(self._timeline(handle, *rest).encode("utf-8"), JSON,
                                          gzip_level=3)
            else:
                what = endpoint.split("/", 1)[1]
                compute = lambda: self._download(handle, what, *(rest + (None, None))[:2])
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        # Single flight: when fifty clients ask for the same cold answer at once, one computes
        # (and compresses) it and the others wait for that result instead of repeating it.
        with self._inflight_lock:
            flight = self._inflight.setdefault(key, threading.Lock())
        try:
            with flight:
                cached = self._cache.get(key)
                if cached is not None:
                    return cached
                try:
                    payload = compute()
                except sqlite3.Error as e:
                    # Only a store rewritten in place (not by rename) or a corrupt file gets
                    # here; the next request sees the new file identity and reopens it.
                    logger.warning("ad_layer: reading %s failed: %s", key, e)
                    raise ApiError(503, f"run store changed or damaged while being read ({e}); "
                                        f"retry or convert the run again") from None
                if payload.compressible:
                    payload.gzipped()
                self._cache.put(key, payload)
                return payload
        finally:
            with self._inflight_lock:
                if self._inflight.get(key) is flight:
                    del self._inflight[key]
