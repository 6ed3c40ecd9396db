"""Pause CPython's cyclic garbage collector while a graph is built and stored.

Parsing and layering a dump allocates millions of small containers (nodes, lists, dicts) that
all stay alive until the stage is written. Each time the allocation count passes a threshold,
CPython's generational collector walks the surviving objects again looking for cycles, and on a
DeepSeek-sized dump those walks took about half the conversion time (bench/bench_convert.py:
3.3-4.1 s with the collector, 2.1-2.3 s without, on the same 17 MB dump). The structures built
here hold no reference cycles, so nothing is lost by collecting once afterwards instead.
"""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector inside the block; restore its previous state after.

    Nested use is fine: only the outermost block re-enables it.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
