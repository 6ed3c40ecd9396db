"""Profiler steps (``ProfilerStep#N`` ranges) and the CPU ranges that are hooks, not passes.

A trace usually holds several iterations. ``torch.profiler`` marks each with a
``ProfilerStep#N`` range (a user annotation, or an NVTX range when emitted to nsys); a step is
*complete* when every CUDA launch made inside it has its GPU work in the trace (the last step of a
capture cut short, or the first one whose earlier launches ran before the trace began, is not).
Ranges that distributed wrappers open around each module (``FSDP::pre_forward (...)``,
``DDP...``, ``DistributedDataParallel.forward``) are hooks: they mention "forward" but are never
a forward pass.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tb_ad_layer.errors import InputError
from tb_ad_layer.trace.tracedb import CpuRange, TraceDB

_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_HOOK = re.compile(r"^(FSDP|DDP|FullyShardedDataParallel|DistributedDataParallel)\b|^(FSDP|DDP)::")
_LAUNCH_WORDS = ("Launch", "Memcpy", "Memset")


def is_hook_range(text: str) -> bool:
    """Whether a range is a distributed wrapper's hook (``FSDP::...``, ``DDP...``)."""
    return _HOOK.search(text) is not None


@dataclass(slots=True, frozen=True)
class Step:
    """One profiler step: its number, CPU range (ns) and thread, and whether it is complete."""

    number: int
    start_ns: int
    end_ns: int
    tid: int
    complete: bool
    launches: int


def profiler_steps(db: TraceDB) -> list[Step]:
    """The trace's profiler steps in time order (memoised on ``db``)."""
    got = db.memo.get("steps")
    if got is None:
        got = db.memo["steps"] = _find_steps(db)
    return list(got)


def _find_steps(db: TraceDB) -> list[Step]:
    found: dict[int, CpuRange] = {}
    for r in db.ranges(("nvtx", "annotation")):
        m = _STEP.match(r.text)
        if m is not None:
            n = int(m.group(1))
            if n not in found or r.end_ns - r.start_ns > found[n].end_ns - found[n].start_ns:
                found[n] = r
    if not found:
        return []
    launch_keys = [k for k, text in db.runtime_names.items() if any(w in text for w in _LAUNCH_WORDS)]
    have: set[int] = set()
    launched: list[tuple[int, int]] = []
    if launch_keys:
        marks = ",".join("?" * len(launch_keys))
        launched = db.rows(f"SELECT s, c FROM rt WHERE nm IN ({marks}) ORDER BY s", launch_keys)
        have = {r[0] for r in db.rows("SELECT DISTINCT c FROM k WHERE c IS NOT NULL "
                                      "UNION SELECT DISTINCT c FROM cp WHERE c IS NOT NULL")}
    out = []
    for n in sorted(found, key=lambda x: found[x].start_ns):
        r = found[n]
        inside = [c for s, c in launched if r.start_ns <= s <= r.end_ns]
        complete = bool(inside) and all(c in have for c in inside) if launch_keys else True
        out.append(Step(n, r.start_ns, r.end_ns, r.tid, complete, len(inside)))
    return out


def choose_step(db: TraceDB, number: int | None) -> tuple[Step | None, str]:
    """The step to analyse and why: ``number`` when given, else the last complete step (None
    when the trace has no steps). Raises ``InputError`` for a step the trace does not hold."""
    steps = profiler_steps(db)
    if number is not None:
        match = [s for s in steps if s.number == number]
        if not match:
            have = ", ".join(str(s.number) for s in steps) or "none"
            raise InputError(f"profiler step {number} is not in the trace (steps: {have})", path=db.source,
                             field="--step")
        return match[0], f"step {number} as asked"
    if not steps:
        return None, "no profiler steps"
    complete = [s for s in steps if s.complete]
    if not complete:
        return steps[-1], (f"step {steps[-1].number}: the last of {len(steps)} profiler step(s); none is "
                           f"complete")
    chosen = complete[-1]
    return chosen, f"step {chosen.number}: the last complete of {len(steps)} profiler step(s)"
