"""Locate one eager forward pass (prefill) among a trace's kernels outside CUDA graphs.

An NVTX range or profiler annotation whose text names a forward/prefill step and that covers
most launches marks the passes (the middle one of the most common size is taken); hook ranges of
distributed wrappers (``FSDP::pre_forward``, ``DDP``) never do. Kernels are placed in ranges by
their CPU launch time, GPU start time where unknown. Without such ranges, passes are split at
long idle gaps of the busiest stream.
"""
from __future__ import annotations

import bisect
import re
import statistics
from collections import Counter, defaultdict
from itertools import pairwise

from tb_ad_layer.trace.kernel import Kernel
from tb_ad_layer.trace.steps import is_hook_range
from tb_ad_layer.trace.tracedb import TraceDB

_PASS_WORDS = re.compile(r"forward|prefill|context|generat|iteration|infer|model|execute", re.I)
_STEP = re.compile(r"^ProfilerStep#\d+$")
_DIGITS = re.compile(r"\d+")
MIN_PASS_KERNELS = 8
#: A forward-pass annotation covers at least this share of the eager launches, together.
_PASS_COVERAGE = 0.5
#: Idle gaps longer than this (and than 50 x the median gap) separate passes.
_MIN_PASS_GAP_NS = 200_000


def launch_time(k: Kernel) -> int:
    """CPU launch time of ``k``, its GPU start where the trace has no launch record."""
    return k.launch_ns if k.launch_ns is not None else k.start_ns


def pass_by_nvtx(db: TraceDB, kernels: list[Kernel], coverage: float = _PASS_COVERAGE
                 ) -> tuple[list[Kernel], str] | None:
    """Kernels launched inside the middle complete forward-pass range, or None. The ranges of one
    text must hold ``coverage`` of the kernels together (less within one profiler step, where the
    backward pass and the optimizer share the step with the forward)."""
    ranges = [r for r in db.ranges(("nvtx", "annotation"))
              if _PASS_WORDS.search(r.text) and not is_hook_range(r.text) and not _STEP.match(r.text)]
    if not ranges:
        return None
    order = sorted(range(len(kernels)), key=lambda j: launch_time(kernels[j]))
    times = [launch_time(kernels[j]) for j in order]
    by_text: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for r in ranges:
        lo = bisect.bisect_left(times, r.start_ns)
        hi = bisect.bisect_right(times, r.end_ns)
        if hi - lo >= MIN_PASS_KERNELS:
            by_text[_DIGITS.sub("#", r.text)].append((lo, hi, r.start_ns))
    # A forward-pass annotation covers most launches; op-level ranges that merely mention
    # "forward" cover a sliver.
    by_text = {t: f for t, f in by_text.items() if sum(hi - lo for lo, hi, _ in f) >= coverage * len(kernels)}
    if not by_text:
        return None
    text = max(sorted(by_text), key=lambda t: statistics.median(hi - lo for lo, hi, _ in by_text[t]))
    found = by_text[text]
    mode = Counter(hi - lo for lo, hi, _ in found).most_common(1)[0][0]
    complete = [f for f in found if f[1] - f[0] == mode]
    lo, hi, _ = complete[len(complete) // 2]
    chosen = sorted(order[lo:hi])
    return [kernels[j] for j in chosen], f"nvtx:{text}"


def pass_by_gaps(kernels: list[Kernel]) -> tuple[list[Kernel], str]:
    """Split at long idle gaps of the busiest stream and take the middle typical pass."""
    main = Counter(k.stream_key for k in kernels).most_common(1)[0][0]
    main_ks = sorted((k for k in kernels if k.stream_key == main), key=lambda k: k.start_ns)
    if len(main_ks) < 2 * MIN_PASS_KERNELS:
        return kernels, "whole-trace"
    gaps = [max(0, b.start_ns - a.end_ns) for a, b in pairwise(main_ks)]
    threshold = max(_MIN_PASS_GAP_NS, 50 * statistics.median(gaps))
    chunks: list[list[Kernel]] = [[main_ks[0]]]
    for gap, k in zip(gaps, main_ks[1:], strict=True):
        if gap > threshold:
            chunks.append([])
        chunks[-1].append(k)
    chunks = [c for c in chunks if len(c) >= MIN_PASS_KERNELS]
    if len(chunks) <= 1:
        return kernels, "whole-trace"
    mode = Counter(len(c) for c in chunks).most_common(1)[0]
    typical = [c for c in chunks if len(c) == mode[0]] if mode[1] > 1 else [max(chunks, key=len)]
    chunk = typical[len(typical) // 2]
    lo, hi = chunk[0].start_ns, chunk[-1].end_ns
    return [k for k in kernels if lo <= k.start_ns <= hi], "idle-gaps"
