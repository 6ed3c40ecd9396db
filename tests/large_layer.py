"""The dumps with 1,000-node layers that the large-layer browser tests and the panel benchmark
(frontend/bench/bench_panel.py) open: the one place to switch them.

Both are real gated-delta-net exports (Qwen3-Next with the real chunk size of 64, whose unrolled
delta-rule loop gives layers of about 1,030 nodes), printed as AutoDeploy's writer prints them:
the browser tests use the two-layer fixture, the benchmark the 48-layer export in ``bench/data/``
(two 1,000-node layers are needed to time a comparison).
"""
from __future__ import annotations

import gzip
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: A dump directory with one 1,000-node layer (tests/fixtures/dumps/README.md).
LARGE_LAYER_DUMP = REPO / "tests" / "fixtures" / "dumps" / "qwen3_next"
#: A compressed dump directory with 36 such layers (bench/data/README.md).
LARGE_MODEL_DUMP = REPO / "bench" / "data" / "qwen3_next_48l"


def large_layer_dump(scratch: Path) -> Path:
    """The dump directory of :data:`LARGE_LAYER_DUMP` (``scratch`` is unused: it is committed)."""
    del scratch
    return LARGE_LAYER_DUMP


def large_model_dump(scratch: Path) -> Path:
    """:data:`LARGE_MODEL_DUMP` decompressed into ``scratch``; its final stage only."""
    out = scratch / LARGE_MODEL_DUMP.name
    out.mkdir(parents=True, exist_ok=True)
    final = sorted(LARGE_MODEL_DUMP.glob("*.txt.gz"))[-1]
    with gzip.open(final, "rb") as src, open(out / final.name[:-len(".gz")], "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out
