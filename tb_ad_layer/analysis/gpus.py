"""GPU peaks (dense tensor-core TFLOP/s per dtype class, memory TB/s), kept as data
(``gpus.json``): the roofline measures each node against the peak of the GPU the trace names, or
the one ``--gpu NAME`` names. Rows are ``{"gpu": REGEX, "tflops": {dtype class: TFLOP/s},
"tbs": TB/s}``, searched in the name in order (the first match decides), ignoring case.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from tb_ad_layer.contract.analysis import GpuPeak

TABLE_PATH = Path(__file__).with_name("gpus.json")


@dataclass(frozen=True)
class Peak:
    """The peaks of one GPU; empty when the GPU is unknown."""

    name: str | None = None
    source: Literal["trace", "option", "none"] = "none"
    entry: str | None = None
    by_class: dict[str, float] = field(default_factory=dict)
    tbs: float | None = None

    def tflops(self, dtype_class: str) -> float | None:
        """Peak TFLOP/s for a dtype class (fp32 work runs on tf32 tensor cores when no fp32
        peak is listed)."""
        return self.by_class.get(dtype_class) or (self.by_class.get("tf32")
                                                  if dtype_class == "fp32" else None)

    def record(self) -> GpuPeak:
        """As the report shows it."""
        return GpuPeak(name=self.name, source=self.source, entry=self.entry,
                       peak_tflops=dict(self.by_class), peak_tbs=self.tbs)


def dtype_class(dtype: str) -> str:
    """The peak-table class of a dump dtype: fp8, fp4, bf16, fp16, fp32 (default bf16)."""
    d = dtype.lower()
    for key, cls in (("float8", "fp8"), ("fp8", "fp8"), ("float4", "fp4"), ("fp4", "fp4"),
                     ("bfloat16", "bf16"), ("float16", "fp16"), ("half", "fp16"),
                     ("float32", "fp32")):
        if key in d:
            return cls
    return "bf16"


@lru_cache(maxsize=1)
def _table() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(TABLE_PATH.read_text(encoding="utf-8"))
    return rows


def known_gpus() -> list[str]:
    """The table's entries (for messages)."""
    return [str(r["gpu"]) for r in _table()]


def lookup(name: str | None, source: Literal["trace", "option"]) -> Peak:
    """The peaks of GPU ``name`` (from the trace or ``--gpu``); an empty Peak for an unknown
    GPU or none."""
    if not name:
        return Peak()
    for row in _table():
        if re.search(str(row["gpu"]), name, re.IGNORECASE):
            return Peak(name=name, source=source, entry=str(row["gpu"]),
                        by_class={str(k): float(v) for k, v in row["tflops"].items()},
                        tbs=float(row["tbs"]))
    return Peak(name=name, source=source)
