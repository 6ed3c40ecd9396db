"""The dump with 1,000-node layers that the large-layer browser tests and the panel benchmark
(frontend/bench/bench_panel.py) open: the one place to switch it.

Until a real gated-delta-net export with the real chunk size is in ``tests/fixtures/dumps/``, an
AutoDeploy-style dump of a DeepSeek-V3 decoder with 80 unfused experts (one dequantisation subgraph
per expert weight: about 1,000 nodes per MoE layer) stands in, made by ``tools/make_ad_dump.py``.
Set ``LARGE_LAYER_DUMP`` to the export's directory (a Path) to use it instead.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: A dump directory, or the arguments of tools/make_ad_dump.py that write one.
LARGE_LAYER_DUMP: Path | list[str] = ["--model", "dsv3", "--layers", "3", "--dense-layers", "1",
                                      "--experts", "80", "--unfused-moe", "--stages", "final"]


def large_layer_dump(scratch: Path) -> Path:
    """The dump directory of LARGE_LAYER_DUMP (generated into ``scratch`` when it is arguments)."""
    if isinstance(LARGE_LAYER_DUMP, Path):
        return LARGE_LAYER_DUMP
    out = scratch / "large_dump"
    r = subprocess.run([sys.executable, "tools/make_ad_dump.py", *LARGE_LAYER_DUMP, "--out", str(out)],
                       cwd=REPO, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"tools/make_ad_dump.py failed:\n{r.stdout}\n{r.stderr}")
    return out
