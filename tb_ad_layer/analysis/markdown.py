"""The report and the diff as Markdown, for people (``--format md``, the default): the same
records as the JSON, fewer digits."""
from __future__ import annotations

from collections.abc import Sequence

from tb_ad_layer.contract.analysis import Diff, DiffEntry, LayerBreakdown, Report

#: Rows shown per table (the JSON holds them all).
TOP = 15


def _esc(text: object) -> str:
    """Text from dumps and traces in a table cell: pipes and backticks would break the table."""
    return str(text).replace("|", "\\|").replace("`", "'").replace("\n", " ")


def _where(layer: int | None) -> str:
    return str(layer) if layer is not None else "outside"


def _table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(_esc(c) for c in r) + " |" for r in rows]
    return out + [""]


def _f(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def report_markdown(r: Report) -> str:
    """The report as Markdown."""
    s = r.step
    out = [f"# Where the time goes: {_esc(r.run)} (stage {r.stage}, {r.phase or 'no trace'})", "",
           f"One step: {_f(s.gpu_time_us)} µs of GPU time ({s.kernel_count} kernels, "
           f"{s.memory_op_count} memory operations, {_f(s.memory_us)} µs), "
           f"{_f(s.span_us)} µs of wall time, {_f(s.idle_us)} µs with every stream idle; "
           f"medians over {s.replays} replay(s).", ""]
    out += ["## Findings", ""]
    out += _table(["#", "µs at stake", "kind", "layer", "what"],
                  [(i + 1, _f(f.time_at_stake_us), f.kind, _where(f.layer) if f.layer is not None
                    or f.node else "step", f.message) for i, f in enumerate(r.findings)]) \
        if r.findings else ["Nothing stands out.", ""]
    out += ["## By category", ""]
    out += _table(["category", "µs", "share"],
                  [(c.category, _f(c.gpu_time_us), f"{c.share:.1%}") for c in r.categories])
    out += ["## By group", ""]
    out += _table(["group", "µs"], [(g.group, _f(g.gpu_time_us)) for g in r.groups])
    out += ["## Streams", ""]
    out += _table(["stream", "kernels", "busy µs", "idle in step µs"],
                  [(x.label, x.kernel_count, _f(x.busy_us), _f(x.idle_us)) for x in r.streams])
    out += ["## Layers", ""]
    rows = r.layers + ([r.outside] if r.outside is not None else [])
    out += _table(["layer", "kind", "GPU µs", "wall µs", "top categories", "exposed comm µs",
                   "critical path wait µs"],
                  [(_where(b.layer), b.kind, _f(b.gpu_time_us), _f(b.span_us), _top(b),
                    _f(b.overlap.exposed_us), _f(b.critical_path.wait_us)) for b in rows])
    out += ["## Tails (p99 far above the median)", ""]
    flagged = [t for t in r.tails if t.flagged][:TOP]
    out += _table(["layer", "node", "p50 µs", "p90 µs", "p99 µs", "max µs", "replays"],
                  [(_where(t.layer), t.node, _f(t.p50_us, 2), _f(t.p90_us, 2), _f(t.p99_us, 2),
                    _f(t.max_us, 2), t.replays) for t in flagged]) \
        if flagged else ["No node's p99 is far above its median.", ""]
    g = r.gpu
    out += ["## Roofline", "",
            f"GPU: {_esc(g.name or 'unknown')} ({g.source}); peak "
            + (", ".join(f"{k} {v:g} TFLOP/s" for k, v in g.peak_tflops.items())
               + f", {g.peak_tbs:g} TB/s" if g.peak_tbs else "unknown") + "", ""]
    out += _sizes(r)
    out += _table(["layer", "node", "µs", "TFLOP/s", "TB/s", "bound", "of peak", "how / why not"],
                  [(_where(x.layer), x.node, _f(x.time_us, 2), _f(x.achieved_tflops, 2),
                    f"{_f(x.achieved_bus_gbs, 1)} GB/s bus" if x.bound == "communication"
                    else _f(x.achieved_tbs, 3), x.bound or "—",
                    f"{x.peak_share:.0%}" if x.peak_share is not None else "—",
                    x.reason or x.formula) for x in r.roofline[:TOP]])
    h = r.host
    out += ["## Host side", ""]
    if h.runtime_recorded:
        out += [f"{h.launches} launch calls ({h.graph_launches} graph launches), {h.sync_calls} "
                f"synchronisations ({_f(h.sync_us)} µs); GPU idle {_f(h.idle_us)} µs, of which "
                f"{_f(h.explained_us)} µs a host call explains.", ""]
    else:
        out += [f"No CUDA runtime rows in the trace; GPU idle {_f(h.idle_us)} µs.", ""]
    if h.gaps:
        out += _table(["at µs", "idle µs", "cause", "call", "before"],
                      [(_f(x.start_us), _f(x.duration_us), x.cause, x.call or "—",
                        f"{x.node} (layer {_where(x.layer)})" if x.node else "—")
                       for x in h.gaps[:TOP]])
    if h.copies:
        out += _table(["direction", "from", "to", "count", "bytes", "µs"],
                      [(c.direction, c.src_kind or "?", c.dst_kind or "?", c.count,
                        f"{c.bytes:,}" if c.bytes is not None else "?", _f(c.time_us, 2))
                       for c in h.copies])
    out += _ranks(r)
    if r.notes:
        out += ["## Notes", ""] + [f"- {_esc(n)}" for n in r.notes] + [""]
    return "\n".join(out)


def _sizes(r: Report) -> list[str]:
    """The stage's symbolic sizes and where each came from (--dim first, then the trace)."""
    given = [f"{k} = {v} (--dim)" for k, v in r.dims.items()]
    traced = [f"{d.symbol} = {d.value} (trace: {_esc(d.source)})" if d.value is not None
              else f"{d.symbol} unbound ({_esc(d.source)})"
              for d in r.trace_dims or [] if d.symbol not in r.dims]
    if not given and not traced:
        return [] if r.trace_dims is not None else \
            ["Sizes: the trace records no input shapes; symbolic sizes come from --dim only.", ""]
    return ["Sizes: " + "; ".join(given + traced) + ".", ""]


def _ranks(r: Report) -> list[str]:
    """Every rank's GPU time per layer and the stragglers (a multi-GPU run only)."""
    if not r.ranks:
        return []
    layers = [x.layer for x in r.ranks[0].layers]
    out = ["## Ranks", "", f"{len(r.ranks)} ranks; GPU µs per layer (communication µs in "
                           f"brackets where collectives are mapped).", ""]
    by = {k.rank: {x.layer: x for x in k.layers} for k in r.ranks}

    def cell(rank: int, layer: int) -> str:
        x = by[rank].get(layer)
        if x is None:
            return "—"
        return _f(x.gpu_time_us) + (f" ({_f(x.communication_us)})"
                                    if x.communication_us is not None else "")
    out += _table(["rank", "device", "GPU µs", "comm µs", "trace"],
                  [(k.rank, k.device if k.device is not None else "—", _f(k.gpu_time_us),
                    _f(k.communication_us), k.trace) for k in r.ranks])
    out += _table(["layer"] + [f"rank {k.rank}" for k in r.ranks],
                  [(n,) + tuple(cell(k.rank, n) for k in r.ranks) for n in layers])
    out += ["## Stragglers", ""]
    out += _table(["rank", "layer", "excess µs", "compute µs", "others' median µs", "noise µs"],
                  [(x.rank, x.layer, _f(x.excess_us, 2), _f(x.compute_us, 2),
                    _f(x.others_us, 2), _f(x.noise_us, 2)) for x in r.stragglers[:TOP]]) \
        if r.stragglers else ["No rank is slower than the others beyond the replay noise.", ""]
    return out


def _top(b: LayerBreakdown) -> str:
    return ", ".join(f"{c.category} {c.share:.0%}" for c in b.categories[:3])


def _entries(entries: Sequence[DiffEntry]) -> list[str]:
    return _table(["level", "layer", "group", "node", "A µs", "B µs", "Δ µs", "Δ %", "noise µs"],
                  [(e.level, _where(e.layer) if e.level != "step" else "—", e.group or "—",
                    e.node or "—", _f(e.a_us, 2), _f(e.b_us, 2), f"{e.delta_us:+,.2f}",
                    f"{e.delta_pct:+.1f}" if e.delta_pct is not None else "—", _f(e.noise_us, 2))
                   for e in entries[:TOP]])


def diff_markdown(d: Diff) -> str:
    """The diff as Markdown."""
    s = d.step
    out = [f"# {_esc(d.b_run)} against {_esc(d.a_run)}: {d.verdict}", "",
           f"Step GPU time {_f(s.a_us)} -> {_f(s.b_us)} µs ({s.delta_us:+,.1f} µs"
           + (f", {s.delta_pct:+.1f} %" if s.delta_pct is not None else "")
           + f"; noise {_f(s.noise_us, 2)} µs); gate {d.gate_pct:g} % and twice the noise.", ""]
    out += ["## Regressions", ""] + (_entries(d.regressions) if d.regressions else ["None.", ""])
    out += ["## Improvements", ""] + (_entries(d.improvements) if d.improvements else ["None.", ""])
    if d.notes:
        out += ["## Notes", ""] + [f"- {_esc(n)}" for n in d.notes] + [""]
    return "\n".join(out)
