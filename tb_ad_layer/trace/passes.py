"""Locate one eager forward pass (prefill) among a trace's kernels outside CUDA graphs.

An NVTX range whose text names a forward/prefill step and that covers most launches marks the
passes (the middle one of the most common size is taken); kernels are placed in ranges by their
CPU launch time (correlation id -> runtime call), GPU start time where unknown. Without such
ranges, passes are split at long idle gaps of the busiest stream.
"""
from __future__ import annotations

import bisect
import re
import statistics
from collections import Counter, defaultdict

from tb_ad_layer.trace.tracedata import NONE, TraceData

_PASS_WORDS = re.compile(r"forward|prefill|context|generat|step|iteration|infer|model|execute", re.I)
_DIGITS = re.compile(r"\d+")
MIN_PASS_KERNELS = 8
#: A forward-pass annotation covers at least this share of the eager launches, together.
_PASS_COVERAGE = 0.5
#: Idle gaps longer than this (and than 50 x the median gap) separate passes.
_MIN_PASS_GAP_NS = 200_000


def launch_time_of(td: TraceData, rows: list[int]) -> list[int]:
    """CPU launch time per row (via correlation id), GPU start time where unknown."""
    lt = td.launch_times
    if lt is None or not len(lt.correlation):
        return [td.start[i] for i in rows]
    corr_arr, start_arr = lt.correlation, lt.start_ns
    out = []
    for i in rows:
        c = td.correlation[i]
        j = bisect.bisect_left(corr_arr, c) if c != NONE else len(corr_arr)
        out.append(start_arr[j] if j < len(corr_arr) and corr_arr[j] == c else td.start[i])
    return out


def pass_by_nvtx(td: TraceData, rows: list[int]) -> tuple[list[int], str] | None:
    """Rows launched inside the middle complete NVTX forward-pass range, or None."""
    ranges = [r for r in td.nvtx if _PASS_WORDS.search(r.text)]
    if not ranges:
        return None
    times = launch_time_of(td, rows)
    order = sorted(range(len(rows)), key=times.__getitem__)
    sorted_times = [times[j] for j in order]
    by_text: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for r in ranges:
        lo = bisect.bisect_left(sorted_times, r.start_ns)
        hi = bisect.bisect_right(sorted_times, r.end_ns)
        if hi - lo >= MIN_PASS_KERNELS:
            by_text[_DIGITS.sub("#", r.text)].append((lo, hi, r.start_ns))
    # A forward-pass annotation covers most launches; op-level ranges that merely mention
    # "forward" (FSDP::pre_forward, aten ops) cover a sliver.
    by_text = {t: f for t, f in by_text.items()
               if sum(hi - lo for lo, hi, _ in f) >= _PASS_COVERAGE * len(rows)}
    if not by_text:
        return None
    text = max(sorted(by_text), key=lambda t: statistics.median(hi - lo for lo, hi, _ in by_text[t]))
    found = by_text[text]
    mode = Counter(hi - lo for lo, hi, _ in found).most_common(1)[0][0]
    complete = [f for f in found if f[1] - f[0] == mode]
    lo, hi, _ = complete[len(complete) // 2]
    return [rows[j] for j in order[lo:hi]], f"nvtx:{text}"


def pass_by_gaps(td: TraceData, rows: list[int]) -> tuple[list[int], str]:
    """Split at long idle gaps of the busiest stream and take the middle typical pass."""
    main = Counter(td.stream[i] for i in rows).most_common(1)[0][0]
    main_rows = sorted((i for i in rows if td.stream[i] == main), key=td.start.__getitem__)
    if len(main_rows) < 2 * MIN_PASS_KERNELS:
        return rows, "whole-trace"
    gaps = [max(0, td.start[b] - td.end[a]) for a, b in zip(main_rows, main_rows[1:])]
    threshold = max(_MIN_PASS_GAP_NS, 50 * statistics.median(gaps))
    chunks: list[list[int]] = [[main_rows[0]]]
    for gap, i in zip(gaps, main_rows[1:]):
        if gap > threshold:
            chunks.append([])
        chunks[-1].append(i)
    chunks = [c for c in chunks if len(c) >= MIN_PASS_KERNELS]
    if len(chunks) <= 1:
        return rows, "whole-trace"
    mode = Counter(len(c) for c in chunks).most_common(1)[0]
    typical = [c for c in chunks if len(c) == mode[0]] if mode[1] > 1 else [max(chunks, key=len)]
    chunk = typical[len(typical) // 2]
    lo, hi = td.start[chunk[0]], td.end[chunk[-1]]
    return [i for i in rows if lo <= td.start[i] <= hi], "idle-gaps"
