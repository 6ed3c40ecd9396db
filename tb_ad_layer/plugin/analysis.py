"""``api/report`` and ``api/diff``: the records of ``tb-ad-layer report`` and ``diff``
(:mod:`tb_ad_layer.analysis`), built by the same functions from the same stores, so the panel and
the command line show the same figures (a test holds the two bodies byte for byte equal).

Parameters: ``api/report?run=R[&dim=s70=1024,kv_len=4096][&gpu=NAME]``;
``api/diff?a_run=A&b_run=B[&gate=PCT]``; ``api/ranks?run=R[&stage=S]`` (every rank of a
multi-GPU run: :mod:`tb_ad_layer.analysis.ranks`). Answers are cached per store identity, like every other
answer, so a run converted again is analysed again.
"""
from __future__ import annotations

from tb_ad_layer.analysis.diff import DEFAULT_GATE_PCT, diff_stores, untraced
from tb_ad_layer.analysis.gpus import known_gpus, lookup
from tb_ad_layer.analysis.ranks import ranks_for_store
from tb_ad_layer.analysis.report import ReportOptions, parse_dims, report_for_store
from tb_ad_layer.errors import InputError
from tb_ad_layer.plugin.data import PluginData, parse_float
from tb_ad_layer.plugin.errors import BAD_REQUEST, NOT_FOUND, UNREADABLE, ApiError, show
from tb_ad_layer.plugin.responses import Payload, json_payload
from tb_ad_layer.plugin.routes import Query


class AnalysisRoutes:
    """The two handlers, over the plugin's data layer (its run discovery and answer cache)."""

    def __init__(self, data: PluginData) -> None:
        self.data = data

    def report_payload(self, q: Query) -> Payload:
        """``api/report``: the report of one run."""
        run, dim, gpu = q.values
        handle = self.data.discovery.get(run)
        try:
            dims = parse_dims([d for d in (dim or "").split(",") if d.strip()])
        except InputError as e:
            raise ApiError(BAD_REQUEST, f"parameter 'dim': {e.message}") from None
        if gpu and lookup(gpu, "option").entry is None:
            raise ApiError(BAD_REQUEST, f"unknown gpu {show(gpu)}", known_gpus())
        options = ReportOptions(dims=dims, gpu=gpu or None)

        def compute() -> Payload:
            return json_payload(report_for_store(handle.store(), options))
        return self.data._cached((q.path, q.values, handle.identity), compute)

    def ranks_payload(self, q: Query) -> Payload:
        """``api/ranks``: every rank's GPU time per layer, the stragglers and the
        communication per rank, of the traced stage (the last: ``stage`` may name it)."""
        run, stage = q.values
        handle = self.data.discovery.get(run)

        def compute() -> Payload:
            s = self.data._stage(handle, stage)
            last = self.data._stages(handle)[-1].idx
            if s != last:
                raise ApiError(NOT_FOUND, f"the ranks' kernels are on the traced stage {last} "
                                          f"of run {handle.name!r}, not on stage {s}", [last])
            return json_payload(ranks_for_store(handle.store()))
        return self.data._cached((q.path, q.values, handle.identity), compute)

    def diff_payload(self, q: Query) -> Payload:
        """``api/diff``: run ``b_run`` against ``a_run``."""
        a_run, b_run, gate = q.values
        a = self.data.discovery.get(a_run)
        b = self.data.discovery.get(b_run)
        gate_pct = parse_float(gate, "gate")
        if gate_pct is not None and gate_pct < 0:
            raise ApiError(BAD_REQUEST, f"parameter 'gate' must be >= 0, got {show(gate)}")
        pct = DEFAULT_GATE_PCT if gate_pct is None else gate_pct
        for handle in (a, b):
            try:
                reason = untraced(handle.store())
            except InputError as e:
                raise ApiError(UNREADABLE, e.message) from None
            if reason is not None:
                raise ApiError(BAD_REQUEST, reason)

        def compute() -> Payload:
            return json_payload(diff_stores(a.store(), b.store(), pct))
        return self.data._cached((q.path, q.values, a.identity, b.identity), compute)
